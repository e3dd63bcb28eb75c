;;; test-remote.el --- Tests for agent-shell-remote.el  -*- lexical-binding: t; -*-

;; SPDX-License-Identifier: GPL-3.0-or-later

;;; Commentary:

;; A TRAMP root becomes the `remote' parameter of a session; methods that
;; run no commands are refused in one line; no connection is ever made
;; (the names below point at hosts that do not exist).

;;; Code:

(require 'ert)
(require 'agent-shell)
(require 'agent-shell-remote)
(require 'tramp)

(ert-deftest test-remote/ssh-root-becomes-the-remote-param ()
  (let* ((agent-shell-remote-ssh-options '("IdentityFile=/tmp/k"))
         (root "/ssh:dev@build.invalid#2222:/srv/应用/")
         (params (agent-shell-remote-session-params root)))
    (should (agent-shell-remote-p root))
    (should (equal (alist-get 'tramp (alist-get 'remote params))
                   "/ssh:dev@build.invalid#2222:/srv/应用"))
    (should (equal (alist-get 'sshOptions (alist-get 'remote params))
                   ["IdentityFile=/tmp/k"]))
    (should-not (agent-shell-remote-session-params "/srv/app/"))))

(ert-deftest test-remote/new-session-params-carry-it ()
  (let ((params (agent-shell-new-session-params "/scp:host.invalid:/srv/app/")))
    (should (equal (alist-get 'cwd params) "/scp:host.invalid:/srv/app"))
    (should (alist-get 'remote params))
    (should (equal (alist-get 'mode params) (symbol-name agent-shell-default-mode)))))

(ert-deftest test-remote/unusable-methods-are-refused-in-one-line ()
  (dolist (case '(("/sudo:root@localhost:/etc/" . "/sudo: runs no project commands")
                  ("/ftp:me@host.invalid:/pub/" . "/ftp: runs no project commands")
                  ("/ssh:a.invalid|ssh:b.invalid:/x/" . "several hops")))
    (let ((err (should-error (agent-shell-remote-session-params (car case))
                             :type 'user-error)))
      (should (string-search (cdr case) (cadr err)))
      (should-not (string-search "\n" (cadr err))))))

(ert-deftest test-remote/container-roots-need-their-program-here ()
  (dolist (method '("podman" "docker"))
    (let* ((root (format "/%s:web:/srv/应用/" method))
           (known (progn (file-remote-p root) (assoc method tramp-methods))))
      (should (equal (agent-shell-remote-refusal root)
                     (cond ((not (executable-find method))
                            (format "/%s: needs the %s program on this machine" method method))
                           ((not known)
                            (format "/%s: is not a method of this Emacs's TRAMP %s"
                                    method "(Emacs 29 or later has it)")))))
      (when (and known (executable-find method))
        (should (equal (alist-get 'tramp (alist-get 'remote
                                                    (agent-shell-remote-session-params root)))
                       (format "/%s:web:/srv/应用" method))))
      (let* ((exec-path nil)
             (err (should-error (agent-shell-remote-session-params root) :type 'user-error)))
        (should (equal (cadr err)
                       (format "agent-shell: /%s: needs the %s program on this machine"
                               method method)))))))

(ert-deftest test-remote/the-session-notice-says-where ()
  (should (string-search
           "commands run there (bubblewrap (remote))"
           (agent-shell-remote-describe
            '((remote . ((tramp . "/ssh:h:/srv/app") (sandbox . "bubblewrap (remote)")
                         (mirror . "/tmp/m")))))))
  (should-not (agent-shell-remote-describe '((sessionId . "s")))))

;;; The records of a remote project

(ert-deftest test-remote/canonical-names-are-the-bridges ()
  (should (equal (agent-shell-remote-canonical-name "/scp:dev@h.invalid#2222:/srv/应用/")
                 "/ssh:dev@h.invalid#2222:/srv/应用"))
  (should (equal (agent-shell-remote-canonical-name "/ssh:h.invalid:") "/ssh:h.invalid:/"))
  (should (equal (agent-shell-remote-canonical-name "/docker:web:/app//")
                 "/docker:web:/app"))
  (should-not (agent-shell-remote-canonical-name "/srv/app/")))

(ert-deftest test-remote/the-mirror-is-found-by-its-project-note ()
  (let* ((data (make-temp-file "as-remote-data" t))
         (process-environment (cons (concat "XDG_DATA_HOME=" data) process-environment))
         (mine (expand-file-name "agent-shell/remote/dev@h.invalid#22/app-0123/" data))
         (other (expand-file-name "agent-shell/remote/dev@h.invalid#22/app-4567/" data)))
    (unwind-protect
        (progn
          (should-not (agent-shell-remote-mirror "/ssh:dev@h.invalid#22:/srv/应用/"))
          (dolist (dir (list mine other)) (make-directory dir t))
          (with-temp-file (expand-file-name "project.txt" other)
            (insert "/ssh:dev@h.invalid#22:/srv/other\n"))
          (let ((coding-system-for-write 'utf-8-unix))
            (with-temp-file (expand-file-name "project.txt" mine)
              (insert "/ssh:dev@h.invalid#22:/srv/应用\n")))
          (should (equal (agent-shell-remote-mirror "/scp:dev@h.invalid#22:/srv/应用/") mine))
          (should-not (agent-shell-remote-mirror "/ssh:eve@h.invalid#22:/srv/应用/")))
      (delete-directory data t))))

(provide 'test-remote)
;;; test-remote.el ends here
