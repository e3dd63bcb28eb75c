;;; drive_remote_buffers.el --- Emacs side of test_remote_buffers.py  -*- lexical-binding: t; -*-

;;; Commentary:

;; Run by the test in `emacs -Q --batch' against its sshd: buffers visit
;; three of the remote project's files over TRAMP (one with the user's
;; unsaved text, one a link out of the project), `agent-shell-start' runs in Dired there, one prompt,
;; every edit approved; what the buffers hold afterwards is printed
;; between markers.

;;; Code:

(load (expand-file-name "drive_common.el" (file-name-directory load-file-name)) nil t)

(defun drive-undo-once (buffer)
  "Undo BUFFER's newest change group; return its text then."
  (with-current-buffer buffer
    (let ((list buffer-undo-list))
      (while (and list (null (car list)))
        (pop list))
      (primitive-undo 1 list))
    (buffer-string)))

(condition-case err
    (let* ((dir (getenv "AS_TRAMP_DIR"))
           (dired-buffer (dired-noselect dir))
           (app (find-file-noselect (concat dir "app.py")))
           (notes (find-file-noselect (concat dir "notes.txt")))
           ;; A link out of the project: visited here, never read through.
           (link (find-file-noselect (concat dir "link.txt"))))
      (with-current-buffer notes
        (goto-char (point-max))
        (insert "用户未保存的修改\n"))
      (with-current-buffer dired-buffer
        (let ((shell (agent-shell-start)))
          (with-current-buffer shell
            (drive-wait "the session" (lambda () (agent-shell-session-id agent-shell--session)) 60)
            (goto-char (point-max))
            (insert "edit the remote files 远程")
            (agent-shell-send-input)
            ;; Every edit is approved as it comes, until the turn's last words.
            (drive-wait "the end of the turn"
                        (lambda ()
                          (when-let ((waiting (ignore-errors
                                                (agent-shell-permissions-choose "Approve"))))
                            (agent-shell-approve waiting))
                          (and (eq (agent-shell-session-state agent-shell--session) 'idle)
                               (string-search "edits done 完成" (buffer-string))))
                        90)
            (drive-print "TRANSCRIPT" (buffer-substring-no-properties (point-min) (point-max)))
            (drive-print "APP" (with-current-buffer app (buffer-string)))
            (drive-print "APP-MODIFIED" (if (buffer-modified-p app) "yes" "no"))
            (drive-print "NOTES" (with-current-buffer notes (buffer-string)))
            (drive-print "NOTES-MODIFIED" (if (buffer-modified-p notes) "yes" "no"))
            (drive-print "OTHER-BUFFER"
                         (if (let ((file-name-handler-alist nil))
                               (get-file-buffer (concat dir "other.py")))
                             "yes" "no"))
            ;; The agent's edit is one undo unit of the user's buffer.
            (drive-print "APP-UNDONE" (drive-undo-once app))
            (with-current-buffer app (set-buffer-modified-p nil))
            (with-current-buffer notes (set-buffer-modified-p nil))
            (kill-buffer link)
            (kill-emacs 0)))))
  (error (princ (format "DRIVER-ERROR %S\n" err))
         (kill-emacs 3)))

;;; drive_remote_buffers.el ends here
