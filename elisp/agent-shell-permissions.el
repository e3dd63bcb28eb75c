;;; agent-shell-permissions.el --- Requests from the bridge: tools and permissions  -*- lexical-binding: t; -*-

;; SPDX-License-Identifier: GPL-3.0-or-later

;;; Commentary:

;; The handlers of what the bridge sends: session updates and action-log
;; entries go to their buffers, `tool/call' runs an Emacs-side tool, and
;; `session/request_permission' waits in the action log for the user's key.

;;; Code:

(require 'cl-lib)
(require 'agent-shell-session)
(require 'subr-x)
(require 'agent-shell-custom)
(require 'agent-shell-rpc)
(require 'agent-shell-log)
(require 'agent-shell-log-keys)
(require 'agent-shell-tools)
(require 'agent-shell-bridge)
(require 'agent-shell-grants)

;;; Internals: handlers of bridge messages

(cl-defmethod agent-shell-rpc-handle (_conn (_m (eql session/update)) params _id)
  "Render the `session/update' notification PARAMS in its shell buffer."
  (when-let ((buffer (agent-shell-bridge--session-buffer (alist-get 'sessionId params))))
    (with-current-buffer buffer
      (agent-shell-transcript--apply-update (alist-get 'update params))))
  nil)

(cl-defmethod agent-shell-rpc-handle (_conn (_m (eql log/entry)) params _id)
  "Add the `log/entry' PARAMS to the session's action log.
The experiences recalled for a turn are also named in its shell buffer."
  (when-let ((log (agent-shell-bridge--log-buffer-for (alist-get 'session_id params))))
    (agent-shell-log-insert-entry log params))
  (agent-shell-lifecycle--show-recalled params)
  nil)

(cl-defmethod agent-shell-rpc-handle (_conn (_m (eql log/update)) params _id)
  "Apply the `log/update' PARAMS to the session's action log."
  (when-let ((log (agent-shell-bridge--log-buffer-for (alist-get 'session_id params))))
    (agent-shell-log-apply-update log params))
  nil)

(defun agent-shell-permissions--run-tool (conn id params)
  "Run the tool of `tool/call' PARAMS and answer request ID on CONN."
  (let ((outcome
         (condition-case err
             (cons 'ok (agent-shell-tools-call (alist-get 'name params)
                                               (alist-get 'arguments params)
                                               (alist-get 'context params)))
           (agent-shell-tool-error (cons 'error (format "%s" (cadr err))))
           (error (cons 'error (format "%s failed: %s" (alist-get 'name params)
                                       (error-message-string err)))))))
    (if (eq (car outcome) 'ok)
        (agent-shell-rpc-respond conn id (cdr outcome))
      (agent-shell-rpc-respond-error conn id agent-shell-rpc-code-tool-failed
                                    (cdr outcome)))))

(cl-defmethod agent-shell-rpc-handle (conn (_m (eql tool/call)) params id)
  "Answer the `tool/call' request ID with PARAMS on CONN."
  (agent-shell-permissions--run-tool conn id params)
  nil)

(cl-defmethod agent-shell-rpc-handle (conn (_m (eql session/request_permission))
                                           params id)
  "Keep the permission request ID with PARAMS on CONN until the user decides."
  (let* ((key (format "%s" (or (alist-get 'logEntryId params) id)))
         (session (alist-get 'sessionId params))
         (title (or (alist-get 'title (alist-get 'toolCall params)) "a step")))
    (setf (agent-shell-bridge-permissions agent-shell-bridge--current)
          (append (agent-shell-bridge-permissions agent-shell-bridge--current)
                  (list (agent-shell-bridge-permission-create
                         :key key :conn conn :id id :session session
                         :params params))))
    (when-let ((buffer (agent-shell-bridge--session-buffer session)))
      (with-current-buffer buffer
        (agent-shell-transcript--note-waiting
         (alist-get 'toolCallId (alist-get 'toolCall params))
         (agent-shell-transcript--notice
          (format "Waiting for you: %s — y/n in the log (C-c C-l), \
or C-c C-y / C-c C-n here%s" title
                  (if-let ((note (alist-get 'note params))) (concat "\n" note) "")))
         title)
        (agent-shell-header--set-state 'waiting))))
  nil)

(defun agent-shell-permissions--grant-text (params)
  "Return the scope of an `allow_session' answer to permission PARAMS.
The bridge's own description (PARAMS' `grant') is used when present."
  (let* ((described (alist-get 'description (alist-get 'grant params)))
         (call (alist-get 'toolCall params))
         (input (alist-get 'rawInput call))
         (command (and (consp input) (alist-get 'command input)))
         (title (or (alist-get 'title call) "this step")))
    (cond ((stringp described) described)
          ((stringp command)
           (format "the command `%s' in the same directory" command))
          (t (format "%s on any file" (car (split-string title " " t)))))))

(defun agent-shell-permissions--entry-grant-text (entry-id)
  "Return what approving log entry ENTRY-ID for the session grants, or nil.
This is `agent-shell-log-grant-function'."
  (when-let ((permission (agent-shell-permissions--waiting-p entry-id)))
    (agent-shell-permissions--grant-text
     (agent-shell-bridge-permission-params permission))))

(defun agent-shell-permissions--show-decision (permission decision reason)
  "Show in the shell buffer that PERMISSION was answered with DECISION.
The waiting notice becomes the decision; REASON goes with a rejection.
An `approve-session' decision is remembered as a grant."
  (let* ((params (agent-shell-bridge-permission-params permission))
         (call-id (alist-get 'toolCallId (alist-get 'toolCall params))))
    (agent-shell-transcript--resolve-waiting
     call-id
     (pcase decision
       ('approve "Approved: %s")
       ('approve-session "Approved for this session: %s")
       (_ (concat "Rejected: %s"
                  (if reason (concat " — " (string-replace "%" "%%" reason)) "")))))
    (when (eq decision 'approve-session)
      (let ((what (agent-shell-permissions--grant-text params)))
        (push what (agent-shell-session-grants agent-shell--session))
        (agent-shell-transcript--notice (format "Allowed for this session: %s" what))
        (force-mode-line-update)))))

(defun agent-shell-permissions--option-id (decision)
  "Return the permission option id of DECISION."
  (pcase decision
    ('approve "allow_once")
    ('approve-session "allow_session")
    (_ "reject_once")))

(defun agent-shell-permissions--answer (permission decision reason)
  "Answer PERMISSION (an `agent-shell-bridge-permission') with DECISION and REASON.
The request stays pending until the bridge has accepted the answer,
so a decision that could not be delivered can be given again."
  (when (agent-shell-bridge-permission-sending permission)
    (user-error "That decision is being sent"))
  (setf (agent-shell-bridge-permission-sending permission) t)
  (setf (agent-shell-bridge-permission-decision permission) (cons decision reason))
  (let ((done nil))
    (unwind-protect
        (progn
          (agent-shell-rpc-respond
           (agent-shell-bridge-permission-conn
            permission) (agent-shell-bridge-permission-id permission)
           `((outcome . ((outcome . "selected")
                         (optionId . ,(agent-shell-permissions--option-id decision))))
             ,@(and reason `((reason . ,reason))))
           (lambda (ok) (agent-shell-permissions--answered permission ok)))
          (setq done t))
      (unless done
        (setf (agent-shell-bridge-permission-sending permission) nil)))))

(defun agent-shell-permissions--answered (permission ok)
  "Finish answering PERMISSION; OK is nil when the answer was not delivered."
  (setf (agent-shell-bridge-permission-sending permission) nil)
  (let ((buffer (agent-shell-bridge--session-buffer
                 (agent-shell-bridge-permission-session permission))))
    (if (not ok)
        (progn
          (agent-shell-log-unsend (agent-shell-bridge--log-buffer-for
                                   (agent-shell-bridge-permission-session permission))
                                  (agent-shell-bridge-permission-key permission))
          (message "agent-shell: the decision did not reach the bridge; give it again"))
      (setf (agent-shell-bridge-permissions agent-shell-bridge--current)
            (delq permission (agent-shell-bridge-permissions agent-shell-bridge--current)))
      (when buffer
        (with-current-buffer buffer
          (let ((decision (agent-shell-bridge-permission-decision permission)))
            (agent-shell-permissions--show-decision permission (car decision)
                                                    (cdr decision)))
          (unless (cl-find (agent-shell-session-id agent-shell--session)
                           (agent-shell-bridge-permissions agent-shell-bridge--current)
                           :key #'agent-shell-bridge-permission-session :test #'equal)
            (agent-shell-header--set-state
             (if (agent-shell-session-turn-id agent-shell--session) 'thinking 'idle))))))))

(defun agent-shell-permissions--waiting-p (entry-id)
  "Return non-nil when a permission request waits for log entry ENTRY-ID."
  (cl-find (format "%s" entry-id)
           (agent-shell-bridge-permissions agent-shell-bridge--current)
           :key #'agent-shell-bridge-permission-key :test #'equal))

(defun agent-shell-permissions-log-decide (entry-id decision reason)
  "Answer the permission request of log entry ENTRY-ID with DECISION.
DECISION is `approve', `reject' or `approve-session'; REASON is a
string or nil.  This is `agent-shell-log-decision-function'."
  (let ((permission
         (cl-find (format "%s" entry-id)
                  (agent-shell-bridge-permissions agent-shell-bridge--current)
                  :key #'agent-shell-bridge-permission-key
                  :test #'equal)))
    (unless permission
      (user-error "No permission request waits for that step"))
    (agent-shell-permissions--answer permission decision reason)))

(setq agent-shell-log-decision-function #'agent-shell-permissions-log-decide)
(setq agent-shell-log-answerable-function #'agent-shell-permissions--waiting-p)
(setq agent-shell-log-grant-function #'agent-shell-permissions--entry-grant-text)
(define-key agent-shell-log-mode-map (kbd "G") #'agent-shell-grants)

;;; Obsolete names

(define-obsolete-function-alias 'agent-shell-log-decide
  #'agent-shell-permissions-log-decide "0.2")

(provide 'agent-shell-permissions)
;;; agent-shell-permissions.el ends here
