;;; drive_remote_undo.el --- Emacs side of test_remote_undo.py  -*- lexical-binding: t; -*-

;;; Commentary:

;; Run by the test in `emacs -Q --batch' against its sshd: a turn edits a
;; remote file (approved here) while a buffer visits it through TRAMP; then
;; `agent-shell-undo-turn' puts it back, and index entries planted in the
;; mirror (a name climbing out, a host symlink out of the project) are
;; refused.  What Emacs saw is printed between markers.

;;; Code:

(load (expand-file-name "drive_common.el" (file-name-directory load-file-name)) nil t)
(require 'agent-shell-undo)

;; The review after an edit is tested elsewhere; here each turn is one script.
(setq agent-shell-review-changes nil)

(defun drive-plant (mirror turn path)
  "Append to MIRROR's index an edit of PATH by TURN, as a tampered index would."
  (let ((snapshots (expand-file-name ".agent-shell/snapshots/" mirror)))
    (make-directory (expand-file-name "planted/" snapshots) t)
    (with-temp-file (expand-file-name "planted/x" snapshots) (insert "planted\n"))
    (agent-shell-actions-append-index
     mirror `((op_id . "planted") (turn_id . ,turn) (path . ,path) (existed . t)
              (snapshot . "planted/x") (sha256_after . ,(make-string 64 ?0))))))

(defun drive-error (thunk)
  "Return the message of the error THUNK signals, or \"NO ERROR\"."
  (condition-case err (progn (funcall thunk) "NO ERROR")
    (error (error-message-string err))))

(condition-case err
    (let* ((dir (getenv "AS_TRAMP_DIR"))
           (visiting (find-file-noselect (concat dir "app.py")))
           (dired-buffer (dired-noselect dir)))
      (with-current-buffer dired-buffer
        (let ((shell (agent-shell-start)))
          (with-current-buffer shell
            (drive-wait "the session" (lambda () (agent-shell-session-id agent-shell--session)) 60)
            (goto-char (point-max))
            (insert "fix it 远程")
            (agent-shell-send-input)
            (drive-wait "the edit's permission request"
                        (lambda () (ignore-errors (agent-shell-permissions-choose "Approve")))
                        60)
            (agent-shell-approve)
            (drive-wait "the end of the turn"
                        (lambda () (and (eq (agent-shell-session-state agent-shell--session) 'idle)
                                        (string-search "edited 已改" (buffer-string))))
                        60)
            (with-current-buffer visiting
              (unless (verify-visited-file-modtime visiting) (revert-buffer t t t))
              (drive-print "AFTER-TURN" (buffer-string)))
            (drive-print "RESTORED"
                         (format "%S" (agent-shell-undo-turn
                                       (agent-shell-session-root agent-shell--session))))
            (with-current-buffer visiting
              (drive-print "BUFFER" (buffer-string))
              (drive-print "MODIFIED" (format "%S" (buffer-modified-p))))
            ;; A second turn edits again; rewinding the code to before it
            ;; puts the host's file back (the conversation is kept).
            (goto-char (point-max))
            (insert "again 再来")
            (agent-shell-send-input)
            (drive-wait "the second permission request"
                        (lambda () (ignore-errors (agent-shell-permissions-choose "Approve")))
                        60)
            (agent-shell-approve)
            (drive-wait "the end of the second turn"
                        (lambda () (and (eq (agent-shell-session-state agent-shell--session) 'idle)
                                        (string-search "again 又改" (buffer-string))))
                        60)
            (pcase-let* ((`(,conn ,root ,sid) (agent-shell-undo--shell-session))
                         (turns (append (alist-get 'turns (agent-shell-undo--request
                                                           conn "session/turns"
                                                           `((sessionId . ,sid))))
                                        nil))
                         (last (alist-get 'turnId (car (last turns)))))
              (with-current-buffer visiting
                (revert-buffer t t t)
                (drive-print "AFTER-SECOND" (buffer-string)))
              (agent-shell-undo-rewind-to root sid last (list last) nil t)
              (with-current-buffer visiting
                (drive-print "REWOUND" (buffer-string))))
            (let ((mirror (agent-shell-remote-mirror dir)))
              (drive-print "MIRROR" mirror)
              (drive-plant mirror "t-climb" "../outside.txt")
              (drive-plant mirror "t-link" "out/secret.txt")
              (drive-plant mirror "t-git" ".git/config")
              (dolist (turn '("t-climb" "t-link" "t-git"))
                (drive-print (upcase turn)
                             (drive-error (lambda () (agent-shell-undo-turn dir turn))))))
            (drive-print "TRANSCRIPT" (buffer-substring-no-properties (point-min) (point-max)))
            (kill-emacs 0)))))
  (error (princ (format "DRIVER-ERROR %S\n" err))
         (dolist (buffer (buffer-list))
           (when (eq (buffer-local-value 'major-mode buffer) 'agent-shell-mode)
             (drive-print "FAILED-SHELL" (with-current-buffer buffer
                                           (buffer-substring-no-properties
                                            (point-min) (point-max))))))
         (kill-emacs 3)))

;;; drive_remote_undo.el ends here
