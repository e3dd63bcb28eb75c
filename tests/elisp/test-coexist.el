;;; test-coexist.el --- Refusing to mix with xenodium's agent-shell  -*- lexical-binding: t; -*-

;; SPDX-License-Identifier: GPL-3.0-or-later

;;; Commentary:

;; xenodium's agent-shell (MELPA) is not installed here, so a small
;; stand-in in a temporary directory has its shape: a main file
;; `agent-shell.el' that first requires its own `agent-shell-*' files and
;; then defines `agent-shell-start', `agent-shell-mode' and the version
;; constant; an `agent-shell-anthropic.el' defining its Claude Code
;; configuration.  Each case runs in a fresh batch Emacs with the real
;; package from elisp/, in one load order or the other.

;;; Code:

(require 'ert)
(require 'agent-shell-test-helpers)

(defconst test-coexist--elisp
  (file-name-directory (locate-library "agent-shell"))
  "The package's elisp directory.")

(defun test-coexist--stand-in ()
  "Write the stand-in of the other package to a temporary directory; return it."
  (let ((dir (file-name-as-directory (make-temp-file "agent-shell-other-" t))))
    (dolist (file
             '(("agent-shell-work-buffer.el"
                . "(provide 'agent-shell-work-buffer)\n")
               ("agent-shell-anthropic.el"
                . "(defun agent-shell-anthropic-make-claude-code-config () 'claude)
(provide 'agent-shell-anthropic)\n")
               ("agent-shell.el"
                . ";;; agent-shell.el --- stand-in  -*- lexical-binding: t; -*-
(require 'agent-shell-work-buffer)
(defconst agent-shell--version \"0.0\")
(defun agent-shell-start (&rest config) (list 'theirs config))
(define-derived-mode agent-shell-mode fundamental-mode \"Theirs\")
(provide 'agent-shell)\n")))
      (agent-shell-test-write dir (car file) (cdr file)))
    dir))

(defun test-coexist--run (load-path-dirs form)
  "Run FORM in a batch Emacs with LOAD-PATH-DIRS; return what it prints.
An error is printed as ERROR: and its message."
  (with-temp-buffer
    (apply #'call-process (expand-file-name invocation-name invocation-directory)
           nil t nil "-Q" "--batch"
           (append (apply #'append (mapcar (lambda (d) (list "-L" d)) load-path-dirs))
                   (list "--eval"
                         (format "(condition-case err %S (error (princ (concat \"ERROR:\" (error-message-string err)))))"
                                 form))))
    (buffer-string)))

(defun test-coexist--names-both (output)
  "Check that OUTPUT is the one clear error naming both packages."
  (should (string-match-p "ERROR:Two different packages named agent-shell" output))
  (should (string-search "xenodium/agent-shell" output))
  (should (string-search "M-x agent-shell-start" output))
  (should (string-search "package-delete" output)))

(ert-deftest test-coexist/ours-after-theirs-stops-before-defining ()
  "Loading this package after the other one stops with one error; theirs stays whole."
  (let* ((other (test-coexist--stand-in))
         (output (test-coexist--run
                  (list other test-coexist--elisp)
                  `(progn (require 'agent-shell)
                          (unwind-protect
                              (load ,(expand-file-name "agent-shell.el" test-coexist--elisp)
                                    nil t)
                            (princ (format "start=%S " (agent-shell-start 1))))))))
    (delete-directory other t)
    (test-coexist--names-both output)
    (should (string-search "start=(theirs (1))" output))))

(ert-deftest test-coexist/theirs-after-ours-stops-before-overwriting ()
  "Loading the other package after this one stops before it redefines our commands."
  (let* ((other (test-coexist--stand-in))
         (output (test-coexist--run
                  (list test-coexist--elisp other)
                  `(progn (require 'agent-shell)
                          (unwind-protect
                              (load ,(expand-file-name "agent-shell.el" other) nil t)
                            (princ (format "ours=%S " (and (commandp 'agent-shell-start)
                                                           (not (boundp 'agent-shell--version))))))))))
    (delete-directory other t)
    (test-coexist--names-both output)
    (should (string-search "ours=t" output))))

(ert-deftest test-coexist/their-file-required-later-is-refused ()
  "Requiring one of the other package's files after this one loads is refused too."
  (let* ((other (test-coexist--stand-in))
         (output (test-coexist--run
                  (list test-coexist--elisp other)
                  '(progn (require 'agent-shell) (require 'agent-shell-anthropic)))))
    (delete-directory other t)
    (test-coexist--names-both output)))

(ert-deftest test-coexist/alone-loads-quietly ()
  "Without the other package, loading this one and other files raises nothing."
  (let ((output (test-coexist--run
                 (list test-coexist--elisp)
                 '(progn (require 'agent-shell) (require 'org) (require 'agent-shell-memory)
                         (princ "loaded")))))
    (should (equal output "loaded"))))

(provide 'test-coexist)
;;; test-coexist.el ends here
