;;; agent-shell.el --- Coding agent with a Python bridge, org action log and memory  -*- lexical-binding: t; -*-

;; SPDX-License-Identifier: GPL-3.0-or-later

;; Version: 0.1.0
;; Package-Requires: ((emacs "28.1"))
;; Keywords: tools, processes

;;; Commentary:

;; agent-shell runs a coding agent in a Python bridge and gives it eyes
;; and hands inside Emacs.  This file ties the areas together:
;;
;; - options (model, key, limits, modes) and `agent-shell-start', which
;;   finds the project root, prepares `.agent-shell/' (both in
;;   agent-shell-project.el), starts or reuses the one bridge process
;;   (agent-shell-rpc.el), initialises it and opens a session in a
;;   shell buffer;
;; - `agent-shell-mode', the shell buffer: a read-only transcript with a
;;   prompt at the end.  Assistant text streams in at a marker; thoughts,
;;   tool calls and plans are one-line entries that fold with TAB; the
;;   header line shows model, state, tokens and context fill.  The
;;   rendering lives in agent-shell-transcript.el; this file keeps the
;;   input, its history and the commands;
;; - the wiring of bridge requests: `session/update' is rendered in its
;;   shell buffer, `tool/call' runs an Emacs-side tool
;;   (agent-shell-tools.el), `session/request_permission' waits for the
;;   user's key in the action log (agent-shell-log.el), `log/entry' and
;;   `log/update' feed that log.
;;
;; Project files `.agent-shell/config.el' and `.agent-shell/allowlist.el'
;; are data: they are read with `read' and never evaluated.
;;
;; Memory commands live in agent-shell-memory.el.

;;; Code:

;; Before anything is defined: the unrelated package of the same name
;; must not be half overwritten (see agent-shell-coexist.el).
(require 'agent-shell-coexist)
(agent-shell-coexist-check)

(require 'cl-lib)
(require 'subr-x)
(require 'agent-shell-rpc)
(require 'agent-shell-log)
(require 'agent-shell-tools)
(require 'agent-shell-plan)
(require 'agent-shell-citations)
(require 'agent-shell-project)
(require 'agent-shell-mcp)
(require 'agent-shell-transcript)
(require 'agent-shell-grants)
(require 'agent-shell-commands)
(require 'agent-shell-lifecycle)
(require 'agent-shell-roles)

;;; Options

(defgroup agent-shell nil
  "A coding agent that lives inside Emacs."
  :group 'tools
  :prefix "agent-shell-")

(defcustom agent-shell-api-base
  (or (getenv "AGENT_SHELL_API_BASE") "https://api.deepseek.com/v1")
  "Base URL of the OpenAI-compatible model API.
The default comes from the environment variable AGENT_SHELL_API_BASE
when it is set, else DeepSeek's API."
  :type 'string
  :group 'agent-shell
  :package-version '(agent-shell . "0.1.0"))

(defcustom agent-shell-model (or (getenv "AGENT_SHELL_MODEL") "deepseek-chat")
  "Model name sent to the model API.
The default comes from the environment variable AGENT_SHELL_MODEL when
it is set."
  :type 'string
  :group 'agent-shell
  :package-version '(agent-shell . "0.1.0"))

(defcustom agent-shell-api-key nil
  "API key for the model API, or a function returning it, or nil.
When nil, the key comes from `auth-source' for the host of
`agent-shell-api-base', then from the environment variables
AGENT_SHELL_API_KEY, DEEPSEEK_API_KEY and OPENAI_API_KEY.  Prefer
`auth-source' or a function over a plain string."
  :type '(choice (const :tag "Look it up (auth-source, environment)" nil)
                 (string :tag "Key")
                 (function :tag "Function returning the key"))
  :group 'agent-shell
  :package-version '(agent-shell . "0.1.0"))

(defcustom agent-shell-context-window nil
  "Context window of the model in tokens, or nil for the bridge's default."
  :type '(choice (const :tag "Bridge default" nil)
                 (integer :tag "Tokens"))
  :group 'agent-shell
  :package-version '(agent-shell . "0.1.0"))

(defcustom agent-shell-echo-reasoning 'auto
  "Whether the model's reasoning is sent back with its tool calls.
DeepSeek's thinking mode requires it; other providers (Groq, among
others) reject it.  `auto' decides by the API base: only DeepSeek
gets it.  Whatever the choice, when a provider answers that the
`reasoning_content' field is wrong, the bridge flips the choice and
sends the request once more."
  :type '(choice (const :tag "By provider (DeepSeek only)" auto)
                 (const :tag "Always" always)
                 (const :tag "Never" never))
  :group 'agent-shell
  :package-version '(agent-shell . "0.1.0"))

(defcustom agent-shell-trust-env nil
  "When non-nil, the bridge honours proxy variables for model API calls.
Loopback traffic between Emacs and the bridge never uses a proxy."
  :type '(choice (const :tag "Ignore proxy variables" nil)
                 (const :tag "Use proxy variables" t))
  :group 'agent-shell
  :package-version '(agent-shell . "0.1.0"))

