;;; drive_remote_perception.el --- Emacs side of test_remote_emacs_perception.py  -*- lexical-binding: t; -*-

;;; Commentary:

;; Run by the test in `emacs -Q --batch' against its sshd: a buffer visits
;; a file of the remote project over TRAMP (Chinese name and text, an
;; unsaved line, Flymake on with a backend that reports at once and
;; runs nothing on the host), another a file of the same host outside
;; the project; `agent-shell-start' runs in Dired there and one prompt
;; is sent.  The transcript is printed between markers.

;;; Code:

(load (expand-file-name "drive_common.el" (file-name-directory load-file-name)) nil t)
(require 'flymake)

(defun drive-backend (report &rest _)
  "Report one error on line 2 through REPORT, at once."
  (save-excursion
    (goto-char (point-min))
    (forward-line 1)
    (funcall report (list (flymake-make-diagnostic
                           (current-buffer) (point) (line-end-position) :error
                           "未定义的名字 加法")))))

(condition-case err
    (let* ((dir (getenv "AS_TRAMP_DIR"))
           (dired-buffer (dired-noselect dir))
           (outside (find-file-noselect (getenv "AS_TRAMP_OUTSIDE")))
           (visited (find-file-noselect (concat dir "src/说明.py"))))
      (with-current-buffer visited
        (setq-local flymake-diagnostic-functions '(drive-backend))
        (flymake-mode 1)
        (flymake-start nil t)
        (goto-char (point-max))
        (insert "# 用户未保存\n"))
      ;; The user's current file buffer is the project's.
      (switch-to-buffer visited)
      (princ (format "OUTSIDE-NAME %s\n" (buffer-name outside)))
      (with-current-buffer dired-buffer
        (let ((shell (agent-shell-start)))
          (with-current-buffer shell
            (drive-wait "the session" (lambda () (agent-shell-session-id agent-shell--session)) 60)
            (goto-char (point-max))
            (insert "what do I see 我看到什么")
            (agent-shell-send-input)
            (drive-wait "the end of the turn"
                        (lambda ()
                          (and (eq (agent-shell-session-state agent-shell--session) 'idle)
                               (string-search "seen 看过了" (buffer-string))))
                        90)
            (princ (format "TRANSCRIPT-BEGIN\n%s\nTRANSCRIPT-END\n"
                           (buffer-substring-no-properties (point-min) (point-max))))
            (with-current-buffer visited
              (flymake-mode -1)
              (set-buffer-modified-p nil))
            (kill-emacs 0)))))
  (error (princ (format "DRIVER-ERROR %S\n" err))
         (kill-emacs 3)))

;;; drive_remote_perception.el ends here
