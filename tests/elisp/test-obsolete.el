;;; test-obsolete.el --- Renamed public names still work  -*- lexical-binding: t; -*-

;; SPDX-License-Identifier: GPL-3.0-or-later

;;; Commentary:

;; Public names that moved under their file's prefix keep working through
;; obsolete aliases, so a user's init file that calls or sets the old name
;; goes on working and the byte-compiler tells them the new one.  What
;; users read -- the README, and the texts the bridge shows them -- names
;; only the current commands.

;;; Code:

(require 'ert)
(require 'cl-lib)
(require 'agent-shell)
(require 'agent-shell-undo)

(defconst test-obsolete--checkout
  (expand-file-name "../../" (file-name-directory (or load-file-name buffer-file-name)))
  "The root of the checkout holding these tests.")

(defconst test-obsolete--functions
  '((agent-shell-api-key . agent-shell-project-api-key)
    (agent-shell-scaffold . agent-shell-project-scaffold)
    (agent-shell-read-data-file . agent-shell-project-read-data-file)
    (agent-shell-read-config . agent-shell-project-read-config)
    (agent-shell-project-trust-allowlist . agent-shell-trust-allowlist)
    (agent-shell-project-trust-config . agent-shell-trust-config)
    (agent-shell-log-decide . agent-shell-permissions-log-decide)
    (agent-shell-actions-last-turn . agent-shell-undo-last-turn)
    (agent-shell-context-snapshot . agent-shell-perception-context-snapshot))
  "Old function names and the names they became.")

(defconst test-obsolete--variables
  '((agent-shell-debug-bridge . agent-shell-bridge-debug)
    (agent-shell-tools-catalogue . agent-shell-tools-handlers)
    (agent-shell-rpc-code-http . agent-shell-rpc-code-transport))
  "Old variable names and the names they became.")

(ert-deftest test-obsolete/old-function-names-call-the-new-ones ()
  "Each old function name is an obsolete alias of its new name."
  (dolist (pair test-obsolete--functions)
    (should (fboundp (cdr pair)))
    (should (eq (symbol-function (car pair)) (cdr pair)))
    (should (eq (car (get (car pair) 'byte-obsolete-info)) (cdr pair)))
    (should (equal (commandp (car pair)) (commandp (cdr pair))))))

(ert-deftest test-obsolete/old-variable-names-share-the-new-values ()
  "Setting an old variable name sets the new one."
  (dolist (pair test-obsolete--variables)
    (should (eq (indirect-variable (car pair)) (cdr pair)))
    (should (get (car pair) 'byte-obsolete-variable))
    (let ((saved (symbol-value (cdr pair))))
      (unwind-protect
          (progn
            (with-no-warnings (set (car pair) '(test-obsolete 值)))
            (should (equal (symbol-value (cdr pair)) '(test-obsolete 值))))
        (set (cdr pair) saved)))))

(defun test-obsolete--commands-named-in (files)
  "Return (FILE . COMMAND) for each \"M-x agent-shell-...\" in FILES."
  (let ((found nil))
    (dolist (file files (nreverse found))
      (with-temp-buffer
        (insert-file-contents file)
        (while (re-search-forward "M-x \\(agent-shell-[a-z0-9-]*[a-z0-9]\\)" nil t)
          (push (cons (file-relative-name file test-obsolete--checkout)
                      (intern (match-string 1)))
                found))))))

(ert-deftest test-obsolete/users-are-told-current-command-names ()
  "Every command the README or the bridge's texts name is a command, none obsolete."
  (let* ((files (cons (expand-file-name "README.org" test-obsolete--checkout)
                      (directory-files-recursively
                       (expand-file-name "bridge/agent_shell_bridge" test-obsolete--checkout)
                       "\\.py\\'")))
         (named (test-obsolete--commands-named-in files)))
    (should (rassq 'agent-shell-trust-roles named))
    (should (equal (cl-remove-if (lambda (n) (and (commandp (cdr n))
                                                  (not (get (cdr n) 'byte-obsolete-info))))
                                 named)
                   nil))))

(provide 'test-obsolete)
;;; test-obsolete.el ends here
