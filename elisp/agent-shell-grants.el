;;; agent-shell-grants.el --- List and revoke a session's grants  -*- lexical-binding: t; -*-

;; SPDX-License-Identifier: GPL-3.0-or-later

;;; Commentary:

;; "Allow for this session" (`a' in the action log) grants one exact
;; command in one directory, or one kind of edit, for the rest of a
;; session.  `agent-shell-grants' shows what a session has granted in a
;; tabulated list, asked from the bridge (`session/grants'), and revokes
;; grants there (`session/revoke_grant'): `k' revokes the grant at point,
;; `d' marks one and `x' revokes the marked ones, `g' asks again.
;;
;; agent-shell.el requires this file; requests go through its
;; `agent-shell-bridge-request'.

;;; Code:

(require 'cl-lib)
(require 'agent-shell-session)
(require 'subr-x)
(require 'tabulated-list)
(require 'agent-shell-bridge)

;; Defined in agent-shell.el.
(declare-function agent-shell-log-buffer "agent-shell-log" (name))

;;; Internals

(defvar-local agent-shell-grants--session nil
  "Session id whose grants this buffer lists.")

(defvar-local agent-shell-grants--list nil
  "The grants last received from the bridge, as alists.")

(defun agent-shell-grants--shells ()
  "Return the live shell buffers that have a session."
  (let (shells)
    (maphash (lambda (id _)
               (when-let ((buffer (agent-shell-bridge-session-buffer id)))
                 (push buffer shells)))
             (agent-shell-bridge-sessions agent-shell-bridge--current))
    (nreverse shells)))

(defun agent-shell-grants--shell-here ()
  "Return the shell buffer the current buffer belongs to, or nil."
  (cl-find-if (lambda (shell)
                (or (eq shell (current-buffer))
                    (and (derived-mode-p 'agent-shell-log-mode)
                         (eq (current-buffer)
                             (get-buffer (format "*agent-shell-log: %s*"
                                                 (agent-shell-session-name
                                                  (buffer-local-value 'agent-shell--session
                                                                      shell))))))
                    (equal agent-shell-grants--session
                           (agent-shell-session-id
                            (buffer-local-value 'agent-shell--session shell)))))
              (agent-shell-grants--shells)))

(defun agent-shell-grants--choose-shell ()
  "Return the shell whose grants to show, asking when it is not clear."
  (let ((shells (agent-shell-grants--shells)))
    (or (agent-shell-grants--shell-here)
        (cond ((null shells) (user-error "No agent-shell session is running"))
              ((null (cdr shells)) (car shells))
              (t (get-buffer (completing-read "Grants of which session? "
                                              (mapcar #'buffer-name shells) nil t)))))))

(defun agent-shell-grants--what (grant)
  "Return the short scope of GRANT: its command, or the files it may edit."
  (if (equal (alist-get 'kind grant) "command")
      (format "`%s'" (alist-get 'command grant))
    "any file of the project"))

