;;; test-plan.el --- Tests of plan review in org and ask-mode citations  -*- lexical-binding: t; -*-

;; SPDX-License-Identifier: GPL-3.0-or-later

;;; Commentary:

;; Every test talks to the REAL bridge (AGENT_SHELL_TEST_BRIDGE, started
;; with its debug methods) over real HTTP and SSE.  A plan request is
;; provoked with `debug/client_request', which returns to the test what
;; Emacs answered; `plan' updates and message chunks are published with
;; `debug/emit' and arrive through the real event stream.  Keys go
;; through the real keymaps with `execute-kbd-macro'.  Waiting is on
;; conditions with deadlines, never on sleeps.

;;; Code:

(require 'ert)
(require 'cl-lib)
(require 'agent-shell)
(require 'agent-shell-plan)
(require 'agent-shell-test-helpers)

;;; Fixture

(defvar test-plan--memory-dir (make-temp-file "agent-shell-test-memory-" t)
  "Memory directory of the bridge under test.")

(defvar test-plan--counter 0 "Counter for session ids.")

(defalias 'test-plan--wait #'agent-shell-test-wait)

(defun test-plan--bridge ()
  "Return an initialised connection to the real bridge, starting it if needed."
  (unless (and (agent-shell-bridge-live-connection)
               (eq (agent-shell-bridge-initialized agent-shell-bridge--current) (agent-shell-bridge-connection agent-shell-bridge--current)))
    (setq agent-shell-bridge-debug t
          agent-shell-memory-dir test-plan--memory-dir
          agent-shell-api-base "http://127.0.0.1:9/v1"
          agent-shell-api-key "sk-test-plan-secret")
    (agent-shell-bridge-with-connection #'ignore)
    (test-plan--wait "the bridge to initialise"
                     (lambda () (and (agent-shell-bridge-live-connection)
                                     (eq (agent-shell-bridge-initialized agent-shell-bridge--current)
                                         (agent-shell-bridge-connection agent-shell-bridge--current))))
                     30))
  (agent-shell-bridge-connection agent-shell-bridge--current))

(defun test-plan--sid ()
  "Return a fresh session id."
  (format "s-plan-%d-%d" (emacs-pid) (cl-incf test-plan--counter)))

(defconst test-plan--steps
  '(((title . "删掉这一步") (files . []) (expected . "") (verify . nil))
    ((title . "第二步：修复 add") (files . ["calc.py" "中文.py"])
     (expected . "add(2, 3) == 5") (verify . "pytest -q tests/test_calc.py"))
    ((title . "第三步：更新文档") (files . ["README.md"])
     (expected . "文档说明新行为") (verify . "test -f README.md")))
  "Steps of the proposed plan.")

(defun test-plan--request (sid)
  "Ask Emacs to review a plan for SID through the bridge.
Return a cons cell whose car becomes the answer (or the error)."
  (let ((box (list nil)))
    (agent-shell-rpc-request
     (test-plan--bridge) "debug/client_request"
     `((method . "session/request_plan")
       (params . ((sessionId . ,sid) (planId . "p-test") (toolCallId . "call_plan")
                  (logEntryId . "e-1") (goal . "修好 add 并更新文档")
                  (steps . ,(vconcat test-plan--steps))
                  (risks . ["可能改变公共 API"])))
       (timeout_s . 30))
     :timeout 35
     :on-success (lambda (r) (setcar box (list :result (alist-get 'result r))))
     :on-error (lambda (e) (setcar box (list :error e))))
    box))

(defun test-plan--pending-buffer (sid)
  "Wait for SID's plan buffer to hold a pending request; return it."
  (test-plan--wait "the plan buffer"
                   (lambda ()
                     (let ((buffer (get-buffer (agent-shell-plan-buffer-name sid))))
                       (and buffer
                            (buffer-local-value 'agent-shell-plan--request buffer)
                            buffer)))))

(defun test-plan--answer (box)
  "Wait for the answer in BOX and return the result Emacs sent."
  (test-plan--wait "the plan answer" (lambda () (car box)) 20)
  (should-not (plist-get (car box) :error))
  (plist-get (car box) :result))

(defmacro test-plan--with-shell (spec &rest body)
  "Run BODY in a shell buffer for a fresh session; SPEC is (SID-VAR ROOT).
The buffer is attached without `session/new', so updates published for
SID-VAR through the real event stream land in it."
  (declare (indent 1) (debug ((symbolp form) body)))
  `(let* ((,(car spec) (test-plan--sid))
          (buffer (get-buffer-create (format "*agent-shell: %s*" ,(car spec)))))
     (test-plan--bridge)
     (unwind-protect
         (progn
           (switch-to-buffer buffer)
           (agent-shell--setup ,(car spec) ,(cadr spec) ,(car spec))
           ,@body)
       (when (buffer-live-p buffer)
         (with-current-buffer buffer (setf (agent-shell-session-id agent-shell--session) nil))
         (kill-buffer buffer))
       (when-let ((plan (get-buffer (agent-shell-plan-buffer-name ,(car spec)))))
         (kill-buffer plan)))))

(defun test-plan--emit (&rest messages)
  "Publish session/update MESSAGES (params alists) over the real SSE stream."
  (agent-shell-rpc-request-sync
   (test-plan--bridge) "debug/emit"
   `((messages . ,(vconcat (mapcar (lambda (p) `((jsonrpc . "2.0")
                                                 (method . "session/update")
                                                 (params . ,p)))
                                   messages))))
   20))

;;; Review

(ert-deftest test-plan/renders-plan-as-org-checklist ()
  "The request is shown as an org checklist with details as sub-items."
  (let* ((sid (test-plan--sid))
         (box (test-plan--request sid))
         (buffer (test-plan--pending-buffer sid)))
    (unwind-protect
        (with-current-buffer buffer
          (should (derived-mode-p 'agent-shell-plan-mode))
          (should (derived-mode-p 'org-mode))
          (should (equal (buffer-name) (format "*agent-shell-plan: %s*" sid)))
          (let ((text (buffer-string)))
            (should (string-search "#+TITLE: Plan: 修好 add 并更新文档" text))
            (should (string-search "* Steps [0/3]\n- [ ] 删掉这一步\n- [ ] 第二步：修复 add\n" text))
            (should (string-search "  - files: calc.py, 中文.py\n" text))
            (should (string-search "  - expected: add(2, 3) == 5\n" text))
            (should (string-search "  - verify: pytest -q tests/test_calc.py\n" text))
            (should (string-search "* Risks\n- 可能改变公共 API" text)))
          ;; Unedited, the plan parses back to what was proposed.
          (let ((plan (agent-shell-plan-parse)))
            (should (equal (alist-get 'goal plan) "修好 add 并更新文档"))
            (should (equal (mapcar (lambda (s) (alist-get 'title s)) (alist-get 'steps plan))
                           (mapcar (lambda (s) (alist-get 'title s)) test-plan--steps)))
            (should (eq (alist-get 'verify (aref (alist-get 'steps plan) 0)) :null))
            (should (equal (alist-get 'files (aref (alist-get 'steps plan) 1))
                           ["calc.py" "中文.py"]))))
      (kill-buffer buffer))
    ;; Killing the buffer of a waiting plan rejects it, so the bridge is not left hanging.
    (let ((answer (test-plan--answer box)))
      (should (equal (alist-get 'outcome answer) "rejected"))
      (should (string-search "closed" (alist-get 'reason answer))))))

(ert-deftest test-plan/edited-plan-is-the-answer ()
  "Kill a step's line, move a step up, approve with C-c C-c: the edit is sent."
  (let* ((sid (test-plan--sid))
         (box (test-plan--request sid))
         (buffer (test-plan--pending-buffer sid)))
    (unwind-protect
        (progn
          (switch-to-buffer buffer)
          (goto-char (point-min))
          (re-search-forward "^- \\[ \\] 删掉这一步")
          (execute-kbd-macro (kbd "C-a C-k C-k"))
          (re-search-forward "^- \\[ \\] 第三步")
          (execute-kbd-macro (kbd "M-<up>"))
          ;; Rewrite a verification command in place, Chinese and all.
          (goto-char (point-min))
          (re-search-forward "verify: test -f README.md")
          (execute-kbd-macro (kbd "C-e SPC & & SPC g r e p SPC -q SPC 文 SPC README.md"))
          (execute-kbd-macro (kbd "C-c C-c"))
          (let* ((answer (test-plan--answer box))
                 (plan (alist-get 'plan answer))
                 (steps (alist-get 'steps plan)))
            (should (equal (alist-get 'outcome answer) "approved"))
            (should (equal (mapcar (lambda (s) (alist-get 'title s)) steps)
                           '("第三步：更新文档" "第二步：修复 add")))
            (should (equal (alist-get 'verify (nth 0 steps))
                           "test -f README.md && grep -q 文 README.md"))
            (should (equal (alist-get 'files (nth 1 steps)) '("calc.py" "中文.py")))
            (should (equal (alist-get 'expected (nth 1 steps)) "add(2, 3) == 5"))
            (should (equal (alist-get 'risks plan) '("可能改变公共 API"))))
          (with-current-buffer buffer
            (should-not agent-shell-plan--request)
            (should buffer-read-only)
            (should-error (execute-kbd-macro (kbd "C-c C-c")) :type 'user-error)))
      (kill-buffer buffer))))

(ert-deftest test-plan/reject-with-reason ()
  "C-c C-k rejects the plan with the reason the user typed."
  (let* ((sid (test-plan--sid))
         (box (test-plan--request sid))
         (buffer (test-plan--pending-buffer sid)))
    (unwind-protect
        (progn
          (switch-to-buffer buffer)
          (cl-letf (((symbol-function 'read-string) (lambda (&rest _) "太冒险了")))
            (execute-kbd-macro (kbd "C-c C-k")))
          (let ((answer (test-plan--answer box)))
            (should (equal (alist-get 'outcome answer) "rejected"))
            (should (equal (alist-get 'reason answer) "太冒险了"))
            (should-not (alist-get 'plan answer))))
      (kill-buffer buffer))))

(ert-deftest test-plan/no-steps-left-is-refused ()
  "Approving a plan whose steps were all deleted is a user error, not an answer."
  (let* ((sid (test-plan--sid))
         (box (test-plan--request sid))
         (buffer (test-plan--pending-buffer sid)))
    (unwind-protect
        (progn
          (switch-to-buffer buffer)
          (goto-char (point-min))
          (dotimes (_ 3)
            (re-search-forward "^- \\[ \\]")
            (execute-kbd-macro (kbd "C-c C-d")))
          (should-not (string-search "- [ ]" (buffer-string)))
          (should-not (string-search "  - files:" (buffer-string)))
          (should-error (execute-kbd-macro (kbd "C-c C-c")) :type 'user-error)
          (should agent-shell-plan--request)
          (should-not (car box)))
      (kill-buffer buffer))))

(ert-deftest test-plan/delete-step-updates-cookie ()
  "Regression: after C-c C-d the Steps heading still counted the deleted step.
The [n/m] cookie now follows the steps that are left."
  (let* ((sid (test-plan--sid))
         (box (test-plan--request sid))
         (buffer (test-plan--pending-buffer sid)))
    (unwind-protect
        (progn
          (switch-to-buffer buffer)
          (should (string-search "* Steps [0/3]" (buffer-string)))
          (goto-char (point-min))
          (re-search-forward "^- \\[ \\]")
          (execute-kbd-macro (kbd "C-c C-d"))
          (should (string-search "* Steps [0/2]" (buffer-string)))
          (should-not (car box)))
      (kill-buffer buffer))))

;;; Progress

(ert-deftest test-plan/updates-tick-checkboxes ()
  "`plan' updates over SSE tick the checkboxes and mark failed steps."
  (agent-shell-test-with-project (root nil)
    (test-plan--with-shell (sid root)
      (let ((steps '(((title . "修复 add") (files . ["calc.py"]) (expected . "")
                      (verify . "pytest -q") (status . "completed") (note . "exit 0, 3 passed"))
                     ((title . "更新文档") (files . []) (expected . "") (verify . "false")
                      (status . "failed") (note . "exit 1"))
                     ((title . "收尾") (files . []) (expected . "") (verify . nil)
                      (status . "in_progress") (note . "")))))
        (test-plan--emit
         `((sessionId . ,sid)
           (update . ((sessionUpdate . "plan") (planId . "p1") (goal . "目标")
                      (outcome . "approved") (risks . [])
                      (entries . ,(vconcat (mapcar (lambda (s)
                                                     `((content . ,(alist-get 'title s))
                                                       (status . ,(alist-get 'status s))
                                                       (priority . "medium")))
                                                   steps)))
                      (steps . ,(vconcat steps))))))
        (let ((plan (test-plan--wait
                     "the plan buffer"
                     (lambda () (get-buffer (agent-shell-plan-buffer-name sid))))))
          (with-current-buffer plan
            (test-plan--wait "the ticked checkbox"
                             (lambda () (string-search "- [X] 修复 add" (buffer-string))))
            (let ((text (buffer-string)))
              (should (string-search "* Steps [1/3]" text))
              (should (string-search "- [ ] 更新文档\n  - verify: false\n  - result: FAILED — exit 1" text))
              (should (string-search "- [-] 收尾" text))
              (should (string-search "  - result: done — exit 0, 3 passed" text)))
            (should buffer-read-only)))
        ;; The shell shows the plan too.
        (should (string-search "Plan (1/3 done)" (buffer-string)))))))

;;; Citations

(ert-deftest test-plan/citations-become-buttons-in-new-text-only ()
  "At turn end, path:START-END in this turn's assistant text open the file."
  (agent-shell-test-with-project (root '(("src/calc.py" . "a = 1\nb = 2\nc = 3\nd = 4\n")))
    (test-plan--with-shell (sid root)
      ;; Text from an earlier turn is never rescanned.
      (test-plan--emit `((sessionId . ,sid)
                         (update . ((sessionUpdate . "agent_message_chunk")
                                    (content . ((type . "text")
                                                (text . "旧的 src/calc.py:1-1\n")))))))
      (test-plan--wait "the old text"
                       (lambda () (string-search "旧的" (buffer-string))))
      (agent-shell-citations-mark (agent-shell-session-output-marker agent-shell--session))
      (test-plan--emit
       `((sessionId . ,sid)
         (update . ((sessionUpdate . "agent_message_chunk")
                    (content . ((type . "text")
                                (text . "见 `src/calc.py:2-3`，以及 中文.py:1、nope.py:4 和 localhost:8080。"))))))
       `((sessionId . ,sid)
         (update . ((sessionUpdate . "turn_end") (turnId . "t1") (stopReason . "end_turn")))))
      (test-plan--wait "turn end" (lambda () (eq (agent-shell-session-state agent-shell--session) 'idle)))
      (goto-char (point-min))
      (search-forward "旧的 ")
      (should-not (button-at (point)))
      (search-forward "见 `")
      (let ((button (button-at (point))))
        (should button)
        (should (equal (buffer-substring (button-start button) (button-end button))
                       "src/calc.py:2-3"))
        (should (equal (button-get button 'agent-shell-lines) '(2 . 3))))
      (search-forward "以及 ")
      (should (button-at (point)))
      (search-forward "nope")
      (should-not (button-at (point)))
      (search-forward "localhost")
      (should-not (button-at (point)))
      ;; RET on the citation opens the file at the range.
      (goto-char (point-min))
      (search-forward "见 `")
      (let ((shell (current-buffer)))
        (execute-kbd-macro (kbd "RET"))
        (should (equal (buffer-file-name) (expand-file-name "src/calc.py" root)))
        (should (= (line-number-at-pos) 2))
        (should (= (line-number-at-pos (mark t)) 3))
        (switch-to-buffer shell)))))

(ert-deftest test-plan/bridge-death-clears-plan-request ()
  "Regression: a plan request outlived the bridge that sent it.
The plan buffer still offered C-c C-c / C-c C-k, answering a dead
connection.  Now the request is dropped and the buffer says why."
  (let* ((sid (test-plan--sid))
         (_box (test-plan--request sid))
         (buffer (test-plan--pending-buffer sid)))
    (unwind-protect
        (progn
          (signal-process (agent-shell-rpc-bridge-conn-process (agent-shell-bridge-connection agent-shell-bridge--current)) 'SIGKILL)
          (test-plan--wait "the request to be dropped"
                           (lambda () (not (buffer-local-value 'agent-shell-plan--request
                                                               buffer))))
          (with-current-buffer buffer
            (should buffer-read-only)
            (should (string-match-p "bridge stopped" (format "%s" header-line-format)))
            (should-error (agent-shell-plan-approve) :type 'user-error)))
      (kill-buffer buffer))))

(provide 'test-plan)
;;; test-plan.el ends here
