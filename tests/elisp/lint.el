;;; lint.el --- Batch style checks for agent-shell's Emacs Lisp  -*- lexical-binding: t; -*-

;; SPDX-License-Identifier: GPL-3.0-or-later

;;; Commentary:

;; Run as
;;
;;   emacs -Q --batch -L elisp -l tests/elisp/lint.el elisp/*.el
;;
;; For each file named on the command line: checkdoc must report
;; nothing, every `defcustom' must carry :type, :group and
;; :package-version, and package-lint runs too when it is installed.
;; Exits with status 1 when any file has a problem.

;;; Code:

(require 'checkdoc)
(require 'cl-lib)

(defvar agent-shell-lint--problems nil
  "Problems found so far, newest first, as strings.")

(defun agent-shell-lint--report (file line text)
  "Record problem TEXT at LINE of FILE."
  (push (format "%s:%s: %s" file line text) agent-shell-lint--problems))

(defun agent-shell-lint--checkdoc (file)
  "Run checkdoc on FILE and record what it reports."
  (with-current-buffer (find-file-noselect file)
    (let ((source (current-buffer))
          (checkdoc-diagnostic-buffer "*agent-shell lint*")
          (checkdoc-spellcheck-documentation-flag nil)
          (checkdoc-autofix-flag 'never)
          (found nil))
      (get-buffer-create checkdoc-diagnostic-buffer)
      (cl-letf (((symbol-function 'checkdoc-error)
                 (lambda (point msg)
                   (setq found t)
                   (agent-shell-lint--report
                    file
                    (if (and (eq (current-buffer) source) point)
                        (line-number-at-pos point)
                      "?")
                    msg)))
                ((symbol-function 'checkdoc-show-diagnostics) #'ignore))
        (condition-case err
            (checkdoc-current-buffer t)
          (error (agent-shell-lint--report file 0 (format "checkdoc failed: %S" err)))))
      found)))

(defun agent-shell-lint--defcustoms (file)
  "Record every `defcustom' of FILE lacking :type, :group or :package-version."
  (with-temp-buffer
    (insert-file-contents file)
    (emacs-lisp-mode)
    (goto-char (point-min))
    (condition-case nil
        (while t
          (let* ((line (line-number-at-pos))
                 (form (read (current-buffer))))
            (when (and (consp form) (memq (car form) '(defcustom defface)))
              (let ((keys (nthcdr 4 form)))
                (dolist (key (if (eq (car form) 'defcustom)
                                 '(:type :group :package-version)
                               '(:group)))
                  (unless (plist-member keys key)
                    (agent-shell-lint--report
                     file line (format "%s %s lacks %s" (car form) (nth 1 form) key))))))))
      (end-of-file nil)
      (invalid-read-syntax
       (agent-shell-lint--report file (line-number-at-pos) "unreadable form")))))

(defun agent-shell-lint--package-lint (file)
  "Run package-lint on FILE when it is installed."
  (when (require 'package-lint nil t)
    (with-current-buffer (find-file-noselect file)
      (dolist (issue (and (fboundp 'package-lint-buffer)
                          (funcall 'package-lint-buffer)))
        (when (memq (nth 2 issue) '(error warning))
          (agent-shell-lint--report file (nth 0 issue) (nth 3 issue)))))))

(defun agent-shell-lint-files (files)
  "Lint FILES; return the problems found, oldest first."
  (setq agent-shell-lint--problems nil)
  (dolist (file files)
    (let ((file (expand-file-name file)))
      (agent-shell-lint--checkdoc file)
      (agent-shell-lint--defcustoms file)
      (agent-shell-lint--package-lint file)))
  (reverse agent-shell-lint--problems))

(when noninteractive
  (let ((files (cl-remove-if-not (lambda (a) (string-suffix-p ".el" a))
                                 command-line-args-left)))
    (setq command-line-args-left nil)
    (let ((problems (agent-shell-lint-files files)))
      (dolist (p problems) (message "%s" p))
      (message "lint: %d file(s), %d problem(s)" (length files) (length problems))
      (kill-emacs (if problems 1 0)))))

(provide 'lint)
;;; lint.el ends here
