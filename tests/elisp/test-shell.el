;;; test-shell.el --- Tests of the agent-shell buffer: start, input, resume  -*- lexical-binding: t; -*-

;; SPDX-License-Identifier: GPL-3.0-or-later

;;; Commentary:

;; The shell buffer of agent-shell.el: `agent-shell-start' and the
;; session it opens, the input (RET, history, newline), the mode switch,
;; resuming, and what killing the buffer does.
;;
;; Every test talks to the REAL bridge (AGENT_SHELL_TEST_BRIDGE, started
;; with its debug methods, see agent-shell-test-session.el) over real
;; HTTP and SSE; prompts go to its scripted mock model on loopback, the
;; only fake part.  Waiting is on conditions with deadlines, never on
;; sleeps.

;;; Code:

(require 'ert)
(require 'cl-lib)
(require 'agent-shell)
(require 'agent-shell-test-helpers)
(require 'agent-shell-test-session)

(ert-deftest test-shell/start-scaffolds-and-opens-session ()
  "`agent-shell-start' makes `.agent-shell/', names the buffer after the root and gets a session."
  (test-shell--with-session (root)
    (should (equal (buffer-name)
                   (format "*agent-shell: %s*"
                           (file-name-nondirectory (directory-file-name root)))))
    (dolist (sub '("memory" "logs" "workspace" "config.el" "allowlist.el"))
      (should (file-exists-p (expand-file-name (concat ".agent-shell/" sub) root))))
    (should (string-prefix-p (file-truename root)
                             (file-truename (agent-shell-session-log-path agent-shell--session))))
    (should (eq (agent-shell-bridge-session-buffer (agent-shell-session-id agent-shell--session)) (current-buffer)))))

