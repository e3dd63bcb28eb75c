;;; agent-shell-hooks.el --- The user's hooks around steps, turns and compaction  -*- lexical-binding: t; -*-

;; SPDX-License-Identifier: GPL-3.0-or-later

;;; Commentary:

;; Ordinary abnormal hooks around what the agent does.  The bridge asks
;; Emacs through `hook/pre_tool' before a step the policy did not deny
;; (`agent-shell-pre-tool-functions' may deny it, make it ask or rewrite
;; its arguments; the bridge judges a rewrite again and lets no hook
;; loosen its verdict) and through `hook/post_tool' after it
;; (`agent-shell-post-tool-functions' add text to the result).
;; `agent-shell-turn-end-functions' and `agent-shell-compaction-functions'
;; hear of a turn's end and of a compacted history from the transcript's
;; updates (agent-shell-transcript.el).  A project's own hooks, the
;; commands of `.agent-shell/hooks.json', run on the bridge, in the
;; sandbox, once trusted (agent-shell-trust.el).  agent-shell-extend.el
;; tells the bridge which of these hooks are set.

;;; Code:

(require 'cl-lib)
(require 'subr-x)
(require 'agent-shell-transcript)
(require 'agent-shell-bridge)

;;; Options

(defcustom agent-shell-pre-tool-functions nil
  "Functions called before each step the policy did not deny.
Each is called with the tool's name (a string), its arguments (an
alist with symbol keys) and the session's shell buffer, and returns
nil (no opinion), (deny REASON), `ask', or (args NEW-ARGS).  A hook
can only tighten: it may deny or ask where the policy allows, and
rewritten arguments are judged by the policy again, but nothing a
hook returns turns the policy's deny or ask into an allow.  The model
sees a deny's REASON; the log names the hook."
  :type 'hook
  :group 'agent-shell-tools
  :package-version '(agent-shell . "0.4.0"))

