;;; agent-shell.el --- Coding agent with a Python bridge, org action log and memory  -*- lexical-binding: t; -*-

;; SPDX-License-Identifier: GPL-3.0-or-later

;; Version: 0.1.0
;; Package-Requires: ((emacs "28.1"))
;; Keywords: tools, processes

;;; Commentary:

;; agent-shell runs a coding agent in a Python bridge and gives it eyes
;; and hands inside Emacs.  This file ties the areas together: the
;; command `agent-shell-start' (find the project root, prepare
;; `.agent-shell/', start or reuse the one bridge, open a session in a
;; shell buffer) and `agent-shell-mode', the shell buffer, a read-only
;; transcript with the input, its history and the commands at the end.
;;
;; The files, each after those it needs:
;;
;; agent-shell-coexist.el       refuse to load over xenodium's agent-shell
;; agent-shell-custom.el        the options, their groups, `agent-shell-error'
;; agent-shell-json.el          JSON as text and as bytes, alike on every Emacs
;; agent-shell-session.el       the record of one shell buffer's session
;; agent-shell-rpc-protocol.el  JSON-RPC: ids, waiting requests, dispatch
;; agent-shell-rpc-http.el      the HTTP/1.1 client and the event stream
;; agent-shell-rpc.el           the bridge process, joining the two above
;; agent-shell-project.el       project root, API key, `.agent-shell/' files
;; agent-shell-remote.el        a project on another host, through TRAMP
;; agent-shell-trust.el         trusting the files a project ships
;; agent-shell-tools.el         the Emacs-side tools' dispatcher and checks
;; agent-shell-tools-process.el  the programs those tools run (diff, rg, git)
;; agent-shell-perception.el    read-only tools: buffers, project, symbols
;; agent-shell-actions.el       write tools: edits with snapshots, staging
;; agent-shell-diagnostics.el   Flymake and Flycheck diagnostics, settled
;; agent-shell-remote-files.el  a remote project's files through their buffers
;; agent-shell-tool-text.el     how a tool call reads in the transcript
;; agent-shell-citations.el     clickable path:START-END citations
;; agent-shell-plan.el          plans the user edits in org, then approves
;; agent-shell-log-fold.el      the log's drawers folded without overlays
;; agent-shell-log-files.el     past logs: listed, chosen, opened read-only
;; agent-shell-log.el           the live org action log of a session
;; agent-shell-log-keys.el      decisions on waiting steps from the log
;; agent-shell-mcp.el           the user's MCP servers for sessions
;; agent-shell-header.el        the header line of a shell buffer
;; agent-shell-roles.el         the reviewer and the user's own roles
;; agent-shell-commands.el      /commands and the project's instructions
;; agent-shell-transcript.el    the transcript: streaming, foldable entries
;; agent-shell-lifecycle.el     starting, losing and restarting a session
;; agent-shell-mention.el       what an @ in the input names, completed
;; agent-shell-context.el       send a region, buffer, file or error
;; agent-shell-ambient.el       what every prompt tells of where you are
;; agent-shell-bridge.el        the one bridge of this Emacs, initialised
;; agent-shell-extend.el        tools the user defines in Emacs Lisp
;; agent-shell-hooks.el         the user's hooks around steps and turns
;; agent-shell-grants.el        list and revoke a session's grants
;; agent-shell-permissions.el   steps waiting for the user's decision
;; agent-shell-ask.el           questions the model asks the user
;; agent-shell-handlers.el      what Emacs does with each bridge message
;; agent-shell-jobs.el          a shell buffer's background jobs, listed
;; agent-shell-queue.el         prompts queued and steers while a turn runs
;; agent-shell-session-params.el  what a new session is opened with
;; agent-shell-input.el         the input after the prompt and its history
;; agent-shell-turn.el          send, cancel, model, mode, approve, reject
;; agent-shell.el               this file
;; agent-shell-undo.el          undo a turn (loaded when first used)
;; agent-shell-memory.el        save and browse experiences (the same)
;; agent-shell-sessions.el      every live session, live; who waits (the same)
;; agent-shell-worktree.el      sessions in git worktrees, merged or removed
;;
;; Project files `.agent-shell/config.el' and `.agent-shell/allowlist.el'
;; are data: they are read with `read' and never evaluated.

;;; Code:

;; Before anything is defined: the unrelated package of the same name
;; must not be half overwritten (see agent-shell-coexist.el).
(require 'agent-shell-coexist)
(agent-shell-coexist-check)

(require 'cl-lib)
(require 'subr-x)
(require 'agent-shell-custom)
(require 'agent-shell-session)
(require 'agent-shell-rpc)
(require 'agent-shell-bridge)
(require 'agent-shell-log)
(require 'agent-shell-tools)
(require 'agent-shell-extend)
(require 'agent-shell-hooks)
(require 'agent-shell-perception)
(require 'agent-shell-plan)
(require 'agent-shell-citations)
(require 'agent-shell-project)
(require 'agent-shell-remote)
(require 'agent-shell-mcp)
(require 'agent-shell-transcript)
(require 'agent-shell-grants)
(require 'agent-shell-commands)
(require 'agent-shell-lifecycle)
(require 'agent-shell-roles)
(require 'agent-shell-trust)
(require 'agent-shell-permissions)
(require 'agent-shell-ask)
(require 'agent-shell-handlers)
(require 'agent-shell-jobs)
(require 'agent-shell-context)
(require 'agent-shell-ambient)
(require 'agent-shell-queue)
(require 'agent-shell-session-params)
(require 'agent-shell-input)
(require 'agent-shell-turn)

;;; Buffer setup

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
      (set-marker (agent-shell-session-input-marker agent-shell--session) (point)))))

(defun agent-shell--setup (name root session-id)
  "Prepare the current buffer for session SESSION-ID named NAME in ROOT."
  (agent-shell-mode)
  (let ((inhibit-read-only t)
        (buffer-undo-list t))
    (erase-buffer))
  (setq buffer-undo-list nil)
  (setf (agent-shell-session-name agent-shell--session) name
        (agent-shell-session-root agent-shell--session) root
        (agent-shell-session-mode agent-shell--session) agent-shell-default-mode
        default-directory root
        (agent-shell-session-input-marker agent-shell--session) (copy-marker (point-min)
                                                                             nil))
  (agent-shell--insert-prompt)
  ;; Created after the prompt, so that it stays before it.
  (setf (agent-shell-session-output-marker agent-shell--session)
        (copy-marker (point-min) t))
  (agent-shell-transcript-update-prompt-gap)
  (goto-char (point-max))
  (when session-id
    (agent-shell--attach session-id)))

(defun agent-shell--attach (session-id)
  "Bind the current buffer to SESSION-ID."
  (when (agent-shell-session-id agent-shell--session)
    (remhash (agent-shell-session-id agent-shell--session)
             (agent-shell-bridge-sessions agent-shell-bridge--current)))
  (setf (agent-shell-session-id agent-shell--session) session-id)
  (puthash session-id (current-buffer)
           (agent-shell-bridge-sessions agent-shell-bridge--current))
  (agent-shell-header-set-state 'idle))

(defun agent-shell--buffer-name (name)
  "Return the shell buffer name of session NAME."
  (format "*agent-shell: %s*" name))

(defun agent-shell--shell-root (buffer)
  "Return the project root of the shell BUFFER, or nil when it is none."
  (and (buffer-live-p buffer)
       (eq (buffer-local-value 'major-mode buffer) 'agent-shell-mode)
       (agent-shell-session-root (buffer-local-value 'agent-shell--session buffer))))

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

(defun agent-shell-on-session (buffer result)
  "Attach BUFFER to the session RESULT of `session/new' or `session/resume'."
  (when (buffer-live-p buffer)
    (with-current-buffer buffer
      (agent-shell--attach (alist-get 'sessionId result))
      (when-let ((mode (alist-get 'mode result)))
        (setf (agent-shell-session-mode agent-shell--session) (intern mode)))
      (when-let ((model (agent-shell-project-nonempty
                         (or (alist-get 'modelName result) (alist-get 'model result)))))
        (setf (agent-shell-session-model agent-shell--session) model)
        (force-mode-line-update)
        (agent-shell-session-changed))
      (when-let ((chosen (alist-get 'chosenModel result)))
        (agent-shell--choose-model-again chosen))
      (when-let ((path (alist-get 'logPath result)))
        (setf (agent-shell-session-log-path agent-shell--session) path)
        (agent-shell-log-set-file
         (agent-shell-log-buffer (agent-shell-session-name agent-shell--session)) path))
      (mapc #'agent-shell-transcript-notice (alist-get 'notices result))
      (when-let ((remote (agent-shell-remote-describe result)))
        (agent-shell-transcript-notice remote))
      (setf (agent-shell-session-sandbox agent-shell--session) (alist-get 'sandbox result))
      (when (equal (alist-get 'projectSetting
                              (agent-shell-session-sandbox
                               agent-shell--session)) "untrusted")
        (agent-shell-transcript-notice (agent-shell-trust-notice 'config)))
      (agent-shell-mcp-on-status (alist-get 'mcp result) t)
      (when (equal (alist-get 'allowlist result) "untrusted")
        (agent-shell-transcript-notice (agent-shell-trust-notice 'allowlist)))
      (when (equal (alist-get 'projectHooks result) "untrusted")
        (agent-shell-transcript-notice (agent-shell-trust-notice 'hooks)))
      (when-let ((roles (agent-shell-roles-notice result)))
        (agent-shell-transcript-notice roles))
      (when-let ((loaded (agent-shell-commands-on-session result)))
        (agent-shell-transcript-notice loaded))
      (let ((memories (alist-get 'memories result)))
        (when memories
          (agent-shell-transcript-notice
           (format "Recalled %d experience%s: %s" (length memories)
                   (if (cdr memories) "s" "")
                   (mapconcat (lambda (m) (or (alist-get 'title m) "?"))
                              memories "; ")))))
      (agent-shell-lifecycle-send-queued))))

(defun agent-shell--choose-model-again (chosen)
  "Switch a resumed session back to CHOSEN, the model it had switched to.
CHOSEN is the bridge's record of it (name, model, api_base; no key).
Only an entry of `agent-shell-models' with the same name, model and
API base is chosen again: the keys are found here, never kept by the
bridge.  Otherwise a notice says the session goes on with the default."
  (let* ((name (alist-get 'name chosen))
         (entry (cl-find name agent-shell-models
                         :key (lambda (m) (plist-get m :name)) :test #'equal)))
    (if (and entry
             (equal (plist-get entry :model) (alist-get 'model chosen))
             (equal (plist-get entry :api-base) (alist-get 'api_base chosen)))
        (agent-shell-switch-model name)
      (agent-shell-transcript-notice
       (format "This session had switched to %s (%s at %s), which is not in \
`agent-shell-models' as it was; it goes on with %s"
               name (alist-get 'model chosen) (alist-get 'api_base chosen)
               (or (agent-shell-session-model agent-shell--session) agent-shell-model))))))

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
  (let* ((chosen (agent-shell-project-confirmed-root (agent-shell-project-root ask)))
         (root (car chosen))
         (name (agent-shell--name-for-root root))
         (buffer (get-buffer-create (agent-shell--buffer-name name))))
    (if (agent-shell-remote-p root)
        (agent-shell-remote-session-params root) ; refuses a method it cannot use
      (agent-shell-project-scaffold root))
    (with-current-buffer buffer
      (cond
       ((not (derived-mode-p 'agent-shell-mode)) nil)
       ((eq (agent-shell-session-state agent-shell--session) 'starting) (setq root nil))
       ((and (agent-shell-session-id agent-shell--session)
             (agent-shell-bridge-live-connection)
             (not (eq (agent-shell-session-state agent-shell--session) 'dead)))
        (setq root nil))
       ((agent-shell--has-content-p)
        (agent-shell-restart)
        (setq root nil)))
      (when root
        (agent-shell--setup name root nil)
        (let ((settings (and (not (agent-shell-remote-p root))
                             (agent-shell-project-read-config root))))
          (setf (agent-shell-session-mode agent-shell--session)
                (agent-shell-project-setting settings 'agent-shell-default-mode))
          (agent-shell-header-set-state 'starting)
          (agent-shell-bridge-with-connection
           (lambda (conn)
             (agent-shell-rpc-request
              conn "session/new"
              (agent-shell-new-session-params root settings (cdr chosen))
              :on-success (lambda (result) (agent-shell-on-session buffer result))
              :on-error (agent-shell-failure-reporter buffer "Starting the session")))))))
    (pop-to-buffer buffer)
    buffer))

(defun agent-shell--has-content-p ()
  "Return non-nil when this shell buffer has a transcript or input."
  (and (markerp (agent-shell-session-output-marker agent-shell--session))
       (or (> (agent-shell-session-output-marker agent-shell--session) (point-min))
           (not (string-empty-p (agent-shell-input))))))

(defun agent-shell-show-log ()
  "Show the action log of this session."
  (interactive)
  (unless (derived-mode-p 'agent-shell-mode)
    (user-error "Not in an agent-shell buffer"))
  (display-buffer (agent-shell-log-buffer (agent-shell-session-name agent-shell--session))))

(defun agent-shell--kill-buffer ()
  "End this buffer's session when the buffer is killed."
  (agent-shell-session-changed)
  (when (agent-shell-session-id agent-shell--session)
    (remhash (agent-shell-session-id agent-shell--session)
             (agent-shell-bridge-sessions agent-shell-bridge--current))
    (when-let ((conn (agent-shell-bridge-live-connection)))
      (ignore-errors
        (agent-shell-rpc-notify conn "session/cancel"
                                `((sessionId . ,(agent-shell-session-id
                                                 agent-shell--session))))))
    (setf (agent-shell-bridge-permissions agent-shell-bridge--current)
          (cl-remove (agent-shell-session-id agent-shell--session)
                     (agent-shell-bridge-permissions agent-shell-bridge--current)
                     :key #'agent-shell-bridge-permission-session :test #'equal))))

;;;###autoload
(defun agent-shell-resume ()
  "Reopen a past session of the current project with its visible history."
  (interactive)
  (let ((root (agent-shell-project-root)))
    (agent-shell-bridge-with-connection
     (lambda (conn)
       (agent-shell-rpc-request
        conn "session/list" `((cwd . ,(directory-file-name root))
                              ,@(agent-shell-remote-session-params root))
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
      (when (and (derived-mode-p 'agent-shell-mode)
                 (agent-shell-session-id agent-shell--session)
                 (agent-shell-session-turn-id agent-shell--session)
                 (not (yes-or-no-p
                       (format "A turn is running in %s; cancel it and resume? "
                               (buffer-name buffer)))))
        (user-error "Not resumed; the running turn goes on"))
      (when (and (derived-mode-p 'agent-shell-mode)
                 (not (agent-shell-session-turn-id agent-shell--session))
                 (not (equal (agent-shell-session-id agent-shell--session) session-id))
                 (agent-shell--has-content-p)
                 (not (yes-or-no-p
                       (format "Show session %s in %s instead of its transcript \
\(kept in its log)? " session-id (buffer-name buffer)))))
        (user-error "Not resumed; the transcript stays"))
      (when (agent-shell-session-id agent-shell--session)
        (agent-shell--kill-buffer))
      (let ((typed (and (derived-mode-p 'agent-shell-mode)
                        (markerp (agent-shell-session-input-marker agent-shell--session))
                        (agent-shell-input))))
        (agent-shell--setup name root nil)
        ;; Unsent input survives: only the transcript is redrawn.
        (when typed (agent-shell-set-input typed)))
      (agent-shell-header-set-state 'starting))
    (agent-shell-rpc-request
     conn "session/resume" `((sessionId . ,session-id)
                             (cwd . ,(directory-file-name root))
                             ,@(agent-shell-remote-session-params root)
                             ,@(agent-shell-mcp-session-params))
     :on-success (lambda (result)
                   (when (buffer-live-p buffer)
                     (with-current-buffer buffer
                       (agent-shell-lifecycle-before-queued
                        (lambda ()
                          (agent-shell-transcript-insert-history
                           (alist-get 'history result))))
                       (agent-shell-on-session buffer result))))
     :on-error (agent-shell-failure-reporter buffer "Resuming the session"))
    (pop-to-buffer buffer)
    buffer))

(defun agent-shell-open-fork (root result)
  "Show the forked session RESULT of ROOT in a new shell buffer.
RESULT is the answer of `session/fork'.
Its name is the project's with \"<fork N>\"; its transcript is the fork's
history, its input the prompt it was forked before.  Return the buffer."
  (let* ((base (agent-shell--name-for-root root))
         (n 1)
         (name nil))
    (while (get-buffer (agent-shell--buffer-name
                        (setq name (format "%s<fork %d>" base n))))
      (cl-incf n))
    (let ((buffer (get-buffer-create (agent-shell--buffer-name name))))
      (with-current-buffer buffer
        (agent-shell--setup name root nil)
        (agent-shell-transcript-insert-history (alist-get 'history result))
        (agent-shell-transcript-notice
         (format "Forked from session %s: a session of its own (log, checkpoints), \
the original is untouched" (alist-get 'forkOf result)))
        (agent-shell-on-session buffer result)
        (when-let ((prompt (alist-get 'prompt result)))
          (agent-shell-set-input prompt)))
      (pop-to-buffer buffer)
      buffer)))

(defun agent-shell-stop-bridge ()
  "Stop the bridge process; every session's turn ends."
  (interactive)
  (when-let ((conn (agent-shell-bridge-live-connection)))
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
    (define-key map (kbd "M-RET") #'agent-shell-steer)
    (define-key map (kbd "M-<return>") #'agent-shell-steer)
    (define-key map (kbd "C-c C-e") #'agent-shell-queue-edit)
    (define-key map (kbd "S-<return>") #'agent-shell-newline)
    (define-key map (kbd "C-j") #'agent-shell-newline)
    (define-key map (kbd "TAB") #'agent-shell-toggle-entry)
    (define-key map (kbd "M-p") #'agent-shell-previous-input)
    (define-key map (kbd "M-n") #'agent-shell-next-input)
    (define-key map (kbd "C-c C-k") #'agent-shell-cancel)
    (define-key map (kbd "C-c C-l") #'agent-shell-show-log)
    (define-key map (kbd "C-c C-t") #'agent-shell-toggle-mode)
    (define-key map (kbd "C-c C-v") #'agent-shell-switch-model)
    (define-key map (kbd "C-c C-y") #'agent-shell-approve)
    (define-key map (kbd "C-c C-n") #'agent-shell-reject)
    (define-key map (kbd "C-c C-s") #'agent-shell-save-memory)
    (define-key map (kbd "C-c C-r") #'agent-shell-restart)
    map)
  "Keymap of `agent-shell-mode'.")

(autoload 'agent-shell-undo-turn "agent-shell-undo"
  "Restore every file that the agent changed during a turn." t)
(autoload 'agent-shell-rewind "agent-shell-undo"
  "Go back to before a prompt of this session." t)
(autoload 'agent-shell-fork "agent-shell-undo"
  "Open a new shell whose session has this session's history so far." t)
(autoload 'agent-shell-rewind-undo "agent-shell-undo"
  "Restore what the newest rewind of this session replaced." t)
(autoload 'agent-shell-save-memory "agent-shell-memory"
  "Extract an experience from the current session now." t)
(autoload 'agent-shell-memory-browse "agent-shell-memory"
  "List the experiences of a project." t)
(autoload 'agent-shell-memory-review "agent-shell-memory"
  "Review the project's new experiences one at a time." t)
(autoload 'agent-shell-memory-forget "agent-shell-memory"
  "Forget an experience: out of the index, its file marked forgotten." t)
(autoload 'agent-shell-sessions "agent-shell-sessions"
  "List every live agent-shell session of this Emacs, updated as they change." t)
(autoload 'agent-shell-next-waiting "agent-shell-sessions"
  "Go to the next session that waits for you, cycling through them." t)
(autoload 'agent-shell-sessions-mode-line-mode "agent-shell-sessions"
  "Show in every mode line how many agent-shell sessions wait for you." t)
(autoload 'agent-shell-start-worktree "agent-shell-worktree"
  "Start a session in a new git worktree on a new branch." t)
(autoload 'agent-shell-worktree-finish "agent-shell-worktree"
  "Finish the worktree of the current session: merge, keep or remove." t)

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
ready.  While a turn runs, RET queues the input (shown dimmed above
the prompt, sent as its own turn when the turn ends; \[agent-shell-queue-edit]
edits the queue), \[agent-shell-steer] steers the turn with it (the model gets
it at its next call), and \[agent-shell-cancel] cancels the turn and puts the
queue back into the input.  When the bridge stops, \\[agent-shell-restart] restarts it and
resumes the session in place, keeping the transcript and the input.

\\{agent-shell-mode-map}"
  (setq agent-shell--session (agent-shell-session-create))
  (setq-local header-line-format '(:eval (agent-shell-header-line)))
  (setq-local truncate-lines nil)
  (setq-local word-wrap t)
  (add-hook 'completion-at-point-functions
            #'agent-shell-commands-completion-at-point nil t)
  (add-hook 'completion-at-point-functions
            #'agent-shell-mention-completion-at-point nil t)
  (add-hook 'kill-buffer-hook #'agent-shell--kill-buffer nil t))

(provide 'agent-shell)
(agent-shell-coexist-watch)
;;; agent-shell.el ends here