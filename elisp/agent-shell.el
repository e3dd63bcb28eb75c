;;; agent-shell.el --- A coding agent that lives inside Emacs  -*- lexical-binding: t; -*-

;; SPDX-License-Identifier: GPL-3.0-or-later

;; Version: 0.1.0
;; Package-Requires: ((emacs "28.1"))
;; Keywords: tools, processes

;;; Commentary:

;; agent-shell runs a coding agent in a Python bridge and gives it eyes
;; and hands inside Emacs.  This file ties the areas together:
;;
;; - options (model, key, limits, modes) and `agent-shell-start', which
;;   finds the project root, prepares `.agent-shell/', starts or reuses
;;   the one bridge process (agent-shell-rpc.el), initialises it and
;;   opens a session in a shell buffer;
;; - `agent-shell-mode', the shell buffer: a read-only transcript with a
;;   prompt at the end.  Assistant text streams in at a marker; thoughts,
;;   tool calls and plans are one-line entries that fold with TAB; the
;;   header line shows model, state, tokens and context fill;
;; - the wiring of bridge requests: `tool/call' runs an Emacs-side tool
;;   (agent-shell-tools.el), `session/request_permission' waits for the
;;   user's key in the action log (agent-shell-log.el), `log/entry' and
;;   `log/update' feed that log.
;;
;; Project files `.agent-shell/config.el' and `.agent-shell/allowlist.el'
;; are data: they are read with `read' and never evaluated.
;;
;; Memory commands live in agent-shell-memory.el.

;;; Code:

(require 'cl-lib)
(require 'subr-x)
(require 'project)
(require 'auth-source)
(require 'url-parse)
(require 'agent-shell-rpc)
(require 'agent-shell-log)
(require 'agent-shell-tools)
(require 'agent-shell-plan)
(require 'agent-shell-citations)

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

(defcustom agent-shell-tool-output-max-chars 4000
  "Largest piece of tool output shown in the shell buffer per update.
The action log and its files keep the full output."
  :type 'integer
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

(defface agent-shell-user-face '((t :inherit font-lock-keyword-face))
  "Face of the user's messages in the transcript."
  :group 'agent-shell
  :package-version '(agent-shell . "0.1.0"))

(defface agent-shell-entry-face '((t :inherit font-lock-comment-face))
  "Face of thought, tool and plan entries."
  :group 'agent-shell
  :package-version '(agent-shell . "0.1.0"))

(defface agent-shell-notice-face '((t :inherit font-lock-warning-face))
  "Face of notices from agent-shell itself."
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
(defvar-local agent-shell--plan-entry nil
  "Id of the transcript entry showing the current plan, or nil.")
(defvar-local agent-shell--state 'starting "What the agent is doing.")
(defvar-local agent-shell--state-detail nil "Tool name while running one.")
(defvar-local agent-shell--usage nil "The last `usage' update, an alist.")
(defvar-local agent-shell--turn-id nil "The running turn, or nil.")
(defvar-local agent-shell--turn-start nil "When the running turn started.")
(defvar-local agent-shell--output-marker nil "Where transcript output goes.")
(defvar-local agent-shell--input-marker nil "Where the user's input starts.")
(defvar-local agent-shell--block nil
  "The open transcript block: nil, `message', or an entry id string.")
(defvar-local agent-shell--body-open nil
  "Non-nil when the open entry already has body text.")
