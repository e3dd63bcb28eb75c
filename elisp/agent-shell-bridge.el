;;; agent-shell-bridge.el --- The bridge process and its connection  -*- lexical-binding: t; -*-

;; SPDX-License-Identifier: GPL-3.0-or-later

;;; Commentary:

;; Starting the Python bridge once per Emacs, initialising the connection,
;; running what waits for it, and noticing when it exits.  The shell
;; buffers find their sessions through `agent-shell-bridge-sessions'.

;;; Code:

(require 'cl-lib)
(require 'agent-shell-session)
(require 'subr-x)
(require 'agent-shell-custom)
(require 'agent-shell-rpc)
(require 'agent-shell-log)
(require 'agent-shell-plan)
(require 'agent-shell-tools)
(require 'agent-shell-remote-files)
(require 'agent-shell-project)
(require 'agent-shell-transcript)
(require 'agent-shell-lifecycle)

;;; State

(cl-defstruct (agent-shell-bridge-permission
               (:constructor agent-shell-bridge-permission-create)
               (:copier nil))
  "A `session/request_permission' waiting for the user's decision."
  (key nil :documentation "The log entry id, or the request id when there is none.")
  (conn nil :documentation "The connection the request came on.")
  (id nil :documentation "The JSON-RPC id of the request.")
  (session nil :documentation "The session id.")
  (params nil :documentation "The request's params.")
  (sending nil :documentation "Non-nil while the answer is on its way.")
  (decision nil :documentation "(DECISION . REASON) once the user answered."))

