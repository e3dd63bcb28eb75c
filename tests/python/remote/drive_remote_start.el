;;; drive_remote_start.el --- Emacs side of the remote start tests  -*- lexical-binding: t; -*-

;;; Commentary:

;; Run in `emacs -Q --batch' by test_remote_emacs.py against its sshd and by
;; test_remote_container_emacs.py against a container: Dired on the
;; remote project through TRAMP, `agent-shell-start' there, one prompt, the
;; edit approved, the project's allowlist trusted; what Emacs saw is printed
;; between markers.

;;; Code:

(load (expand-file-name "drive_common.el" (file-name-directory load-file-name)) nil t)

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
