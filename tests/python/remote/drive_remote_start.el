;;; drive_remote_start.el --- Emacs side of the remote start tests  -*- lexical-binding: t; -*-

;;; Commentary:

;; Run in `emacs -Q --batch' by test_remote_emacs.py against its sshd and by
;; test_remote_container_emacs.py against a container: Dired on the
;; remote project through TRAMP, `agent-shell-start' there, one prompt, the
;; edit approved, the project's allowlist trusted; what Emacs saw is printed
;; between markers.

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
      agent-shell-remote-ssh-options (split-string (getenv "AS_SSH_OPTIONS") "\n" t)
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

(condition-case err
    (let ((dired-buffer (dired-noselect (getenv "AS_TRAMP_DIR"))))
      (with-current-buffer dired-buffer
        (let ((shell (agent-shell-start)))
          (with-current-buffer shell
            (drive-wait "the session" (lambda () (agent-shell-session-id agent-shell--session)) 60)
            (goto-char (point-max))
            (insert "make the test pass 远程")
            (agent-shell-send-input)
            (drive-wait "the edit's permission request"
                        (lambda () (ignore-errors (agent-shell-permissions-choose "Approve")))
                        60)
            (agent-shell-approve)
            (drive-wait "the end of the turn"
                        (lambda () (and (eq (agent-shell-session-state agent-shell--session) 'idle)
                                        (string-search "fixed remotely" (buffer-string))))
                        60)
            (drive-print "HEADER" (agent-shell-header-line))
            (drive-print "TRANSCRIPT" (buffer-substring-no-properties (point-min) (point-max)))
            ;; The project's allowlist, trusted from this buffer: Emacs reads the
            ;; file through TRAMP, the bridge reads it again through its connection.
            ;; (Only where the test says the project ships one.)
            (when (getenv "AS_TRUST_ALLOWLIST")
              (let ((said nil))
                (advice-add 'message :after
                            (lambda (format-string &rest args)
                              (when (and (stringp format-string)
                                         (string-prefix-p "Trust" format-string))
                                (setq said (apply #'format format-string args))))
                            '((name . drive-trust)))
                (agent-shell-trust-allowlist nil nil)
                (drive-wait "the trust" (lambda () said) 60)
                (drive-print "TRUSTED" said)))
            (kill-emacs 0)))))
  (error (princ (format "DRIVER-ERROR %S\n" err))
         (kill-emacs 3)))

;;; drive_remote_start.el ends here
