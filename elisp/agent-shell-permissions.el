;;; agent-shell-permissions.el --- Steps waiting for the user's decision  -*- lexical-binding: t; -*-

;; SPDX-License-Identifier: GPL-3.0-or-later

;;; Commentary:

;; The bridge asks before a risky step with `session/request_permission'
;; (agent-shell-handlers.el hands it to `agent-shell-permissions-wait').
;; The request waits, one `agent-shell-bridge-permission' record in the
;; bridge's list, until the user answers: with y, n or a in the action log
;; (agent-shell-log-keys.el calls `agent-shell-permissions-log-decide'),
;; or with C-c C-y and C-c C-n in the shell buffer (agent-shell-turn.el,
;; which asks which step with `agent-shell-permissions-choose' when
;; several wait).  The request stays until the bridge has accepted the answer, so
;; a decision that did not reach it can be given again; the shell then
;; shows the decision, and an "allow for this session" as a grant.

;;; Code:

(require 'cl-lib)
(require 'subr-x)
(require 'agent-shell-session)
(require 'agent-shell-rpc)
(require 'agent-shell-log)
(require 'agent-shell-log-keys)
(require 'agent-shell-bridge)
(require 'agent-shell-grants)

;;; Waiting

(defcustom agent-shell-waiting-functions nil
  "Functions called when a step starts waiting for your decision.
Each is called in the session's shell buffer with the permission
request's params (an alist: `toolCall', `risk', `reason', `options').
Use it to be told (a notification, a sound) that the agent waits."
  :type 'hook
  :group 'agent-shell
  :package-version '(agent-shell . "0.4.0"))

(defun agent-shell-permissions-wait (conn id params)
  "Keep the permission request ID with PARAMS from CONN until the user decides.
Its shell buffer says what waits and where to answer."
  (let* ((key (format "%s" (or (alist-get 'logEntryId params) id)))
         (session (alist-get 'sessionId params))
         (title (or (alist-get 'title (alist-get 'toolCall params)) "a step")))
    (setf (agent-shell-bridge-permissions agent-shell-bridge--current)
          (append (agent-shell-bridge-permissions agent-shell-bridge--current)
                  (list (agent-shell-bridge-permission-create
                         :key key :conn conn :id id :session session
                         :params params))))
    (when-let ((buffer (agent-shell-bridge-session-buffer session)))
      (with-current-buffer buffer
        (agent-shell-transcript-note-waiting
         (alist-get 'toolCallId (alist-get 'toolCall params))
         (agent-shell-transcript-notice
          (format "Waiting for you: %s — y/n in the log (C-c C-l), \
or C-c C-y / C-c C-n here%s" title
                  (if-let ((note (alist-get 'note params))) (concat "\n" note) "")))
         title)
        (agent-shell-header-set-state 'waiting)
        (agent-shell-session-changed)
        (condition-case err
            (run-hook-with-args 'agent-shell-waiting-functions params)
          (error (message "agent-shell: a waiting hook failed: %s"
                          (error-message-string err))))))))

(defun agent-shell-permissions-choose (verb)
  "Return this session's waiting permission request the user means.
With one step waiting, that one; with several, ask which (VERB starts
the question), so no decision falls on a step the user did not name."
  (let ((waiting (cl-remove-if-not
                  (lambda (p) (and
                               (equal (agent-shell-bridge-permission-session p)
                                      (agent-shell-session-id agent-shell--session))
                               (not (agent-shell-bridge-permission-sending p))))
                  (agent-shell-bridge-permissions agent-shell-bridge--current))))
    (cond
     ((null waiting) (user-error "No step is waiting for a decision"))
     ((null (cdr waiting)) (car waiting))
     (t (let* ((n 0)
               (table (mapcar (lambda (p)
                                (cons (format "%d. %s" (cl-incf n)
                                              (or (alist-get 'title (alist-get 'toolCall
                                                                               (agent-shell-bridge-permission-params p)))
                                                  "a step"))
                                      p))
                              waiting)))
          (or (cdr (assoc (completing-read (format "%s which waiting step? " verb)
                                           table nil t)
                          table))
              (user-error "No step chosen")))))))

;;; Answering

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
    (agent-shell-transcript-resolve-waiting
     call-id
     (pcase decision
       ('approve "Approved: %s")
       ('approve-session "Approved for this session: %s")
       (_ (concat "Rejected: %s"
                  (if reason (concat " — " (string-replace "%" "%%" reason)) "")))))
    (when (eq decision 'approve-session)
      (let ((what (agent-shell-permissions--grant-text params)))
        (push what (agent-shell-session-grants agent-shell--session))
        (agent-shell-transcript-notice (format "Allowed for this session: %s" what))
        (force-mode-line-update)))))

(defun agent-shell-permissions--option-id (decision)
  "Return the permission option id of DECISION."
  (pcase decision
    ('approve "allow_once")
    ('approve-session "allow_session")
    (_ "reject_once")))

(defun agent-shell-permissions-answer (permission decision reason)
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
  (let ((buffer (agent-shell-bridge-session-buffer
                 (agent-shell-bridge-permission-session permission))))
    (if (not ok)
        (progn
          (agent-shell-log-unsend (agent-shell-bridge-log-buffer-for
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
            (agent-shell-header-set-state
             (if (agent-shell-session-turn-id agent-shell--session) 'thinking 'idle)))
          (agent-shell-session-changed))))))

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
    (agent-shell-permissions-answer permission decision reason)))

;;; The action log's keys

(setq agent-shell-log-decision-function #'agent-shell-permissions-log-decide)
(setq agent-shell-log-answerable-function #'agent-shell-permissions--waiting-p)
(setq agent-shell-log-grant-function #'agent-shell-permissions--entry-grant-text)
(define-key agent-shell-log-mode-map (kbd "G") #'agent-shell-grants)

;;; Obsolete names

(define-obsolete-function-alias 'agent-shell-log-decide
  #'agent-shell-permissions-log-decide "0.2")

(provide 'agent-shell-permissions)
;;; agent-shell-permissions.el ends here