(defcustom agent-shell-post-tool-functions nil
  "Functions called after each step with its name, arguments, result and buffer.
The result is an alist as the model will see it.  Text a function
returns is added to the result (a formatter's output, a linter's
findings); nil adds nothing."
  :type 'hook
  :group 'agent-shell-tools
  :package-version '(agent-shell . "0.4.0"))

(defun agent-shell-hooks--name (function)
  "Return the name of the hook FUNCTION, for the log."
  (if (symbolp function) (symbol-name function) "an anonymous hook"))

(defun agent-shell-hooks--functions (variable)
  "Return the functions of the hook VARIABLE, its global ones for a t."
  (let ((functions (symbol-value variable)))
    (if (functionp functions) (list functions)
      (cl-mapcan (lambda (f) (if (eq f t) (copy-sequence (default-value variable)) (list f)))
                 (copy-sequence functions)))))

(defun agent-shell-hooks-pre-tool (name args buffer)
  "Run `agent-shell-pre-tool-functions' on NAME with ARGS in BUFFER.
Return the answer of `hook/pre_tool': an alist with `decision',
`reason', `hook' and `args', each only when some hook said so."
  (let ((answer nil) (changed nil))
    (catch 'denied
      (dolist (fn (agent-shell-hooks--functions 'agent-shell-pre-tool-functions))
        (let ((said (condition-case err (funcall fn name args buffer)
                      (error (message "agent-shell: pre-tool hook %s failed: %s"
                                      (agent-shell-hooks--name fn)
                                      (error-message-string err))
                             nil))))
          (pcase said
            (`(deny . ,rest)
             (setq answer `((decision . "deny") (hook . ,(agent-shell-hooks--name fn))
                            (reason . ,(format "%s" (or (car rest) "no reason given")))))
             (throw 'denied nil))
            ('ask (unless answer
                    (setq answer `((decision . "ask")
                                   (hook . ,(agent-shell-hooks--name fn))))))
            (`(args ,new) (when (listp new) (setq args new changed t)))))))
    (append answer (and changed `((args . ,(or args (make-hash-table))))))))

(defun agent-shell-hooks-post-tool (name args result buffer)
  "Run `agent-shell-post-tool-functions' on NAME, ARGS and RESULT in BUFFER.
Return the texts they returned, joined, or nil."
  (let ((texts nil))
    (dolist (fn (agent-shell-hooks--functions 'agent-shell-post-tool-functions))
      (let ((said (condition-case err (funcall fn name args result buffer)
                    (error (message "agent-shell: post-tool hook %s failed: %s"
                                    (agent-shell-hooks--name fn)
                                    (error-message-string err))
                           nil))))
        (when (and (stringp said) (not (string-empty-p said)))
          (push said texts))))
    (and texts (mapconcat #'identity (nreverse texts) "\n"))))

(defcustom agent-shell-turn-end-functions nil
  "Functions called in the shell buffer when a turn has ended.
Each gets the `turn_end' update: an alist with `stopReason' (such as
\"end_turn\", \"cancelled\" or \"max_turn_requests\") and `turnId'."
  :type 'hook
  :group 'agent-shell
  :package-version '(agent-shell . "0.4.0"))

(defun agent-shell-hooks--turn-end (update)
  "Run `agent-shell-turn-end-functions' with UPDATE; a failing one is logged."
  (condition-case err
      (run-hook-with-args 'agent-shell-turn-end-functions update)
    (error (message "agent-shell: a turn-end hook failed: %s" (error-message-string err)))))

(add-hook 'agent-shell-transcript-turn-end-functions #'agent-shell-hooks--turn-end)

(defcustom agent-shell-compaction-functions nil
  "Functions called when the bridge has compacted a session's conversation.
Each is called in the session's shell buffer with two arguments: that
buffer and a plist describing the compaction:
  :reason       \"threshold\" (the history passed its share of the
                window) or \"window\" (the next request would not fit)
  :summary      the summary that now stands for the earlier messages
                (a string, \"\" when only large results became refs)
  :messages-summarised, :messages-kept, :results-stubbed,
  :failures-kept  counts of what went into the summary, what stayed
                word for word, results replaced by a ref, and failures
                carried over
  :tokens-before, :tokens-after, :context-window  the conversation's
                estimated size before and after, and the model's window
  :turn-id      the turn during which it happened.
A function that signals is logged with `message' and the others still run."
  :type 'hook
  :group 'agent-shell
  :package-version '(agent-shell . "0.4.0"))

(defun agent-shell-hooks-compaction-info (update)
  "Return the plist `agent-shell-compaction-functions' get for UPDATE."
  (cl-loop for (key . field) in '((:reason . reason) (:summary . summary)
                                  (:messages-summarised . messagesSummarised)
                                  (:messages-kept . messagesKept)
                                  (:results-stubbed . resultsStubbed)
                                  (:failures-kept . failuresKept)
                                  (:tokens-before . tokensBefore)
                                  (:tokens-after . tokensAfter)
                                  (:context-window . contextWindow)
                                  (:turn-id . turnId))
           append (list key (alist-get field update))))

(defun agent-shell-hooks--compaction (update)
  "Run `agent-shell-compaction-functions' for the `compaction' UPDATE.
Each function runs on its own: one that signals is logged, not raised."
  (let ((buffer (current-buffer))
        (info (agent-shell-hooks-compaction-info update)))
    (dolist (fn (agent-shell-hooks--functions 'agent-shell-compaction-functions))
      (condition-case err
          (funcall fn buffer info)
        (error (message "agent-shell: compaction hook %s failed: %s"
                        (agent-shell-hooks--name fn) (error-message-string err)))))))

(add-hook 'agent-shell-transcript-compaction-functions #'agent-shell-hooks--compaction)

(cl-defmethod agent-shell-rpc-handle (conn (_m (eql hook/pre_tool)) params id)
  "Answer the `hook/pre_tool' request ID with PARAMS on CONN."
  (let ((buffer (agent-shell-bridge-session-buffer (alist-get 'sessionId params))))
    (agent-shell-rpc-respond
     conn id (or (with-current-buffer (if (buffer-live-p buffer) buffer (current-buffer))
                   (agent-shell-hooks-pre-tool (alist-get 'tool params)
                                                (alist-get 'arguments params) buffer))
                 (make-hash-table))))
  nil)

(cl-defmethod agent-shell-rpc-handle (conn (_m (eql hook/post_tool)) params id)
  "Answer the `hook/post_tool' request ID with PARAMS on CONN."
  (let* ((buffer (agent-shell-bridge-session-buffer (alist-get 'sessionId params)))
         (text (with-current-buffer (if (buffer-live-p buffer) buffer (current-buffer))
                 (agent-shell-hooks-post-tool (alist-get 'tool params)
                                               (alist-get 'arguments params)
                                               (alist-get 'result params) buffer))))
    (agent-shell-rpc-respond conn id (if text `((text . ,text)) (make-hash-table))))
  nil)

(provide 'agent-shell-hooks)
;;; agent-shell-hooks.el ends here
