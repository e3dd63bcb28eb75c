;;; agent-shell-test-session.el --- The real bridge and mock model for the shell suites  -*- lexical-binding: t; -*-

;; SPDX-License-Identifier: GPL-3.0-or-later

;;; Commentary:

;; What the suites of the shell buffer share (test-shell.el,
;; test-transcript.el, test-header.el, test-handlers.el,
;; test-permissions.el, test-project.el, test-bridge.el, test-trust.el,
;; test-lifecycle.el, test-streaming.el, test-commands.el, test-roles.el,
;; test-log-bridge.el, test-queue.el, test-undo.el, test-ask.el, test-sessions.el,
;; test-worktree.el, and one case each of test-actions.el and
;; test-perception.el): the REAL bridge (AGENT_SHELL_TEST_BRIDGE, with its
;; debug methods) started once per Emacs, its scripted mock model on
;; loopback with one script for all of them (each suite's prompts match
;; their own steps), updates published with `debug/emit' through the real
;; event stream, shells attached to a fake session id or started on a
;; fresh git project, and the text of the *agent-shell events* log.
;;
;; It is a library, not a test file: every test file requires it and none
;; requires another test file, so each test file loads once whatever runs
;; it (ERT since Emacs 29 refuses a test defined twice).  The names keep
;; the `test-shell--' prefix of the suite they grew in.

;;; Code:

(require 'ert)
(require 'cl-lib)
(require 'agent-shell)
(require 'agent-shell-json)
(require 'agent-shell-test-helpers)
(require 'url)

;;; The mock model and the bridge

(defvar test-shell--memory-dir (make-temp-file "agent-shell-test-memory-" t)
  "Memory directory of the bridge under test.")

(defvar test-shell--mock nil "The mock model process.")
(defvar test-shell--mock-base nil "The mock model's API base.")

(defconst test-shell-long-answer
  (let ((parts nil))
    (dotimes (i 300)
      (push (format "第%d段：流式输出 streams in frames 🚀 e\u0301。\n" i) parts))
    (apply #'concat (nreverse parts)))
  "A long answer of the mock model, streamed three characters a delta.")

(defconst test-shell--mock-script
  `((steps . [((match . ((last_user_contains . "slow")))
               (text . "late") (delay_ms . 20000))
              ((match . ((last_user_contains . "repeat")))
               (text . "再说一遍：done.") (chunk_size . 3))
              ((match . ((last_user_contains . "grant me")))
               (tool_calls . [((name . "run_command")
                               (arguments . ((command . "mkdir -p 构建"))))]))
              ((match . ((last_user_contains . "grant me")))
               (text . "granted 已授权"))
              ;; test-log-bridge.el: the live log equals the file.
              ((match . ((last_user_contains . "log parity")))
               (tool_calls . [((name . "run_command")
                               (arguments . ((command . "cat 笔记.org"))))]))
              ((match . ((last_user_contains . "log parity")))
               (tool_calls . [((name . "run_command")
                               (arguments . ((command . "mkdir -p 输出"))))]))
              ((match . ((last_user_contains . "log parity")))
               (text . "* 完成 done\n#+end_src not a keyword"))
;; test-context.el: an edit whose result carries Flymake's diagnostics.
              ((match . ((last_user_contains . "edit with diagnostics")))
               (tool_calls . [((name . "read_file") (arguments . ((path . "坏.el"))))]))
              ((match . ((last_user_contains . "edit with diagnostics")))
               (tool_calls . [((name . "replace_region")
                               (arguments . ((path . "坏.el") (start_line . 3) (end_line . 3)
                                             (new_text . "  (test-context-edited-undefined-xyz))"))))]))
              ((match . ((last_user_contains . "edit with diagnostics")))
               (text . "改好了 edited"))
              ((match . ((last_user_contains . "hello")))
               (text . "你好，世界！Streaming works.") (chunk_size . 1))
              ;; test-lifecycle.el: one step per prompt, each used once.
              ((match . ((last_user_contains . "lingering")))
               (text . "late") (delay_ms . 20000))
              ,@(mapcar (lambda (word)
                          `((match . ((last_user_contains . ,word)))
                            (text . ,(format "答复 %s: ok." word))))
                        '("at-once" "before-restart" "before-start" "after-start" "before-resume" "after-resume"))
              ((match . ((last_user_contains . "stream-exact")))
               (text . ,test-shell-long-answer) (chunk_size . 3))
              ((match . ((last_user_contains . "stream-drop")))
               (text . ,test-shell-long-answer) (chunk_size . 3) (delay_ms . 1))
              ((match . ((last_user_contains . "stream-cancel")))
               (text . ,test-shell-long-answer) (chunk_size . 3) (delay_ms . 2))
              ;; test-undo.el: three turns per rewind case.
              ,@(mapcar (lambda (word)
                          `((match . ((last_user_contains . ,word)))
                            (text . ,(format "好 %s done." word))))
                        '("rwa-1" "rwa-2" "rwa-3" "rwb-1" "rwb-2" "rwb-3"
                          "rwc-1" "rwc-2" "rwc-3" "rwd-1" "rwd-2" "rwd-fork"))
              ;; test-ask.el: the model's questions.
              ((match . ((last_user_contains . "ask-shell")))
               (tool_calls . [((name . "ask_user")
                               (arguments . ((question . "选哪个 pick?")
                                             (options . ["红 red" "蓝 blue"]))))]))
              ((match . ((any_message_contains . "\"answer\": \"蓝 blue\"")))
               (text . "你选了蓝 blue chosen."))
              ((match . ((last_user_contains . "ask-log")))
               (tool_calls . [((name . "ask_user")
                               (arguments . ((question . "日志里选 log pick?")
                                             (options . ["左 left" "右 right"]))))]))
              ((match . ((any_message_contains . "\"answer\": \"右 right\"")))
               (text . "右 right chosen in the log."))
              ;; test-context.el: a prompt queued with its attachments.
              ((match . ((last_user_contains . "带附件 hold-first")))
               (text . "先等一下 wait for it.") (chunk_size . 1) (delay_ms . 80))
              ((match . ((last_user_contains . "带附件 queued-second")))
               (text . "附件收到 attachment received."))
              ;; test-extend.el: tools defined in Emacs Lisp.
              ((match . ((last_user_contains . "ext-read-go")))
               (tool_calls . [((name . "ext_agenda") (arguments . ((days . 3))))]))
              ((match . ((any_message_contains . "议程 agenda for 3 days")))
               (text . "ext-read 完成 done."))
              ((match . ((last_user_contains . "ext-write-go")))
               (tool_calls . [((name . "ext_note") (arguments . ((text . "笔记 note"))))]))
              ((match . ((any_message_contains . "noted 笔记 note")))
               (text . "ext-write 完成 done."))
              ((match . ((last_user_contains . "ext-badarg-go")))
               (tool_calls . [((name . "ext_agenda") (arguments . ((days . "three"))))]))
              ((match . ((any_message_contains . "must be an integer")))
               (text . "ext-badarg 看到 seen."))
              ((match . ((last_user_contains . "ext-boom-go")))
               (tool_calls . [((name . "ext_boom"))]))
              ((match . ((any_message_contains . "ext_boom failed: 爆炸 boom")))
               (text . "ext-boom 看到 seen."))
              ((match . ((last_user_contains . "ext-long-go")))
               (tool_calls . [((name . "ext_long"))]))
              ((match . ((any_message_contains . "ext-long-行 999")))
               (text . "ext-long 看到 seen."))
              ((match . ((last_user_contains . "ext-eval-go")))
               (tool_calls . [((name . "eval_elisp")
                               (arguments . ((code . "(concat \"评估\" \" eval-ok\")"))))]))
              ((match . ((any_message_contains . "评估 eval-ok")))
               (text . "ext-eval 看到 seen."))
              ((match . ((last_user_contains . "ext-describe-go")))
               (tool_calls . [((name . "describe_symbol")
                               (arguments . ((name . "agent-shell-define-tool"))))]))
              ((match . ((any_message_contains . "Make FUNCTION the agent tool NAME")))
               (text . "ext-describe 看到 seen."))
              ((match . ((last_user_contains . "ext-skill-go")))
               (tool_calls . [((name . "load_skill") (arguments . ((name . "release"))))]))
              ((match . ((any_message_contains . "第一步 step one: tag")))
               (text . "ext-skill 看到 seen."))
              ((match . ((last_user_contains . "第二 explicit: tag")))
               (text . "ext-skill-explicit 看到 seen."))
              ((match . ((last_user_contains . "ext-hook-deny")))
               (tool_calls . [((name . "run_command") (arguments . ((command . "rm -f notes.txt"))))]))
              ((match . ((any_message_contains . "不许 no rm here")))
               (text . "ext-hook-deny 看到 seen."))
              ((match . ((last_user_contains . "ext-hook-rewrite")))
               (tool_calls . [((name . "run_command") (arguments . ((command . "ls"))))]))
              ((match . ((any_message_contains . "would remove a wide tree")))
               (text . "ext-hook-rewrite 看到 seen."))
              ((match . ((last_user_contains . "ext-hook-post")))
               (tool_calls . [((name . "ext_agenda") (arguments . ((days . 4))))]))
              ((match . ((any_message_contains . "格式 formatted by the hook")))
               (text . "ext-hook-post 看到 seen."))
              ((match . ((last_user_contains . "ext-hook-ask")))
               (tool_calls . [((name . "ext_agenda") (arguments . ((days . 2))))]))
              ((match . ((any_message_contains . "议程 agenda for 2 days")))
               (text . "ext-hook-ask 看到 seen."))
              ((match . ((last_user_contains . "ext-hook-allow")))
               (tool_calls . [((name . "run_command") (arguments . ((command . "rm -f notes.txt"))))]))
              ((match . ((last_user_contains . "ext-hook-allow")))
               (text . "ext-hook-allow 看到 seen."))
;; test-extend-hooks.el: a turn long enough to be compacted (summary first:
              ;; the compaction request also holds the prompt's words).
              ((match . ((system_contains . "Summarise the earlier part")))
               (text . "摘要 summary: read big.txt in pieces."))
              ,@(mapcar (lambda (start)
                          `((match . ((last_user_contains . "ext-compact-go")))
                            (tool_calls . [((name . "read_file")
                                            (arguments . ((path . "big.txt")
                                                          (start_line . ,start)
                                                          (end_line . ,(+ start 19)))))])))
                        (number-sequence 1 261 20))
              ((match . ((last_user_contains . "ext-compact-go")))
               (text . "ext-compact 读完 done."))
              ((match . ((last_user_contains . "ext-late-one")))
               (text . "ext-late-one 好 ok."))
              ((match . ((last_user_contains . "ext-late-two")))
               (text . "ext-late-two 好 ok."))
              ;; test-sessions.el and test-worktree.el: the dashboard, worktrees.
              ,@(mapcan (lambda (word)
                          `(((match . ((last_user_contains . ,word)))
                             (tool_calls . [((name . "run_command")
                                             (arguments . ((command . ,(format "mkdir -p 等-%s" word)))))]))
                            ((match . ((last_user_contains . ,word)))
                             (text . ,(format "%s 好 ok." word)))))
                        (list "dash-wait-one" "dash-wait-two"))
              ((match . ((last_user_contains . "dash-hold")))
               (text . "late") (delay_ms . 20000))
              ((match . ((last_user_contains . "cancel-before-start")))
               (text . "never shown: cancelled") (delay_ms . 20000))
              ((match . ((last_user_contains . "wt-edit")))
               (tool_calls . [((name . "write_file")
                               (arguments . ((path . "改动.txt")
                                             (content . "工作树 worktree edit\n"))))]))
              ((match . ((last_user_contains . "wt-edit")))
               (text . "wt-edit 完成 done."))
              ;; test-queue.el: queued prompts and steers.
              ((match . ((last_user_contains . "queue-first")))
               (text . "第一 first done.") (chunk_size . 1) (delay_ms . 80))
              ((match . ((last_user_contains . "queue-second")))
               (text . "第二 second done."))
              ((match . ((last_user_contains . "queue-hold")))
               (text . "late") (delay_ms . 20000))
              ((match . ((last_user_contains . "steer-first")))
               (text . "先回答 answered.") (chunk_size . 1) (delay_ms . 80))
              ((match . ((last_user_contains . "转向 steer-words")))
               (text . "转向 steered."))
              ((match . ((last_user_contains . "stream-after")))
               (text . "取消之后：after the cancel.") (chunk_size . 2))
              ;; test-jobs.el: a background job.
              ((match . ((last_user_contains . "job-start-go")))
               (tool_calls . [((name . "run_command")
                               (arguments . ((command . "make -s test") (background . t))))]))
              ((match . ((any_message_contains . "job-1")))
               (text . "后台 job started."))]))
  "Script of the mock model.")

(defalias 'test-shell--wait #'agent-shell-test-wait)

(defun test-shell--start-mock ()
  "Start the scripted mock model once; return its API base."
  (unless (process-live-p test-shell--mock)
    (let ((script (let ((coding-system-for-write 'no-conversion))
                    (make-temp-file "agent-shell-mock-" nil ".json"
                                    (agent-shell-json-bytes test-shell--mock-script))))
          (out ""))
      (setq test-shell--mock
            (make-process
             :name "agent-shell-test-mock" :noquery t :connection-type 'pipe
             :command (list (getenv "AGENT_SHELL_TEST_BRIDGE") "mock-model"
                            "--script" script "--port" "0")
             :stderr (get-buffer-create " *agent-shell-test-mock stderr*")
             :filter (lambda (_proc text) (setq out (concat out text)))))
      (test-shell--wait "the mock model" (lambda () (string-search "\n" out)))
      (setq test-shell--mock-base
            (alist-get 'api_base (json-parse-string (car (split-string out "\n"))
                                                    :object-type 'alist)))))
  test-shell--mock-base)

(defun test-shell--bridge ()
  "Return an initialised connection to the real bridge, starting it if needed.
A bridge another suite started with its own settings (test-plan.el's
has no model) is replaced: whichever suite ran before, these tests get
the mock model and their memory directory."
  (let ((ours (and (equal agent-shell-api-base test-shell--mock-base)
                   (equal agent-shell-memory-dir test-shell--memory-dir))))
    (unless (and ours
                 (agent-shell-bridge-live-connection)
                 (eq (agent-shell-bridge-initialized agent-shell-bridge--current)
                     (agent-shell-bridge-connection agent-shell-bridge--current)))
      (unless ours
        (when-let ((conn (agent-shell-bridge-live-connection)))
          (agent-shell-rpc-stop conn)))
      (setq agent-shell-bridge-debug t
            agent-shell-memory-dir test-shell--memory-dir
            agent-shell-api-base (test-shell--start-mock)
            agent-shell-api-key "sk-test-shell-secret")
      (agent-shell-bridge-with-connection #'ignore)
      (test-shell--wait "the bridge to initialise"
                        (lambda () (and (agent-shell-bridge-live-connection)
                                        (eq (agent-shell-bridge-initialized
                                             agent-shell-bridge--current)
                                            (agent-shell-bridge-connection
                                             agent-shell-bridge--current))))
                        30)))
  (agent-shell-bridge-connection agent-shell-bridge--current))

(defun test-shell--sync (method params)
  "Call METHOD with PARAMS on the bridge and return the result."
  (agent-shell-rpc-request-sync (test-shell--bridge) method params 20))

(defun test-shell--emit (&rest updates)
  "Publish session UPDATES (alists of `sessionId' and `update') over SSE."
  (test-shell--sync "debug/emit"
                    `((messages . ,(vconcat
                                    (mapcar (lambda (u)
                                              `((jsonrpc . "2.0")
                                                (method . ,(or (alist-get 'method u)
                                                               "session/update"))
                                                (params . ,(or (alist-get 'params u) u))))
                                            updates))))))

(defun test-shell--update (session update)
  "Return a `session/update' params object for SESSION holding UPDATE."
  `((sessionId . ,session) (update . ,update)))

;;; Shells

(defvar test-shell--counter 0 "Counter for fake session ids.")

(defmacro test-shell--with-shell (spec &rest body)
  "Run BODY in a shell buffer bound to a fresh session id; SPEC is (SID-VAR).
The buffer is attached without `session/new', so updates published
for SID-VAR through the real event stream land in it."
  (declare (indent 1) (debug ((symbolp) body)))
  `(let* ((,(car spec) (format "s-test-%d-%d" (emacs-pid)
                               (cl-incf test-shell--counter)))
          (buffer (get-buffer-create (format "*agent-shell: %s*" ,(car spec)))))
     (test-shell--bridge)
     (unwind-protect
         (progn
           (switch-to-buffer buffer)
           (agent-shell--setup ,(car spec) temporary-file-directory ,(car spec))
           ,@body)
       (when (buffer-live-p buffer)
         (with-current-buffer buffer (setf (agent-shell-session-id agent-shell--session) nil))
         (kill-buffer buffer)))))

(defun test-shell--transcript ()
  "Return the transcript text (before the prompt) without properties."
  (buffer-substring-no-properties (point-min) (agent-shell-session-output-marker agent-shell--session)))

(defun test-shell--start-session (root)
  "Run `agent-shell-start' in ROOT and wait for its session; return the buffer."
  (let* ((default-directory root)
         (buffer (agent-shell-start)))
    (with-current-buffer buffer
      (test-shell--wait "session/new" (lambda () (agent-shell-session-id agent-shell--session)) 20))
    buffer))

(defmacro test-shell--with-session (spec &rest body)
  "Run BODY in a real session on a fresh git project; SPEC is (ROOT-VAR)."
  (declare (indent 1) (debug ((symbolp) body)))
  `(agent-shell-test-with-project (,(car spec) nil)
     (test-shell--bridge)
     (let ((shell (test-shell--start-session ,(car spec))))
       (unwind-protect
           (with-current-buffer shell
             (switch-to-buffer shell)
             ,@body)
         (when (buffer-live-p shell) (kill-buffer shell))))))

(defun test-shell--tool (sid id title input)
  "Return a `tool_call' update for SID: call ID titled TITLE with INPUT."
  (test-shell--update sid `((sessionUpdate . "tool_call") (toolCallId . ,id)
                            (title . ,title) (kind . "execute") (status . "pending")
                            (rawInput . ,input))))

(defun test-shell--tool-done (sid id status &rest fields)
  "Return a `tool_call_update' for SID's call ID with STATUS and FIELDS.
FIELDS are alist pairs added to the update."
  (test-shell--update sid `((sessionUpdate . "tool_call_update") (toolCallId . ,id)
                            (status . ,status) ,@fields)))

(defun test-shell--entry-text (title)
  "Return the text of the entry whose header contains TITLE, unfolded."
  (goto-char (point-min))
  (search-forward title)
  (let* ((id (agent-shell-transcript-entry-at (point)))
         (start (plist-get (agent-shell-transcript-entry id) :start))
         (bounds (agent-shell-transcript--entry-body-bounds id)))
    (buffer-substring-no-properties start (if bounds (cdr bounds)
                                            (agent-shell-transcript--header-end id)))))

;;; Updates and the events log

(defun test-shell--chunk (session text &optional kind)
  "Return a KIND (default message) chunk update of TEXT for SESSION."
  (test-shell--update session `((sessionUpdate . ,(or kind "agent_message_chunk"))
                                (content . ((type . "text") (text . ,text))))))

(defun test-shell--events-text ()
  "Return the text of the bridge traffic buffer."
  (with-current-buffer (get-buffer-create "*agent-shell events*")
    (buffer-substring-no-properties (point-min) (point-max))))

(defun test-shell--fresh-events ()
  "Empty the bridge traffic buffer."
  (when-let ((buffer (get-buffer "*agent-shell events*")))
    (kill-buffer buffer)))

(defun test-shell--send-until-permission (text)
  "Send TEXT as this shell's prompt; return the permission request it leads to."
  (let ((sid (agent-shell-session-id agent-shell--session))
        (found nil))
    (goto-char (point-max))
    (insert text)
    (agent-shell-send-input)
    (test-shell--wait "the permission request"
                      (lambda ()
                        (setq found (cl-find sid (agent-shell-bridge-permissions
                                                  agent-shell-bridge--current)
                                             :key #'agent-shell-bridge-permission-session
                                             :test #'equal)))
                      20)
    found))

(defun test-shell--model-requests ()
  "Return the bodies the scripted model received, oldest first."
  (let* ((url-proxy-services nil)
         (base (string-remove-suffix "/v1" test-shell--mock-base))
         (buffer (url-retrieve-synchronously (concat base "/_mock/requests") t t 10)))
    (unwind-protect
        (with-current-buffer buffer
          (goto-char (point-min))
          (re-search-forward "\r?\n\r?\n")
          (mapcar (lambda (r) (alist-get 'body r))
                  (json-parse-string (decode-coding-string
                                      (buffer-substring-no-properties (point) (point-max))
                                      'utf-8)
                                     :object-type 'alist :array-type 'list)))
      (kill-buffer buffer))))

(provide 'agent-shell-test-session)
;;; agent-shell-test-session.el ends here
