;;; test-sessions.el --- Tests of the sessions dashboard  -*- lexical-binding: t; -*-

;; SPDX-License-Identifier: GPL-3.0-or-later

;;; Commentary:

;; Three real sessions on the real bridge and its scripted model: the
;; dashboard follows each one's state as the bridge's events arrive (no
;; `g'), `w' goes to the one waiting, `k' cancels a running turn, `D'
;; ends a session.

;;; Code:

(require 'ert)
(require 'cl-lib)
(require 'agent-shell-test-session)
(require 'agent-shell-sessions)

(defun test-sessions--row-text (shell)
  "Return the dashboard's line of SHELL, or nil when it has none."
  (with-current-buffer (get-buffer "*agent-shell sessions*")
    (save-excursion
      (goto-char (point-min))
      (let (found)
        (while (and (not found) (not (eobp)))
          (when (eq (tabulated-list-get-id) shell)
            (setq found (buffer-substring-no-properties
                         (line-beginning-position) (line-end-position))))
          (forward-line 1))
        found))))

(defun test-sessions--wait-row (shell what regexp &optional timeout)
  "Wait until the dashboard row of SHELL matches REGEXP; WHAT names it."
  (test-shell--wait what (lambda () (let ((row (test-sessions--row-text shell)))
                                      (and row (string-match-p regexp row))))
                    (or timeout 20)))

(defun test-sessions--send (shell text)
  "Type TEXT in SHELL and press RET."
  (with-current-buffer shell
    (goto-char (point-max))
    (insert text)
    (agent-shell-send-input)))

(defun test-sessions--goto-row (shell)
  "Put point on the dashboard row of SHELL (the dashboard is current)."
  (goto-char (point-min))
  (while (and (not (eobp)) (not (eq (tabulated-list-get-id) shell)))
    (forward-line 1))
  (should (eq (tabulated-list-get-id) shell)))

(defun test-sessions--end-turn (shell)
  "Reject SHELL's waiting step and wait for its turn to end."
  (let ((log (agent-shell-log-buffer (agent-shell-session-name
                                      (buffer-local-value 'agent-shell--session shell)))))
    (agent-shell-permissions-log-decide (car (agent-shell-log-pending log)) 'reject nil)
    (with-current-buffer shell
      (test-shell--wait "the turn's end"
                        (lambda () (and (eq (agent-shell-session-state agent-shell--session) 'idle)
                                        (not (agent-shell-session-turn-id agent-shell--session))))
                        20))))

(ert-deftest test-sessions/three-live-sessions ()
  "The dashboard follows three real sessions; `w', `k' and `D' act on them.
A session reaching WAIT shows as waiting without `g', and `w' lands on
its WAIT step in the log; a thinking session's turn is cancelled with
`k'; `D' ends a session after asking, and its row goes."
  (agent-shell-test-with-project (one nil)
    (agent-shell-test-with-project (two nil)
      (agent-shell-test-with-project (three nil)
        (test-shell--bridge)
        (let* ((a (test-shell--start-session one))
               (b (test-shell--start-session two))
               (c (test-shell--start-session three))
               (dashboard (agent-shell-sessions))
               (calls 0))
          (unwind-protect
              (progn
                (dolist (shell (list a b c))
                  (test-sessions--wait-row shell "an idle row" " idle "))
                (should (string-match-p "main\\|master" (test-sessions--row-text a)))
                ;; Rows are redrawn from the events, never by `g': count full redraws.
                (advice-add 'agent-shell-sessions--refresh :after
                            (lambda (&rest _) (cl-incf calls))
                            '((name . test-sessions--count)))
                (test-sessions--send a "dash-wait-one 授权")
                (test-sessions--wait-row a "A waiting" "waiting for you +[0-9].* 1\\b")
                (test-sessions--send b "dash-hold 慢")
                (test-sessions--wait-row b "B thinking" " thinking ")
                (should (string-match-p " idle " (test-sessions--row-text c)))
                (should (= calls 0))
                ;; w: A's log, on its WAIT step.
                (switch-to-buffer dashboard)
                (execute-kbd-macro (kbd "w"))
                (with-current-buffer (window-buffer)
                  (goto-char (window-point))
                  (should (string-prefix-p "*agent-shell-log: " (buffer-name)))
                  (should (string-match-p "\\`\\*+ WAIT "
                                          (buffer-substring-no-properties
                                           (line-beginning-position) (line-end-position))))
                  (should (member (agent-shell-log-node-id (agent-shell-log-node-at-point))
                                  (agent-shell-log-pending (current-buffer))))
                  (should (eq (agent-shell-sessions--shell-of (current-buffer)) a)))
                ;; k: B's turn is cancelled.
                (switch-to-buffer dashboard)
                (test-sessions--goto-row b)
                (execute-kbd-macro (kbd "k"))
                (test-sessions--wait-row b "B cancelled" " idle ")
                (with-current-buffer b
                  (should-not (agent-shell-session-turn-id agent-shell--session)))
                ;; D: C ends, after one question.
                (let ((asked nil) (name (buffer-name c)))
                  (switch-to-buffer dashboard)
                  (test-sessions--goto-row c)
                  (cl-letf (((symbol-function 'yes-or-no-p)
                             (lambda (prompt) (push prompt asked) t)))
                    (execute-kbd-macro (kbd "D")))
                  (should (= (length asked) 1))
                  (should (string-search name (car asked))))
                (should-not (buffer-live-p c))
                (should-not (test-sessions--row-text c))
                (should (test-sessions--row-text a))
                (test-sessions--end-turn a)
                (test-sessions--wait-row a "A idle again" " idle ")
                ;; Closed, the dashboard no longer listens.
                (kill-buffer dashboard)
                (should-not (memq #'agent-shell-sessions--note
                                  agent-shell-session-state-functions)))
            (advice-remove 'agent-shell-sessions--refresh 'test-sessions--count)
            (when (buffer-live-p dashboard) (kill-buffer dashboard))
            (dolist (shell (list a b c))
              (when (buffer-live-p shell) (kill-buffer shell)))))))))

(ert-deftest test-sessions/next-waiting-cycles-and-mode-line-counts ()
  "`agent-shell-next-waiting' says when nobody waits; the mode line counts waiters.
The dashboard is closed: the mode line alone keeps listening."
  (test-shell--with-session (root)
    (let ((shell (current-buffer)))
      (should-error (agent-shell-next-waiting) :type 'user-error)
      (agent-shell-sessions-mode-line-mode 1)
      (unwind-protect
          (progn
            (should (memq #'agent-shell-sessions--note agent-shell-session-state-functions))
            (should (equal agent-shell-sessions--mode-line ""))
            (test-sessions--send shell "dash-wait-two 授权")
            (test-shell--wait "the mode line" (lambda () (string-search
                                                          "agents: 1 waiting"
                                                          agent-shell-sessions--mode-line))
                              20)
            (should (memq 'agent-shell-sessions--mode-line global-mode-string))
            (with-temp-buffer
              (should (eq (agent-shell-next-waiting) shell))
              (should (string-match-p "\\`\\*+ WAIT "
                                      (buffer-substring-no-properties
                                       (line-beginning-position) (line-end-position)))))
            (test-sessions--end-turn shell)
            (test-shell--wait "no more waiting in the mode line"
                              (lambda () (equal agent-shell-sessions--mode-line ""))))
        (agent-shell-sessions-mode-line-mode -1))
      (should-not (memq #'agent-shell-sessions--note agent-shell-session-state-functions))
      (should-not (memq 'agent-shell-sessions--mode-line global-mode-string)))))

(provide 'test-sessions)
;;; test-sessions.el ends here