(ert-deftest test-shell/ret-sends-prompt-and-streams-answer ()
  "RET sends the input as `session/prompt'; the mock model's answer streams back."
  (test-shell--with-session (root)
    (goto-char (point-max))
    (insert "hello 你好")
    (execute-kbd-macro (kbd "RET"))
    (should (equal (agent-shell-input) ""))
    (should (string-search "> hello 你好" (test-shell--transcript)))
    (test-shell--wait "the answer" (lambda () (string-search "Streaming works."
                                                             (test-shell--transcript)))
                      20)
    (should (string-search "你好，世界！Streaming works." (test-shell--transcript)))
    (test-shell--wait "turn end" (lambda () (eq (agent-shell-session-state agent-shell--session) 'idle)) 20)
    (should (equal (car (agent-shell-session-history agent-shell--session)) "hello 你好"))))

(ert-deftest test-shell/resume-shows-visible-history ()
  "Resuming a session reopens it with its past prompt and answer in the transcript."
  (test-shell--with-session (root)
    (let ((sid (agent-shell-session-id agent-shell--session)))
      (goto-char (point-max))
      (insert "repeat please")
      (execute-kbd-macro (kbd "RET"))
      (test-shell--wait "turn end" (lambda () (and (eq (agent-shell-session-state agent-shell--session) 'idle)
                                                   (string-search "done." (test-shell--transcript))))
                        20)
      (with-current-buffer (agent-shell-resume-session (agent-shell-bridge-connection agent-shell-bridge--current) root sid)
        (test-shell--wait "resumed" (lambda () (equal (agent-shell-session-id agent-shell--session) sid)) 20)
        (should (string-search "> repeat please" (test-shell--transcript)))
        (should (string-search "再说一遍：done." (test-shell--transcript)))
        (should (equal (car (agent-shell-session-history agent-shell--session)) "repeat please"))))))

(ert-deftest test-shell/input-history-and-newline ()
  "M-p and M-n walk sent inputs and restore the draft; C-j inserts a newline."
  (test-shell--with-shell (sid)
    (setf (agent-shell-session-history agent-shell--session) '("third" "second" "first"))
    (goto-char (point-max))
    (insert "draft")
    (execute-kbd-macro (kbd "M-p"))
    (should (equal (agent-shell-input) "third"))
    (execute-kbd-macro (kbd "M-p M-p"))
    (should (equal (agent-shell-input) "first"))
    (should-error (agent-shell-previous-input 1) :type 'user-error)
    (execute-kbd-macro (kbd "M-n M-n M-n"))
    (should (equal (agent-shell-input) "draft"))
    (execute-kbd-macro (kbd "C-j"))
    (insert "line two")
    (should (equal (agent-shell-input) "draft\nline two"))))

(ert-deftest test-shell/toggle-mode-asks-bridge ()
  "C-c C-t switches the session between act and ask through `session/set_mode'."
  (test-shell--with-session (root)
    (should (eq (agent-shell-session-mode agent-shell--session) 'act))
    (execute-kbd-macro (kbd "C-c C-t"))
    (test-shell--wait "ask mode" (lambda () (eq (agent-shell-session-mode agent-shell--session) 'ask)))
    (should (string-search "│ ask │" (agent-shell-header-line)))
    (execute-kbd-macro (kbd "C-c C-t"))
    (test-shell--wait "act mode" (lambda () (eq (agent-shell-session-mode agent-shell--session) 'act)))))

(ert-deftest test-shell/kill-buffer-cancels-turn ()
  "Killing the shell buffer during a turn sends `session/cancel'; the turn ends cancelled."
  (test-shell--with-session (root)
    (let ((sid (agent-shell-session-id agent-shell--session))
          (seen nil))
      (cl-flet ((watch (_conn msg)
                  (let ((update (alist-get 'update (alist-get 'params msg))))
                    (when (and (equal (alist-get 'sessionId (alist-get 'params msg)) sid)
                               (equal (alist-get 'sessionUpdate update) "turn_end"))
                      (setq seen update)))))
        (add-hook 'agent-shell-rpc-message-functions #'watch)
        (unwind-protect
            (progn
              (goto-char (point-max))
              (insert "slow please")
              (execute-kbd-macro (kbd "RET"))
              (test-shell--wait "the turn id" (lambda () (stringp (agent-shell-session-turn-id agent-shell--session))))
              (kill-buffer (current-buffer))
              (test-shell--wait "the cancelled turn" (lambda () seen) 15)
              (should (equal (alist-get 'stopReason seen) "cancelled")))
          (remove-hook 'agent-shell-rpc-message-functions #'watch))))))

(ert-deftest test-shell/session-notices-are-shown ()
  "The bridge's session notices (no API key found, and how to set one) show at start."
  (test-shell--with-shell (sid)
    (agent-shell-on-session
     (current-buffer)
     `((sessionId . ,sid)
       (notices . ["No API key found for https://api.deepseek.com/v1: set agent-shell-api-key"])))
    (should (string-search "No API key found for https://api.deepseek.com/v1"
                           (test-shell--transcript)))))

(ert-deftest test-shell/failed-send-leaves-no-running-turn ()
  "Regression: a prompt that could not be sent left \"a turn is running\".
The turn id and state were set and the input deleted before the
request failed, so RET then refused every later prompt."
  (test-shell--with-session (root)
    (agent-shell-stop-bridge)
    (test-shell--wait "the bridge to stop" (lambda () (eq (agent-shell-session-state agent-shell--session) 'dead)))
    (goto-char (point-max))
    (insert "你好 again")
    (should-error (execute-kbd-macro (kbd "RET")) :type 'user-error)
    (should-not (agent-shell-session-turn-id agent-shell--session))
    (should (equal (agent-shell-input) "你好 again"))
    (should-not (eq (agent-shell-session-state agent-shell--session) 'thinking))))

(ert-deftest test-shell/setup-erase-is-not-undoable ()
  "Regression: the erase in `agent-shell--setup' was recorded in undo.
Undo in a reused shell buffer could bring back the old transcript."
  (with-temp-buffer
    (insert "旧的内容 old transcript")
    (buffer-enable-undo)
    (let ((inhibit-read-only t)) (insert " more"))
    (agent-shell--setup "undo-test" temporary-file-directory nil)
    (should (null buffer-undo-list))
    (goto-char (point-max))
    (insert "typed")
    (undo-boundary)
    (let ((last-command nil)) (undo))
    (should-not (string-search "旧的内容" (buffer-string)))))

(ert-deftest test-shell/same-directory-names-get-separate-sessions ()
  "Regression: two projects with the same directory name shared one shell.
`agent-shell-start' in the second reused the first's buffer, session,
log and plan buffers.  The second now gets its own, named after its
parent directory too."
  (let* ((parent-a (make-temp-file "agent-shell-a-" t))
         (parent-b (make-temp-file "agent-shell-b-" t))
         (root-a (file-name-as-directory (expand-file-name "proj" parent-a)))
         (root-b (file-name-as-directory (expand-file-name "proj" parent-b)))
         (buffers nil))
    (make-directory root-a) (make-directory root-b)
    (test-shell--bridge)
    (unwind-protect
        (let ((a (test-shell--start-session root-a))
              (b (test-shell--start-session root-b)))
          (setq buffers (list a b))
          (should-not (eq a b))
          (should (equal (buffer-name a) "*agent-shell: proj*"))
          (should (equal (buffer-name b)
                         (format "*agent-shell: proj<%s>*" (file-name-nondirectory parent-b))))
          (should-not (equal (agent-shell-session-id (buffer-local-value 'agent-shell--session a))
                             (agent-shell-session-id (buffer-local-value 'agent-shell--session b))))
          (should-not (equal (agent-shell-session-name (buffer-local-value 'agent-shell--session a))
                             (agent-shell-session-name (buffer-local-value 'agent-shell--session b))))
          ;; Starting again in the first project reuses its own buffer.
          (should (eq (test-shell--start-session root-a) a)))
      (mapc #'kill-buffer (cl-remove-if-not #'buffer-live-p buffers))
      (delete-directory parent-a t)
      (delete-directory parent-b t))))

(ert-deftest test-shell/resume-asks-before-cancelling-a-running-turn ()
  "Regression: resuming into a buffer silently cancelled its running turn.
Now the user is asked first, and a no leaves the session alone."
  (test-shell--with-session (root)
    (let ((sid (agent-shell-session-id agent-shell--session))
          (asked nil))
      (setf (agent-shell-session-turn-id agent-shell--session) "t-running")
      (cl-letf (((symbol-function 'yes-or-no-p) (lambda (prompt) (setq asked prompt) nil)))
        (should-error (agent-shell-resume-session (agent-shell-bridge-connection agent-shell-bridge--current) root "other")
                      :type 'user-error))
      (should (string-search "A turn is running" asked))
      (should (equal (agent-shell-session-id agent-shell--session) sid))
      (should (equal (agent-shell-session-turn-id agent-shell--session) "t-running"))
      (setf (agent-shell-session-turn-id agent-shell--session) nil))))

(ert-deftest test-shell/readme-commands-exist-after-require ()
  "Regression: `M-x agent-shell-undo-turn' did not exist after a checkout install.
Every command the README names with M-x is a command right after
\(require \='agent-shell), without loading anything else first."
  (let* ((readme (expand-file-name "../README.org"
                                   (file-name-directory (locate-library "agent-shell"))))
         (named (with-temp-buffer
                  (insert-file-contents readme)
                  (let ((found nil))
                    (while (re-search-forward "M-x \\(agent-shell-[a-z0-9-]*[a-z0-9]\\)" nil t)
                      (cl-pushnew (intern (match-string 1)) found))
                    found)))
         (output
          (with-temp-buffer
            (call-process (expand-file-name invocation-name invocation-directory)
                          nil t nil "-Q" "--batch"
                          "-L" (file-name-directory (locate-library "agent-shell"))
                          "--eval"
                          (format "(progn (require 'agent-shell)
  (prin1 (cl-remove-if #'commandp '%S)))" named))
            (buffer-string))))
    (should (memq 'agent-shell-undo-turn named))
    (should (memq 'agent-shell-trust-project-file named))
    (should (equal (string-trim output) "nil"))))

(provide 'test-shell)
;;; test-shell.el ends here
