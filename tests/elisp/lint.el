;;; lint.el --- Batch style checks for agent-shell's Emacs Lisp  -*- lexical-binding: t; -*-

;; SPDX-License-Identifier: GPL-3.0-or-later

;;; Commentary:

;; Run as
;;
;;   emacs -Q --batch -L elisp -L PACKAGE-LINT-DIR -l tests/elisp/lint.el elisp/*.el
;;
;; For each file named on the command line: checkdoc must report
;; nothing, every `defcustom' must carry :type, :group and
;; :package-version, and package-lint must report no error or warning
;; (the other files are checked against the headers of agent-shell.el,
;; the main file).  package-lint must be on `load-path' (Debian:
;; elpa-package-lint, which `make lint' installs); without it the run
;; fails instead of skipping the check.  Exits with status 1 when any
;; file has a problem.
;;
;; Two package-lint findings are accepted, each for a stated reason that
;; is printed on every run (`agent-shell-lint--accepted').
;;
;; A function or macro whose name has "--" is internal to the file that
;; defines it: a file calling one of another file's fails the lint (a
;; function used across files gets a public name instead).

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

(defvar package-lint-main-file)
(declare-function package-lint-buffer "package-lint" (&optional buffer))

(defun agent-shell-lint--required-emacs ()
  "Return the Emacs version the current buffer's Package-Requires names, or nil."
  (save-excursion
    (goto-char (point-min))
    (and (re-search-forward "^;; Package-Requires:.*(emacs \"\\([0-9.]+\\)\")" nil t)
         (match-string-no-properties 1))))

(defvar agent-shell-lint--package-lint-version "?"
  "Version of the package-lint in use.")

(defconst agent-shell-lint--accepted
  `(("\\`This makes the package uninstallable in all released Emacs versions\\.\\'"
     ,(lambda ()
        (let ((required (agent-shell-lint--required-emacs)))
          (and required (version<= required emacs-version)
               (format "package-lint %s flags every (emacs \"28\") or later as \
unreleased (a fixed check from before Emacs 28 came out); Emacs %s, which \
runs this lint, satisfies the required %s"
                       agent-shell-lint--package-lint-version emacs-version required)))))
    ("\\`Package should have a Homepage or URL header\\.\\'"
     ,(lambda ()
        "the package has no public home page yet; add a URL header when it has one")))
  "Package-lint findings accepted for a reason, as (REGEXP REASON-FUNCTION).
REASON-FUNCTION is called in the linted buffer and returns the reason
to print, or nil when the finding is not acceptable there.")

(defun agent-shell-lint--accepted-p (file issue)
  "Return non-nil when package-lint ISSUE in FILE is accepted; say why."
  (cl-some (lambda (rule)
             (when (string-match-p (car rule) (nth 3 issue))
               (when-let ((reason (funcall (cadr rule))))
                 (message "%s:%s: accepted: %s (%s)"
                          file (nth 0 issue) (nth 3 issue) reason)
                 t)))
           agent-shell-lint--accepted))

(defun agent-shell-lint--load-package-lint ()
  "Load package-lint; return nil (and record a problem) when it is missing."
  (if (require 'package-lint nil t)
      (progn
        (setq agent-shell-lint--package-lint-version
              (let ((lib (locate-library "package-lint")))
                (if (and lib (string-match "package-lint-\\([0-9.]+\\)/" lib))
                    (match-string 1 lib)
                  "?")))
        t)
    (agent-shell-lint--report
     "package-lint" 0
     "package-lint is not installed or not on `load-path' (Debian: apt install \
elpa-package-lint; pass its directory with -L)")
    nil))

(defun agent-shell-lint--package-lint (file main)
  "Run package-lint on FILE, whose package's main file is MAIN."
  (with-current-buffer (find-file-noselect file)
    (let ((package-lint-main-file (and main (not (equal main file)) main)))
      (dolist (issue (package-lint-buffer))
        (when (and (memq (nth 2 issue) '(error warning))
                   (not (agent-shell-lint--accepted-p file issue)))
          (agent-shell-lint--report file (nth 0 issue) (nth 3 issue)))))))

(defun agent-shell-lint--declarations (files)
  "Report each `declare-function' in FILES that names the wrong file or arglist.
A declaration silences the byte-compiler whether it is true or not, so
after a function moves or changes its arguments only this check notices."
  (require 'check-declare)
  (dolist (file files)
    (dolist (entry (check-declare-file file))
      (let ((target (car entry)))
        (dolist (use (cdr entry))
          (agent-shell-lint--report
           (nth 0 use) 0
           (format "declare-function %s says %s: %s"
                   (nth 1 use) (file-name-nondirectory target) (nth 2 use))))))))

;;; Internals used across files

(defun agent-shell-lint--package-files (files)
  "Return the features of the package whose FILES are linted, loaded.
They are the files named like FILES' in the directory of the package
on `load-path', so a copy of one file elsewhere is checked against the
others."
  (let ((dir (file-name-directory (or (locate-library "agent-shell.el" t) ""))))
    (cl-remove-duplicates
     (mapcar #'intern
             (append (mapcar #'file-name-base
                             (directory-files dir nil "\\`agent-shell.*\\.el\\'"))
                     (mapcar #'file-name-base files)))
     :from-end t)))

(defun agent-shell-lint--form-symbols (form)
  "Return the symbols FORM mentions, as code, quoted or not."
  (let ((symbols nil) (todo (list form)))
    (while todo
      (let ((x (pop todo)))
        (cond ((symbolp x) (push x symbols))
              ((consp x) (push (car x) todo) (push (cdr x) todo))
              ((vectorp x) (setq todo (append x todo))))))
    symbols))

(defun agent-shell-lint--internals (files)
  "Report each use in FILES of an internal function of another package file.
An internal function has \"--\" in its name.  It belongs to the file
that defines it, as `symbol-file' says."
  (let ((features (agent-shell-lint--package-files files)))
    (dolist (feature features)
      (condition-case err
          (require feature)
        (error (agent-shell-lint--report
                feature 0 (format "cannot be loaded: %s" (error-message-string err))))))
    (dolist (file files)
      (let ((own (file-name-base file)))
        (with-temp-buffer
          (insert-file-contents file)
          (emacs-lisp-mode)
          (goto-char (point-min))
          (condition-case nil
              (while t
                (let* ((form (read (current-buffer)))
                       (line (save-excursion (backward-sexp) (line-number-at-pos))))
                  (dolist (symbol (delete-dups (agent-shell-lint--form-symbols form)))
                    (when (and (string-search "--" (symbol-name symbol)) (fboundp symbol))
                      (let* ((defined (symbol-file symbol 'defun))
                             (owner (and defined (intern (file-name-base defined)))))
                        (when (and owner (memq owner features)
                                   (not (equal (symbol-name owner) own)))
                          (agent-shell-lint--report
                           file line
                           (format "uses %s, an internal of %s.el; give it a public name"
                                   symbol owner))))))))
            (end-of-file nil)
            (invalid-read-syntax nil)))))))

(defun agent-shell-lint-files (files)
  "Lint FILES; return the problems found, oldest first."
  (setq agent-shell-lint--problems nil)
  (let* ((files (mapcar #'expand-file-name files))
         (main (cl-find "agent-shell.el" files
                        :key #'file-name-nondirectory :test #'equal))
         (package-lint (agent-shell-lint--load-package-lint)))
    (dolist (file files)
      (agent-shell-lint--checkdoc file)
      (agent-shell-lint--defcustoms file)
      (when package-lint
        (agent-shell-lint--package-lint file main)))
    (agent-shell-lint--declarations files)
    (agent-shell-lint--internals files)
    (when package-lint
      (message "package-lint %s checked %d file(s)"
               agent-shell-lint--package-lint-version (length files))))
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
