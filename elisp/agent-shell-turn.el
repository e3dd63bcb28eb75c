;;; agent-shell-turn.el --- Prompts, turns and their settings in a shell buffer  -*- lexical-binding: t; -*-

;; SPDX-License-Identifier: GPL-3.0-or-later

;;; Commentary:

;; The commands that act on the session of the current shell buffer:
;; send the input as a prompt (queued while a turn runs or the session
;; starts), cancel the running turn, switch the model or the mode for
;; the next requests, and approve or reject a waiting step.

;;; Code:

(require 'cl-lib)
(require 'subr-x)
(require 'agent-shell-custom)
(require 'agent-shell-session)
(require 'agent-shell-bridge)
(require 'agent-shell-project)
(require 'agent-shell-perception)
(require 'agent-shell-extend)
(require 'agent-shell-citations)
(require 'agent-shell-transcript)
(require 'agent-shell-header)
(require 'agent-shell-lifecycle)
(require 'agent-shell-permissions)
(require 'agent-shell-ask)
(require 'agent-shell-context)
(require 'agent-shell-ambient)
(require 'agent-shell-queue)
(require 'agent-shell-input)

(defun agent-shell--ensure-shell ()
  "Signal a `user-error' unless in a shell buffer with a session."
  (unless (derived-mode-p 'agent-shell-mode)
    (user-error "Not in an agent-shell buffer"))
  (unless (agent-shell-session-id agent-shell--session)
    (user-error "This buffer has no session yet")))

(defun agent-shell-send-input ()
  "Send the input after the prompt to the agent as a new turn.
On an entry header in the transcript, toggle the entry instead."
  (interactive)
  (cond
   ((< (point) (agent-shell-session-input-marker agent-shell--session))
    (if (agent-shell-transcript-entry-at (point))
        (agent-shell-toggle-entry)
      (goto-char (point-max))))
   (t
    (unless (derived-mode-p 'agent-shell-mode)
      (user-error "Not in an agent-shell buffer"))
    (let ((text (string-trim (agent-shell-input))))
      (when (string-empty-p text)
        (user-error "Nothing to send"))
      (if (eq (agent-shell-session-state agent-shell--session) 'starting)
          (progn (agent-shell-context-capture)
                 (agent-shell-lifecycle-queue-prompt text))
        (agent-shell--ensure-shell)
        (cond
         ((agent-shell-ask-pending-p) (agent-shell-ask-answer-input))
         ((agent-shell-session-turn-id agent-shell--session)
          ;; What the mentions name is read now; the queued prompt
          ;; carries it (see `agent-shell-queue-send-next').
          (let* ((attachments (prog1 (agent-shell-context-capture)
                                (setq agent-shell-context-pending nil)))
                 (queued (if attachments
                             (propertize text 'agent-shell-queue-attachments attachments)
                           text)))
            (message "agent-shell: queued (%d), sent when the turn ends; \
%s steers instead, %s edits the queue"
                     (agent-shell-queue-add queued)
                     (substitute-command-keys "\\[agent-shell-steer]")
                     (substitute-command-keys "\\[agent-shell-queue-edit]"))))
         (t (agent-shell--send-captured text))))))))

(defun agent-shell--send-captured (text)
  "Send TEXT with the attachments its input mentions, read now.
A prompt that does not go leaves no attachments behind for the next."
  (agent-shell-context-capture)
  (condition-case err
      (agent-shell-send text)
    (error (setq agent-shell-context-pending nil)
           (signal (car err) (cdr err)))))

(defun agent-shell-send (text)
  "Send TEXT as a prompt in the current shell buffer's session.
When the prompt cannot be sent at all, nothing changes: no turn
starts and TEXT stays (or is put back) in the input."
  (unless (agent-shell-bridge-live-connection)
    (user-error (substitute-command-keys
                 "The bridge is not running; \\<agent-shell-mode-map>\\[agent-shell-restart] \
restarts it and resumes this session (the transcript and input stay)")))
  (agent-shell-show-prompt text)
  (agent-shell-dispatch-prompt text))

(defun agent-shell-show-prompt (text)
  "Move TEXT from the input to the transcript as the user's prompt."
  (unless (equal text (car (agent-shell-session-history agent-shell--session)))
    (push text (agent-shell-session-history agent-shell--session)))
  (setf (agent-shell-session-history-index agent-shell--session) -1
        (agent-shell-session-history-draft agent-shell--session) nil)
  (let ((inhibit-read-only t))
    (delete-region (agent-shell-session-input-marker agent-shell--session) (point-max)))
  (setq buffer-undo-list nil)
  (agent-shell-transcript-editing
    (agent-shell-transcript-close-block)
    (unless (bobp) (agent-shell-transcript-insert "\n"))
    (agent-shell-transcript-insert (concat "> " text "\n") 'face 'agent-shell-user-face
                                    'agent-shell-role 'user)
    (agent-shell-context-show-pending)
    (agent-shell-transcript-insert "\n"))
  (agent-shell-citations-mark (agent-shell-session-output-marker agent-shell--session)))

(defvar-local agent-shell--cancel-on-start nil
  "Non-nil: cancel the turn as soon as the bridge answers its prompt.
Set when the user cancels a turn whose prompt the bridge has not
answered yet, so that no turn exists there to cancel.")

(defun agent-shell-dispatch-prompt (text)
  "Start a turn with TEXT, already shown in the transcript.
When it cannot be sent, no turn runs and TEXT goes back to the input."
  (let ((buffer (current-buffer)))
    (agent-shell-transcript-start-turn-entries)
    (setf (agent-shell-session-turn-id agent-shell--session) 'pending
          (agent-shell-session-turn-start agent-shell--session) (current-time))
    (agent-shell-header-set-state 'thinking)
    (condition-case err
        (agent-shell--send-prompt buffer text)
      (error
       (setf (agent-shell-session-turn-id agent-shell--session) nil
             (agent-shell-session-turn-start agent-shell--session) nil)
       (agent-shell-header-set-state 'idle)
       (agent-shell-set-input text)
       (agent-shell-transcript-notice (format "The prompt was not sent: %s"
                                              (error-message-string err)))
       (signal (car err) (cdr err))))))

(defun agent-shell--send-prompt (buffer text)
  "Send TEXT as `session/prompt' for the shell BUFFER (the current buffer)."
  (agent-shell-bridge-request
   "session/prompt"
   `((sessionId . ,(agent-shell-session-id agent-shell--session))
     (prompt . [((type . "text") (text . ,text))])
     (context . ,(append (agent-shell-perception-context-snapshot)
                         (agent-shell-ambient-context
                          (agent-shell-session-root agent-shell--session))))
     (mode . ,(symbol-name (agent-shell-session-mode agent-shell--session)))
     (attachments . ,(agent-shell-context-take-pending))
     (attachmentMaxChars . ,agent-shell-attachment-max-chars)
     ,@(agent-shell-extend-prompt-params))
   :on-success (lambda (result)
                 (when (buffer-live-p buffer)
                   (with-current-buffer buffer
                     (agent-shell-context-on-result result)
                     (when-let ((turn (alist-get 'turnId result)))
                       (push (cons turn text)
                             (agent-shell-session-turn-prompts agent-shell--session)))
                     (when (eq (agent-shell-session-turn-id agent-shell--session) 'pending)
                       (setf (agent-shell-session-turn-id agent-shell--session)
                             (or (alist-get 'turnId result) t)))
                     ;; Cancelled before the bridge had the turn: cancel it now.
                     (when agent-shell--cancel-on-start
                       (setq agent-shell--cancel-on-start nil)
                       (agent-shell-cancel)))))
   :on-error (lambda (err)
               (when (buffer-live-p buffer)
                 (with-current-buffer buffer
                   (setf (agent-shell-session-turn-id agent-shell--session) nil)
                   (setq agent-shell--cancel-on-start nil)
                   (agent-shell-transcript-notice (format "The prompt failed: %s"
                                                          (alist-get 'message err)))
                   ;; Refused prompts (an unknown /command, say) come back to
                   ;; be fixed, unless the user already typed something new.
                   (when (string-empty-p (agent-shell-input))
                     (agent-shell-set-input text))
                   (agent-shell-header-set-state 'idle))))))

(defun agent-shell-cancel ()
  "Cancel the running turn of this session.
Every queued prompt goes back into the input."
  (interactive)
  (agent-shell--ensure-shell)
  (agent-shell-queue-restore-input)
  (when (eq (agent-shell-session-turn-id agent-shell--session) 'pending)
    (setq agent-shell--cancel-on-start t))
  (let ((buffer (current-buffer)))
    (agent-shell-bridge-request
     "session/cancel" `((sessionId . ,(agent-shell-session-id agent-shell--session)))
     :on-success (lambda (result)
                   (message "agent-shell: %s"
                            (if (eq (alist-get 'cancelled result) t)
                                "turn cancelled" "no turn was running"))
                   (when (buffer-live-p buffer)
                     (with-current-buffer buffer
                       (when (eq (alist-get 'cancelled result) t)
                         (setq agent-shell--cancel-on-start nil))
                       (unless (eq (agent-shell-session-turn-id agent-shell--session)
                                   'pending)
                         (when (stringp (agent-shell-session-turn-id agent-shell--session))
                           (push (agent-shell-session-turn-id agent-shell--session)
                                 (agent-shell-session-stale-turns agent-shell--session)))
                         (setf (agent-shell-session-turn-id agent-shell--session)
                               nil))))))))

(defun agent-shell--model-key (entry)
  "Return (KEY . SOURCE) for the model ENTRY of `agent-shell-models'."
  (let ((env (plist-get entry :key-env)))
    (if (and env (agent-shell-project-nonempty (getenv env)))
        (cons (getenv env) (concat "env:" env))
      (let ((agent-shell-api-base (plist-get entry :api-base)))
        (agent-shell-project-api-key-and-source)))))

(defun agent-shell--model-params (entry)
  "Return the `model' object of `session/set_model' for ENTRY."
  (let ((key (agent-shell--model-key entry))
        (price (plist-get entry :price)))
    `((api_base . ,(plist-get entry :api-base))
      (model . ,(plist-get entry :model))
      ,@(and (car key) `((api_key . ,(car key)) (api_key_source . ,(cdr key))))
      ,@(and (plist-get entry :context-window)
             `((context_window . ,(plist-get entry :context-window))))
      ,@(and (plist-get entry :reasoning-effort)
             `((reasoning_effort . ,(plist-get entry :reasoning-effort))))
      ,@(and (>= (length price) 2)
             `((price_input_per_mtok . ,(nth 0 price))
               (price_output_per_mtok . ,(nth 1 price))
               ,@(and (nth 2 price) `((price_cached_input_per_mtok . ,(nth 2 price)))))))))

(defun agent-shell-switch-model (name)
  "Use the model NAME of `agent-shell-models' from this session's next request.
During a turn it takes over at the turn's next model call.  The header
shows it, the action log notes the switch, and tokens and cost are
counted per model from then on."
  (interactive
   (progn (agent-shell--ensure-shell)
          (unless agent-shell-models
            (user-error "No models to switch to: customize `agent-shell-models'"))
          (list (completing-read
                 (format "Model (now %s): " (or (agent-shell-session-model agent-shell--session)
                                                agent-shell-model))
                 (mapcar (lambda (m) (plist-get m :name)) agent-shell-models) nil t))))
  (agent-shell--ensure-shell)
  (let ((entry (or (cl-find name agent-shell-models
                            :key (lambda (m) (plist-get m :name)) :test #'equal)
                   (user-error "No model %s in `agent-shell-models'" name)))
        (buffer (current-buffer)))
    (unless (and (plist-get entry :api-base) (plist-get entry :model))
      (user-error "Model %s needs :api-base and :model" name))
    (agent-shell-bridge-request
     "session/set_model"
     `((sessionId . ,(agent-shell-session-id agent-shell--session))
       (name . ,name)
       (model . ,(agent-shell--model-params entry)))
     :on-success
     (lambda (result)
       (when (buffer-live-p buffer)
         (with-current-buffer buffer
           (setf (agent-shell-session-model agent-shell--session) name)
           (force-mode-line-update)
           (agent-shell-session-changed)
           (agent-shell-transcript-notice
            (format "Model: %s (%s)%s" name (alist-get 'model result)
                    (if (eq (alist-get 'applied result) t) ""
                      " from the turn's next model call")))))))))

(defun agent-shell-toggle-mode ()
  "Switch this session between `act' and `ask' mode."
  (interactive)
  (agent-shell--ensure-shell)
  (let ((buffer (current-buffer))
        (mode (if (eq (agent-shell-session-mode agent-shell--session) 'ask) 'act 'ask)))
    (agent-shell-bridge-request
     "session/set_mode" `((sessionId . ,(agent-shell-session-id agent-shell--session))
                          (mode . ,(symbol-name mode)))
     :on-success (lambda (result)
                   (when (buffer-live-p buffer)
                     (with-current-buffer buffer
                       (setf (agent-shell-session-mode agent-shell--session)
                             (intern (or (alist-get 'mode result)
                                         (symbol-name mode))))
                       (force-mode-line-update)
                       (message "agent-shell: %s mode"
                                (agent-shell-session-mode agent-shell--session))))))))

(defun agent-shell-approve (&optional permission)
  "Approve this session's waiting step; with several, ask which.
PERMISSION, when given, is the request to approve."
  (interactive)
  (agent-shell--ensure-shell)
  (agent-shell-permissions-answer
   (or permission (agent-shell-permissions-choose "Approve")) 'approve nil))

(defun agent-shell-reject (reason &optional permission)
  "Reject this session's waiting step, telling the model REASON.
With several steps waiting, ask which; PERMISSION, when given, is it."
  (interactive
   (progn (agent-shell--ensure-shell)
          (let ((permission (agent-shell-permissions-choose "Reject")))
            (list (read-string "Reason (optional): ") permission))))
  (agent-shell--ensure-shell)
  (agent-shell-permissions-answer (or permission (agent-shell-permissions-choose "Reject"))
                                   'reject (agent-shell-project-nonempty reason)))

(provide 'agent-shell-turn)
;;; agent-shell-turn.el ends here
