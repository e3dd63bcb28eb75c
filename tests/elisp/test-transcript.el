;;; test-transcript.el --- Tests of the transcript of a shell buffer  -*- lexical-binding: t; -*-

;; SPDX-License-Identifier: GPL-3.0-or-later

;;; Commentary:

;; What session updates look like in the shell buffer
;; (agent-shell-transcript.el, agent-shell-tool-text.el): streamed text,
;; thoughts, tool calls and plans as foldable one-line entries, turn ends
;; and resumed history.  Updates are published with `debug/emit' and go
;; through the real event stream; several are the recorded turn of
;; tests/fixtures/updates/turn.json.
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

(defconst test-transcript--recorded-file
  (expand-file-name "../fixtures/updates/turn.json"
                    (file-name-directory (or load-file-name buffer-file-name)))
  "A real scripted turn's `session/update' params, recorded through the bridge.
tests/python/test_update_fixture.py regenerates it and fails when it
is stale, so these tests render what the bridge really sends.")

(defun test-transcript--recorded (session &rest kinds)
  "Return the recorded updates for SESSION, only those of KINDS when given.
Each is a `session/update' params object whose sessionId is SESSION."
  (let ((all (with-temp-buffer
               (let ((coding-system-for-read 'utf-8))
                 (insert-file-contents test-transcript--recorded-file))
               (json-parse-buffer :object-type 'alist :array-type 'array
                                  :null-object :null :false-object :json-false))))
    (cl-loop for params across all
             for update = (alist-get 'update params)
             when (or (null kinds)
                      (member (alist-get 'sessionUpdate update) kinds))
             collect (test-shell--update session update))))

(defun test-transcript--recorded-text (kind)
  "Return the text of the recorded chunks of KIND joined, in order."
  (mapconcat (lambda (params)
               (alist-get 'text (alist-get 'content (alist-get 'update params))))
             (test-transcript--recorded "s" kind) ""))

(ert-deftest test-transcript/recorded-turn-renders ()
  "A whole recorded turn renders as the user should see it.
Thought folded, text in order, one line per tool with its status, the
edit's diff in its body, one plan entry with its final state, the
usage in the header line and the summary at the end."
  (test-shell--with-shell (sid)
    (apply #'test-shell--emit (test-transcript--recorded sid))
    (test-shell--wait "turn_end" (lambda () (string-search "Done:" (test-shell--transcript))))
    (let* ((text (test-shell--transcript))
           (usage (alist-get 'update (car (last (test-transcript--recorded sid "usage")))))
           (thought (test-transcript--recorded-text "agent_thought_chunk")))
      ;; Text and entries in the order the bridge sent them.
      (should (string-match-p
               (concat "\\`▸ … Thinking\n" (regexp-quote thought) "\n我先看看代码。\n"
                       "▸ ● read_file calc\\.py\n.*\n计划如下。\n"
                       "▸ ● propose_plan\n.*\n▸ ≡ Plan (1/1 done)\n\\[x\\] 改 calc\\.py 里的 add\n"
                       "▸ ● write_file calc\\.py\n\\(?:.*\n\\)*?"
                       "▸ ● complete_step\n.*\n修好了：add 现在返回 a \\+ b。\n"
                       "▸ ● task_complete\n.*\nDone: 修好了：add 现在返回 a \\+ b\n*\\'")
               text))
      ;; Structured arguments read as JSON, not as Lisp data.
      (should (string-search "steps: [{\"title\":\"改 calc.py 里的 add\"" text))
      (should-not (string-search "((title" text))
      ;; The edit's diff is in the write_file entry, folded.
      (let ((write (test-shell--entry-text "write_file")))
        (should (string-search "-    return a - b\n+    return a + b" write)))
      (goto-char (point-min))
      (search-forward "+    return a")
      (should (invisible-p (point)))
      ;; One plan entry for the four plan updates.
      (should (= (length (test-transcript--recorded sid "plan")) 4))
      (should (= (cl-count-if (lambda (e) (string-prefix-p "plan-" (car e)))
                              (agent-shell-session-entries agent-shell--session))
                 1))
      (should (eq (agent-shell-session-state agent-shell--session) 'idle))
      (should (string-search
               (format "context %d%%" (round (* 100.0 (/ (float (alist-get 'contextUsed usage))
                                                        (alist-get 'contextWindow usage)))))
               (agent-shell-header-line))))))

(ert-deftest test-transcript/tool-arguments-read-as-the-bridge-sent-them ()
  "Chinese in structured tool arguments shows as the bridge sent it.
Regression: on Emacs 30, where `json-serialize' returns UTF-8 bytes,
the arguments line read steps: [{\"title\":\"\\346\\224\\271 … instead of
改.  The line must equal, as text and as UTF-8 bytes, the line built
from the values in the event the bridge sent over SSE.  The events
log shows received JSON as text too."
  (test-shell--with-shell (sid)
    (let* ((agent-shell-log-events t)
           (events (agent-shell-rpc-http-events-process (agent-shell-rpc-bridge-conn-http (test-shell--bridge))))
           (chunks nil)
           (record (lambda (_proc bytes) (push bytes chunks))))
      (add-function :before (process-filter events) record)
      (unwind-protect
          (progn
            (test-shell--emit
             (test-shell--tool sid "call-zh" "propose_plan"
                               '((goal . "修好 add")
                                 (steps . [((title . "改 calc.py 里的 add")
                                            (files . ["计算/calc.py"]))])
                                 (risks . ["无 🚀"])))
             (test-shell--update sid '((sessionUpdate . "agent_message_chunk")
                                       (content . ((type . "text")
                                                   (text . "日志里是字 🚀"))))))
            (test-shell--wait "the tool entry and the text"
                              (lambda () (string-search "日志里是字"
                                                        (test-shell--transcript)))))
        (remove-function (process-filter events) record))
      (let* ((sent (apply #'concat (nreverse chunks)))
             ;; The value after PREFIX in the bytes sent: the bridge
             ;; writes raw UTF-8, not \u escapes.
             (value (lambda (prefix)
                      (should (string-match (concat prefix " *\"\\([^\"]+\\)\"") sent))
                      (match-string 1 sent)))
             (expected (concat "args: goal: " (funcall value "\"goal\":")
                               "  steps: [{\"title\":\""
                               (funcall value "\"steps\": *\\[{\"title\":")
                               "\",\"files\":[\"" (funcall value "\"files\": *\\[")
                               "\"]}]  risks: [\"" (funcall value "\"risks\": *\\[")
                               "\"]"))
             (text (test-shell--transcript))
             (line (progn (should (string-match "^args: goal: .*$" text))
                          (match-string 0 text))))
        (should-not (multibyte-string-p sent))
        (should (equal line (decode-coding-string expected 'utf-8)))
        (should (equal (encode-coding-string line 'utf-8) expected))
        (should (string-search "改 calc.py 里的 add" line))
        ;; The event as received, not the request that asked for it.
        (should (string-match-p "<== [0-9]+ {.*\"text\":\"日志里是字 🚀\""
                                (test-shell--events-text)))))))

(ert-deftest test-transcript/streams-chinese-one-char-chunks ()
  "Many one-character chunks, Chinese included, arrive intact and in order.
The user's half-typed input and point stay where they were."
  (test-shell--with-shell (sid)
    (let ((text "流式输出：你好，世界！Streaming 🙂 works.\n第二行。"))
      (goto-char (point-max))
      (insert "draft 草稿")
      (apply #'test-shell--emit
             (append (mapcar (lambda (c) (test-shell--chunk sid (string c))) text)
                     (list (test-shell--update sid '((sessionUpdate . "turn_end")
                                                     (turnId . "t1")
                                                     (stopReason . "end_turn"))))))
      ;; The shell is idle before the first chunk too: wait for the text.
      (test-shell--wait "the text and turn_end"
                        (lambda () (and (string-search text (test-shell--transcript))
                                        (eq (agent-shell-session-state agent-shell--session)
                                            'idle))))
      (should (equal (agent-shell-input) "draft 草稿"))
      (should (= (point) (point-max)))
      ;; The transcript is read-only; the input is not.
      (goto-char (point-min))
      (should-error (insert "x") :type 'text-read-only))))

(ert-deftest test-transcript/turn-end-shows-the-task-summary ()
  "The summary given to task_complete is shown when the turn ends.
The turn_end is the recorded turn's."
  (test-shell--with-shell (sid)
    (let* ((end (car (test-transcript--recorded sid "turn_end")))
           (summary (alist-get 'summary (alist-get 'update end))))
      (should (string-prefix-p "修好了" summary))
      (setf (agent-shell-session-turn-id agent-shell--session) (alist-get 'turnId (alist-get 'update end)))
      (test-shell--emit end)
      (test-shell--wait "turn_end" (lambda () (string-search "修好了" (test-shell--transcript))))
      (should (string-search (concat "Done: " summary) (test-shell--transcript)))
      (should (eq (agent-shell-session-state agent-shell--session) 'idle)))))

(ert-deftest test-transcript/refusal-is-shown-marked ()
  "A refusal chunk is shown as the answer in the refusal face; the turn end says so."
  (test-shell--with-shell (sid)
    (test-shell--emit
     (test-shell--update sid '((sessionUpdate . "agent_message_chunk")
                               (content . ((type . "text") (text . "抱歉，不能这样做。")))
                               (refusal . t)))
     (test-shell--update sid '((sessionUpdate . "turn_end") (turnId . "t3")
                               (stopReason . "refusal"))))
    (test-shell--wait "turn_end" (lambda () (string-search "refusal]" (test-shell--transcript))))
    (let* ((text (test-shell--transcript))
           (at (string-search "抱歉，不能这样做。" text)))
      (should at)
      (should (eq (get-text-property (+ (point-min) at) 'face) 'agent-shell-refusal-face))
      (should (get-text-property (+ (point-min) at) 'agent-shell-refusal))
      (should (string-search "[turn ended: refusal]" text)))))

(ert-deftest test-transcript/point-in-transcript-is-kept ()
  "Output arriving while the user reads the transcript does not move point."
  (test-shell--with-shell (sid)
    (test-shell--emit (test-shell--chunk sid "first line\nsecond line\n"))
    (test-shell--wait "first chunk" (lambda () (string-search "second" (test-shell--transcript))))
    (goto-char (point-min))
    (forward-line 1)
    (let ((here (point)))
      (test-shell--emit (test-shell--chunk sid "more text"))
      (test-shell--wait "second chunk" (lambda () (string-search "more" (test-shell--transcript))))
      (should (= (point) here)))))

(defun test-transcript--recorded-call (session call-id)
  "Return the recorded updates for SESSION of the tool call CALL-ID, in order."
  (cl-remove-if-not (lambda (params)
                      (equal (alist-get 'toolCallId (alist-get 'update params)) call-id))
                    (test-transcript--recorded session "tool_call" "tool_call_update")))

(ert-deftest test-transcript/tool-call-folds-and-updates ()
  "A tool call is one folded line whose status glyph follows the updates; TAB unfolds.
The call and its updates are the recorded turn's write_file."
  (test-shell--with-shell (sid)
    (pcase-let ((`(,call ,running ,done) (test-transcript--recorded-call sid "call_write")))
      (test-shell--emit (test-shell--chunk sid "Let me look.") call running)
      (test-shell--wait "tool call" (lambda () (string-search "◐" (test-shell--transcript))))
      (should (string-match-p "^Let me look\\.\n▸ ◐ write_file calc\\.py" (test-shell--transcript)))
      (should (equal (agent-shell-header--state-text) "running write_file calc.py"))
      (test-shell--emit done)
      (test-shell--wait "tool update" (lambda () (string-search "▸ ●" (test-shell--transcript))))
      (should (equal (agent-shell-header--state-text) "thinking"))
      (goto-char (point-min))
      (search-forward "+    return a")
      (should (invisible-p (point)))
      ;; TAB on the header line, through the real keymap.
      (goto-char (point-min))
      (search-forward "write_file")
      (execute-kbd-macro (kbd "TAB"))
      (should (string-search "▾ ● write_file" (test-shell--transcript)))
      (search-forward "+    return a")
      (should-not (invisible-p (point)))
      (goto-char (point-min))
      (search-forward "write_file")
      (execute-kbd-macro (kbd "TAB"))
      (search-forward "+    return a")
      (should (invisible-p (point))))))

(ert-deftest test-transcript/thoughts-fold-into-one-line ()
  "Thought chunks gather under one folded line; the message after starts a new line.
The text is the recorded turn's; the bridge sends it in frames whose cut
depends on timing, so the thought is cut here into several chunks."
  (test-shell--with-shell (sid)
    (let* ((thought (test-transcript--recorded-text "agent_thought_chunk"))
           (first-message (car (test-transcript--recorded sid "agent_message_chunk")))
           (message (alist-get 'text (alist-get 'content (alist-get 'update first-message))))
           (step (max 1 (/ (length thought) 4)))
           (pieces (cl-loop for start from 0 below (length thought) by step
                            collect (substring thought start
                                               (min (length thought) (+ start step))))))
      (should (> (length pieces) 3))
      (should (string-prefix-p "我先" message))
      (apply #'test-shell--emit
             (append (mapcar (lambda (piece) (test-shell--chunk sid piece "agent_thought_chunk"))
                             pieces)
                     (list first-message)))
      (test-shell--wait "message" (lambda () (string-search "我先" (test-shell--transcript))))
      (should (equal (test-shell--transcript)
                     (concat "▸ … Thinking\n" thought "\n" message)))
      (goto-char (point-min))
      (search-forward (substring thought 0 1))
      (should (invisible-p (point)))
      (should (equal (cl-count-if (lambda (e) (string-prefix-p "thought-" (car e)))
                                  (agent-shell-session-entries agent-shell--session))
                     1)))))

(ert-deftest test-transcript/long-turn-notifies ()
  "A turn longer than `agent-shell-notify-threshold' calls the notify function.
The turn_end is the recorded turn's."
  (test-shell--with-shell (sid)
    (let* ((notes nil)
           (agent-shell-notify-function (lambda (text) (push text notes)))
           (end (car (test-transcript--recorded sid "turn_end"))))
      (setf (agent-shell-session-turn-id agent-shell--session) (alist-get 'turnId (alist-get 'update end))
            (agent-shell-session-turn-start agent-shell--session) (time-subtract nil (+ agent-shell-notify-threshold 5)))
      (test-shell--emit end)
      (test-shell--wait "notification" (lambda () notes))
      (should (string-match-p "turn finished after [0-9]+ s" (car notes))))))

(ert-deftest test-transcript/late-turn-end-of-cancelled-turn-is-ignored ()
  "Regression: a late `turn_end' from a cancelled turn ended the next turn.
A `turn_end' whose turnId is not the running turn's is now ignored."
  (test-shell--with-shell (sid)
    (setf (agent-shell-session-turn-id agent-shell--session) "t-new")
    (agent-shell-header-set-state 'thinking)
    (test-shell--emit (test-shell--update sid '((sessionUpdate . "turn_end")
                                                (turnId . "t-old")
                                                (stopReason . "cancelled")))
                      (test-shell--chunk sid "之后 after"))
    (test-shell--wait "the chunk" (lambda () (string-search "之后" (test-shell--transcript))))
    (should (equal (agent-shell-session-turn-id agent-shell--session) "t-new"))
    (should (eq (agent-shell-session-state agent-shell--session) 'thinking))
    (should-not (string-search "cancelled" (test-shell--transcript)))
    ;; A cancelled turn remembered as stale is ignored even while the
    ;; next prompt's id is not yet known.
    (setf (agent-shell-session-turn-id agent-shell--session) 'pending
          (agent-shell-session-stale-turns agent-shell--session) '("t-cancelled"))
    (test-shell--emit (test-shell--update sid '((sessionUpdate . "turn_end")
                                                (turnId . "t-cancelled")
                                                (stopReason . "cancelled")))
                      (test-shell--chunk sid " 再之后"))
    (test-shell--wait "the second chunk" (lambda () (string-search "再之后" (test-shell--transcript))))
    (should (eq (agent-shell-session-turn-id agent-shell--session) 'pending))
    (should-not (agent-shell-session-stale-turns agent-shell--session))
    (test-shell--emit (test-shell--update sid '((sessionUpdate . "turn_end")
                                                (turnId . "t-new")
                                                (stopReason . "end_turn"))))
    (test-shell--wait "idle" (lambda () (eq (agent-shell-session-state agent-shell--session) 'idle)))
    (should-not (agent-shell-session-turn-id agent-shell--session))))

(ert-deftest test-transcript/plan-updates-redraw-one-entry ()
  "Regression: every `plan' update appended a new transcript entry.
The plan is now one entry redrawn in place; what follows it stays.
The plan updates are the recorded turn's first and last."
  (test-shell--with-shell (sid)
    (let ((plans (test-transcript--recorded sid "plan")))
      (test-shell--emit (car plans) (test-shell--chunk sid "中间的话"))
      (test-shell--wait "the message" (lambda () (string-search "中间" (test-shell--transcript))))
      (should (string-match-p "\\`▸ ≡ Plan (0/1 done)\n\\[ \\] 改 calc\\.py 里的 add\n中间的话\\'"
                              (test-shell--transcript)))
      (goto-char (point-max))
      (insert "草稿")
      (test-shell--emit (car (last plans)) (test-shell--chunk sid " end"))
      (test-shell--wait "the end" (lambda () (string-search " end" (test-shell--transcript))))
      (should (equal (cl-count-if (lambda (e) (string-prefix-p "plan-" (car e)))
                                  (agent-shell-session-entries agent-shell--session))
                     1))
      (should (string-match-p "\\`▸ ≡ Plan (1/1 done)\n\\[x\\] 改 calc\\.py 里的 add\n中间的话 end\\'"
                              (test-shell--transcript)))
      (should (equal (agent-shell-input) "草稿"))
      ;; TAB still folds the redrawn entry.
      (goto-char (point-min))
      (agent-shell-toggle-entry)
      (search-forward "改 calc")
      (should-not (invisible-p (point))))))

(ert-deftest test-transcript/tool-entry-shows-outcome ()
  "Regression: a tool entry's body held only the raw JSON arguments.
Its exit code, error, test summary and diff never showed, and a
failure looked like a success on the entry's line."
  (test-shell--with-shell (sid)
    (test-shell--emit
     (test-shell--tool sid "t1" "run_test pytest -q" '((command . "pytest -q")
                                                       (timeout_s . 60)))
     (test-shell--tool-done sid "t1" "failed"
                            '(rawOutput . ((exit_code . 1) (duration_ms . 1500)
                                           (log_ref . "out-3")
                                           (summary . ((passed . 3) (failed . 1)
                                                       (errors . 0) (ok . :json-false)
                                                       (failures . ["test_add 失败"]))))))
     (test-shell--tool sid "t2" "read_file 缺失.py" '((path . "缺失.py")))
     (test-shell--tool-done sid "t2" "failed"
                            '(rawOutput . ((error . "No such file: 缺失.py"))))
     (test-shell--tool sid "t3" "write_file 新.py"
                       `((path . "新.py") (content . ,(make-string 500 ?x))))
     (test-shell--tool-done sid "t3" "completed"
                            '(content . [((type . "diff") (path . "新.py")
                                          (diff . "--- /dev/null\n+++ b/新.py\n@@ -0,0 +1 @@\n+print(\"新\")\n"))])
                            '(rawOutput . ((path . "新.py")))))
    (test-shell--wait "the last update"
                      (lambda () (string-search "+print" (test-shell--transcript))))
    (let ((transcript (test-shell--transcript)))
      (should (string-match-p "^▸ ✗ run_test pytest -q — exit 1$" transcript))
      (should (string-match-p "^▸ ✗ read_file 缺失\\.py — No such file: 缺失\\.py$" transcript))
      (should (string-match-p "^▸ ● write_file 新\\.py$" transcript))
      (should-not (string-search "— output" transcript))
      (should-not (string-search "{\"" transcript)))
    (let ((run (test-shell--entry-text "run_test")))
      (should (string-search "args: command: pytest -q  timeout_s: 60" run))
      (should (string-search "exit 1 after 1.5 s" run))
      (should (string-search "tests: 3 passed, 1 failed — not ok" run))
      (should (string-search "test_add 失败" run))
      (should (string-search "out-3" run)))
    (should (string-search "Error: No such file: 缺失.py"
                           (test-shell--entry-text "read_file")))
    (let ((write (test-shell--entry-text "write_file")))
      (should (string-search "xxx… (500 chars)" write))
      (should (string-search "--- /dev/null\n+++ b/新.py" write))
      (should (string-search "+print(\"新\")" write)))
    ;; The body is folded until TAB.
    (goto-char (point-min))
    (search-forward "+print")
    (should (invisible-p (point)))))

(ert-deftest test-transcript/tests-line-without-counts-says-no-summary ()
  "Regression: output in an unknown format showed \"0 passed, 0 failed\".
The bridge sends null counts when it found no summary; unittest's
counts (3 run, 1 failure) show as they are."
  (let ((unknown (agent-shell-tool-text--tests-line
                  '((passed) (failed) (errors) (runner) (ok . :json-false)
                    (failures . ["Traceback (most recent call last):"])))))
    (should (string-prefix-p "tests: no summary — not ok" unknown))
    (should-not (string-search "0 passed" unknown)))
  (should (equal (agent-shell-tool-text--tests-line
                  '((passed . 2) (failed . 1) (errors . 0) (runner . "unittest")
                    (ok . :json-false)))
                 "tests: 2 passed, 1 failed — not ok"))
  (should (equal (agent-shell-tool-text--tests-line '((passed . 0) (failed . 0) (ok . t)))
                 "tests: 0 passed, 0 failed — ok")))

(ert-deftest test-transcript/tool-diff-is-capped ()
  "A long diff in a tool update is cut to `agent-shell-tool-output-max-chars'."
  (test-shell--with-shell (sid)
    (let ((agent-shell-tool-output-max-chars 100))
      (test-shell--emit
       (test-shell--tool sid "d1" "replace_region big.py" '((path . "big.py")))
       (test-shell--tool-done sid "d1" "completed"
                              `(content . [((type . "diff") (path . "big.py")
                                            (diff . ,(concat "+" (make-string 400 ?y))))])))
      (test-shell--wait "the diff" (lambda () (string-search "more characters"
                                                             (test-shell--transcript))))
      (should-not (string-search (make-string 200 ?y) (test-shell--transcript))))))

(ert-deftest test-transcript/second-plan-gets-its-own-entry ()
  "Regression: a later turn's plan overwrote the earlier turn's plan entry.
`agent-shell-session-plan-entry' was never reset; now each turn, and each
new planId, starts a new entry."
  (test-shell--with-shell (sid)
    (let ((plan (lambda (plan-id content)
                  (test-shell--update
                   sid `((sessionUpdate . "plan") (planId . ,plan-id)
                         (entries . [((content . ,content) (status . "pending"))]))))))
      (test-shell--emit (funcall plan "p1" "第一个计划"))
      (test-shell--wait "plan 1" (lambda () (agent-shell-transcript-entry (agent-shell-session-plan-entry agent-shell--session))))
      (test-shell--emit (funcall plan "p2" "第二个计划"))
      (test-shell--wait "plan 2" (lambda () (string-search "第二个计划" (test-shell--transcript))))
      (should (string-search "第一个计划" (test-shell--transcript)))
      ;; A new turn also starts a new entry, even for a plan without planId.
      (agent-shell-transcript-start-turn-entries)
      (test-shell--emit (test-shell--update
                         sid '((sessionUpdate . "plan")
                               (entries . [((content . "third") (status . "pending"))]))))
      (test-shell--wait "plan 3" (lambda () (string-search "third" (test-shell--transcript))))
      (should (string-search "第二个计划" (test-shell--transcript)))
      (should (= 3 (cl-count-if (lambda (e) (string-prefix-p "plan-" (car e)))
                                (agent-shell-session-entries agent-shell--session)))))))

(ert-deftest test-transcript/tab-at-end-of-tool-line ()
  "Regression: TAB at the end of a folded tool line said \"Text is read-only\".
The entry is now found from the line, not only from point."
  (test-shell--with-shell (sid)
    (test-shell--emit (car (test-transcript--recorded-call sid "call_read"))
                      (test-shell--chunk sid "after"))
    (test-shell--wait "the message" (lambda () (string-search "after" (test-shell--transcript))))
    (goto-char (point-min))
    (execute-kbd-macro (kbd "C-e"))
    (execute-kbd-macro (kbd "TAB"))
    (should-not (plist-get (agent-shell-transcript-entry (agent-shell-transcript-entry-at (point-min))) :folded))
    (goto-char (point-min))
    (end-of-line)
    (execute-kbd-macro (kbd "RET"))
    (should (plist-get (agent-shell-transcript-entry (agent-shell-transcript-entry-at (point-min))) :folded))))

(ert-deftest test-transcript/resumed-history-renders-cleanly ()
  "Regression: a resumed session glued the prompt to the last answer.
Failed and rejected tools showed `·', and two answers ran together."
  (test-shell--with-shell (sid)
    (agent-shell-transcript-insert-history
     '(((role . "user") (text . "修一下"))
       ((role . "tool") (toolCallId . "h1") (title . "run_test pytest -q")
        (status . "failed") (text . ""))
       ((role . "tool") (toolCallId . "h2") (title . "write_file a.py")
        (status . "rejected") (text . ""))
       ((role . "tool") (toolCallId . "h3") (title . "run_command rm -rf /")
        (status . "denied") (text . ""))
       ((role . "tool") (toolCallId . "h4") (title . "read_file a.py")
        (status . "completed") (text . ""))
       ((role . "assistant") (text . "改好了。"))
       ((role . "assistant") (text . "Done: 修好了"))))
    (let ((transcript (test-shell--transcript)))
      (should (string-search "▸ ✗ run_test pytest -q\n" transcript))
      (should (string-search "▸ ✗ write_file a.py\n" transcript))
      (should (string-search "▸ ✗ run_command rm -rf /\n" transcript))
      (should (string-search "▸ ● read_file a.py\n" transcript))
      (should (string-search "改好了。\nDone: 修好了\n" transcript))
      (should (string-suffix-p "\n" transcript)))
    (should (equal (buffer-substring-no-properties
                    (agent-shell-session-output-marker agent-shell--session) (agent-shell-session-input-marker agent-shell--session))
                   "> "))
    (should (eq (char-before (agent-shell-session-output-marker agent-shell--session)) ?\n))))

(ert-deftest test-transcript/resumed-denied-step-reads-as-it-did-live ()
  "A resumed step the policy denied shows as failed, with its reason and input."
  (test-shell--with-shell (sid)
    (agent-shell-transcript-insert-history
     '(((role . "tool") (toolCallId . "h1") (title . "run_command rm -rf ~")
        (status . "denied") (text . "Refused by the safety policy: wide rm")
        (view (toolCallId . "h1") (title . "run_command rm -rf ~") (kind . "execute")
              (rawInput (command . "rm -rf ~")) (status . "failed")
              (rawOutput (error . "Refused by the safety policy: wide rm")
                         (decision . "deny"))))))
    (let ((id (cdr (assoc "h1" (agent-shell-session-tools agent-shell--session)))))
      (agent-shell-transcript-set-folded id nil))
    (let ((transcript (test-shell--transcript)))
      (should (string-search "✗ run_command rm -rf ~ — Refused by the safety policy" transcript))
      (should (string-search "args: command: rm -rf ~" transcript))
      (should (string-search "Error: Refused by the safety policy: wide rm" transcript))
      (should-not (string-search "●" transcript)))))

(provide 'test-transcript)
;;; test-transcript.el ends here