(defcustom agent-shell-memory-dir (locate-user-emacs-file "agent-shell-memory/")
  "Directory of the bridge's memory index, shared by all projects."
  :type 'directory
  :group 'agent-shell
  :package-version '(agent-shell . "0.1.0"))

(defcustom agent-shell-workspace-root nil
  "Directory used as the project root when no project is found.
When nil, `default-directory' is used."
  :type '(choice (const :tag "The current directory" nil)
                 (directory :tag "Directory"))
  :group 'agent-shell
  :package-version '(agent-shell . "0.1.0"))

(defcustom agent-shell-max-steps 25
  "Largest number of model steps in one turn."
  :type 'integer
  :group 'agent-shell
  :package-version '(agent-shell . "0.1.0"))

(defcustom agent-shell-extra-allowed-paths nil
  "Directories besides the project root that file tools may touch."
  :type '(repeat directory)
  :group 'agent-shell
  :package-version '(agent-shell . "0.1.0"))

(defcustom agent-shell-sandbox-approved-commands nil
  "Non-nil runs the commands you approve in the sandbox too, with network.
Commands that run without your yes always run in the bridge's
sandbox (bubblewrap) when it has one; by default the ones you approve
run outside it, with your full permissions.  The header line says
\"no sandbox\" where bubblewrap cannot run."
  :type 'boolean
  :group 'agent-shell
  :package-version '(agent-shell . "0.1.0"))

(defcustom agent-shell-default-mode 'act
  "Mode of a new session.
In `act' mode the agent may change files and run commands (with the
safety policy); in `ask' mode it only reads and answers."
  :type '(choice (const :tag "Act: read, write and run" act)
                 (const :tag "Ask: read only" ask))
  :group 'agent-shell
  :package-version '(agent-shell . "0.1.0"))

(defcustom agent-shell-prices nil
  "Prices in US dollars per million tokens, for the cost shown in the log.
A list (INPUT OUTPUT CACHED-INPUT), or nil to show no cost."
  :type '(choice (const :tag "No prices" nil)
                 (list :tag "Prices per million tokens"
                       (number :tag "Input")
                       (number :tag "Output")
                       (number :tag "Cached input")))
  :group 'agent-shell
  :package-version '(agent-shell . "0.1.0"))

(defcustom agent-shell-notify-threshold 30
  "Seconds a turn must last for its end to be notified."
  :type 'number
  :group 'agent-shell
  :package-version '(agent-shell . "0.1.0"))

(defcustom agent-shell-notify-webhook nil
  "URL the bridge posts task completions and failures to, or nil for none.
The message names the task, the failed step, the reason and the log file."
  :type '(choice (const :tag "No webhook" nil) (string :tag "URL"))
  :group 'agent-shell
  :package-version '(agent-shell . "0.1.0"))

(defcustom agent-shell-notify-webhook-kind 'generic
  "Shape of the webhook message: plain JSON, WeCom or Slack markdown."
  :type '(choice (const :tag "Generic JSON" generic)
                 (const :tag "WeCom (企业微信) markdown" wecom)
                 (const :tag "Slack markdown" slack))
  :group 'agent-shell
  :package-version '(agent-shell . "0.1.0"))

(defcustom agent-shell-notify-function #'agent-shell-notify-default
  "Function called with a message string when a long turn ends."
  :type 'function
  :group 'agent-shell
  :package-version '(agent-shell . "0.1.0"))

(defface agent-shell-prompt-face '((t :inherit minibuffer-prompt))
  "Face of the input prompt."
  :group 'agent-shell
  :package-version '(agent-shell . "0.1.0"))

;;; Internals: state

(defvar agent-shell--connection nil
  "The connection to the bridge, shared by all sessions of this Emacs.")

(defvar agent-shell--initialized nil
  "The connection on which `initialize' succeeded, or nil.")

(defvar agent-shell--bridge-info nil
  "The result of `initialize' on the current connection.")

(defvar agent-shell--ready-queue nil
  "Functions waiting for an initialised connection, newest first.")

(defvar agent-shell--sessions (make-hash-table :test #'equal)
  "Session id to shell buffer.")

(defvar agent-shell--permissions nil
  "Pending permission requests, oldest first.
Each is a plist (:key KEY :conn CONN :id ID :session SID :params P).
KEY is the log entry id, or the request id when there is none.")

(defvar agent-shell-debug-bridge nil
  "When non-nil, start the bridge with its debug methods (for tests).")

(defvar-local agent-shell--session-id nil "This buffer's session id.")
(defvar-local agent-shell--root nil "This buffer's project root.")
(defvar-local agent-shell--name nil "This buffer's session name.")
(defvar-local agent-shell--mode nil "This buffer's mode, `act' or `ask'.")
(defvar-local agent-shell--model nil
  "The model of this buffer's session, as the bridge reported it.")
(defvar-local agent-shell--stale-turns nil
  "Ids of turns this buffer stopped waiting for (cancelled).")
(defvar-local agent-shell--turn-id nil "The running turn, or nil.")
(defvar-local agent-shell--turn-start nil "When the running turn started.")
(defvar-local agent-shell--input-marker nil "Where the user's input starts.")
(defvar-local agent-shell--history nil "Sent inputs, newest first.")
(defvar-local agent-shell--history-index -1 "Position while walking history.")
(defvar-local agent-shell--history-draft nil "Input saved before walking.")
(defvar-local agent-shell--log-path nil "The session's log file.")
(defvar-local agent-shell--turn-prompts nil
  "Turn id to the prompt that started it, newest first.")

;;; Internals: the bridge

(defun agent-shell--model-params ()
  "Return the `model' object of `initialize', with the key resolved."
  (let* ((found (agent-shell--api-key-and-source))
         (key (car found)))
    `((api_base . ,agent-shell-api-base)
      (model . ,agent-shell-model)
      ,@(and key `((api_key . ,key)))
      (api_key_source . ,(cdr found))
      ,@(and agent-shell-context-window
             `((context_window . ,agent-shell-context-window)))
      (trust_env . ,(if agent-shell-trust-env t :json-false))
      ,@(pcase agent-shell-echo-reasoning
          ('always '((echo_reasoning . t)))
          ('never '((echo_reasoning . :json-false))))
      ,@(and agent-shell-prices
             `((price_input_per_mtok . ,(nth 0 agent-shell-prices))
               (price_output_per_mtok . ,(nth 1 agent-shell-prices))
               (price_cached_input_per_mtok . ,(nth 2 agent-shell-prices)))))))

(defun agent-shell--initialize-params ()
  "Return the params of `initialize'."
  `((protocolVersion . 1)
    (clientInfo . ((name . "agent-shell.el") (version . "0.1.0")
                   (emacs . ,emacs-version)))
    (clientCapabilities . ((tools . ,(vconcat (agent-shell-tools-names)))))
    ,@(and agent-shell-notify-webhook
           `((notify . ((webhook . ,agent-shell-notify-webhook)
                        (kind . ,(symbol-name agent-shell-notify-webhook-kind))))))
    (sandbox_approved_commands
     . ,(if agent-shell-sandbox-approved-commands t :json-false))
    (model . ,(agent-shell--model-params))))

(defun agent-shell--live-connection ()
  "Return the bridge connection when its process is alive."
  (and agent-shell--connection
       (agent-shell-rpc-live-p agent-shell--connection)
       agent-shell--connection))

(defun agent-shell--run-ready-queue (conn)
  "Call the functions waiting for CONN, oldest first."
  (let ((queue (nreverse agent-shell--ready-queue)))
    (setq agent-shell--ready-queue nil)
    (dolist (fn queue)
      (funcall fn conn))))