(defun agent-shell-grants--entries (grants)
  "Return `tabulated-list-entries' for GRANTS."
  (mapcar (lambda (grant)
            (list (alist-get 'id grant)
                  (vector (or (alist-get 'kind grant) "")
                          (or (alist-get 'tool grant) "")
                          (propertize (agent-shell-grants--what grant)
                                      'help-echo (alist-get 'description grant))
                          (abbreviate-file-name (or (alist-get 'cwd grant) "")))))
          grants))

(defun agent-shell-grants--show (buffer grants)
  "Show GRANTS (a list of alists from the bridge) in the grants BUFFER.
The shell's header line count follows."
  (when (buffer-live-p buffer)
    (with-current-buffer buffer
      (setq agent-shell-grants--list grants
            tabulated-list-entries (agent-shell-grants--entries grants))
      (tabulated-list-print t)
      (when-let ((shell (agent-shell-bridge-session-buffer agent-shell-grants--session)))
        (with-current-buffer shell
          (setf (agent-shell-session-grants agent-shell--session)
                (mapcar (lambda (g) (alist-get 'description g)) grants))
          (force-mode-line-update))))))

(defun agent-shell-grants--fetch (buffer)
  "Ask the bridge for the grants of BUFFER's session and show them."
  (let ((session (buffer-local-value 'agent-shell-grants--session buffer)))
    (agent-shell-bridge-request
     "session/grants" `((sessionId . ,session))
     :on-success (lambda (result)
                   (agent-shell-grants--show buffer
                                             (append (alist-get 'grants result) nil)))
     :on-error (lambda (err)
                 (message "agent-shell: listing grants failed: %s"
                          (alist-get 'message err))))))

(defun agent-shell-grants--revoke (buffer ids)
  "Revoke the grants with IDS of BUFFER's session, one after the other."
  (when ids
    (let ((session (buffer-local-value 'agent-shell-grants--session buffer)))
      (agent-shell-bridge-request
       "session/revoke_grant" `((sessionId . ,session) (grantId . ,(car ids)))
       :on-success
       (lambda (result)
         (message "Revoked: %s" (alist-get 'description (alist-get 'revoked result)))
         (agent-shell-grants--show buffer (append (alist-get 'grants result) nil))
         (agent-shell-grants--revoke buffer (cdr ids)))
       :on-error
       (lambda (err)
         (message "agent-shell: revoking failed: %s" (alist-get 'message err))
         (agent-shell-grants--fetch buffer))))))

(defun agent-shell-grants--id-at-point ()
  "Return the id of the grant at point, or signal a `user-error'."
  (or (tabulated-list-get-id) (user-error "No grant on this line")))

;;; Commands

;;;###autoload
(defun agent-shell-grants ()
  "List what \"allow for this session\" has granted, and revoke grants.
The session is the current shell's (or the one of the current log);
with several sessions and none current, ask which.
\\<agent-shell-grants-mode-map>\\[agent-shell-grants-revoke] revokes the grant \
at point, \\[agent-shell-grants-mark] marks one and \
\\[agent-shell-grants-revoke-marked] revokes the marked ones."
  (interactive)
  (let* ((shell (agent-shell-grants--choose-shell))
         (session (agent-shell-session-id (buffer-local-value 'agent-shell--session shell)))
         (buffer (get-buffer-create
                  (format "*agent-shell grants: %s*"
                          (agent-shell-session-name
                           (buffer-local-value 'agent-shell--session shell))))))
    (with-current-buffer buffer
      (agent-shell-grants-mode)
      (setq agent-shell-grants--session session)
      (tabulated-list-print))
    (agent-shell-grants--fetch buffer)
    (pop-to-buffer buffer)
    buffer))

(defun agent-shell-grants-revoke ()
  "Revoke the grant at point now; the next such step asks again."
  (interactive)
  (agent-shell-grants--revoke (current-buffer) (list (agent-shell-grants--id-at-point))))

(defun agent-shell-grants-mark ()
  "Mark the grant at point for revoking with \\[agent-shell-grants-revoke-marked]."
  (interactive)
  (agent-shell-grants--id-at-point)
  (tabulated-list-put-tag "D" t))

(defun agent-shell-grants-unmark ()
  "Remove the mark of the grant at point."
  (interactive)
  (agent-shell-grants--id-at-point)
  (tabulated-list-put-tag " " t))

(defun agent-shell-grants-revoke-marked ()
  "Revoke every grant marked with \\[agent-shell-grants-mark]."
  (interactive)
  (let (ids)
    (save-excursion
      (goto-char (point-min))
      (while (not (eobp))
        (when (and (tabulated-list-get-id) (eq (char-after) ?D))
          (push (tabulated-list-get-id) ids))
        (forward-line 1)))
    (unless ids (user-error "No grant is marked (mark one with d)"))
    (agent-shell-grants--revoke (current-buffer) (nreverse ids))))

(defun agent-shell-grants-refresh ()
  "Ask the bridge for the session's grants again."
  (interactive)
  (agent-shell-grants--fetch (current-buffer)))

(defun agent-shell-grants-describe ()
  "Show in the echo area the full description of the grant at point."
  (interactive)
  (let* ((id (agent-shell-grants--id-at-point))
         (grant (cl-find id agent-shell-grants--list
                         :key (lambda (g) (alist-get 'id g)) :test #'equal)))
    (message "%s" (alist-get 'description grant))))

(defvar agent-shell-grants-mode-map
  (let ((map (make-sparse-keymap)))
    (define-key map (kbd "k") #'agent-shell-grants-revoke)
    (define-key map (kbd "d") #'agent-shell-grants-mark)
    (define-key map (kbd "u") #'agent-shell-grants-unmark)
    (define-key map (kbd "x") #'agent-shell-grants-revoke-marked)
    (define-key map (kbd "g") #'agent-shell-grants-refresh)
    (define-key map (kbd "RET") #'agent-shell-grants-describe)
    map)
  "Keymap of `agent-shell-grants-mode'.")

(define-derived-mode agent-shell-grants-mode tabulated-list-mode "Agent-Grants"
  "Major mode listing what a session allowed \"for this session\".
Each line is one grant: an exact command in one directory, or one
kind of edit.  Revoking takes effect at once in the bridge.

\\{agent-shell-grants-mode-map}"
  (setq tabulated-list-format [("Kind" 8 t) ("Tool" 14 t) ("Allows" 40 nil)
                               ("Directory" 0 nil)]
        tabulated-list-padding 2)
  (tabulated-list-init-header))

(provide 'agent-shell-grants)
;;; agent-shell-grants.el ends here
