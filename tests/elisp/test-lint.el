;;; test-lint.el --- The lint gate really runs package-lint  -*- lexical-binding: t; -*-

;; SPDX-License-Identifier: GPL-3.0-or-later

;;; Commentary:

;; Regression tests: `make lint' never ran package-lint (Emacs started
;; with -Q could not find it, and lint.el skipped it silently).  Each
;; case runs tests/elisp/lint.el in a fresh batch Emacs, as the Makefile
;; does, with the system's package-lint (elpa-package-lint).

;;; Code:

(require 'ert)
(require 'cl-lib)
(require 'agent-shell-test-helpers)

(defconst test-lint--script
  (expand-file-name "lint.el" (file-name-directory (or load-file-name buffer-file-name)))
  "The lint script under test.")

(defconst test-lint--elisp
  (file-name-directory (locate-library "agent-shell"))
  "The package's elisp directory.")

(defun test-lint--package-lint-dir ()
  "Return the directory of the system's package-lint; fail when there is none."
  (or (car (last (sort (file-expand-wildcards
                        "/usr/share/emacs/site-lisp/elpa/package-lint-[0-9]*")
                       #'string<)))
      (ert-fail "elpa-package-lint is not installed (make system-deps installs it)")))

(defun test-lint--run (dirs files)
  "Run lint.el with DIRS on `load-path' over FILES; return (STATUS . OUTPUT)."
  (with-temp-buffer
    (let ((status (apply #'call-process
                         (expand-file-name invocation-name invocation-directory)
                         nil t nil "-Q" "--batch"
                         (append (apply #'append (mapcar (lambda (d) (list "-L" d)) dirs))
                                 (list "-l" test-lint--script)
                                 files))))
      (cons status (buffer-string)))))

(ert-deftest test-lint/package-lint-finds-a-redundant-summary ()
  "A main file whose summary says \"Emacs\" fails the lint, through package-lint."
  (let* ((dir (make-temp-file "agent-shell-lint-" t))
         (file (expand-file-name "agent-shell.el" dir)))
    (with-temp-file file
      (insert-file-contents (expand-file-name "agent-shell.el" test-lint--elisp))
      (goto-char (point-min))
      (delete-region (point) (line-end-position))
      (insert ";;; agent-shell.el --- A coding agent that lives inside Emacs  \
-*- lexical-binding: t; -*-"))
    (let ((result (test-lint--run (list test-lint--elisp (test-lint--package-lint-dir))
                                  (list file))))
      (delete-directory dir t)
      (should (eql (car result) 1))
      (should (string-search "Including \"Emacs\" in the package summary" (cdr result))))))

(ert-deftest test-lint/the-package-passes ()
  "The package's main file passes package-lint; accepted findings say why."
  (let ((result (test-lint--run (list test-lint--elisp (test-lint--package-lint-dir))
                                (list (expand-file-name "agent-shell.el" test-lint--elisp)))))
    (should (eql (car result) 0))
    (should (string-match-p "package-lint [0-9.]+ checked 1 file" (cdr result)))
    (should (string-search "accepted: This makes the package uninstallable" (cdr result)))))

(ert-deftest test-lint/missing-package-lint-fails-instead-of-skipping ()
  "Without package-lint on `load-path' the lint fails and says what to install."
  (let ((result (test-lint--run (list test-lint--elisp)
                                (list (expand-file-name "agent-shell-coexist.el"
                                                        test-lint--elisp)))))
    (should (eql (car result) 1))
    (should (string-search "elpa-package-lint" (cdr result)))))

;; A `declare-function' keeps the byte-compiler quiet whether it is true
;; or not: after functions moved between files, several named the old file.
(ert-deftest test-lint/a-declaration-naming-the-wrong-file-fails ()
  "A `declare-function' whose file does not define the function fails the lint."
  (let* ((dir (make-temp-file "agent-shell-lint-" t))
         (file (expand-file-name "agent-shell-plan.el" dir)))
    (with-temp-file file
      (insert-file-contents (expand-file-name "agent-shell-plan.el" test-lint--elisp))
      (goto-char (point-min))
      (should (re-search-forward
               "(declare-function agent-shell-header-set-state \"agent-shell-header\"" nil t))
      (replace-match "(declare-function agent-shell-header-set-state \"agent-shell-transcript\""
                     t t))
    (let ((result (test-lint--run (list test-lint--elisp (test-lint--package-lint-dir))
                                  (list file))))
      (delete-directory dir t)
      (should (eql (car result) 1))
      (should (string-search
               "declare-function agent-shell-header-set-state says agent-shell-transcript.el"
               (cdr result))))))

;; A function with "--" in its name belongs to its file; one called from
;; other files gets a public name, or a newcomer cannot tell a file's
;; interface from its insides.
(ert-deftest test-lint/a-call-of-another-files-internal-fails ()
  "A file calling a \"--\" function of another file of the package fails the lint.
Calling its own internals, or another file's public functions, does not."
  (let* ((dir (make-temp-file "agent-shell-lint-" t))
         (file (expand-file-name "agent-shell-plan.el" dir))
         (lint (lambda ()
                 (test-lint--run (list test-lint--elisp (test-lint--package-lint-dir))
                                 (list file)))))
    (copy-file (expand-file-name "agent-shell-plan.el" test-lint--elisp) file)
    ;; Alone, the file lacks the main file's headers; that is not this check.
    (should-not (string-search "an internal of" (cdr (funcall lint))))
    (with-temp-file file
      (insert-file-contents (expand-file-name "agent-shell-plan.el" test-lint--elisp))
      (goto-char (point-min))
      (should (search-forward "\"Return TEXT (a string or nil) on one line.\"\n" nil t))
      (insert "  (agent-shell-transcript--fold-char t)\n"))
    (let ((result (funcall lint)))
      (delete-directory dir t)
      (should (eql (car result) 1))
      (should (string-match-p
               "agent-shell-plan\\.el:[0-9]+: uses agent-shell-transcript--fold-char, \
an internal of agent-shell-transcript\\.el"
               (cdr result)))
      (should-not (string-search "uses agent-shell-plan--" (cdr result))))))

;; The main file's Commentary is where a newcomer meets the layout.
(ert-deftest test-lint/main-commentary-lists-every-file ()
  "agent-shell.el's Commentary names each package file once, after those it requires."
  (let ((listed nil) (required nil))
    (with-temp-buffer
      (insert-file-contents (expand-file-name "agent-shell.el" test-lint--elisp))
      (let ((end (save-excursion (search-forward ";;; Code:"))))
        (while (re-search-forward "^;; \\(agent-shell[a-z0-9-]*\\.el\\)  +[a-z`(/]" end t)
          (push (match-string 1) listed))))
    (setq listed (nreverse listed))
    (should (equal (sort (copy-sequence listed) #'string<)
                   (sort (directory-files test-lint--elisp nil "\\`agent-shell.*\\.el\\'")
                         #'string<)))
    (dolist (file listed)
      (with-temp-buffer
        (insert-file-contents (expand-file-name file test-lint--elisp))
        (while (re-search-forward "^(require '\\(agent-shell[a-z0-9-]*\\))" nil t)
          (push (list file (concat (match-string 1) ".el")) required))))
    (should (> (length required) 40))
    (should (equal (cl-remove-if (lambda (pair)
                                   (< (cl-position (cadr pair) listed :test #'equal)
                                      (cl-position (car pair) listed :test #'equal)))
                                 required)
                   nil))))

(provide 'test-lint)
;;; test-lint.el ends here
