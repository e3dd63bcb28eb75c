;;; test-extend.el --- Tests for agent-shell-extend.el  -*- lexical-binding: t; -*-

;; SPDX-License-Identifier: GPL-3.0-or-later

;;; Commentary:

;; Tools defined with `agent-shell-define-tool', through the real bridge
;; and the scripted model (agent-shell-test-session.el): the tool is in
;; the recorded request's `tools' and its result reaches the model; a
;; `write' tool waits for `y' in the log; a wrong-typed argument is
;; refused before the function runs; a function that signals becomes a
;; failed result; a tool defined after the session started is offered
;; from the next turn.

;;; Code:

(require 'ert)
(require 'cl-lib)
(require 'agent-shell)
(require 'agent-shell-extend)
(require 'agent-shell-test-helpers)
(require 'agent-shell-test-session)

(defvar test-extend--calls nil "Arguments the test tools were called with, newest first.")

(defun test-extend--request-for (marker)
  "Return the first request whose last user message contains MARKER."
  (cl-find-if (lambda (body)
                (let ((users (cl-remove-if-not (lambda (m) (equal (alist-get 'role m) "user"))
                                               (alist-get 'messages body))))
                  (and users (string-search marker (format "%s" (alist-get 'content
                                                                           (car (last users))))))))
              (test-shell--model-requests)))

(defun test-extend--last-user (marker)
  "Return the text of the last user message the model got containing MARKER."
  (let (found)
    (dolist (body (test-shell--model-requests))
      (dolist (m (alist-get 'messages body))
        (when (and (equal (alist-get 'role m) "user")
                   (string-search marker (format "%s" (alist-get 'content m))))
          (setq found (format "%s" (alist-get 'content m))))))
    found))

(defun test-extend--tool-names (body)
  "Return the names of the tools offered in the request BODY."
  (mapcar (lambda (tool) (alist-get 'name (alist-get 'function tool)))
          (alist-get 'tools body)))

(defun test-extend--tool-messages ()
  "Return the text of every tool result the model received."
  (let (out)
    (dolist (body (test-shell--model-requests))
      (dolist (m (alist-get 'messages body))
        (when (equal (alist-get 'role m) "tool")
          (push (format "%s" (alist-get 'content m)) out))))
    out))

(defmacro test-extend--with-tools (&rest body)
  "Run BODY with the test tools defined, and none of them afterwards."
  (declare (indent 0) (debug (body)))
  `(let ((agent-shell-extend--tools nil))
     (setq test-extend--calls nil)
     (agent-shell-define-tool
      :name "ext_agenda" :risk 'read
      :description "今天的议程 Today's agenda."
      :args '((days integer "How many days"))
      :function (lambda (args)
                  (push args test-extend--calls)
                  (format "议程 agenda for %d days" (alist-get 'days args))))
     (agent-shell-define-tool
      :name "ext_note" :risk 'write
      :description "Write a note."
      :args '((text string "The note") (urgent boolean "Urgent?" :optional t))
      :function (lambda (args)
                  (push args test-extend--calls)
                  `((noted . ,(concat "noted " (alist-get 'text args))))))
     (agent-shell-define-tool
      :name "ext_boom" :description "Always fails."
      :function (lambda (_args) (error "爆炸 boom")))
     ,@body))

(defun test-extend--prompt (text done)
  "Send TEXT and wait until DONE is in the transcript and the turn ended."
  (goto-char (point-max))
  (insert text)
  (agent-shell-send-input)
  (test-shell--wait done (lambda () (string-search done (test-shell--transcript))) 20)
  (test-shell--wait "the turn's end"
                    (lambda () (eq (agent-shell-session-state agent-shell--session) 'idle))
                    20))

(ert-deftest test-extend/define-tool-checks-its-spec ()
  "A bad name, risk, type or a built-in's name is an error at definition."
  (let ((agent-shell-extend--tools nil))
    (should-error (agent-shell-define-tool :name "bad name" :function #'ignore
                                           :description "x"))
    (should-error (agent-shell-define-tool :name "write_file" :function #'ignore
                                           :description "x"))
    (should-error (agent-shell-define-tool :name "ok" :function #'ignore :risk 'delete
                                           :description "x"))
    (should-error (agent-shell-define-tool :name "ok" :function #'ignore :description "x"
                                           :args '((n float "no such type"))))
    (should-not agent-shell-extend--tools)
    (agent-shell-define-tool :name "ok" :function #'ignore :description "x"
                             :args '((n integer "N") (flag boolean "F" :optional t)))
    (let ((decl (cl-find "ok" (agent-shell-extend-declarations)
                         :key (lambda (d) (alist-get 'name d)) :test #'equal)))
      (should (equal (alist-get 'name decl) "ok"))
      (should (equal (alist-get 'risk decl) "read"))
      (should (equal (alist-get 'required (alist-get 'parameters decl)) ["n"])))
    ;; Checked before the function runs; false comes as nil, arrays as lists.
    (should (equal (agent-shell-extend--arguments
                    "ok" '((n integer "N") (flag boolean "F" :optional t))
                    '((n . 2) (flag . :json-false)))
                   '((n . 2) (flag))))
    (should-error (agent-shell-extend--arguments "ok" '((n integer "N")) '((m . 1)))
                  :type 'agent-shell-tool-error)
    (should-error (agent-shell-extend--arguments "ok" '((n integer "N")) nil)
                  :type 'agent-shell-tool-error)))

(ert-deftest test-extend/read-tool-is-offered-and-its-result-comes-back ()
  "The tool is in the request's `tools'; its result reaches the model."
  (test-extend--with-tools
    (test-shell--with-session (root)
      (ignore root)
      (test-extend--prompt "ext-read-go please" "ext-read 完成 done.")
      (should (equal test-extend--calls '(((days . 3)))))
      (let ((names (test-extend--tool-names (test-extend--request-for "ext-read-go"))))
        (should (member "ext_agenda" names))
        (should (member "ext_note" names))
        (should (member "read_file" names)))
      (should (cl-some (lambda (m) (string-search "议程 agenda for 3 days" m))
                       (test-extend--tool-messages)))
      ;; Each call is a log entry.
      (with-current-buffer (agent-shell-log-buffer
                            (agent-shell-session-name agent-shell--session))
        (should (string-search "ext_agenda" (buffer-string))))
      ;; A long result is cut to head and tail, as other outputs are.
      (agent-shell-define-tool
       :name "ext_long" :description "Many lines."
       :function (lambda (_args)
                   (mapconcat (lambda (n) (format "ext-long-行 %d" n)) (number-sequence 0 999) "\n")))
      (test-extend--prompt "ext-long-go please" "ext-long 看到 seen.")
      (let ((result (cl-find-if (lambda (m) (string-search "ext-long-行 999" m))
                                (test-extend--tool-messages))))
        (should (string-search "ext-long-行 0\\n" result))
        (should (string-search "lines omitted" result))
        (should-not (string-search "ext-long-行 500\\n" result))))))

(ert-deftest test-extend/write-tool-waits-for-y ()
  "A `write' tool is a WAIT step; the function runs only after `y'.
The waiting and turn-end hooks are called with the step and the end."
  (test-extend--with-tools
    (let* ((waited nil) (ended nil)
           (agent-shell-waiting-functions
            (list (lambda (params) (push (alist-get 'title (alist-get 'toolCall params)) waited))))
           (agent-shell-turn-end-functions
            (list (lambda (update) (push (alist-get 'stopReason update) ended)))))
    (test-shell--with-session (root)
      (ignore root)
      (let ((shell (current-buffer)))
        (test-shell--send-until-permission "ext-write-go please")
        (should-not test-extend--calls)
        (should (equal waited '("ext_note")))
        (let ((log (agent-shell-log-buffer (agent-shell-session-name agent-shell--session))))
          (test-shell--wait "the WAIT entry" (lambda () (agent-shell-log-pending log)) 20)
          (with-current-buffer log
            (switch-to-buffer log)
            (goto-char (point-max))
            (execute-kbd-macro (kbd "y"))))
        (switch-to-buffer shell)
        (test-shell--wait "the model's answer"
                          (lambda () (string-search "ext-write 完成 done." (test-shell--transcript)))
                          20)
        (should (equal test-extend--calls '(((text . "笔记 note")))))
        (test-shell--wait "the turn's end"
                          (lambda () (eq (agent-shell-session-state agent-shell--session) 'idle))
                          20)
        (should (equal ended '("end_turn"))))))))

(ert-deftest test-extend/wrong-type-and-signals-are-failed-results ()
  "A wrong-typed argument never reaches the function; an error is a failed result.
The bridge refuses the call against the declared types before any
pre-tool hook or Emacs is asked (its wording, not this file's)."
  (test-extend--with-tools
    (let* ((hooked nil)
           (agent-shell-pre-tool-functions
            (list (lambda (name args _buffer) (push (cons name args) hooked) nil))))
    (test-shell--with-session (root)
      (ignore root)
      (test-extend--prompt "ext-badarg-go please" "ext-badarg 看到 seen.")
      (should-not test-extend--calls)
      (should-not hooked)
      (should (cl-some (lambda (m) (string-search
                                    "argument `days` must be an integer, not a string" m))
                       (test-extend--tool-messages)))
      (test-extend--prompt "ext-boom-go please" "ext-boom 看到 seen.")
      (should (cl-some (lambda (m) (string-search "ext_boom failed: 爆炸 boom" m))
                       (test-extend--tool-messages)))
      (should (eq (agent-shell-session-state agent-shell--session) 'idle))))))

(ert-deftest test-extend/tool-defined-later-is-offered-next-turn ()
  "A tool defined while the session is open is in the next turn's request."
  (let ((agent-shell-extend--tools nil))
    (test-shell--with-session (root)
      (ignore root)
      (test-extend--prompt "ext-late-one please" "ext-late-one 好 ok.")
      (agent-shell-define-tool :name "ext_late" :description "Defined late."
                               :function (lambda (_args) "late"))
      (test-extend--prompt "ext-late-two please" "ext-late-two 好 ok.")
      (should-not (member "ext_late"
                          (test-extend--tool-names (test-extend--request-for "ext-late-one"))))
      (should (member "ext_late"
                      (test-extend--tool-names (test-extend--request-for "ext-late-two")))))))

;;; describe_symbol and eval_elisp

(ert-deftest test-extend/describe-symbol-tells-signature-file-and-value ()
  "A function's signature and file, a variable's value; secrets withheld."
  (let* ((out (agent-shell-extend-call "describe_symbol" '((name . "agent-shell-define-tool"))))
         (fn (alist-get 'function (alist-get 'result out))))
    (should (string-search "(agent-shell-define-tool &key NAME FUNCTION ARGS"
                           (alist-get 'signature fn)))
    (should-not (string-search "(fn " (alist-get 'documentation fn)))
    (should (string-search "Make FUNCTION the agent tool NAME" (alist-get 'documentation fn)))
    (should (string-search "agent-shell-extend" (alist-get 'defined_in fn))))
  (let* ((agent-shell-describe-symbol-max-chars 4000)
         (var (alist-get 'variable
                         (alist-get 'result (agent-shell-extend-call
                                             "describe_symbol"
                                             '((name . "agent-shell-describe-symbol-max-chars")))))))
    (should (equal (alist-get 'value var) "4000"))
    (should (eq (alist-get 'customizable var) t))
    (should (string-search "Longest printed" (alist-get 'documentation var))))
  (let ((agent-shell-api-key "sk-秘密-secret"))
    (should-not (string-search "秘密"
                               (format "%S" (agent-shell-extend-call
                                             "describe_symbol"
                                             '((name . "agent-shell-api-key")))))))
  (should-error (agent-shell-extend-call "describe_symbol"
                                         '((name . "test-extend--no-such-symbol-at-all")))
                :type 'agent-shell-tool-error))

(defvar test-extend--evaluated nil "Set by code the eval tests run.")

(ert-deftest test-extend/eval-elisp-is-off-by-default-and-reads-before-running ()
  "Not offered unless enabled; then not grantable; an incomplete form runs nothing."
  (let ((agent-shell-eval-elisp-enabled nil))
    (should-not (agent-shell-extend-tool-p "eval_elisp"))
    (should-not (cl-find "eval_elisp" (agent-shell-extend-declarations)
                         :key (lambda (d) (alist-get 'name d)) :test #'equal))
    (should (cl-find "describe_symbol" (agent-shell-extend-declarations)
                     :key (lambda (d) (alist-get 'name d)) :test #'equal)))
  (let ((agent-shell-eval-elisp-enabled t))
    (let ((decl (cl-find "eval_elisp" (agent-shell-extend-declarations)
                         :key (lambda (d) (alist-get 'name d)) :test #'equal)))
      (should (equal (alist-get 'risk decl) "exec"))
      (should (eq (alist-get 'grantable decl) :json-false)))
    (should (equal (alist-get 'result (agent-shell-extend-call
                                       "eval_elisp" '((code . "(+ 1 2) (concat \"评估\" \" ok\") ; end"))))
                   "\"评估 ok\""))
    (setq test-extend--evaluated nil)
    (should-error (agent-shell-extend-call
                   "eval_elisp" '((code . "(setq test-extend--evaluated t) (+ 1")))
                  :type 'agent-shell-tool-error)
    (should-not test-extend--evaluated)
    (should-error (agent-shell-extend-call "eval_elisp" '((code . "(car 1)")))
                  :type 'agent-shell-tool-error)))

(ert-deftest test-extend/eval-elisp-asks-every-time-without-a-session-grant ()
  "Through the bridge: a WAIT step offering no \"allow for the session\"."
  (let ((agent-shell-eval-elisp-enabled t))
    (test-shell--with-session (root)
      (ignore root)
      (let ((shell (current-buffer))
            (permission nil))
        (setq permission (test-shell--send-until-permission "ext-eval-go please"))
        (let ((options (alist-get 'options (agent-shell-bridge-permission-params permission))))
          (should (cl-find "allow_once" options :key (lambda (o) (alist-get 'optionId o))
                           :test #'equal))
          (should-not (cl-find "allow_session" options
                               :key (lambda (o) (alist-get 'optionId o)) :test #'equal)))
        (let ((log (agent-shell-log-buffer (agent-shell-session-name agent-shell--session))))
          (test-shell--wait "the WAIT entry" (lambda () (agent-shell-log-pending log)) 20)
          (with-current-buffer log
            (switch-to-buffer log)
            (goto-char (point-max))
            (execute-kbd-macro (kbd "y"))))
        (switch-to-buffer shell)
        (test-shell--wait "the model's answer"
                          (lambda () (string-search "ext-eval 看到 seen." (test-shell--transcript)))
                          20)
        (test-shell--wait "the turn's end"
                          (lambda () (eq (agent-shell-session-state agent-shell--session) 'idle))
                          20)
        ;; describe_symbol runs unasked.
        (test-extend--prompt "ext-describe-go please" "ext-describe 看到 seen.")))))

;;; Hooks

(defun test-extend--deny-rm (name args _buffer)
  "Deny `run_command' of rm (NAME and ARGS of the step)."
  (when (and (equal name "run_command")
             (string-prefix-p "rm " (alist-get 'command args)))
    '(deny "不许 no rm here")))

(defun test-extend--rewrite-ls (name args _buffer)
  "Rewrite `ls' (NAME and ARGS of the step) into an rm the policy denies."
  (when (and (equal name "run_command") (equal (alist-get 'command args) "ls"))
    '(args ((command . "rm -rf /nonexistent-agent-shell-test-dir")))))

(defun test-extend--ask-agenda (name _args _buffer)
  "Ask before the read tool `ext_agenda' (NAME)."
  (when (equal name "ext_agenda") 'ask))

(ert-deftest test-extend/pre-tool-hooks-deny-ask-and-rewrite-but-never-loosen ()
  "A deny reaches the model; a rewrite is judged again; `ask' makes a read tool wait."
  (test-extend--with-tools
    (let ((agent-shell-pre-tool-functions
           (list #'test-extend--deny-rm #'test-extend--rewrite-ls #'test-extend--ask-agenda)))
      (test-shell--with-session (root)
        (agent-shell-test-write root "notes.txt" "笔记\n")
        (test-extend--prompt "ext-hook-deny please" "ext-hook-deny 看到 seen.")
        (should (file-exists-p (expand-file-name "notes.txt" root)))
        (should (cl-some (lambda (m) (string-search "denied by test-extend--deny-rm: 不许 no rm here" m))
                         (test-extend--tool-messages)))
        (with-current-buffer (agent-shell-log-buffer
                              (agent-shell-session-name agent-shell--session))
          (should (string-search "test-extend--deny-rm" (buffer-string))))
        ;; The rewritten command is the policy's to judge: denied, though ls was allowed.
        (test-extend--prompt "ext-hook-rewrite please" "ext-hook-rewrite 看到 seen.")
        ;; The log shows the command as rewritten, the one the policy judged.
        (with-current-buffer (agent-shell-log-buffer
                              (agent-shell-session-name agent-shell--session))
          (should (string-search "rm -rf /nonexistent-agent-shell-test-dir" (buffer-string))))
        ;; A read tool the policy allows waits once a hook asks.
        (let ((shell (current-buffer)))
          (test-shell--send-until-permission "ext-hook-ask please")
          (should-not test-extend--calls)
          (let ((log (agent-shell-log-buffer (agent-shell-session-name agent-shell--session))))
            (test-shell--wait "the WAIT entry" (lambda () (agent-shell-log-pending log)) 20)
            (with-current-buffer log
              (switch-to-buffer log)
              (goto-char (point-max))
              (execute-kbd-macro (kbd "y"))))
          (switch-to-buffer shell)
          (test-shell--wait "the model's answer"
                            (lambda () (string-search "ext-hook-ask 看到 seen."
                                                      (test-shell--transcript)))
                            20)
          (test-shell--wait "the turn's end"
                            (lambda () (eq (agent-shell-session-state agent-shell--session)
                                           'idle))
                            20)
          (should (equal test-extend--calls '(((days . 2))))))))))

(ert-deftest test-extend/a-hook-cannot-allow-what-the-policy-asks-about ()
  "A hook answering allow for a command the policy asks about: it still asks."
  (let ((agent-shell-pre-tool-functions (list (lambda (_name _args _buffer) 'allow))))
    (test-shell--with-session (root)
      (agent-shell-test-write root "notes.txt" "笔记\n")
      (let ((shell (current-buffer)))
        (test-shell--send-until-permission "ext-hook-allow please")
        (let ((log (agent-shell-log-buffer (agent-shell-session-name agent-shell--session))))
          (test-shell--wait "the WAIT entry" (lambda () (agent-shell-log-pending log)) 20)
          (with-current-buffer log
            (switch-to-buffer log)
            (goto-char (point-max))
            (cl-letf (((symbol-function 'read-string) (lambda (&rest _) "no")))
              (execute-kbd-macro (kbd "n")))))
        (switch-to-buffer shell)
        (test-shell--wait "the model's answer"
                          (lambda () (string-search "ext-hook-allow 看到 seen."
                                                    (test-shell--transcript)))
                          20)
        (test-shell--wait "the turn's end"
                          (lambda () (eq (agent-shell-session-state agent-shell--session) 'idle))
                          20)
        (should (file-exists-p (expand-file-name "notes.txt" root)))))))

(ert-deftest test-extend/post-tool-hook-text-reaches-the-model ()
  "Text a post-tool hook returns is added to the result."
  (test-extend--with-tools
    (let ((agent-shell-post-tool-functions
           (list (lambda (name _args result _buffer)
                   (when (and (equal name "ext_agenda") (alist-get 'content result))
                     "格式 formatted by the hook")))))
      (test-shell--with-session (root)
        (ignore root)
        (test-extend--prompt "ext-hook-post please" "ext-hook-post 看到 seen.")
        (should (cl-some (lambda (m) (and (string-search "格式 formatted by the hook" m)
                                          (string-search "议程 agenda for 4 days" m)))
                         (test-extend--tool-messages)))))))

;;; Skills

(defun test-extend--system (body)
  "Return the system prompt of the request BODY."
  (alist-get 'content (car (alist-get 'messages body))))

(ert-deftest test-extend/skills-offer-descriptions-then-the-body ()
  "The first request has only the description; load_skill brings the body."
  (agent-shell-test-with-project
      (root '((".agents/skills/release/SKILL.md"
               . "---\nname: release\ndescription: 发布 Cut a release of the project\n---\n# Release\n第一步 step one: tag\n")
              (".agents/skills/release/scripts/tag.sh" . "git tag v1\n")))
    (let ((agent-shell-skills-directories nil))
      (test-shell--bridge)
      (let ((shell (test-shell--start-session root)))
        (unwind-protect
            (with-current-buffer shell
              (switch-to-buffer shell)
              (test-extend--prompt "ext-skill-go please" "ext-skill 看到 seen.")
              (let ((first (test-extend--system (test-extend--request-for "ext-skill-go"))))
                (should (string-search "release (project): 发布 Cut a release" first))
                (should-not (string-search "第一步 step one" first)))
              (let ((result (cl-find-if (lambda (m) (string-search "第一步 step one: tag" m))
                                        (test-extend--tool-messages))))
                (should (string-search "scripts/tag.sh" result))
                (should (string-search "the project's own text" result)))
              ;; "/release" loads it explicitly.
              (test-extend--prompt "/release 第二 explicit: tag it" "ext-skill-explicit 看到 seen.")
              (should (string-search "第一步 step one"
                                     (test-extend--last-user "第二 explicit")))
              ;; M-x agent-shell-skills lists it.
              (agent-shell-skills root)
              (with-current-buffer "*agent-shell skills*"
                (should (string-search "发布 Cut a release" (buffer-string)))
                (should (string-search "project" (buffer-string)))
                (kill-buffer)))
          (when (buffer-live-p shell) (kill-buffer shell)))))))

(ert-deftest test-extend/tools-lists-every-tool-with-its-source ()
  "`agent-shell-tools' shows built-in and user tools in a tabulated list."
  (let ((agent-shell-extend--tools nil))
    (agent-shell-define-tool :name "ext_listed" :description "Listed 列出."
                             :risk 'exec :function #'ignore)
    (agent-shell-tools)
    (with-current-buffer "*agent-shell tools*"
      (should (derived-mode-p 'tabulated-list-mode))
      (let ((text (buffer-string)))
        (should (string-search "ext_listed" text))
        (should (string-search "Listed 列出." text))
        (should (string-search "buffer_overview" text))
        (should (string-search "built-in (Emacs)" text)))
      (kill-buffer))))

(provide 'test-extend)
;;; test-extend.el ends here
