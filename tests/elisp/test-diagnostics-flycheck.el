;;; test-diagnostics-flycheck.el --- Diagnostics through Flycheck  -*- lexical-binding: t; -*-

;; SPDX-License-Identifier: GPL-3.0-or-later

;;; Commentary:

;; The Flycheck half of agent-shell-diagnostics.el, with Debian's
;; Flycheck and a command checker that runs a real process (grep) on
;; the buffer's text: diagnostics of the buffer and at point, the
;; project's, and the report after an edit, which must come from a
;; check of the edited text, not the one before it.

;;; Code:

(require 'ert)
(require 'cl-lib)
(require 'agent-shell-diagnostics)
(require 'agent-shell-test-helpers)

(defvar flycheck-checker)
(defvar flycheck-check-syntax-automatically)
(declare-function flycheck-mode "ext:flycheck" (&optional arg))
(declare-function flycheck-buffer "ext:flycheck" ())
(declare-function flycheck-running-p "ext:flycheck" ())
(declare-function flycheck-define-command-checker "ext:flycheck" (symbol docstring &rest props))

(defun test-diagnostics-flycheck--load ()
  "Load Debian's Flycheck and define the test's checker."
  (agent-shell-test-add-elpa-to-load-path)
  (require 'flycheck)
  (flycheck-define-command-checker
   'agent-shell-test-bad-words
   "Flags each line holding 坏词, through grep."
   :command '("grep" "-n" "坏词" source-inplace)
   :error-patterns '((warning line-start line ":" (message) line-end))
   :modes '(text-mode)))

(defconst test-diagnostics-flycheck--text
  (concat "第一行 fine\n这里有坏词 here\n" (make-string 20 ?\n) "远处的坏词 far\n")
  "Two flagged lines, 2 and 23, far apart.")

(defun test-diagnostics-flycheck--open (root)
  "Visit 笔记.txt of ROOT with Flycheck on and checked once; return the buffer."
  (let ((buffer (find-file-noselect (expand-file-name "笔记.txt" root))))
    (with-current-buffer buffer
      (text-mode)
      (setq-local flycheck-checker 'agent-shell-test-bad-words)
      ;; Only the checks the test asks for.
      (setq-local flycheck-check-syntax-automatically nil)
      (flycheck-mode 1)
      (flycheck-buffer)
      (agent-shell-test-wait "Flycheck's first check"
                             (lambda () (and (not (flycheck-running-p))
                                             (agent-shell-diagnostics-of-buffer)))
                             30))
    buffer))

(ert-deftest test-diagnostics-flycheck/buffer-point-and-project ()
  "Flycheck's errors in the one shape: the buffer's, at point, the project's."
  (test-diagnostics-flycheck--load)
  (agent-shell-test-with-project (root `(("笔记.txt" . ,test-diagnostics-flycheck--text)))
    (let ((buffer (test-diagnostics-flycheck--open root)))
      (unwind-protect
          (with-current-buffer buffer
            (should (eq (agent-shell-diagnostics-checker) 'flycheck))
            (let ((all (agent-shell-diagnostics-of-buffer)))
              (should (equal (mapcar (lambda (d) (plist-get d :line)) all) '(2 23)))
              (should (equal (plist-get (car all) :type) "warning"))
              (should (equal (plist-get (car all) :backend) "agent-shell-test-bad-words"))
              (should (string-search "这里有坏词" (plist-get (car all) :text))))
            (goto-char (point-min))
            (forward-line 1)
            (search-forward "坏")
            (should (equal (plist-get (agent-shell-diagnostics-at-point) :line) 2))
            (should (string-search "笔记.txt:2: warning: "
                                   (agent-shell-diagnostics-project-text root))))
        (kill-buffer buffer)))))

(ert-deftest test-diagnostics-flycheck/after-an-edit-the-edited-text-is-checked ()
  "The report after an edit comes from a new check: the new line's error is in it."
  (test-diagnostics-flycheck--load)
  (agent-shell-test-with-project (root `(("笔记.txt" . ,test-diagnostics-flycheck--text)))
    (let ((buffer (test-diagnostics-flycheck--open root))
          (agent-shell-diagnostics-wait 30)
          (reported nil))
      (unwind-protect
          (with-current-buffer buffer
            (goto-char (point-min))
            (forward-line 4)
            (insert "新的坏词 new\n")
            (agent-shell-diagnostics-after-edit buffer 5 5 (lambda (text) (setq reported text)))
            (agent-shell-test-wait "the report after the edit" (lambda () reported) 30)
            (should-not (string-search "had not finished" reported))
            (should (string-search "line 5: warning: 新的坏词 new" reported))
            (should (string-search "line 2: warning: " reported))
            (should-not (string-search "远处" reported))
            (should (string-search "1 more in the file." reported)))
        (with-current-buffer buffer (set-buffer-modified-p nil))
        (kill-buffer buffer)))))

(provide 'test-diagnostics-flycheck)
;;; test-diagnostics-flycheck.el ends here
