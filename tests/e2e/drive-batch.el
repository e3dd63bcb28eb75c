;;; drive-batch.el --- Drive agent-shell in batch Emacs the way a user would  -*- lexical-binding: t; -*-

;; SPDX-License-Identifier: GPL-3.0-or-later

;;; Commentary:

;; Loaded by tests/e2e/test_e2e_batch.py after an init file that points
;; agent-shell at the scripted mock model.  Keys go through
;; `execute-kbd-macro', so the real commands and keymaps run: M-x
;; agent-shell-start RET, the task typed character by character, RET,
;; C-c C-l, and y in the action log.  E2E_PHASE selects the first task
;; (fix, deny, approve, remember) or the second session's follow-up;
;; E2E_TASK_FILE holds the text to type (UTF-8).  Exit status 0 means the phase ran to
;; its end; on a timeout the last lines of the shell buffer are printed
;; and Emacs exits with status 3.  Waiting is on conditions with deadlines.
;; Where the bridge has no sandbox (AGENT_SHELL_SANDBOX=off, or no
;; bubblewrap), the project's test runs wait for a yes too; the driver
;; gives it with C-c C-y in the shell, as a user would.

;;; Code:

(require 'agent-shell)

(defvar e2e-shell nil "The shell buffer.")

(defun e2e-log (format-string &rest args)
  "Print FORMAT-STRING with ARGS to stderr, prefixed for the test's eyes."
  (message "E2E: %s" (apply #'format format-string args)))

(defun e2e-fail (what)
  "Report a timeout waiting for WHAT and exit with status 3."
  (e2e-log "TIMEOUT waiting for %s" what)
  (when (buffer-live-p e2e-shell)
    (with-current-buffer e2e-shell
      (e2e-log "shell buffer:\n%s" (buffer-substring-no-properties
                                    (max (point-min) (- (point-max) 3000))
                                    (point-max)))))
  (kill-emacs 3))

(defun e2e-approve-test-run ()
  "Without a sandbox, approve a test run waiting for a yes: C-c C-y in the shell."
  (when (buffer-live-p e2e-shell)
    (with-current-buffer e2e-shell
      (when (and (eq (alist-get 'available (agent-shell-session-sandbox agent-shell--session))
                     :json-false)
                 (cl-find-if (lambda (p)
                               (and (equal (agent-shell-bridge-permission-session p)
                                           (agent-shell-session-id agent-shell--session))
                                    (not (agent-shell-bridge-permission-sending p))
                                    (string-prefix-p
                                     "run_test"
                                     (alist-get 'title (alist-get 'toolCall
                                                                  (agent-shell-bridge-permission-params p))))))
                             (agent-shell-bridge-permissions agent-shell-bridge--current)))
        (e2e-log "no sandbox: approving the test run")
        (let ((before (window-buffer)))
          (switch-to-buffer e2e-shell)
          (e2e-keys "C-c C-y")
          (switch-to-buffer before))))))

(defun e2e-wait (what predicate &optional timeout)
  "Wait until PREDICATE is non-nil, or fail naming WHAT after TIMEOUT seconds."
  (let ((deadline (+ (float-time) (or timeout 30))))
    (while (progn (e2e-approve-test-run) (not (funcall predicate)))
      (when (> (float-time) deadline)
        (e2e-fail what))
      (accept-process-output nil 0.05))))

(defun e2e-keys (keys)
  "Press KEYS (a `kbd' string or a vector) in the selected window."
  (execute-kbd-macro (if (stringp keys) (kbd keys) keys)))

(defun e2e-shell-text ()
  "Return the text of the shell buffer."
  (with-current-buffer e2e-shell (buffer-substring-no-properties (point-min) (point-max))))

(defun e2e-shell-state ()
  "Return the text of the shell buffer's header line.
Batch Emacs has no display, where `format-mode-line' gives \"\", so call
the function behind `header-line-format' directly."
  (with-current-buffer e2e-shell (agent-shell-header-line)))

(defun e2e-start ()
  "Start a session by typing the command name, as a user would; wait for it."
  (e2e-keys "M-x agent-shell-start RET")
  (setq e2e-shell (get-buffer (format "*agent-shell: %s*"
                                      (file-name-nondirectory
                                       (directory-file-name default-directory)))))
  (unless e2e-shell (e2e-fail "the shell buffer"))
  (e2e-wait "the session" (lambda () (string-search "│ idle │" (e2e-shell-state)))))

(defun e2e-send (text)
  "Type TEXT after the prompt and press RET."
  (switch-to-buffer e2e-shell)
  (goto-char (point-max))
  (e2e-keys (vconcat text))
  (e2e-keys "RET"))

(defun e2e-first-phase (task)
  "Send TASK, approve the edit from the action log, wait for the end."
  (e2e-send task)
  (e2e-wait "the edit to wait for approval"
            (lambda () (string-search "Waiting for you: replace_region" (e2e-shell-text))))
  (switch-to-buffer e2e-shell)
  (e2e-keys "C-c C-l")
  (let ((log (get-buffer "*agent-shell-log: glossary*")))
    (unless (get-buffer-window log) (e2e-fail "the action log window"))
    (select-window (get-buffer-window log))
    (with-current-buffer log
      (unless (re-search-forward "^\\*+ WAIT " nil t)
        (goto-char (point-min))
        (unless (re-search-forward "^\\*+ WAIT " nil t)
          (e2e-fail "a WAIT heading in the log"))))
    (e2e-keys "y"))
  (e2e-wait "task_complete"
            (lambda () (string-search "● task_complete" (e2e-shell-text))) 60)
  (e2e-wait "the end of the turn"
            (lambda () (string-search "│ idle │" (e2e-shell-state))) 60))

(defun e2e-second-phase (task)
  "Send TASK in a fresh session and wait for the scripted answer."
  (e2e-send task)
  (e2e-wait "the answer from memory"
            (lambda () (string-search "end of the script" (e2e-shell-text))) 60)
  (e2e-wait "the end of the turn"
            (lambda () (string-search "│ idle │" (e2e-shell-state))) 60))

(let ((phase (getenv "E2E_PHASE"))
      (task (with-temp-buffer
              (let ((coding-system-for-read 'utf-8))
                (insert-file-contents (getenv "E2E_TASK_FILE")))
              (string-trim (buffer-string)))))
  (e2e-start)
  (pcase phase
    ("first" (e2e-first-phase task))
    ("second" (e2e-second-phase task))
    (_ (e2e-fail (format "a known E2E_PHASE, not %S" phase))))
  (e2e-log "phase %s done" phase)
  (kill-emacs 0))

;;; drive-batch.el ends here
