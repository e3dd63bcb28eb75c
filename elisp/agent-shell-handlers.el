;;; agent-shell-handlers.el --- What Emacs does with each message of the bridge  -*- lexical-binding: t; -*-

;; SPDX-License-Identifier: GPL-3.0-or-later

;;; Commentary:

;; Every message the bridge sends (agent-shell-rpc-protocol.el dispatches
;; it) has its method of `agent-shell-rpc-handle' here, one per message,
;; each handing it to the part that shows or answers it:
;;
;; - `session/update' to the session's transcript (agent-shell-transcript.el);
;; - `log/entry' and `log/update' to its action log (agent-shell-log.el);
;; - `log/file' (a long session's log went on in a new file) to the
;;   session's record;
;; - `tool/call' to the Emacs-side tools (agent-shell-tools.el), answered
;;   with the tool's result or error; a remote session's to the few that
;;   look at its buffers (agent-shell-remote-files.el), under the
;;   session's own remote root;
;; - `session/request_permission' to the steps waiting for the user
;;   (agent-shell-permissions.el), answered once the user decides;
;; - `session/request_plan' to the plan buffer (agent-shell-plan.el),
;;   answered once the user approves or rejects the plan;
;; - `session/ask_user' to the shell buffer (agent-shell-ask.el),
;;   answered with an option or the user's words;
;; - `remote/buffer_read' and `remote/buffer_write' (a remote session's
;;   file, through the buffer visiting it) to agent-shell-remote-files.el,
;;   checked against the session's remote root.
;;
;; A message without a method here gets the generic function's default:
;; a warning, and for a request an error answer.

;;; Code:

(require 'cl-lib)
(require 'subr-x)
(require 'agent-shell-session)
(require 'agent-shell-rpc)
(require 'agent-shell-bridge)
(require 'agent-shell-log)
(require 'agent-shell-tools)
(require 'agent-shell-plan)
(require 'agent-shell-permissions)
(require 'agent-shell-diagnostics)
(require 'agent-shell-ask)
(require 'agent-shell-remote)
(require 'agent-shell-remote-files)

;;; Notifications

(cl-defmethod agent-shell-rpc-handle (_conn (_m (eql session/update)) params _id)
  "Render the `session/update' notification PARAMS in its shell buffer."
  (when-let ((buffer (agent-shell-bridge-session-buffer (alist-get 'sessionId params))))
    (with-current-buffer buffer
      (agent-shell-transcript-apply-update (alist-get 'update params))))
  nil)

(cl-defmethod agent-shell-rpc-handle (_conn (_m (eql log/entry)) params _id)
  "Add the `log/entry' PARAMS to the session's action log.
The experiences recalled for a turn are also named in its shell buffer."
  (when-let ((log (agent-shell-bridge-log-buffer-for (alist-get 'session_id params))))
    (agent-shell-log-insert-entry log params))
  (agent-shell-lifecycle-show-recalled params)
  nil)

(cl-defmethod agent-shell-rpc-handle (_conn (_m (eql log/update)) params _id)
  "Apply the `log/update' PARAMS to the session's action log."
  (when-let ((log (agent-shell-bridge-log-buffer-for (alist-get 'session_id params))))
    (agent-shell-log-apply-update log params))
  nil)

(cl-defmethod agent-shell-rpc-handle (_conn (_m (eql log/file)) params _id)
  "Note the session's new log file from the `log/file' PARAMS.
The bridge rotates a long session's log before it gets too large to
open; the live log buffer goes on as it is, its review commands now
reading the new file."
  (when-let ((buffer (agent-shell-bridge-session-buffer (alist-get 'sessionId params)))
             (path (alist-get 'logPath params)))
    (with-current-buffer buffer
      (when agent-shell--session
        (setf (agent-shell-session-log-path agent-shell--session) path)
        (agent-shell-log-follow-file
         (agent-shell-log-buffer (agent-shell-session-name agent-shell--session))
         path))))
  nil)

;;; Requests

(defun agent-shell-handlers--run-tool (conn id params)
  "Run the tool of `tool/call' PARAMS and answer request ID on CONN.
In a remote session the tool runs on the buffers visiting files under
the session's own remote root, whatever root the context names."
  (let ((outcome
         (condition-case err
             (cons 'ok (let ((remote (agent-shell-handlers--remote-root params)))
                         (if (or remote (eq (alist-get 'remote (alist-get 'context params)) t))
                             ;; A remote session's whose shell buffer is gone: refused.
                             (agent-shell-remote-files-tool remote
                                                            (alist-get 'name params)
                                                            (alist-get 'arguments params))
                           (agent-shell-tools-call (alist-get 'name params)
                                                   (alist-get 'arguments params)
                                                   (alist-get 'context params)))))
           (agent-shell-tool-error (cons 'error (format "%s" (cadr err))))
           (error (cons 'error (format "%s failed: %s" (alist-get 'name params)
                                       (error-message-string err)))))))
    (if (eq (car outcome) 'ok)
        (agent-shell-diagnostics-add-to-edit
         (alist-get 'name params) (alist-get 'context params) (cdr outcome)
         (lambda (result) (agent-shell-rpc-respond conn id result)))
      (agent-shell-rpc-respond-error conn id agent-shell-rpc-code-tool-failed
                                    (cdr outcome)))))

(cl-defmethod agent-shell-rpc-handle (conn (_m (eql tool/call)) params id)
  "Answer the `tool/call' request ID with PARAMS on CONN."
  (agent-shell-handlers--run-tool conn id params)
  nil)

(cl-defmethod agent-shell-rpc-handle (conn (_m (eql session/request_permission))
                                           params id)
  "Keep the permission request ID with PARAMS on CONN until the user decides."
  (agent-shell-permissions-wait conn id params)
  nil)

(cl-defmethod agent-shell-rpc-handle (conn (_m (eql session/ask_user)) params id)
  "Show the model's question of request ID (PARAMS from CONN) until answered."
  (agent-shell-ask-wait conn id params)
  nil)

(cl-defmethod agent-shell-rpc-handle (conn (_m (eql session/request_plan)) params id)
  "Show the plan of request ID (PARAMS from CONN) for review."
  (agent-shell-plan-review conn params id)
  nil)

(defun agent-shell-handlers--remote-root (params)
  "Return the remote root of the session PARAMS name, or nil."
  (when-let ((buffer (agent-shell-bridge-session-buffer (alist-get 'sessionId params)))
             (session (buffer-local-value 'agent-shell--session buffer))
             (root (agent-shell-session-root session)))
    (and (agent-shell-remote-p root) root)))

(defun agent-shell-handlers--answer (conn id what thunk)
  "Answer request ID on CONN with the value of THUNK, or with its error.
WHAT names the request in an unexpected error's message."
  (let ((outcome (condition-case err
                     (cons 'ok (funcall thunk))
                   (agent-shell-tool-error (cons 'error (format "%s" (cadr err))))
                   (error (cons 'error (format "%s failed: %s" what
                                               (error-message-string err)))))))
    (if (eq (car outcome) 'ok)
        (agent-shell-rpc-respond conn id (cdr outcome))
      (agent-shell-rpc-respond-error conn id agent-shell-rpc-code-tool-failed
                                    (cdr outcome)))))

(cl-defmethod agent-shell-rpc-handle (conn (_m (eql remote/buffer_read)) params id)
  "Answer `remote/buffer_read' ID (PARAMS from CONN): the visiting buffer's text."
  (agent-shell-handlers--answer
   conn id "Reading the buffer"
   (lambda () (agent-shell-remote-files-read (agent-shell-handlers--remote-root params)
                                             (alist-get 'path params))))
  nil)

(cl-defmethod agent-shell-rpc-handle (conn (_m (eql remote/buffer_write)) params id)
  "Answer `remote/buffer_write' ID (PARAMS from CONN): written through the buffer."
  (agent-shell-handlers--answer
   conn id "Writing through the buffer"
   (lambda () (agent-shell-remote-files-write (agent-shell-handlers--remote-root params)
                                              (alist-get 'path params)
                                              (alist-get 'text params))))
  nil)

(provide 'agent-shell-handlers)
;;; agent-shell-handlers.el ends here