(cl-defstruct (agent-shell-bridge
               (:constructor agent-shell-bridge-create)
               (:copier nil))
  "The bridge of this Emacs, shared by all its sessions."
  (connection nil :documentation "The `agent-shell-rpc-conn' to the bridge, or nil.")
  (initialized nil :documentation "The connection on which `initialize' succeeded.")
  (info nil :documentation "The result of `initialize' on the current connection.")
  (ready-queue nil :documentation "Functions waiting for an initialised connection.
Newest first.")
  (sessions (make-hash-table :test #'equal)
            :documentation "Session id to shell buffer.")
  (permissions nil :documentation "Pending `agent-shell-bridge-permission's.
Oldest first."))

(defvar agent-shell-bridge--current (agent-shell-bridge-create)
  "The state of the bridge, an `agent-shell-bridge'.")

(define-obsolete-variable-alias 'agent-shell-debug-bridge
  'agent-shell-bridge-debug "0.2")
(defvar agent-shell-bridge-debug nil
  "When non-nil, start the bridge with its debug methods (for tests).")

;;; The bridge

(defun agent-shell-bridge--model-params ()
  "Return the `model' object of `initialize', with the key resolved."
  (let* ((found (agent-shell-project-api-key-and-source))
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

(defun agent-shell-bridge--initialize-params ()
  "Return the params of `initialize'."
  `((protocolVersion . 1)
    (clientInfo . ((name . "agent-shell.el") (version . "0.1.0")
                   (emacs . ,emacs-version)))
    (clientCapabilities . ((tools . ,(vconcat (agent-shell-tools-names)))
                           ;; A remote session's files through the buffers
                           ;; visiting them (agent-shell-remote-files.el),
                           ;; and the tools run on these buffers.
                           (remoteBuffers . t)
                           (remoteTools . ,(vconcat (mapcar #'car agent-shell-remote-files-tools)))))
    ,@(and agent-shell-notify-webhook
           `((notify . ((webhook . ,agent-shell-notify-webhook)
                        (kind . ,(symbol-name agent-shell-notify-webhook-kind))))))
    (sandbox_approved_commands
     . ,(if agent-shell-sandbox-approved-commands t :json-false))
    (sandbox_visible_paths . ,(vconcat agent-shell-sandbox-visible-paths))
    (secret_paths . ,(vconcat agent-shell-secret-paths))
    (model . ,(agent-shell-bridge--model-params))))

(defun agent-shell-bridge-live-connection ()
  "Return the bridge connection when its process is alive."
  (and (agent-shell-bridge-connection agent-shell-bridge--current)
       (agent-shell-rpc-live-p (agent-shell-bridge-connection agent-shell-bridge--current))
       (agent-shell-bridge-connection agent-shell-bridge--current)))

(defun agent-shell-bridge--run-ready-queue (conn)
  "Call the functions waiting for CONN, oldest first."
  (let ((queue (nreverse (agent-shell-bridge-ready-queue agent-shell-bridge--current))))
    (setf (agent-shell-bridge-ready-queue agent-shell-bridge--current) nil)
    (dolist (fn queue)
      (funcall fn conn))))

(defun agent-shell-bridge--fail-ready-queue (message)
  "Tell the shell buffers waiting for the bridge that it failed with MESSAGE."
  (setf (agent-shell-bridge-ready-queue agent-shell-bridge--current) nil)
  (agent-shell-bridge--each-shell
   (lambda ()
     (when (eq (agent-shell-session-state agent-shell--session) 'starting)
       (agent-shell-lifecycle-unqueue)
       (agent-shell-transcript-notice message)
       (agent-shell-header-set-state 'dead)))))

(defun agent-shell-bridge--initialize-failed (conn message)
  "Give up on CONN, whose initialisation failed with MESSAGE.
The waiting functions are told, and the bridge is ended, so that the
next command starts a fresh one instead of waiting forever."
  (when (eq conn (agent-shell-bridge-connection agent-shell-bridge--current))
    (setf (agent-shell-bridge-connection agent-shell-bridge--current) nil))
  (when (eq conn (agent-shell-bridge-initialized agent-shell-bridge--current))
    (setf (agent-shell-bridge-initialized agent-shell-bridge--current) nil))
  (agent-shell-bridge--fail-ready-queue message)
  (message "agent-shell: %s" message)
  (agent-shell-rpc-kill conn message))

(defun agent-shell-bridge--initialize (conn)
  "Send `initialize' on CONN, then release the waiting functions.
The params carry the API key, so this one message stays out of the
events buffer.  When the params cannot be made (the key lookup
failed or was quit) or the bridge refuses them, CONN is ended."
  (let ((done nil))
    (unwind-protect
        (let ((params (condition-case err
                          (agent-shell-bridge--initialize-params)
                        (error
                         (agent-shell-bridge--initialize-failed
                          conn (format "Preparing `initialize' failed: %s"
                                       (error-message-string err)))
                         nil))))
          (when params
            (let ((agent-shell-log-events nil))
              (agent-shell-rpc-request
               conn "initialize" params
               :on-success (lambda (result)
                             (setf (agent-shell-bridge-info agent-shell-bridge--current)
                                   result
                                   (agent-shell-bridge-initialized
                                    agent-shell-bridge--current) conn)
                             ;; Emacs's tools hold the same secrets as the bridge.
                             (agent-shell-tools-set-builtin-secret-paths
                              (alist-get 'secret_paths result))
                             (agent-shell-bridge--run-ready-queue conn))
               :on-error (lambda (err)
                           (agent-shell-bridge--initialize-failed
                            conn (format "The bridge refused to initialise: %s"
                                         (alist-get 'message err)))))))
          (setq done t))
      (unless done
        (agent-shell-bridge--initialize-failed conn
                                               "Starting the bridge was interrupted")))))

(defun agent-shell-bridge--start ()
  "Start the bridge process; initialise it once it is ready.
The memory directory reaches the bridge as AGENT_SHELL_MEMORY_DIR,
the environment form of its --memory-dir option, and
`agent-shell-memory-accepted-only' as AGENT_SHELL_MEMORY_ACCEPTED_ONLY."
  (make-directory agent-shell-memory-dir t)
  (setf (agent-shell-bridge-initialized agent-shell-bridge--current) nil)
  (setf (agent-shell-bridge-connection agent-shell-bridge--current)
        (agent-shell-rpc-start
         :directory (expand-file-name "~/")
         :environment (append
                       (list (concat "AGENT_SHELL_MEMORY_DIR="
                                     (expand-file-name agent-shell-memory-dir)))
                       (and agent-shell-memory-accepted-only
                            '("AGENT_SHELL_MEMORY_ACCEPTED_ONLY=1"))
                       (and agent-shell-bridge-debug
                            '("AGENT_SHELL_BRIDGE_DEBUG=1")))
         :name "agent-shell-bridge"
         :on-ready #'agent-shell-bridge--initialize
         :on-exit #'agent-shell-bridge--exited)))

(defun agent-shell-bridge-with-connection (fn)
  "Call FN with an initialised bridge connection, starting one if needed."
  (let ((conn (agent-shell-bridge-live-connection)))
    (if (and conn (eq (agent-shell-bridge-initialized agent-shell-bridge--current) conn))
        (funcall fn conn)
      (push fn (agent-shell-bridge-ready-queue agent-shell-bridge--current))
      (unless conn
        (condition-case err
            (agent-shell-bridge--start)
          (error
           (let ((text (format "Cannot start the agent-shell bridge: %s"
                               (error-message-string err))))
             (agent-shell-bridge--fail-ready-queue text)
             (message "%s" text))))))))

(defun agent-shell-bridge--exited (conn reason)
  "Tell every shell buffer that the bridge CONN ended because of REASON."
  (when (eq conn (agent-shell-bridge-connection agent-shell-bridge--current))
    (setf (agent-shell-bridge-connection agent-shell-bridge--current) nil
          (agent-shell-bridge-initialized agent-shell-bridge--current) nil)
    (setf (agent-shell-bridge-permissions agent-shell-bridge--current)
          (cl-remove-if (lambda (p) (eq (agent-shell-bridge-permission-conn p) conn))
                        (agent-shell-bridge-permissions agent-shell-bridge--current)))
    ;; Steps and plans that waited for the user can no longer be answered.
    (dolist (buffer (buffer-list))
      (when (and (buffer-live-p buffer)
                 (eq (buffer-local-value 'major-mode buffer) 'agent-shell-log-mode)
                 (agent-shell-log-pending buffer))
        (agent-shell-log-abandon-pending
         buffer "The bridge stopped before this step was decided")))
    (agent-shell-plan-abandon conn)
    (let ((text (agent-shell-lifecycle-dead-bridge-text reason)))
      (agent-shell-bridge--fail-ready-queue text)
      (agent-shell-bridge--each-shell
       (lambda () (agent-shell-lifecycle-connection-lost text)))
      (message "%s" text))))

(defun agent-shell-bridge--each-shell (fn)
  "Call FN in every live shell buffer."
  (dolist (buffer (buffer-list))
    (when (buffer-live-p buffer)
      (with-current-buffer buffer
        (when (derived-mode-p 'agent-shell-mode)
          (funcall fn))))))

(defun agent-shell-bridge-request (method params &rest args)
  "Send METHOD with PARAMS on the bridge; ARGS as `agent-shell-rpc-request'.
Signal a `user-error' when the bridge is not running."
  (let ((conn (agent-shell-bridge-live-connection)))
    (unless conn
      (user-error (substitute-command-keys
                   "The bridge is not running; \\<agent-shell-mode-map>\\[agent-shell-restart] \
in the shell buffer restarts it and resumes the session")))
    (apply #'agent-shell-rpc-request conn method params args)))

(defun agent-shell-bridge-report-undo (turn-id paths)
  "Tell the bridge that the user undid TURN-ID, restoring PATHS.
The bridge records it in the action log and tells the model in its
next request.  Call it in the shell buffer; without a live session
there is nobody to tell."
  (let ((conn (agent-shell-bridge-live-connection)))
    (when (and conn agent-shell--session
               (stringp (agent-shell-session-id agent-shell--session)))
      (agent-shell-rpc-request
       conn "session/undo_turn_done"
       `((sessionId . ,(agent-shell-session-id agent-shell--session)) (turnId . ,turn-id)
         (paths . ,(vconcat paths)))
       :on-error (lambda (err)
                   (message "agent-shell: the bridge did not record the undo: %s"
                            (alist-get 'message err)))))))

(defun agent-shell-bridge-session-buffer (session-id)
  "Return the live shell buffer of SESSION-ID, or nil."
  (let ((buffer (gethash session-id
                         (agent-shell-bridge-sessions agent-shell-bridge--current))))
    (if (buffer-live-p buffer)
        buffer
      (remhash session-id (agent-shell-bridge-sessions agent-shell-bridge--current))
      nil)))

(defun agent-shell-bridge-log-buffer-for (session-id)
  "Return the action log buffer of SESSION-ID, or nil when it has no shell.
Events of a session whose shell buffer is gone are dropped rather
than shown in a stray buffer."
  (let ((shell (agent-shell-bridge-session-buffer session-id)))
    (and shell
         (agent-shell-log-buffer
          (agent-shell-session-name (buffer-local-value 'agent-shell--session shell))))))

(provide 'agent-shell-bridge)
;;; agent-shell-bridge.el ends here