(defvar-local agent-shell--entries nil
  "Entry id to plist (:start MARKER :folded BOOL :title STRING).
START is a marker because the plan entry is redrawn in place.")
(defvar-local agent-shell--entry-counter 0 "Counter for entry ids.")
(defvar-local agent-shell--tools nil "Tool call id to entry id.")
(defvar-local agent-shell--history nil "Sent inputs, newest first.")
(defvar-local agent-shell--history-index -1 "Position while walking history.")
(defvar-local agent-shell--history-draft nil "Input saved before walking.")
(defvar-local agent-shell--log-path nil "The session's log file.")

;;; Internals: key and project files

(defun agent-shell--nonempty (value)
  "Return VALUE when it is a non-empty string, else nil."
  (and (stringp value) (not (string-empty-p value)) value))

(defun agent-shell--api-host ()
  "Return the host part of `agent-shell-api-base'."
  (url-host (url-generic-parse-url agent-shell-api-base)))

(defun agent-shell--auth-source-key ()
  "Return the key stored in `auth-source' for the API host, or nil."
  (when-let* ((host (agent-shell--api-host))
              (found (car (auth-source-search :host host :require '(:secret)
                                              :max 1)))
              (secret (plist-get found :secret)))
    (agent-shell--nonempty (if (functionp secret) (funcall secret) secret))))

(defun agent-shell-api-key ()
  "Return the model API key, or nil when none is configured.
The order is `agent-shell-api-key', `auth-source' for the host of
`agent-shell-api-base', then the environment variables
AGENT_SHELL_API_KEY, DEEPSEEK_API_KEY and OPENAI_API_KEY."
  (or (agent-shell--nonempty (if (functionp agent-shell-api-key)
                                 (funcall agent-shell-api-key)
                               agent-shell-api-key))
      (agent-shell--auth-source-key)
      (cl-some (lambda (var) (agent-shell--nonempty (getenv var)))
               '("AGENT_SHELL_API_KEY" "DEEPSEEK_API_KEY" "OPENAI_API_KEY"))))

(defconst agent-shell--config-variables
  '(agent-shell-model agent-shell-context-window agent-shell-max-steps
    agent-shell-default-mode)
  "Variables a project's `.agent-shell/config.el' may set.
The API base, the key and the extra allowed paths are absent on purpose:
a cloned repository must not be able to send the user's key to a host
of its choosing, nor widen what the agent may read and write.")

(defconst agent-shell--config-template
  ";; agent-shell project settings.  This file is DATA: it is read, never
;; evaluated.  Only `setq' forms of literal values are understood, for
;; the variables agent-shell-model, agent-shell-context-window,
;; agent-shell-max-steps and agent-shell-default-mode.
;;
;; (setq agent-shell-default-mode 'ask)
;; (setq agent-shell-max-steps 40)
"
  "Initial content of `.agent-shell/config.el'.")

(defconst agent-shell--allowlist-template
  ";; Commands the agent may run without asking, even when the policy
;; would call them dangerous.  This file is DATA: it is read, never
;; evaluated, and the agent cannot write it.
;;
;; (setq agent-shell-allowlist
;;       '((command . \"make test\")
;;         (command . \"docker compose up -d\")))
"
  "Initial content of `.agent-shell/allowlist.el'.")

(defun agent-shell-scaffold (root)
  "Create ROOT's `.agent-shell/' directory and files when missing.
Return the directory.  Existing files are left alone."
  (let ((dir (expand-file-name ".agent-shell/" root)))
    (dolist (sub '("memory/" "logs/" "workspace/"))
      (make-directory (expand-file-name sub dir) t))
    (dolist (file `(("config.el" . ,agent-shell--config-template)
                    ("allowlist.el" . ,agent-shell--allowlist-template)))
      (let ((path (expand-file-name (car file) dir)))
        (unless (file-exists-p path)
          (with-temp-file path (insert (cdr file))))))
    dir))

(defun agent-shell--literal (form)
  "Return (t . VALUE) when FORM is a literal, else nil.
Literals are strings, numbers, nil, t, keywords and quoted data."
  (cond ((or (stringp form) (numberp form) (keywordp form) (memq form '(nil t)))
         (cons t form))
        ((and (consp form) (eq (car form) 'quote) (consp (cdr form))
              (null (cddr form)))
         (cons t (cadr form)))))

(defun agent-shell-read-data-file (file)
  "Read FILE as a sequence of Lisp forms, without evaluating any of them.
Return the list of forms; a syntax error ends the list with a warning."
  (when (file-readable-p file)
    (with-temp-buffer
      (insert-file-contents file)
      (set-syntax-table emacs-lisp-mode-syntax-table)
      (goto-char (point-min))
      (let ((read-circle nil) forms)
        (condition-case err
            (while (progn (forward-comment (buffer-size)) (not (eobp)))
              (push (read (current-buffer)) forms))
          (error (display-warning 'agent-shell
                                  (format "%s: unreadable after %d forms: %s"
                                          file (length forms)
                                          (error-message-string err)))))
        (nreverse forms)))))

(defun agent-shell-read-config (root)
  "Return ROOT's project settings as an alist (VARIABLE . VALUE).
Only `(setq VARIABLE LITERAL ...)' forms naming a variable of
`agent-shell--config-variables' count; anything else is ignored with a
warning.  Nothing in the file is evaluated."
  (let ((file (expand-file-name ".agent-shell/config.el" root))
        settings)
    (dolist (form (agent-shell-read-data-file file))
      (if (not (and (consp form) (eq (car form) 'setq) (proper-list-p form)
                    (cl-evenp (length (cdr form)))))
          (display-warning 'agent-shell (format "%s: ignoring %S" file form))
        (let ((pairs (cdr form)))
          (while pairs
            (let ((var (pop pairs)) (literal (agent-shell--literal (pop pairs))))
              (cond
               ((not (and (memq var agent-shell--config-variables) literal))
                (display-warning
                 'agent-shell (format "%s: ignoring setting of %S" file var)))
               ((not (agent-shell--config-value-ok-p var (cdr literal)))
                (display-warning
                 'agent-shell (format "%s: ignoring %S: %S is not %s" file var
                                      (cdr literal)
                                      (agent-shell--config-expected var))))
               (t (push (cons var (cdr literal)) settings))))))))
    (nreverse settings)))

(defun agent-shell--config-value-ok-p (var value)
  "Return non-nil when VALUE has the type project settings allow for VAR."
  (pcase var
    ('agent-shell-model (and (agent-shell--nonempty value) t))
    ('agent-shell-context-window (or (null value) (and (integerp value) (> value 0))))
    ('agent-shell-max-steps (and (integerp value) (> value 0)))
    ('agent-shell-default-mode (memq value '(act ask)))))

(defun agent-shell--config-expected (var)
  "Describe the values project settings allow for VAR."
  (pcase var
    ('agent-shell-model "a non-empty string")
    ('agent-shell-context-window "nil or a positive integer")
    ('agent-shell-max-steps "a positive integer")
    ('agent-shell-default-mode "the symbol act or ask (quoted: 'ask)")))

(defun agent-shell--setting (settings var)
  "Return VAR's value from SETTINGS, else its global value."
  (let ((cell (assq var settings)))
    (if cell (cdr cell) (symbol-value var))))

(defun agent-shell--project-root (&optional ask)
  "Return the project root for a new session.
With ASK non-nil, read a directory."
  (file-name-as-directory
   (expand-file-name
    (cond (ask (read-directory-name "Project directory: " nil nil t))
          ((when-let ((project (project-current nil)))
             (if (fboundp 'project-root)
                 (project-root project)
               (car (with-no-warnings (project-roots project))))))
          (agent-shell-workspace-root)
          (t default-directory)))))

;;; Internals: the bridge

(defun agent-shell--model-params ()
  "Return the `model' object of `initialize', with the key resolved."
  (let ((key (agent-shell-api-key)))
    `((api_base . ,agent-shell-api-base)
      (model . ,agent-shell-model)
      ,@(and key `((api_key . ,key)))
      ,@(and agent-shell-context-window
             `((context_window . ,agent-shell-context-window)))
      (trust_env . ,(if agent-shell-trust-env t :json-false))
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
    (let ((text (format "The agent-shell bridge stopped (%s).  \
Run M-x agent-shell-start to restart it, or M-x agent-shell-resume \
to reopen a session."
                        (string-trim (format "%s" reason)))))
      (agent-shell--fail-ready-queue text)
      (agent-shell--each-shell
       (lambda ()
         (unless (eq agent-shell--state 'dead)
           (agent-shell--notice text)
           (agent-shell--set-state 'dead))))
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
      (user-error "The bridge is not running; M-x agent-shell-start restarts it"))
    (apply #'agent-shell-rpc-request conn method params args)))

;;; Internals: transcript

(defun agent-shell--shift-undo (list pos delta)
  "Shift buffer positions at or after POS in undo LIST by DELTA."
  (cl-flet ((shift (n) (if (and (integerp n) (>= (abs n) pos))
                           (if (< n 0) (- n delta) (+ n delta))
                         n)))
    (mapcar
     (lambda (entry)
       (pcase entry
         ((pred integerp) (shift entry))
         (`(,(and beg (pred integerp)) . ,(and end (pred integerp)))
          (cons (shift beg) (shift end)))
         (`(,(and text (pred stringp)) . ,(and where (pred integerp)))
          (cons text (shift where)))
         (`(nil ,prop ,val ,(and beg (pred integerp)) . ,(and end (pred integerp)))
          (cl-list* nil prop val (shift beg) (shift end)))
         (_ entry)))
     list)))

(defmacro agent-shell--editing (&rest body)
  "Run BODY at the output marker with the transcript writable.
Modification hooks are off and the insertion is kept out of the undo
list, whose recorded input positions are shifted instead."
  (declare (indent 0) (debug t))
  (let ((start (make-symbol "start")) (undo (make-symbol "undo")))
    `(let ((,start (marker-position agent-shell--output-marker))
           (,undo buffer-undo-list))
       (prog1 (let ((inhibit-read-only t)
                    (inhibit-modification-hooks t)
                    (buffer-undo-list t))
                (save-excursion
                  (goto-char agent-shell--output-marker)
                  ,@body))
         (unless (eq ,undo t)
           (setq buffer-undo-list
                 (agent-shell--shift-undo
                  ,undo ,start
                  (- (marker-position agent-shell--output-marker) ,start))))))))

(defun agent-shell--insert (text &rest props)
  "Insert TEXT with PROPS at point as read-only transcript text."
  (insert (apply #'propertize text 'read-only t 'front-sticky '(read-only) props)))

(defun agent-shell--fresh-line ()
  "Start a new line at point unless already at the start of one."
  (unless (or (bobp) (eq (char-before) ?\n))
    (agent-shell--insert "\n")))

(defun agent-shell--close-block ()
  "End the open block, so that the next output begins on a new line."
  (when agent-shell--block
    (agent-shell--fresh-line)
    (setq agent-shell--block nil
          agent-shell--body-open nil)))

(defun agent-shell--notice (text)
  "Append TEXT to the transcript as a notice from agent-shell."
  (agent-shell--editing
    (agent-shell--close-block)
    (agent-shell--insert (concat text "\n") 'face 'agent-shell-notice-face)))

(defun agent-shell--append-message (text)
  "Append TEXT to the assistant's message."
  (agent-shell--editing
    (unless (eq agent-shell--block 'message)
      (agent-shell--close-block)
      (setq agent-shell--block 'message))
    (agent-shell--insert text 'agent-shell-role 'assistant)))

(defun agent-shell--fold-char (folded)
  "Return the arrow shown before an entry that is FOLDED or not."
  (if folded "▸" "▾"))

(defun agent-shell--new-entry (kind glyph title)
  "Open a foldable entry of KIND with status GLYPH and TITLE; return its id.
Call inside `agent-shell--editing'."
  (agent-shell--close-block)
  (let ((id (format "%s-%d" kind (cl-incf agent-shell--entry-counter)))
        (start (point))
        (title (replace-regexp-in-string "[\n\r\t]+" " " (or title ""))))
    (agent-shell--insert (concat (agent-shell--fold-char t) " " glyph " " title)
                         'agent-shell-entry id 'agent-shell-header t
                         'face 'agent-shell-entry-face
                         'help-echo "TAB: show or hide")
    ;; A marker: an entry shown again in place (the plan) moves later ones.
    (push (cons id (list :start (copy-marker start) :folded t :title title))
          agent-shell--entries)
    (setq agent-shell--block id
          agent-shell--body-open nil)
    id))

(defun agent-shell--entry (id)
  "Return entry ID's plist, or nil when it is gone."
  (let ((plist (cdr (assoc id agent-shell--entries))))
    (and plist
         (equal (get-text-property (plist-get plist :start) 'agent-shell-entry) id)
         plist)))

(defun agent-shell--append-body (id text)
  "Append TEXT to the body of entry ID, which must be the open block.
Call inside `agent-shell--editing'."
  (let ((plist (agent-shell--entry id)))
    (insert (propertize (if agent-shell--body-open text (concat "\n" text))
                        'read-only t 'front-sticky '(read-only)
                        'agent-shell-entry id
                        'agent-shell-body id
                        'invisible (plist-get plist :folded)))
    (setq agent-shell--body-open t)))

(defun agent-shell--replace-char (pos string)
  "Replace the character at POS with STRING, keeping its properties."
  (let ((props (text-properties-at pos))
        (inhibit-read-only t)
        (inhibit-modification-hooks t)
        (buffer-undo-list t))
    (save-excursion
      (goto-char pos)
      (insert (apply #'propertize string props))
      (delete-char 1))))

(defun agent-shell--entry-body-bounds (id)
  "Return (START . END) of entry ID's body, or nil when it has none."
  (when-let* ((plist (agent-shell--entry id))
              (start (next-single-property-change (plist-get plist :start)
                                                  'agent-shell-header)))
    (when (equal (get-text-property start 'agent-shell-body) id)
      (cons start (or (next-single-property-change start 'agent-shell-body)
                      (point-max))))))

(defun agent-shell--set-folded (id folded)
  "Fold entry ID when FOLDED is non-nil, else unfold it."
  (when-let ((plist (agent-shell--entry id)))
    (setf (plist-get (cdr (assoc id agent-shell--entries)) :folded) folded)
    (agent-shell--replace-char (plist-get plist :start)
                               (agent-shell--fold-char folded))
    (when-let ((bounds (agent-shell--entry-body-bounds id)))
      (let ((inhibit-read-only t) (inhibit-modification-hooks t)
            (buffer-undo-list t))
        (put-text-property (car bounds) (cdr bounds) 'invisible folded)))))

(defun agent-shell--set-entry-glyph (id glyph)
  "Show status GLYPH (one character) in entry ID's header."
  (when-let ((plist (agent-shell--entry id)))
    (agent-shell--replace-char (+ 2 (plist-get plist :start)) glyph)))

(defun agent-shell--status-glyph (status)
  "Return the one-character glyph of a tool STATUS string."
  (pcase status
    ("pending" "○")
    ("in_progress" "◐")
    ("completed" "●")
    ("failed" "✗")
    (_ "·")))

;;; Internals: header line and state

(defun agent-shell--set-state (state &optional detail)
  "Set this buffer's STATE, with DETAIL (a tool name) for `running'."
  (unless (and (eq state agent-shell--state)
               (equal detail agent-shell--state-detail))
    (setq agent-shell--state state
          agent-shell--state-detail detail)
    (force-mode-line-update)))

(defun agent-shell--state-text ()
  "Return the state as shown in the header line."
  (pcase agent-shell--state
    ('running (format "running %s" (or agent-shell--state-detail "tool")))
    ('waiting "waiting for you")
    ('dead "bridge stopped")
    (state (symbol-name state))))

(defun agent-shell--format-tokens (n)
  "Return token count N in a short form."
  (cond ((not (numberp n)) "0")
        ((>= n 1000000) (format "%.1fM" (/ n 1e6)))
        ((>= n 1000) (format "%.1fk" (/ n 1e3)))
        (t (format "%d" n))))

(defun agent-shell--header-line ()
  "Return the header line of a shell buffer."
  (let* ((usage agent-shell--usage)
         (total (alist-get 'totalTokens usage))
         (used (alist-get 'contextUsed usage))
         (window (alist-get 'contextWindow usage))
         (cost (alist-get 'costUsd usage)))
    (concat
     (format " %s │ %s │ %s │ %s tokens"
             (or agent-shell--model agent-shell-model)
             (if (eq agent-shell--mode 'ask) "ask" "act")
             (agent-shell--state-text)
             (agent-shell--format-tokens total))
     (if (and (numberp used) (numberp window) (> window 0))
         (format " │ context %d%%" (round (* 100.0 (/ (float used) window))))
       "")
     (if (numberp cost) (format " │ $%.4f" cost) ""))))

;;; Internals: session updates

(defun agent-shell--content-text (content)
  "Return the displayable text of tool CONTENT items."
  (mapconcat
   (lambda (item)
     (pcase (alist-get 'type item)
       ("content" (or (alist-get 'text (alist-get 'content item)) ""))
       ("diff" (format "diff %s" (alist-get 'path item)))
       (_ (or (alist-get 'text item) ""))))
   (if (vectorp content) (append content nil) content)
   "\n"))

(defun agent-shell--cap (text)
  "Return TEXT cut to `agent-shell-tool-output-max-chars'."
  (if (> (length text) agent-shell-tool-output-max-chars)
      (concat (substring text 0 agent-shell-tool-output-max-chars)
              (format "\n[… %d more characters in the action log]"
                      (- (length text) agent-shell-tool-output-max-chars)))
    text))

(defun agent-shell--compact-json (value)
  "Return VALUE as one line of JSON, or its printed form."
  (condition-case nil
      (json-serialize value :null-object nil :false-object :json-false)
    (error (format "%S" value))))

(defun agent-shell--on-tool-call (update)
  "Render the tool call announced by UPDATE."
  (let* ((call-id (alist-get 'toolCallId update))
         (title (or (alist-get 'title update) (alist-get 'kind update) "tool"))
         (status (alist-get 'status update))
         (input (alist-get 'rawInput update)))
    (agent-shell--editing
      (let ((id (agent-shell--new-entry "tool" (agent-shell--status-glyph status)
                                        title)))
        (push (cons call-id id) agent-shell--tools)
        (when input
          (agent-shell--append-body
           id (agent-shell--cap (agent-shell--compact-json input))))))
    (unless (eq agent-shell--state 'waiting)
      (agent-shell--set-state 'running title))))

(defun agent-shell--on-tool-call-update (update)
  "Render UPDATE to an earlier tool call."
  (let* ((call-id (alist-get 'toolCallId update))
         (id (cdr (assoc call-id agent-shell--tools)))
         (plist (and id (agent-shell--entry id)))
         (status (alist-get 'status update))
         (content (alist-get 'content update))
         (text (and content (agent-shell--content-text content))))
    (when (and id status)
      (agent-shell--set-entry-glyph id (agent-shell--status-glyph status)))
    (when (and text (not (string-empty-p text)))
      (agent-shell--editing
        (unless (and id (equal agent-shell--block id))
          (setq id (agent-shell--new-entry
                    "tool" (agent-shell--status-glyph status)
                    (format "%s — output"
                            (or (plist-get plist :title) call-id)))))
        (agent-shell--append-body id (agent-shell--cap text))))
    (pcase status
      ("in_progress" (unless (eq agent-shell--state 'waiting)
                       (agent-shell--set-state
                        'running (or (plist-get plist :title) "tool"))))
      ((or "completed" "failed")
       (unless (eq agent-shell--state 'waiting)
         (agent-shell--set-state 'thinking))))))

(defun agent-shell--on-thought (text)
  "Append TEXT to the current thought entry, opening one if needed."
  (agent-shell--editing
    (let ((id (if (and (stringp agent-shell--block)
                       (string-prefix-p "thought-" agent-shell--block))
                  agent-shell--block
                (agent-shell--new-entry "thought" "…" "Thinking"))))
      (agent-shell--append-body id text))))

(defun agent-shell--on-plan (update)
  "Render the plan in UPDATE as a folded entry."
  (let* ((entries (alist-get 'entries update))
         (done (cl-count-if (lambda (e) (equal (alist-get 'status e) "completed"))
                            entries)))
    (let ((title (format "Plan (%d/%d done)" done (length entries)))
          (body (mapconcat (lambda (e)
                             (format "[%s] %s"
                                     (pcase (alist-get 'status e)
                                       ("completed" "x") ("in_progress" "-")
                                       ("failed" "!") (_ " "))
                                     (alist-get 'content e)))
                           entries "\n")))
      (unless (and agent-shell--plan-entry
                   (agent-shell--entry agent-shell--plan-entry)
                   (agent-shell--replace-entry agent-shell--plan-entry title body))
        (agent-shell--editing
          (let ((id (agent-shell--new-entry "plan" "≡" title)))
            (setq agent-shell--plan-entry id)
            (agent-shell--append-body id body)))))
    (agent-shell-plan-on-update agent-shell--name update)))

(defun agent-shell--replace-entry (id title body)
  "Show TITLE and BODY in the existing entry ID, in place; return non-nil.
The entry keeps its place and folding; the transcript after it moves,
and so do the undo positions of the user's input."
  (when-let* ((plist (agent-shell--entry id))
              (start (marker-position (plist-get plist :start)))
              (end (min (or (next-single-property-change start 'agent-shell-entry)
                            (point-max))
                        agent-shell--output-marker)))
    (let ((folded (plist-get plist :folded))
          (title (replace-regexp-in-string "[\n\r\t]+" " " title))
          (undo buffer-undo-list)
          (size (buffer-size)))
      (let ((inhibit-read-only t)
            (inhibit-modification-hooks t)
            (buffer-undo-list t))
        (save-excursion
          (goto-char start)
          (insert (propertize (concat (agent-shell--fold-char folded) " ≡ " title)
                              'read-only t 'front-sticky '(read-only)
                              'agent-shell-entry id 'agent-shell-header t
                              'face 'agent-shell-entry-face
                              'help-echo "TAB: show or hide")
                  (propertize (concat "\n" body)
                              'read-only t 'front-sticky '(read-only)
                              'agent-shell-entry id 'agent-shell-body id
                              'invisible folded))
          (delete-region (point) (+ (point) (- end start)))))
      (unless (eq undo t)
        (setq buffer-undo-list
              (agent-shell--shift-undo undo start (- (buffer-size) size))))
      (setf (plist-get (cdr (assoc id agent-shell--entries)) :title) title)
      t)))

(defun agent-shell--stale-turn-end-p (update)
  "Return non-nil when the `turn_end' UPDATE is not for the current turn.
A turn that was cancelled can report its end after the next turn
began; that report must not end the new turn."
  (let ((id (alist-get 'turnId update)))
    (and (stringp id)
         agent-shell--turn-id
         (or (member id agent-shell--stale-turns)
             (and (stringp agent-shell--turn-id)
                  (not (equal id agent-shell--turn-id)))))))

(defun agent-shell--on-turn-end (update)
  "Finish the turn described by UPDATE, unless it is an older turn's."
  (let ((stale (agent-shell--stale-turn-end-p update)))
    (setq agent-shell--stale-turns
          (delete (alist-get 'turnId update) agent-shell--stale-turns))
    (unless stale
      (agent-shell--finish-turn update))))

(defun agent-shell--finish-turn (update)
  "Finish the current turn as the `turn_end' UPDATE describes."
  (let* ((reason (alist-get 'stopReason update))
         (err (alist-get 'error update))
         (elapsed (and agent-shell--turn-start
                       (float-time (time-since agent-shell--turn-start)))))
    (agent-shell-citations-link agent-shell--output-marker agent-shell--root)
    (cond (err (agent-shell--notice
                (format "[turn ended with an error: %s]" (alist-get 'message err))))
          ((and reason (not (equal reason "end_turn")))
           (agent-shell--notice (format "[turn ended: %s]" reason)))
          ((alist-get 'summary update)
           (agent-shell--notice (format "Done: %s" (alist-get 'summary update))))
          (t (agent-shell--editing (agent-shell--close-block))))
    (setq agent-shell--turn-id nil
          agent-shell--turn-start nil)
    (agent-shell--set-state 'idle)
    (when (and elapsed (> elapsed agent-shell-notify-threshold))
      (funcall agent-shell-notify-function
               (format "agent-shell %s: turn finished after %d s (%s)"
                       agent-shell--name (round elapsed) (or reason "done"))))))

(defun agent-shell--apply-update (update)
  "Render one session UPDATE in the current shell buffer."
  (pcase (alist-get 'sessionUpdate update)
    ("agent_message_chunk"
     (when (memq agent-shell--state '(idle starting))
       (agent-shell--set-state 'thinking))
     (agent-shell--append-message
      (or (alist-get 'text (alist-get 'content update)) "")))
    ("agent_thought_chunk"
     (agent-shell--on-thought (or (alist-get 'text (alist-get 'content update)) "")))
    ("tool_call" (agent-shell--on-tool-call update))
    ("tool_call_update" (agent-shell--on-tool-call-update update))
    ("plan" (agent-shell--on-plan update))
    ("usage" (setq agent-shell--usage update) (force-mode-line-update))
    ("turn_end" (agent-shell--on-turn-end update))
    (kind (message "agent-shell: unknown session update %S" kind))))

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
  "Add the `log/entry' PARAMS to the session's action log."
  (when-let ((log (agent-shell--log-buffer-for (alist-get 'session_id params))))
    (agent-shell-log-insert-entry log params))
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
        (agent-shell--notice
         (format "Waiting for you: %s — y/n in the log (C-c C-l), \
or C-c C-y / C-c C-n here" title))
        (agent-shell--set-state 'waiting))))
  nil)

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
      (when (equal (alist-get 'allowlist result) "untrusted")
        (agent-shell--notice
         (substitute-command-keys
          "This project's allowlist is not applied until you trust it: \
\\[agent-shell-trust-allowlist]")))
      (let ((memories (alist-get 'memories result)))
        (when memories
          (agent-shell--notice
           (format "Recalled %d experience%s: %s" (length memories)
                   (if (cdr memories) "s" "")
                   (mapconcat (lambda (m) (or (alist-get 'title m) "?"))
                              memories "; "))))))))

(defun agent-shell--session-new-params (root &optional settings)
  "Return the params of `session/new' for ROOT.
SETTINGS are ROOT's project settings, read when not given."
  (let ((settings (or settings (agent-shell-read-config root))))
    `((cwd . ,(directory-file-name root))
      (mode . ,(symbol-name (agent-shell--setting settings 'agent-shell-default-mode)))
      (model . ((model . ,(agent-shell--setting settings 'agent-shell-model))
                ,@(when-let ((window (agent-shell--setting
                                      settings 'agent-shell-context-window)))
                    `((context_window . ,window)))))
      (max_steps . ,(agent-shell--setting settings 'agent-shell-max-steps))
      ;; Only the user's own setting: never one from the project's files.
      (extra_allowed_paths
       . ,(vconcat (mapcar #'expand-file-name agent-shell-extra-allowed-paths))))))

(defun agent-shell--session-error (buffer what)
  "Return an error callback reporting WHAT failed in BUFFER."
  (lambda (err)
    (when (buffer-live-p buffer)
      (with-current-buffer buffer
        (agent-shell--notice (format "%s failed: %s" what (alist-get 'message err)))
        (agent-shell--set-state 'dead)))))

;;; Commands

;;;###autoload
(defun agent-shell-start (&optional ask)
  "Start an agent session for the current project.
The root is the current project's, else `agent-shell-workspace-root'
or `default-directory'; with a prefix argument ASK, read it.  The
bridge is started once per Emacs and reused."
  (interactive "P")
  (let* ((root (agent-shell--project-root ask))
         (name (agent-shell--name-for-root root))
         (buffer (get-buffer-create (agent-shell--buffer-name name))))
    (agent-shell-scaffold root)
    (with-current-buffer buffer
      (unless (and (derived-mode-p 'agent-shell-mode) agent-shell--session-id
                   (agent-shell--live-connection))
        (agent-shell--setup name root nil)
        (let ((settings (agent-shell-read-config root)))
          (setq agent-shell--mode
                (agent-shell--setting settings 'agent-shell-default-mode))
          (agent-shell--set-state 'starting)
          (agent-shell--with-bridge
           (lambda (conn)
             (agent-shell-rpc-request
              conn "session/new" (agent-shell--session-new-params root settings)
            :on-success (lambda (result) (agent-shell--on-session buffer result))
            :on-error (agent-shell--session-error buffer "Starting the session")))))))
    (pop-to-buffer buffer)
    buffer))

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
    (if (get-text-property (point) 'agent-shell-entry)
        (agent-shell-toggle-entry)
      (goto-char (point-max))))
   (t
    (agent-shell--ensure-shell)
    (let ((text (string-trim (agent-shell--input))))
      (when (string-empty-p text)
        (user-error "Nothing to send"))
      (when agent-shell--turn-id
        (user-error "A turn is running; C-c C-k cancels it"))
      (agent-shell-send text)))))

(defun agent-shell-send (text)
  "Send TEXT as a prompt in the current shell buffer's session.
When the prompt cannot be sent at all, nothing changes: no turn
starts and TEXT stays (or is put back) in the input."
  (unless (agent-shell--live-connection)
    (user-error "The bridge is not running; M-x agent-shell-start restarts it"))
  (let ((buffer (current-buffer)))
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
    (agent-shell-citations-mark agent-shell--output-marker)
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
                     (when (eq agent-shell--turn-id 'pending)
                       (setq agent-shell--turn-id
                             (or (alist-get 'turnId result) t))))))
   :on-error (lambda (err)
               (when (buffer-live-p buffer)
                 (with-current-buffer buffer
                   (setq agent-shell--turn-id nil)
                   (agent-shell--notice (format "The prompt failed: %s"
                                                (alist-get 'message err)))
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

(defun agent-shell--oldest-permission ()
  "Return this session's oldest permission request not being answered."
  (or (cl-find-if (lambda (p) (and (equal (plist-get p :session) agent-shell--session-id)
                                   (not (plist-get p :sending))))
                  agent-shell--permissions)
      (user-error "No step is waiting for a decision")))

(defun agent-shell-approve ()
  "Approve this session's oldest step waiting for a decision."
  (interactive)
  (agent-shell--ensure-shell)
  (agent-shell--answer-permission (agent-shell--oldest-permission) 'approve nil))

(defun agent-shell-reject (reason)
  "Reject this session's oldest waiting step, telling the model REASON."
  (interactive
   (progn (agent-shell--ensure-shell)
          (agent-shell--oldest-permission)
          (list (read-string "Reason (optional): "))))
  (agent-shell--ensure-shell)
  (agent-shell--answer-permission (agent-shell--oldest-permission) 'reject
                                  (agent-shell--nonempty reason)))

(defun agent-shell-toggle-entry ()
  "Show or hide the body of the thought, tool or plan entry at point.
Elsewhere, indent as TAB would."
  (interactive)
  (let ((id (get-text-property (point) 'agent-shell-entry)))
    (if (not id)
        (indent-for-tab-command)
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
      (when agent-shell--session-id
        (agent-shell--kill-buffer))
      (agent-shell--setup name root nil)
      (agent-shell--set-state 'starting))
    (agent-shell-rpc-request
     conn "session/resume" `((sessionId . ,session-id)
                             (cwd . ,(directory-file-name root)))
     :on-success (lambda (result)
                   (when (buffer-live-p buffer)
                     (with-current-buffer buffer
                       (agent-shell--insert-history (alist-get 'history result))
                       (agent-shell--on-session buffer result))))
     :on-error (agent-shell--session-error buffer "Resuming the session"))
    (pop-to-buffer buffer)
    buffer))

(defun agent-shell--insert-history (history)
  "Render HISTORY, the list of past messages from `session/resume'."
  (dolist (item history)
    (let ((text (or (alist-get 'text item) "")))
      (pcase (alist-get 'role item)
        ("user"
         (agent-shell--editing
           (agent-shell--close-block)
           (unless (bobp) (agent-shell--insert "\n"))
           (agent-shell--insert (concat "> " text "\n\n")
                                'face 'agent-shell-user-face 'agent-shell-role 'user))
         (push text agent-shell--history))
        ("assistant" (agent-shell--append-message text))
        ("system" (agent-shell--notice text))
        ("tool"
         (agent-shell--editing
           (let ((id (agent-shell--new-entry
                      "tool" (agent-shell--status-glyph (alist-get 'status item))
                      (or (alist-get 'title item) "tool"))))
             (unless (string-empty-p text)
               (agent-shell--append-body id (agent-shell--cap text))))))))))

(defun agent-shell-trust-allowlist (&optional root)
  "Review ROOT's `.agent-shell/allowlist.el' and let its commands run unasked.
The bridge applies a project's allowlist only after you trust its
current content, so a cloned repository cannot allow itself dangerous
commands; any later change to the file needs trust again.  What is
trusted is exactly the bytes shown: if the file changes before the
bridge reads it, trust is refused.  ROOT defaults to this session's
project, else the current project."
  (interactive)
  (let* ((root (file-name-as-directory
                (or root agent-shell--root (agent-shell--project-root))))
         (file (expand-file-name ".agent-shell/allowlist.el" root))
         (bytes (progn
                  (unless (and (file-regular-p file) (not (file-symlink-p file)))
                    (user-error "No allowlist (or a symlink) at %s" file))
                  (with-temp-buffer
                    (set-buffer-multibyte nil)
                    (insert-file-contents-literally file)
                    (buffer-string))))
         (interactive (called-interactively-p 'interactive)))
    (when interactive
      (with-current-buffer (get-buffer-create "*agent-shell allowlist review*")
        (let ((inhibit-read-only t))
          (erase-buffer)
          (insert (decode-coding-string bytes 'utf-8))
          (emacs-lisp-mode)
          (setq buffer-read-only t))
        (display-buffer (current-buffer))))
    (when (or (not interactive)
              (yes-or-no-p (format "Trust %s as shown, letting its commands run unasked? "
                                   (abbreviate-file-name file))))
      (agent-shell--request
       "policy/trust_allowlist" `((cwd . ,(directory-file-name root))
                                  (sha256 . ,(secure-hash 'sha256 bytes)))
       :on-success
       (lambda (result)
         (let ((n (length (alist-get 'commands result))))
           (message "Allowlist trusted: %d command%s" n (if (= n 1) "" "s"))))
       :on-error
       (lambda (err) (message "Trusting the allowlist failed: %s" (alist-get 'message err)))))))

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
\(idle, thinking, running TOOL, waiting for you), tokens used and how
full the context window is.

\\{agent-shell-mode-map}"
  (setq-local header-line-format '(:eval (agent-shell--header-line)))
  (setq-local truncate-lines nil)
  (setq-local word-wrap t)
  (add-hook 'kill-buffer-hook #'agent-shell--kill-buffer nil t))

(provide 'agent-shell)
;;; agent-shell.el ends here
