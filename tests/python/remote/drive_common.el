;;; drive_common.el --- What the remote tests' Emacs drivers share  -*- lexical-binding: t; -*-

;;; Commentary:

;; Loaded first by each drive_*.el: the package and TRAMP set up from the
;; test's environment (its sshd's options, the scripted model), and the
;; two helpers every driver uses: waiting for a condition, and printing
;; what Emacs saw between markers the test reads (emacs_drive.py).

;;; Code:

(require 'agent-shell)
(require 'tramp)
(require 'dired)

(setq tramp-persistency-file-name nil
      tramp-verbose 1
      tramp-use-ssh-controlmaster-options t
      ;; The test's identity and known hosts (%c of TRAMP's ssh command line).
      tramp-ssh-controlmaster-options (getenv "AS_TRAMP_SSH")
      agent-shell-api-base (getenv "AS_API_BASE")
      agent-shell-api-key "sk-remote-test-key"
      agent-shell-remote-ssh-options (split-string (or (getenv "AS_SSH_OPTIONS") "") "\n" t)
      agent-shell-log-notify-on-wait nil)

(defun drive-wait (what pred seconds)
  "Wait for PRED (WHAT, for the error) at most SECONDS."
  (let ((deadline (+ (float-time) seconds)))
    (while (not (funcall pred))
      (when (> (float-time) deadline)
        (error "Timed out waiting for %s" what))
      (accept-process-output nil 0.05))))

(defun drive-print (tag text)
  "Print TEXT between markers named TAG."
  (princ (format "%s-BEGIN\n%s\n%s-END\n" tag text tag)))

(provide 'drive_common)
;;; drive_common.el ends here
