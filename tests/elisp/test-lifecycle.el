;;; test-lifecycle.el --- Tests of the first minutes and a dropped bridge  -*- lexical-binding: t; -*-

;; SPDX-License-Identifier: GPL-3.0-or-later

;;; Commentary:

;; A prompt typed while the session starts, a bridge killed with
;; SIGKILL, restarting in place, and what the live transcript shows of
;; a turn (prompt line, cancelled steps, output links, plan notices,
;; recalled experiences).  Everything runs against the REAL bridge and
;; its scripted mock model, with the fixtures of
;; agent-shell-test-session.el; keys go through the real keymaps.
;; Waiting is on conditions, never on sleeps.

;;; Code:

(require 'ert)
(require 'cl-lib)
(require 'agent-shell)
(require 'agent-shell-test-helpers)
(require 'agent-shell-test-session)

(defun test-lifecycle--fresh-bridge-stopped ()
  "Stop the bridge under test, so that the next start runs a new one.
The options of the test bridge (mock model, memory directory) are set
first."
  (test-shell--bridge)
  (agent-shell-rpc-stop (agent-shell-bridge-connection agent-shell-bridge--current))
  (should-not (agent-shell-bridge-live-connection)))

(defun test-lifecycle--kill-bridge ()
  "Kill the bridge process with SIGKILL and wait until Emacs noticed."
  (let ((proc (agent-shell-rpc-bridge-conn-process (agent-shell-bridge-connection agent-shell-bridge--current))))
    (signal-process proc 'SIGKILL)
    (test-shell--wait "the dead bridge" (lambda () (eq (agent-shell-session-state agent-shell--session) 'dead)))))

(defun test-lifecycle--shown-text ()
  "Return the transcript and prompt as displayed, with display-only line breaks."
  (let ((gap (and (overlayp (agent-shell-session-prompt-gap agent-shell--session))
                  (overlay-get (agent-shell-session-prompt-gap agent-shell--session) 'before-string))))
    (concat (test-shell--transcript) (or gap "")
            (buffer-substring-no-properties (agent-shell-session-output-marker agent-shell--session) (point-max)))))

;;; A prompt typed at once

(ert-deftest test-lifecycle/prompt-typed-while-starting-is-queued ()
  "Regression: RET before the session was ready said \"no session yet\".
The prompt is queued: it shows at once, the header line says so, and
it is sent (and answered) once the session is ready."
  (agent-shell-test-with-project (root nil)
    (test-lifecycle--fresh-bridge-stopped)
    (let ((shell (let ((default-directory root)) (agent-shell-start))))
      (unwind-protect
          (with-current-buffer shell
            (should (eq (agent-shell-session-state agent-shell--session) 'starting))
            (should-not (agent-shell-session-id agent-shell--session))
            (goto-char (point-max))
            (insert "at-once 你好")
            (execute-kbd-macro (kbd "RET"))
            (should (equal (agent-shell-input) ""))
            (should (string-search "> at-once 你好" (test-shell--transcript)))
            (should (string-search "starting, 1 prompt queued" (agent-shell-header-line)))
            (test-shell--wait "the queued prompt's answer"
                              (lambda () (string-search "答复 at-once: ok."
                                                        (test-shell--transcript)))
                              30)
            (test-shell--wait "turn end" (lambda () (eq (agent-shell-session-state agent-shell--session) 'idle)) 20)
            (should (string-search "(sent)" (test-shell--transcript)))
            (should-not (agent-shell-session-queued-prompt agent-shell--session)))
        (kill-buffer shell)))))

(ert-deftest test-lifecycle/queued-prompt-goes-back-when-start-fails ()
  "A queued prompt is not lost when the session cannot start: it is back in the input."
  (agent-shell-test-with-project (root nil)
    (test-lifecycle--fresh-bridge-stopped)
    ;; The bridge refuses to initialise with this webhook.
    (let* ((agent-shell-notify-webhook "http://")
           (shell (let ((default-directory root)) (agent-shell-start))))
      (unwind-protect
          (with-current-buffer shell
            (should (eq (agent-shell-session-state agent-shell--session) 'starting))
            (goto-char (point-max))
            (insert "草稿 that must survive")
            (execute-kbd-macro (kbd "RET"))
            (should (equal (agent-shell-input) ""))
            (test-shell--wait "the failed start" (lambda () (eq (agent-shell-session-state agent-shell--session) 'dead)) 30)
            (should (equal (agent-shell-input) "草稿 that must survive"))
            (should-not (agent-shell-session-queued-prompt agent-shell--session))
            (should (string-search "back in the input" (test-shell--transcript))))
        (kill-buffer shell)))))

(ert-deftest test-lifecycle/prompt-typed-while-resuming-is-queued ()
  "A prompt sent while `session/resume' is under way is queued and answered."
  (test-shell--with-session (root)
    (let ((sid (agent-shell-session-id agent-shell--session)))
      (goto-char (point-max))
      (insert "before-resume please")
      (execute-kbd-macro (kbd "RET"))
      (test-shell--wait "the answer" (lambda () (and (eq (agent-shell-session-state agent-shell--session) 'idle)
                                                     (string-search "答复 before-resume: ok."
                                                                    (test-shell--transcript))))
                        20)
      (with-current-buffer (agent-shell-resume-session (test-shell--bridge) root sid)
        (should (eq (agent-shell-session-state agent-shell--session) 'starting))
        (goto-char (point-max))
        (insert "after-resume please")
        (execute-kbd-macro (kbd "RET"))
        (should (agent-shell-session-queued-prompt agent-shell--session))
        (test-shell--wait "the queued prompt's answer"
                          (lambda () (string-search "答复 after-resume: ok."
                                                    (test-shell--transcript)))
                          30)
        (test-shell--wait "turn end" (lambda () (eq (agent-shell-session-state agent-shell--session) 'idle)) 20)
        (should (equal (agent-shell-session-id agent-shell--session) sid))
        ;; The resumed history comes first, then the queued prompt and its answer.
        (should (string-match-p
                 "> before-resume please\n\\(?:.\\|\n\\)*> after-resume please\n\\(?:.\\|\n\\)*答复 after-resume: ok\\."
                 (test-shell--transcript)))))))

(ert-deftest test-lifecycle/resuming-another-session-asks-before-erasing ()
  "Resuming another session into a shell with a transcript asks first; no keeps it."
  (test-shell--with-session (root)
    (let ((sid (agent-shell-session-id agent-shell--session))
          (asked nil))
      (agent-shell-transcript-notice "a transcript worth keeping 保留")
      (cl-letf (((symbol-function 'yes-or-no-p) (lambda (prompt) (setq asked prompt) nil)))
        (should-error (agent-shell-resume-session (test-shell--bridge) root "s-other")
                      :type 'user-error))
      (should (string-search "instead of its transcript" asked))
      (should (equal (agent-shell-session-id agent-shell--session) sid))
      (should (string-search "a transcript worth keeping 保留" (test-shell--transcript))))))

;;; A dropped bridge

(ert-deftest test-lifecycle/kill-9-ends-the-turn-and-cancels-running-steps ()
  "Regression: after SIGKILL of the bridge a turn stayed running with its spinner.
`agent-shell-resume' then asked to cancel a turn that no longer
existed.  Now the turn ends as soon as the bridge is gone."
  (test-shell--with-session (root)
    (let ((sid (agent-shell-session-id agent-shell--session)))
      (goto-char (point-max))
      (insert "lingering please")
      (execute-kbd-macro (kbd "RET"))
      (test-shell--wait "the running turn" (lambda () (stringp (agent-shell-session-turn-id agent-shell--session))) 20)
      (test-shell--emit
       (test-shell--update sid '((sessionUpdate . "tool_call") (toolCallId . "k1")
                                 (title . "run_test 测试") (kind . "execute")
                                 (status . "in_progress"))))
      (test-shell--wait "the running tool" (lambda () (string-search "◐ run_test"
                                                                     (test-shell--transcript))))
      (test-lifecycle--kill-bridge)
      (should-not (agent-shell-session-turn-id agent-shell--session))
      (should-not (string-search "◐" (test-shell--transcript)))
      (should (string-search "✗ run_test 测试 — cancelled: the bridge stopped"
                             (test-shell--transcript)))
      (should (string-search "bridge stopped" (agent-shell-header-line)))
      (should (string-search "C-c C-r restarts it" (test-shell--transcript)))
      ;; Resuming does not ask to cancel a turn of a dead bridge.
      (cl-letf (((symbol-function 'yes-or-no-p)
                 (lambda (prompt) (ert-fail (format "asked: %s" prompt)))))
        (with-current-buffer (agent-shell-resume-session (test-shell--bridge) root sid)
          (test-shell--wait "resumed" (lambda () (eq (agent-shell-session-state agent-shell--session) 'idle)) 20))))))

(ert-deftest test-lifecycle/restart-key-keeps-transcript-and-input ()
  "Regression: the suggested restart erased the transcript and the unsent input.
\\`C-c C-r' restarts the bridge and resumes the same session in place."
  (test-shell--with-session (root)
    (let ((sid (agent-shell-session-id agent-shell--session)))
      (goto-char (point-max))
      (insert "before-restart please")
      (execute-kbd-macro (kbd "RET"))
      (test-shell--wait "the answer" (lambda () (and (eq (agent-shell-session-state agent-shell--session) 'idle)
                                                     (string-search "答复 before-restart: ok."
                                                                    (test-shell--transcript))))
                        20)
      (goto-char (point-max))
      (insert "unsent 草稿")
      (test-lifecycle--kill-bridge)
      (execute-kbd-macro (kbd "C-c C-r"))
      (should (eq (agent-shell-session-state agent-shell--session) 'starting))
      (test-shell--wait "the resumed session" (lambda () (eq (agent-shell-session-state agent-shell--session) 'idle)) 30)
      (should (equal (agent-shell-session-id agent-shell--session) sid))
      (should (agent-shell-bridge-live-connection))
      (should (equal (agent-shell-input) "unsent 草稿"))
      (let ((text (test-shell--transcript)))
        (should (string-search "> before-restart please" text))
        (should (string-search "答复 before-restart: ok." text))
        (should (string-search "The agent-shell bridge stopped" text))
        ;; The old transcript is not drawn a second time.
        (should (= 2 (length (split-string text "> before-restart please"))))))))

(ert-deftest test-lifecycle/start-after-death-resumes-in-place-and-queues ()
  "`agent-shell-start' in a dead shell resumes in place; a prompt typed meanwhile is queued."
  (test-shell--with-session (root)
    (goto-char (point-max))
    (insert "before-start please")
    (execute-kbd-macro (kbd "RET"))
    (test-shell--wait "the answer" (lambda () (and (eq (agent-shell-session-state agent-shell--session) 'idle)
                                                   (string-search "答复 before-start: ok."
                                                                  (test-shell--transcript))))
                      20)
    (test-lifecycle--kill-bridge)
    (let ((default-directory root))
      (should (eq (agent-shell-start) (current-buffer))))
    (should (eq (agent-shell-session-state agent-shell--session) 'starting))
    (should (string-search "答复 before-start: ok." (test-shell--transcript)))
    (goto-char (point-max))
    (insert "after-start please")
    (execute-kbd-macro (kbd "RET"))
    (test-shell--wait "the queued prompt's answer"
                      (lambda () (string-search "答复 after-start: ok." (test-shell--transcript)))
                      30)
    (test-shell--wait "turn end" (lambda () (eq (agent-shell-session-state agent-shell--session) 'idle)) 20)
    (should (string-search "答复 before-start: ok." (test-shell--transcript)))))

;;; The live transcript

(ert-deftest test-lifecycle/prompt-never-sticks-to-a-running-line ()
  "Regression: the `>' prompt showed glued to the end of a running tool's line."
  (test-shell--with-shell (sid)
    (test-shell--emit
     (test-shell--update sid '((sessionUpdate . "tool_call") (toolCallId . "g1")
                               (title . "run_command make") (status . "in_progress"))))
    (test-shell--wait "tool call" (lambda () (string-search "run_command" (test-shell--transcript))))
    (should (string-match-p "◐ run_command make\n> \\'" (test-lifecycle--shown-text)))
    ;; The line break is display only: the transcript text is unchanged.
    (should (string-suffix-p "run_command make" (test-shell--transcript)))
    (test-shell--emit
     (test-shell--update sid '((sessionUpdate . "turn_end") (turnId . "t-g")
                               (stopReason . "cancelled"))))
    (test-shell--wait "turn end" (lambda () (string-search "[turn ended: cancelled]"
                                                           (test-shell--transcript))))
    (should-not (string-match-p "\n\n> \\'" (test-lifecycle--shown-text)))
    (should (string-match-p "\n> \\'" (test-lifecycle--shown-text)))
    ;; A transcript drawn again (a resume) leaves no line break of the old one.
    (test-shell--emit
     (test-shell--update sid '((sessionUpdate . "tool_call") (toolCallId . "g2")
                               (title . "run_command make") (status . "in_progress"))))
    (test-shell--wait "tool call" (lambda () (string-search "g2" (format "%S" (agent-shell-session-tools agent-shell--session)))))
    (agent-shell--setup sid temporary-file-directory sid)
    (should-not (cl-some (lambda (o) (overlay-get o 'before-string))
                         (overlays-in (point-min) (point-max))))))

(ert-deftest test-lifecycle/cancelled-turn-leaves-no-spinner ()
  "Regression: a step still running when its turn was cancelled kept its spinner."
  (test-shell--with-shell (sid)
    (test-shell--emit
     (test-shell--update sid '((sessionUpdate . "tool_call") (toolCallId . "c9")
                               (title . "run_test") (status . "in_progress")))
     (test-shell--update sid '((sessionUpdate . "tool_call") (toolCallId . "c10")
                               (title . "read_file a.py") (status . "in_progress")))
     (test-shell--update sid '((sessionUpdate . "tool_call_update") (toolCallId . "c10")
                               (status . "completed")))
     (test-shell--update sid '((sessionUpdate . "turn_end") (turnId . "t-c")
                               (stopReason . "cancelled"))))
    (test-shell--wait "turn end" (lambda () (eq (agent-shell-session-state agent-shell--session) 'idle)))
    (let ((text (test-shell--transcript)))
      (should-not (string-search "◐" text))
      (should (string-search "✗ run_test — cancelled" text))
      (should (string-search "● read_file a.py\n" text)))))

(ert-deftest test-lifecycle/full-output-is-a-link ()
  "Regression: \"full output: out-2\" was plain text; it is a button opening the file."
  (test-shell--with-session (root)
    (let* ((sid (agent-shell-session-id agent-shell--session))
           (file (expand-file-name (format ".agent-shell/outputs/%s/out-2.txt" sid) root)))
      (agent-shell-test-write root (file-relative-name file root) "全部输出\nline 2\n")
      (test-shell--emit
       (test-shell--update sid '((sessionUpdate . "tool_call") (toolCallId . "o1")
                                 (title . "run_command make") (status . "in_progress")))
       (test-shell--update sid '((sessionUpdate . "tool_call_update") (toolCallId . "o1")
                                 (status . "completed")
                                 (rawOutput . ((exit_code . 0) (truncated . t)
                                               (log_ref . "out-2"))))))
      (test-shell--wait "the outcome" (lambda () (string-search "full output: out-2"
                                                                (test-shell--transcript))))
      (goto-char (point-min))
      (search-forward "run_command")
      (agent-shell-toggle-entry)
      (search-forward "full output: ")
      (let ((button (button-at (point))))
        (should button)
        (should (equal (button-label button) "out-2"))
        (push-button (point)))
      (unwind-protect
          (progn
            (should (equal (file-truename (buffer-file-name)) (file-truename file)))
            (should buffer-read-only)
            (should (string-prefix-p "全部输出" (buffer-string))))
        (kill-buffer (current-buffer))))))

(ert-deftest test-lifecycle/plan-notice-goes-away-after-approval ()
  "Regression: \"Plan waiting for you\" stayed in the transcript after approval."
  (test-shell--with-shell (sid)
    (let ((box (list nil)))
      (agent-shell-rpc-request
       (test-shell--bridge) "debug/client_request"
       `((method . "session/request_plan")
         (params . ((sessionId . ,sid) (planId . "p-l") (toolCallId . "call_plan")
                    (logEntryId . "e-1") (goal . "修好 add")
                    (steps . [((title . "第一步") (files . ["a.py"])
                               (expected . "ok") (verify . "true"))])
                    (risks . [])))
         (timeout_s . 30))
       :timeout 35
       :on-success (lambda (r) (setcar box r))
       :on-error (lambda (e) (setcar box e)))
      (test-shell--wait "the plan notice"
                        (lambda () (string-search "Plan waiting for you" (test-shell--transcript))))
      (let ((plan (test-shell--wait "the plan buffer"
                                    (lambda ()
                                      (cl-find-if (lambda (b)
                                                    (with-current-buffer b
                                                      (and (derived-mode-p 'agent-shell-plan-mode)
                                                           agent-shell-plan--request)))
                                                  (buffer-list))))))
        (with-current-buffer plan
          (execute-kbd-macro (kbd "C-c C-c")))
        (test-shell--wait "the answer" (lambda () (car box)) 20)
        (kill-buffer plan))
      (should-not (string-search "Plan waiting for you" (test-shell--transcript)))
      (should (string-search "Plan approved" (test-shell--transcript))))))

(ert-deftest test-lifecycle/recalled-memories-show-at-turn-start ()
  "Regression: the experiences recalled for a live turn showed only after a resume."
  (test-shell--with-shell (sid)
    (test-shell--emit
     `((method . "log/entry")
       (params . ((id . "m-1") (session_id . ,sid) (source . "memory")
                  (timestamp . "2026-12-01T10:00:00+00:00")
                  (title . "Memory: 2 experience(s) injected into the system prompt")
                  (properties . ((COUNT . 2)
                                 (RECALLED . "修复 JSON 导出 | Use ensure_ascii=False")
                                 (SCORES . "1.250 | 0.410")
                                 (PATHS . ".agent-shell/memory/a.md | .agent-shell/memory/b.md")))
                  (body . []))))
     `((method . "log/entry")
       (params . ((id . "m-2") (session_id . ,sid) (source . "memory")
                  (timestamp . "2026-12-01T10:00:00+00:00")
                  (title . "Memory: wrote an experience")
                  (properties . ((DECISION . "extract")))
                  (body . [])))))
    (test-shell--wait "the recall notice"
                      (lambda () (string-search "Recalled 2 experiences"
                                                (test-shell--transcript))))
    (should (string-search "Recalled 2 experiences for this task: 修复 JSON 导出; \
Use ensure_ascii=False" (test-shell--transcript)))
    ;; Folded: the scores and files are in the entry's body, not shown.
    (goto-char (point-min))
    (should (search-forward "1.250" nil t))
    (should (invisible-p (match-beginning 0)))
    (let ((body (test-shell--entry-text "Recalled 2 experiences")))
      (should (string-search "1.250 .agent-shell/memory/a.md — 修复 JSON 导出" body))
      (should (string-search "0.410 .agent-shell/memory/b.md — Use ensure_ascii=False" body)))
    (should-not (string-search "wrote an experience" (test-shell--transcript)))))

;;; The scaffold

(ert-deftest test-lifecycle/scaffold-ignores-records-not-settings ()
  "The scaffolded `.agent-shell/.gitignore' keeps records out of git, settings in.
Checked with real git: logs, sessions, snapshots, outputs and the
workspace are ignored; config.el, allowlist.el, memory and the ignore
file itself show up to be committed."
  (agent-shell-test-with-project (root nil)
    (agent-shell-project-scaffold root)
    (dolist (file '("logs/s.org" "sessions/s.json" "snapshots/a/1.txt" "outputs/s/out-1.txt"
                    "workspace/tmp.txt" "memory/2026-12-01--修复.md"))
      (agent-shell-test-write root (concat ".agent-shell/" file) "x\n"))
    (let ((status (agent-shell-test-git root "status" "--porcelain" "-uall")))
      (dolist (kept '(".agent-shell/.gitignore" ".agent-shell/config.el"
                      ".agent-shell/allowlist.el" ".agent-shell/memory/2026-12-01--修复.md"))
        (should (string-search kept status)))
      (dolist (ignored '("logs/" "sessions/" "snapshots/" "outputs/" "workspace/"))
        (should-not (string-search (concat ".agent-shell/" ignored) status))))))

(ert-deftest test-lifecycle/scaffold-ignore-file-matches-the-bridge ()
  "Emacs and the bridge write the same `.agent-shell/.gitignore', whoever comes first."
  (let* ((live (expand-file-name "../bridge/agent_shell_bridge/agent/session/live.py"
                                 (file-name-directory (locate-library "agent-shell"))))
         (source (with-temp-buffer
                   (insert-file-contents live)
                   (buffer-string))))
    (should (string-match "_GITIGNORE = \"\"\"\\\\\n\\(\\(?:.\\|\n\\)*?\\)\"\"\"" source))
    (should (equal (match-string 1 source) agent-shell-project--gitignore-template))))

(provide 'test-lifecycle)
;;; test-lifecycle.el ends here