(defun agent-shell--fail-ready-queue (message)
  "Tell the shell buffers waiting for the bridge that it failed with MESSAGE."
  (setq agent-shell--ready-queue nil)
  (agent-shell--each-shell
   (lambda ()
     (when (eq agent-shell--state 'starting)
       (agent-shell--unqueue)
       (agent-shell--notice message)
       (agent-shell--set-state 'dead)))))

(defun agent-shell--initialize-failed (conn message)
  "Give up on CONN, whose initialisation failed with MESSAGE.
The waiting functions are told, and the bridge is ended, so that the
next command starts a fresh one instead of waiting forever."
  (when (eq conn agent-shell--connection)
    (setq agent-shell--connection nil))
  (when (eq conn agent-shell--initialized)
    (setq agent-shell--initialized nil))
  (agent-shell--fail-ready-queue message)
  (message "agent-shell: %s" message)
  (agent-shell-rpc-kill conn message))

(defun agent-shell--initialize (conn)
  "Send `initialize' on CONN, then release the waiting functions.
The params carry the API key, so this one message stays out of the
events buffer.  When the params cannot be made (the key lookup
failed or was quit) or the bridge refuses them, CONN is ended."
  (let ((done nil))
    (unwind-protect
        (let ((params (condition-case err
                          (agent-shell--initialize-params)
                        (error
                         (agent-shell--initialize-failed
                          conn (format "Preparing `initialize' failed: %s"
                                       (error-message-string err)))
                         nil))))
          (when params
            (let ((agent-shell-log-events nil))
              (agent-shell-rpc-request
               conn "initialize" params
               :on-success (lambda (result)
                             (setq agent-shell--bridge-info result
                                   agent-shell--initialized conn)
                             (agent-shell--run-ready-queue conn))
               :on-error (lambda (err)
                           (agent-shell--initialize-failed
                            conn (format "The bridge refused to initialise: %s"
                                         (alist-get 'message err)))))))
          (setq done t))
      (unless done
        (agent-shell--initialize-failed conn "Starting the bridge was interrupted")))))

(defun agent-shell--start-bridge ()
  "Start the bridge process; initialise it once it is ready.
The memory directory reaches the bridge as AGENT_SHELL_MEMORY_DIR,
the environment form of its --memory-dir option."
  (make-directory agent-shell-memory-dir t)
  (setq agent-shell--initialized nil)
  (setq agent-shell--connection
        (agent-shell-rpc-start
         :directory (expand-file-name "~/")
         :environment (append
                       (list (concat "AGENT_SHELL_MEMORY_DIR="
                                     (expand-file-name agent-shell-memory-dir)))
                       (and agent-shell-debug-bridge
                            '("AGENT_SHELL_BRIDGE_DEBUG=1")))
         :name "agent-shell-bridge"
         :on-ready #'agent-shell--initialize
         :on-exit #'agent-shell--bridge-exited)))

(defun agent-shell--with-bridge (fn)
  "Call FN with an initialised bridge connection, starting one if needed."
  (let ((conn (agent-shell--live-connection)))
    (if (and conn (eq agent-shell--initialized conn))
        (funcall fn conn)
      (push fn agent-shell--ready-queue)
      (unless conn
        (condition-case err
            (agent-shell--start-bridge)
          (error
           (let ((text (format "Cannot start the agent-shell bridge: %s"
                               (error-message-string err))))
             (agent-shell--fail-ready-queue text)
             (message "%s" text))))))))

(defun agent-shell--bridge-exited (conn reason)
  "Tell every shell buffer that the bridge CONN ended because of REASON."
  (when (eq conn agent-shell--connection)
    (setq agent-shell--connection nil
          agent-shell--initialized nil)
    (setq agent-shell--permissions
          (cl-remove-if (lambda (p) (eq (plist-get p :conn) conn))
                        agent-shell--permissions))
    ;; Steps and plans that waited for the user can no longer be answered.
    (dolist (buffer (buffer-list))
      (when (and (buffer-live-p buffer)
                 (eq (buffer-local-value 'major-mode buffer) 'agent-shell-log-mode)
                 (agent-shell-log-pending buffer))
        (agent-shell-log-abandon-pending
         buffer "The bridge stopped before this step was decided")))
    (agent-shell-plan-abandon conn)
    (let ((text (agent-shell--dead-bridge-text reason)))
      (agent-shell--fail-ready-queue text)
      (agent-shell--each-shell (lambda () (agent-shell--connection-lost text)))
      (message "%s" text))))

(defun agent-shell--each-shell (fn)
  "Call FN in every live shell buffer."
  (dolist (buffer (buffer-list))
    (when (buffer-live-p buffer)
      (with-current-buffer buffer
        (when (derived-mode-p 'agent-shell-mode)
          (funcall fn))))))

(defun agent-shell--request (method params &rest args)
  "Send METHOD with PARAMS on the bridge; ARGS as `agent-shell-rpc-request'.
Signal a `user-error' when the bridge is not running."
  (let ((conn (agent-shell--live-connection)))
    (unless conn
      (user-error (substitute-command-keys
                   "The bridge is not running; \\<agent-shell-mode-map>\\[agent-shell-restart] \
in the shell buffer restarts it and resumes the session")))
    (apply #'agent-shell-rpc-request conn method params args)))

(defun agent-shell--report-undo (turn-id paths)
  "Tell the bridge that the user undid TURN-ID, restoring PATHS.
The bridge records it in the action log and tells the model in its
next request.  Call it in the shell buffer; without a live session
there is nobody to tell."
  (let ((conn (agent-shell--live-connection)))
    (when (and conn (stringp agent-shell--session-id))
      (agent-shell-rpc-request
       conn "session/undo_turn_done"
       `((sessionId . ,agent-shell--session-id) (turnId . ,turn-id)
         (paths . ,(vconcat paths)))
       :on-error (lambda (err)
                   (message "agent-shell: the bridge did not record the undo: %s"
                            (alist-get 'message err)))))))

(defun agent-shell--session-buffer (session-id)
  "Return the live shell buffer of SESSION-ID, or nil."
  (let ((buffer (gethash session-id agent-shell--sessions)))
    (if (buffer-live-p buffer)
        buffer
      (remhash session-id agent-shell--sessions)
      nil)))

(defun agent-shell--log-buffer-for (session-id)
  "Return the action log buffer of SESSION-ID, or nil when it has no shell.
Events of a session whose shell buffer is gone are dropped rather
than shown in a stray buffer."
  (let ((shell (agent-shell--session-buffer session-id)))
    (and shell
         (agent-shell-log-buffer (buffer-local-value 'agent-shell--name shell)))))

;;; Internals: handlers of bridge messages

(cl-defmethod agent-shell-rpc-handle (_conn (_m (eql session/update)) params _id)
  "Render the `session/update' notification PARAMS in its shell buffer."
  (when-let ((buffer (agent-shell--session-buffer (alist-get 'sessionId params))))
    (with-current-buffer buffer
      (agent-shell--apply-update (alist-get 'update params))))
  nil)

(cl-defmethod agent-shell-rpc-handle (_conn (_m (eql log/entry)) params _id)
  "Add the `log/entry' PARAMS to the session's action log.
The experiences recalled for a turn are also named in its shell buffer."
  (when-let ((log (agent-shell--log-buffer-for (alist-get 'session_id params))))
    (agent-shell-log-insert-entry log params))
  (agent-shell--show-recalled params)
  nil)

(cl-defmethod agent-shell-rpc-handle (_conn (_m (eql log/update)) params _id)
  "Apply the `log/update' PARAMS to the session's action log."
  (when-let ((log (agent-shell--log-buffer-for (alist-get 'session_id params))))
    (agent-shell-log-apply-update log params))
  nil)

(defun agent-shell--run-tool (conn id params)
  "Run the tool of `tool/call' PARAMS and answer request ID on CONN."
  (let ((outcome
         (condition-case err
             (cons 'ok (agent-shell-tools-call (alist-get 'name params)
                                               (alist-get 'arguments params)
                                               (alist-get 'context params)))
           (agent-shell-tool-error (cons 'error (format "%s" (cadr err))))
           (error (cons 'error (format "%s failed: %s" (alist-get 'name params)
                                       (error-message-string err)))))))
    (if (eq (car outcome) 'ok)
        (agent-shell-rpc-respond conn id (cdr outcome))
      (agent-shell-rpc-respond-error conn id -32005 (cdr outcome)))))

(cl-defmethod agent-shell-rpc-handle (conn (_m (eql tool/call)) params id)
  "Answer the `tool/call' request ID with PARAMS on CONN."
  (agent-shell--run-tool conn id params)
  nil)

(cl-defmethod agent-shell-rpc-handle (conn (_m (eql session/request_permission))
                                           params id)
  "Keep the permission request ID with PARAMS on CONN until the user decides."
  (let* ((key (format "%s" (or (alist-get 'logEntryId params) id)))
         (session (alist-get 'sessionId params))
         (title (or (alist-get 'title (alist-get 'toolCall params)) "a step")))
    (setq agent-shell--permissions
          (append agent-shell--permissions
                  (list (list :key key :conn conn :id id :session session
                              :params params))))
    (when-let ((buffer (agent-shell--session-buffer session)))
      (with-current-buffer buffer
        (agent-shell--note-waiting
         (alist-get 'toolCallId (alist-get 'toolCall params))
         (agent-shell--notice
          (format "Waiting for you: %s — y/n in the log (C-c C-l), \
or C-c C-y / C-c C-n here%s" title
                  (if-let ((note (alist-get 'note params))) (concat "\n" note) "")))
         title)
        (agent-shell--set-state 'waiting))))
  nil)

(defun agent-shell--grant-text (params)
  "Return the scope of an `allow_session' answer to permission PARAMS.
The bridge's own description (PARAMS' `grant') is used when present."
  (let* ((described (alist-get 'description (alist-get 'grant params)))
         (call (alist-get 'toolCall params))
         (input (alist-get 'rawInput call))
         (command (and (consp input) (alist-get 'command input)))
         (title (or (alist-get 'title call) "this step")))
    (cond ((stringp described) described)
          ((stringp command)
           (format "the command `%s' in the same directory" command))
          (t (format "%s on any file" (car (split-string title " " t)))))))

(defun agent-shell--permission-grant-text (entry-id)
  "Return what approving log entry ENTRY-ID for the session grants, or nil.
This is `agent-shell-log-grant-function'."
  (when-let ((permission (agent-shell--permission-waiting-p entry-id)))
    (agent-shell--grant-text (plist-get permission :params))))

(defun agent-shell--show-decision (permission decision reason)
  "Show in the shell buffer that PERMISSION was answered with DECISION.
The waiting notice becomes the decision; REASON goes with a rejection.
An `approve-session' decision is remembered as a grant."
  (let* ((params (plist-get permission :params))
         (call-id (alist-get 'toolCallId (alist-get 'toolCall params))))
    (agent-shell--resolve-waiting
     call-id
     (pcase decision
       ('approve "Approved: %s")
       ('approve-session "Approved for this session: %s")
       (_ (concat "Rejected: %s"
                  (if reason (concat " — " (string-replace "%" "%%" reason)) "")))))
    (when (eq decision 'approve-session)
      (let ((what (agent-shell--grant-text params)))
        (push what agent-shell--grants)
        (agent-shell--notice (format "Allowed for this session: %s" what))
        (force-mode-line-update)))))

(defun agent-shell--option-id (decision)
  "Return the permission option id of DECISION."
  (pcase decision
    ('approve "allow_once")
    ('approve-session "allow_session")
    (_ "reject_once")))

(defun agent-shell--answer-permission (permission decision reason)
  "Answer PERMISSION (a plist) with DECISION and REASON.
The request stays pending until the bridge has accepted the answer,
so a decision that could not be delivered can be given again."
  (when (plist-get permission :sending)
    (user-error "That decision is being sent"))
  (plist-put permission :sending t)
  (plist-put permission :decision (cons decision reason))
  (let ((done nil))
    (unwind-protect
        (progn
          (agent-shell-rpc-respond
           (plist-get permission :conn) (plist-get permission :id)
           `((outcome . ((outcome . "selected")
                         (optionId . ,(agent-shell--option-id decision))))
             ,@(and reason `((reason . ,reason))))
           (lambda (ok) (agent-shell--permission-answered permission ok)))
          (setq done t))
      (unless done
        (plist-put permission :sending nil)))))

(defun agent-shell--permission-answered (permission ok)
  "Finish answering PERMISSION; OK is nil when the answer was not delivered."
  (plist-put permission :sending nil)
  (let ((buffer (agent-shell--session-buffer (plist-get permission :session))))
    (if (not ok)
        (progn
          (agent-shell-log-unsend (agent-shell--log-buffer-for
                                   (plist-get permission :session))
                                  (plist-get permission :key))
          (message "agent-shell: the decision did not reach the bridge; give it again"))
      (setq agent-shell--permissions (delq permission agent-shell--permissions))
      (when buffer
        (with-current-buffer buffer
          (let ((decision (plist-get permission :decision)))
            (agent-shell--show-decision permission (car decision) (cdr decision)))
          (unless (cl-find agent-shell--session-id agent-shell--permissions
                           :key (lambda (p) (plist-get p :session)) :test #'equal)
            (agent-shell--set-state (if agent-shell--turn-id 'thinking 'idle))))))))

(defun agent-shell--permission-waiting-p (entry-id)
  "Return non-nil when a permission request waits for log entry ENTRY-ID."
  (cl-find (format "%s" entry-id) agent-shell--permissions
           :key (lambda (p) (plist-get p :key)) :test #'equal))

(defun agent-shell-log-decide (entry-id decision reason)
  "Answer the permission request of log entry ENTRY-ID with DECISION.
DECISION is `approve', `reject' or `approve-session'; REASON is a
string or nil.  This is `agent-shell-log-decision-function'."
  (let ((permission (cl-find (format "%s" entry-id) agent-shell--permissions
                             :key (lambda (p) (plist-get p :key))
                             :test #'equal)))
    (unless permission
      (user-error "No permission request waits for that step"))
    (agent-shell--answer-permission permission decision reason)))

(setq agent-shell-log-decision-function #'agent-shell-log-decide)
(setq agent-shell-log-answerable-function #'agent-shell--permission-waiting-p)
(setq agent-shell-log-grant-function #'agent-shell--permission-grant-text)
(define-key agent-shell-log-mode-map (kbd "G") #'agent-shell-grants)

;;; Internals: context snapshot

(defun agent-shell--user-buffer ()
  "Return the buffer the user most recently worked in, or nil."
  (cl-find-if (lambda (b)
                (and (buffer-file-name b)
                     (not (string-prefix-p " " (buffer-name b)))))
              (buffer-list (selected-frame))))

(defun agent-shell-context-snapshot (&optional root)
  "Return a cheap snapshot of the user's editing context for `session/prompt'.
It names the file of the most recent file buffer, its point line and
column, whether the region is active, and the project ROOT.  A file
outside ROOT and `agent-shell-extra-allowed-paths' is not described:
the snapshot only says that the user's buffer is outside the project."
  (let* ((root (or root agent-shell--root default-directory))
         (buffer (agent-shell--user-buffer))
         (inside (and buffer
                      (ignore-error agent-shell-tool-error
                       (agent-shell-tools-inside-roots
                       (buffer-file-name buffer)
                       `((root . ,(expand-file-name root))
                         (extra_roots . ,(mapcar #'expand-file-name
                                                 agent-shell-extra-allowed-paths))))))))
    `((root . ,root)
      ,@(when (and buffer (not inside))
          '((outside_project . t)))
      ,@(when inside
          (with-current-buffer buffer
            `((file . ,(buffer-file-name buffer))
              (buffer . ,(buffer-name buffer))
              (major_mode . ,(symbol-name major-mode))
              (line . ,(line-number-at-pos nil t))
              (column . ,(current-column))
              (modified . ,(if (buffer-modified-p) t :json-false))
              (region . ,(if (region-active-p) t :json-false))
              ,@(when (region-active-p)
                  `((region_start_line . ,(line-number-at-pos (region-beginning) t))
                    (region_end_line . ,(line-number-at-pos (region-end) t))))))))))

;;; Internals: buffer setup

(defun agent-shell--insert-prompt ()
  "Insert the prompt at the end of the buffer and put the input marker after it."
  (let ((inhibit-read-only t) (inhibit-modification-hooks t)
        (buffer-undo-list t))
    (save-excursion
      (goto-char (point-max))
      (insert (propertize "> " 'read-only t 'rear-nonsticky t
                          'front-sticky '(read-only)
                          'field 'agent-shell-prompt
                          'face 'agent-shell-prompt-face))
      (set-marker agent-shell--input-marker (point)))))

(defun agent-shell--setup (name root session-id)
  "Prepare the current buffer for session SESSION-ID named NAME in ROOT."
  (agent-shell-mode)
  (let ((inhibit-read-only t)
        (buffer-undo-list t))
    (erase-buffer))
  (setq buffer-undo-list nil)
  (setq agent-shell--name name
        agent-shell--root root
        agent-shell--mode agent-shell-default-mode
        default-directory root
        agent-shell--input-marker (copy-marker (point-min) nil))
  (agent-shell--insert-prompt)
  ;; Created after the prompt, so that it stays before it.
  (setq agent-shell--output-marker (copy-marker (point-min) t))
  (agent-shell--update-prompt-gap)
  (goto-char (point-max))
  (when session-id
    (agent-shell--attach session-id)))

(defun agent-shell--attach (session-id)
  "Bind the current buffer to SESSION-ID."
  (when agent-shell--session-id
    (remhash agent-shell--session-id agent-shell--sessions))
  (setq agent-shell--session-id session-id)
  (puthash session-id (current-buffer) agent-shell--sessions)
  (agent-shell--set-state 'idle))

(defun agent-shell--buffer-name (name)
  "Return the shell buffer name of session NAME."
  (format "*agent-shell: %s*" name))

(defun agent-shell--shell-root (buffer)
  "Return the project root of the shell BUFFER, or nil when it is none."
  (and (buffer-live-p buffer)
       (eq (buffer-local-value 'major-mode buffer) 'agent-shell-mode)
       (buffer-local-value 'agent-shell--root buffer)))

(defun agent-shell--same-root-p (a b)
  "Return non-nil when the directories A and B are the same."
  (and a b (equal (file-truename (file-name-as-directory a))
                  (file-truename (file-name-as-directory b)))))

(defun agent-shell--name-for-root (root)
  "Return the session name for ROOT, unique among other projects' shells.
It is the directory name, or \"DIR<PARENT>\" (then a number) when a
shell of another project already uses that name.  The log and plan
buffers take the same name."
  (let* ((dir (directory-file-name root))
         (base (file-name-nondirectory dir))
         (parent (file-name-nondirectory
                  (directory-file-name (file-name-directory dir))))
         (candidates (list base (format "%s<%s>" base parent)))
         (n 2))
    (or (cl-find-if
         (lambda (name)
           (let ((other (agent-shell--shell-root
                         (get-buffer (agent-shell--buffer-name name)))))
             (or (null other) (agent-shell--same-root-p other root))))
         candidates)
        (let (name)
          (while (let ((other (agent-shell--shell-root
                               (get-buffer (agent-shell--buffer-name
                                            (setq name (format "%s<%s><%d>"
                                                               base parent n)))))))
                   (and other (not (agent-shell--same-root-p other root))))
            (cl-incf n))
          name))))

(defun agent-shell--on-session (buffer result)
  "Attach BUFFER to the session RESULT of `session/new' or `session/resume'."
  (when (buffer-live-p buffer)
    (with-current-buffer buffer
      (agent-shell--attach (alist-get 'sessionId result))
      (when-let ((mode (alist-get 'mode result)))
        (setq agent-shell--mode (intern mode)))
      (when-let ((model (agent-shell--nonempty (alist-get 'model result))))
        (setq agent-shell--model model)
        (force-mode-line-update))
      (when-let ((path (alist-get 'logPath result)))
        (setq agent-shell--log-path path)
        (agent-shell-log-set-file (agent-shell-log-buffer agent-shell--name) path))
      (mapc #'agent-shell--notice (alist-get 'notices result))
      (setq agent-shell--sandbox (alist-get 'sandbox result))
      (when (equal (alist-get 'projectSetting agent-shell--sandbox) "untrusted")
        (agent-shell--notice
         (substitute-command-keys
          "This project's config.el turns the sandbox off only once you trust it: \
\\[agent-shell-trust-config]")))
      (agent-shell-mcp-on-status (alist-get 'mcp result) t)
      (when (equal (alist-get 'allowlist result) "untrusted")
        (agent-shell--notice
         (substitute-command-keys
          "This project's allowlist is not applied until you trust it: \
\\[agent-shell-trust-allowlist]")))
      (when-let ((loaded (agent-shell-instructions--on-session result)))
        (agent-shell--notice loaded))
      (let ((memories (alist-get 'memories result)))
        (when memories
          (agent-shell--notice
           (format "Recalled %d experience%s: %s" (length memories)
                   (if (cdr memories) "s" "")
                   (mapconcat (lambda (m) (or (alist-get 'title m) "?"))
                              memories "; ")))))
      (agent-shell--send-queued))))

(defun agent-shell--session-new-params (root &optional settings wide-confirmed)
  "Return the params of `session/new' for ROOT.
SETTINGS are ROOT's project settings, read when not given.
WIDE-CONFIRMED non-nil means the user explicitly confirmed ROOT
although it is $HOME or /; only then is `allow_wide_root' sent."
  (let ((settings (or settings (agent-shell-read-config root))))
    `((cwd . ,(directory-file-name root))
      ,@(and wide-confirmed '((allow_wide_root . t)))
      (mode . ,(symbol-name (agent-shell--setting settings 'agent-shell-default-mode)))
      (model . ((model . ,(agent-shell--setting settings 'agent-shell-model))
                ,@(when-let ((window (agent-shell--setting
                                      settings 'agent-shell-context-window)))
                    `((context_window . ,window)))))
      (max_steps . ,(agent-shell--setting settings 'agent-shell-max-steps))
      ;; Only the user's own setting: never one from the project's files.
      (extra_allowed_paths
       . ,(vconcat (mapcar #'expand-file-name agent-shell-extra-allowed-paths)))
      ,@(agent-shell-roles-params)
      ,@(agent-shell-mcp-session-params))))

(defun agent-shell--session-error (buffer what)
  "Return an error callback reporting WHAT failed in BUFFER."
  (lambda (err)
    (when (buffer-live-p buffer)
      (with-current-buffer buffer
        (agent-shell--unqueue)
        (agent-shell--notice (format "%s failed: %s" what (alist-get 'message err)))
        (agent-shell--set-state 'dead)))))

;;; Commands

;;;###autoload
(defun agent-shell-start (&optional ask)
  "Start an agent session for the current project.
The root is the current project's, else `agent-shell-workspace-root'
or `default-directory'; with a prefix argument ASK, read it.  Your
home directory and / are never a project silently: from there (say,
*scratch*) a project directory is asked for, and keeping $HOME or /
needs an explicit yes.  The bridge is started once per Emacs and
reused.

A shell buffer of the project that is still starting is shown as it
is.  One whose bridge stopped is never erased: its session is resumed
in place with `agent-shell-restart', keeping the transcript and the
unsent input."
  (interactive "P")
  (let* ((chosen (agent-shell--confirmed-root (agent-shell--project-root ask)))
         (root (car chosen))
         (name (agent-shell--name-for-root root))
         (buffer (get-buffer-create (agent-shell--buffer-name name))))
    (agent-shell-scaffold root)
    (with-current-buffer buffer
      (cond
       ((not (derived-mode-p 'agent-shell-mode)) nil)
       ((eq agent-shell--state 'starting) (setq root nil))
       ((and agent-shell--session-id (agent-shell--live-connection)
             (not (eq agent-shell--state 'dead)))
        (setq root nil))
       ((agent-shell--has-content-p)
        (agent-shell-restart)
        (setq root nil)))
      (when root
        (agent-shell--setup name root nil)
        (let ((settings (agent-shell-read-config root)))
          (setq agent-shell--mode
                (agent-shell--setting settings 'agent-shell-default-mode))
          (agent-shell--set-state 'starting)
          (agent-shell--with-bridge
           (lambda (conn)
             (agent-shell-rpc-request
              conn "session/new"
              (agent-shell--session-new-params root settings (cdr chosen))
            :on-success (lambda (result) (agent-shell--on-session buffer result))
            :on-error (agent-shell--session-error buffer "Starting the session")))))))
    (pop-to-buffer buffer)
    buffer))

(defun agent-shell--has-content-p ()
  "Return non-nil when this shell buffer has a transcript or input."
  (and (markerp agent-shell--output-marker)
       (or (> agent-shell--output-marker (point-min))
           (not (string-empty-p (agent-shell--input))))))

(defun agent-shell--ensure-shell ()
  "Signal a `user-error' unless in a shell buffer with a session."
  (unless (derived-mode-p 'agent-shell-mode)
    (user-error "Not in an agent-shell buffer"))
  (unless agent-shell--session-id
    (user-error "This buffer has no session yet")))

(defun agent-shell--input ()
  "Return the current input text."
  (buffer-substring-no-properties agent-shell--input-marker (point-max)))

(defun agent-shell--set-input (text)
  "Replace the current input with TEXT."
  (delete-region agent-shell--input-marker (point-max))
  (goto-char (point-max))
  (insert text))

(defun agent-shell-send-input ()
  "Send the input after the prompt to the agent as a new turn.
On an entry header in the transcript, toggle the entry instead."
  (interactive)
  (cond
   ((< (point) agent-shell--input-marker)
    (if (agent-shell--entry-at (point))
        (agent-shell-toggle-entry)
      (goto-char (point-max))))
   (t
    (unless (derived-mode-p 'agent-shell-mode)
      (user-error "Not in an agent-shell buffer"))
    (let ((text (string-trim (agent-shell--input))))
      (when (string-empty-p text)
        (user-error "Nothing to send"))
      (if (eq agent-shell--state 'starting)
          (agent-shell--queue-prompt text)
        (agent-shell--ensure-shell)
        (when agent-shell--turn-id
          (user-error "A turn is running; C-c C-k cancels it"))
        (agent-shell-send text))))))

(defun agent-shell-send (text)
  "Send TEXT as a prompt in the current shell buffer's session.
When the prompt cannot be sent at all, nothing changes: no turn
starts and TEXT stays (or is put back) in the input."
  (unless (agent-shell--live-connection)
    (user-error (substitute-command-keys
                 "The bridge is not running; \\<agent-shell-mode-map>\\[agent-shell-restart] \
restarts it and resumes this session (the transcript and input stay)")))
  (agent-shell--show-prompt text)
  (agent-shell--dispatch-prompt text))

(defun agent-shell--show-prompt (text)
  "Move TEXT from the input to the transcript as the user's prompt."
  (unless (equal text (car agent-shell--history))
    (push text agent-shell--history))
  (setq agent-shell--history-index -1
        agent-shell--history-draft nil)
  (let ((inhibit-read-only t))
    (delete-region agent-shell--input-marker (point-max)))
  (setq buffer-undo-list nil)
  (agent-shell--editing
    (agent-shell--close-block)
    (unless (bobp) (agent-shell--insert "\n"))
    (agent-shell--insert (concat "> " text "\n\n") 'face 'agent-shell-user-face
                         'agent-shell-role 'user))
  (agent-shell-citations-mark agent-shell--output-marker))

(defun agent-shell--dispatch-prompt (text)
  "Start a turn with TEXT, already shown in the transcript.
When it cannot be sent, no turn runs and TEXT goes back to the input."
  (let ((buffer (current-buffer)))
    (agent-shell--start-turn-entries)
    (setq agent-shell--turn-id 'pending
          agent-shell--turn-start (current-time))
    (agent-shell--set-state 'thinking)
    (condition-case err
        (agent-shell--send-prompt buffer text)
      (error
       (setq agent-shell--turn-id nil
             agent-shell--turn-start nil)
       (agent-shell--set-state 'idle)
       (agent-shell--set-input text)
       (agent-shell--notice (format "The prompt was not sent: %s"
                                    (error-message-string err)))
       (signal (car err) (cdr err))))))

(defun agent-shell--send-prompt (buffer text)
  "Send TEXT as `session/prompt' for the shell BUFFER (the current buffer)."
  (agent-shell--request
   "session/prompt"
   `((sessionId . ,agent-shell--session-id)
     (prompt . [((type . "text") (text . ,text))])
     (context . ,(agent-shell-context-snapshot))
     (mode . ,(symbol-name agent-shell--mode)))
   :on-success (lambda (result)
                 (when (buffer-live-p buffer)
                   (with-current-buffer buffer
                     (when-let ((turn (alist-get 'turnId result)))
                       (push (cons turn text) agent-shell--turn-prompts))
                     (when (eq agent-shell--turn-id 'pending)
                       (setq agent-shell--turn-id
                             (or (alist-get 'turnId result) t))))))
   :on-error (lambda (err)
               (when (buffer-live-p buffer)
                 (with-current-buffer buffer
                   (setq agent-shell--turn-id nil)
                   (agent-shell--notice (format "The prompt failed: %s"
                                                (alist-get 'message err)))
                   ;; Refused prompts (an unknown /command, say) come back to
                   ;; be fixed, unless the user already typed something new.
                   (when (string-empty-p (agent-shell--input))
                     (agent-shell--set-input text))
                   (agent-shell--set-state 'idle))))))

(defun agent-shell-newline ()
  "Insert a newline in the input without sending it."
  (interactive)
  (when (< (point) agent-shell--input-marker)
    (goto-char (point-max)))
  (insert "\n"))

(defun agent-shell-previous-input (n)
  "Replace the input with the Nth previous one from the history."
  (interactive "p")
  (unless agent-shell--history
    (user-error "No input history"))
  (when (= agent-shell--history-index -1)
    (setq agent-shell--history-draft (agent-shell--input)))
  (let ((index (+ agent-shell--history-index n)))
    (cond ((>= index (length agent-shell--history))
           (user-error "Beginning of history"))
          ((< index -1) (user-error "End of history"))
          (t (setq agent-shell--history-index index)
             (agent-shell--set-input
              (if (= index -1)
                  (or agent-shell--history-draft "")
                (nth index agent-shell--history)))))))

(defun agent-shell-next-input (n)
  "Replace the input with the Nth next one from the history."
  (interactive "p")
  (agent-shell-previous-input (- n)))

(defun agent-shell-cancel ()
  "Cancel the running turn of this session."
  (interactive)
  (agent-shell--ensure-shell)
  (let ((buffer (current-buffer)))
    (agent-shell--request
     "session/cancel" `((sessionId . ,agent-shell--session-id))
     :on-success (lambda (result)
                   (message "agent-shell: %s"
                            (if (eq (alist-get 'cancelled result) t)
                                "turn cancelled" "no turn was running"))
                   (when (buffer-live-p buffer)
                     (with-current-buffer buffer
                       (unless (eq agent-shell--turn-id 'pending)
                         (when (stringp agent-shell--turn-id)
                           (push agent-shell--turn-id agent-shell--stale-turns))
                         (setq agent-shell--turn-id nil))))))))

(defun agent-shell-show-log ()
  "Show the action log of this session."
  (interactive)
  (unless (derived-mode-p 'agent-shell-mode)
    (user-error "Not in an agent-shell buffer"))
  (display-buffer (agent-shell-log-buffer agent-shell--name)))

(defun agent-shell-toggle-mode ()
  "Switch this session between `act' and `ask' mode."
  (interactive)
  (agent-shell--ensure-shell)
  (let ((buffer (current-buffer))
        (mode (if (eq agent-shell--mode 'ask) 'act 'ask)))
    (agent-shell--request
     "session/set_mode" `((sessionId . ,agent-shell--session-id)
                          (mode . ,(symbol-name mode)))
     :on-success (lambda (result)
                   (when (buffer-live-p buffer)
                     (with-current-buffer buffer
                       (setq agent-shell--mode
                             (intern (or (alist-get 'mode result)
                                         (symbol-name mode))))
                       (force-mode-line-update)
                       (message "agent-shell: %s mode" agent-shell--mode)))))))

(defun agent-shell--chosen-permission (verb)
  "Return this session's waiting permission request the user means.
With one step waiting, that one; with several, ask which (VERB starts
the question), so no decision falls on a step the user did not name."
  (let ((waiting (cl-remove-if-not
                  (lambda (p) (and (equal (plist-get p :session) agent-shell--session-id)
                                   (not (plist-get p :sending))))
                  agent-shell--permissions)))
    (cond
     ((null waiting) (user-error "No step is waiting for a decision"))
     ((null (cdr waiting)) (car waiting))
     (t (let* ((n 0)
               (table (mapcar (lambda (p)
                                (cons (format "%d. %s" (cl-incf n)
                                              (or (alist-get 'title (alist-get 'toolCall
                                                                               (plist-get p :params)))
                                                  "a step"))
                                      p))
                              waiting)))
          (or (cdr (assoc (completing-read (format "%s which waiting step? " verb)
                                           table nil t)
                          table))
              (user-error "No step chosen")))))))

(defun agent-shell-approve (&optional permission)
  "Approve this session's waiting step; with several, ask which.
PERMISSION, when given, is the request to approve."
  (interactive)
  (agent-shell--ensure-shell)
  (agent-shell--answer-permission
   (or permission (agent-shell--chosen-permission "Approve")) 'approve nil))

(defun agent-shell-reject (reason &optional permission)
  "Reject this session's waiting step, telling the model REASON.
With several steps waiting, ask which; PERMISSION, when given, is it."
  (interactive
   (progn (agent-shell--ensure-shell)
          (let ((permission (agent-shell--chosen-permission "Reject")))
            (list (read-string "Reason (optional): ") permission))))
  (agent-shell--ensure-shell)
  (agent-shell--answer-permission (or permission (agent-shell--chosen-permission "Reject"))
                                  'reject (agent-shell--nonempty reason)))

(defun agent-shell-toggle-entry ()
  "Show or hide the body of the thought, tool or plan entry at point.
Anywhere on an entry's line counts, its end too.  On a /command
name at the prompt, complete it; elsewhere, indent as TAB would."
  (interactive)
  (let ((id (agent-shell--entry-at (point))))
    (if (not id)
        (if (agent-shell-commands-completion-at-point)
            (completion-at-point)
          (indent-for-tab-command))
      (let ((plist (agent-shell--entry id)))
        (agent-shell--set-folded id (not (plist-get plist :folded)))))))

(defun agent-shell--kill-buffer ()
  "End this buffer's session when the buffer is killed."
  (when agent-shell--session-id
    (remhash agent-shell--session-id agent-shell--sessions)
    (when-let ((conn (agent-shell--live-connection)))
      (ignore-errors
        (agent-shell-rpc-notify conn "session/cancel"
                                `((sessionId . ,agent-shell--session-id)))))
    (setq agent-shell--permissions
          (cl-remove agent-shell--session-id agent-shell--permissions
                     :key (lambda (p) (plist-get p :session)) :test #'equal))))

;;;###autoload
(defun agent-shell-resume ()
  "Reopen a past session of the current project with its visible history."
  (interactive)
  (let ((root (agent-shell--project-root)))
    (agent-shell--with-bridge
     (lambda (conn)
       (agent-shell-rpc-request
        conn "session/list" `((cwd . ,(directory-file-name root)))
        :on-success (lambda (result) (agent-shell--choose-session conn root result))
        :on-error (lambda (err) (message "agent-shell: listing sessions failed: %s"
                                         (alist-get 'message err))))))))

(defun agent-shell--session-label (session)
  "Return the completion label of SESSION."
  (format "%s  %s  (%s turns) %s"
          (or (alist-get 'updated session) "")
          (or (alist-get 'title session) "untitled")
          (or (alist-get 'turns session) 0)
          (alist-get 'sessionId session)))

(defun agent-shell--choose-session (conn root result)
  "Let the user pick one of RESULT's sessions in ROOT and resume it on CONN."
  (let* ((sessions (alist-get 'sessions result))
         (table (mapcar (lambda (s) (cons (agent-shell--session-label s) s))
                        sessions)))
    (unless sessions
      (user-error "No past sessions for %s" root))
    (let ((session (cdr (assoc (completing-read "Resume session: " table nil t)
                               table))))
      (agent-shell-resume-session conn root (alist-get 'sessionId session)))))

(defun agent-shell-resume-session (conn root session-id)
  "Reopen SESSION-ID of ROOT on CONN in a shell buffer; return the buffer."
  (let* ((name (agent-shell--name-for-root root))
         (buffer (get-buffer-create (agent-shell--buffer-name name))))
    (with-current-buffer buffer
      (when (and (derived-mode-p 'agent-shell-mode) agent-shell--session-id
                 agent-shell--turn-id
                 (not (yes-or-no-p
                       (format "A turn is running in %s; cancel it and resume? "
                               (buffer-name buffer)))))
        (user-error "Not resumed; the running turn goes on"))
      (when (and (derived-mode-p 'agent-shell-mode)
                 (not agent-shell--turn-id)
                 (not (equal agent-shell--session-id session-id))
                 (agent-shell--has-content-p)
                 (not (yes-or-no-p
                       (format "Show session %s in %s instead of its transcript \
\(kept in its log)? " session-id (buffer-name buffer)))))
        (user-error "Not resumed; the transcript stays"))
      (when agent-shell--session-id
        (agent-shell--kill-buffer))
      (let ((typed (and (derived-mode-p 'agent-shell-mode)
                        (markerp agent-shell--input-marker)
                        (agent-shell--input))))
        (agent-shell--setup name root nil)
        ;; Unsent input survives: only the transcript is redrawn.
        (when typed (agent-shell--set-input typed)))
      (agent-shell--set-state 'starting))
    (agent-shell-rpc-request
     conn "session/resume" `((sessionId . ,session-id)
                             (cwd . ,(directory-file-name root))
                             ,@(agent-shell-mcp-session-params))
     :on-success (lambda (result)
                   (when (buffer-live-p buffer)
                     (with-current-buffer buffer
                       (agent-shell--before-queued
                        (lambda ()
                          (agent-shell--insert-history (alist-get 'history result))))
                       (agent-shell--on-session buffer result))))
     :on-error (agent-shell--session-error buffer "Resuming the session"))
    (pop-to-buffer buffer)
    buffer))

(defun agent-shell-stop-bridge ()
  "Stop the bridge process; every session's turn ends."
  (interactive)
  (when-let ((conn (agent-shell--live-connection)))
    (agent-shell-rpc-stop conn)))

(defun agent-shell-notify-default (text)
  "Show TEXT in the echo area and ring the bell when no frame has focus."
  (message "%s" text)
  (unless (cl-some #'frame-focus-state (frame-list))
    (ding t)))

;;; Mode

(defvar agent-shell-mode-map
  (let ((map (make-sparse-keymap)))
    (define-key map (kbd "RET") #'agent-shell-send-input)
    (define-key map (kbd "S-<return>") #'agent-shell-newline)
    (define-key map (kbd "C-j") #'agent-shell-newline)
    (define-key map (kbd "TAB") #'agent-shell-toggle-entry)
    (define-key map (kbd "M-p") #'agent-shell-previous-input)
    (define-key map (kbd "M-n") #'agent-shell-next-input)
    (define-key map (kbd "C-c C-k") #'agent-shell-cancel)
    (define-key map (kbd "C-c C-l") #'agent-shell-show-log)
    (define-key map (kbd "C-c C-t") #'agent-shell-toggle-mode)
    (define-key map (kbd "C-c C-y") #'agent-shell-approve)
    (define-key map (kbd "C-c C-n") #'agent-shell-reject)
    (define-key map (kbd "C-c C-s") #'agent-shell-save-memory)
    (define-key map (kbd "C-c C-r") #'agent-shell-restart)
    map)
  "Keymap of `agent-shell-mode'.")

(autoload 'agent-shell-undo-turn "agent-shell-actions"
  "Restore every file that the agent changed during a turn." t)
(autoload 'agent-shell-save-memory "agent-shell-memory"
  "Extract an experience from the current session now." t)
(autoload 'agent-shell-memory-browse "agent-shell-memory"
  "List the experiences of a project." t)

(define-derived-mode agent-shell-mode text-mode "Agent-Shell"
  "Major mode of an agent-shell session buffer.
The transcript is read-only; type after the prompt at the end and
press RET to send.  Thoughts, tool calls and plans are one-line
entries: TAB (or RET) on one shows or hides its body.  When a step
waits for your approval, answer with y/n in the action log
\(\\[agent-shell-show-log]) or with \\[agent-shell-approve] / \\[agent-shell-reject] here.

The header line shows the model, the mode (act or ask), the state
\(starting, idle, thinking, running TOOL, waiting for you, bridge
stopped), tokens used and how full the context window is.  A prompt
sent while the session starts is queued and goes out once it is
ready.  When the bridge stops, \\[agent-shell-restart] restarts it and
resumes the session in place, keeping the transcript and the input.

\\{agent-shell-mode-map}"
  (setq-local header-line-format '(:eval (agent-shell--header-line)))
  (setq-local truncate-lines nil)
  (setq-local word-wrap t)
  (add-hook 'completion-at-point-functions
            #'agent-shell-commands-completion-at-point nil t)
  (add-hook 'kill-buffer-hook #'agent-shell--kill-buffer nil t))

(provide 'agent-shell)
(agent-shell-coexist-watch)
;;; agent-shell.el ends here
