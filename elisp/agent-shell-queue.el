;;; agent-shell-queue.el --- Prompts queued and words steered while a turn runs  -*- lexical-binding: t; -*-

;; SPDX-License-Identifier: GPL-3.0-or-later

;;; Commentary:

;; While a turn runs, the input of a shell buffer is not refused:
;;
;; - RET queues it.  The queued prompts show dimmed above the prompt,
;;   each with its position, the header line says "N queued", and each
;;   is sent as its own turn when the turn before it ends.
;;   `agent-shell-queue-edit' (C-c C-e) edits them in a small buffer,
;;   one prompt per part, the parts separated by lines of "---".
;; - M-RET steers: the words go to the bridge (`session/steer') and
;;   reach the model at its next model call, as the user's message; a
;;   steer that arrives after the model's final answer makes one more
;;   round.  A steer the turn had no model call left for comes back with
;;   the turn's end and is sent as the next prompt (after a cancel, it
;;   goes back into the input); a steer is never dropped.
;; - `agent-shell-cancel' (C-c C-k) puts every queued prompt back into
;;   the input, oldest first, before what was typed.
;;
;; The queue lives in the buffer's `agent-shell-session' record; the
;; transcript draws it with the prompt's display-only line
;; (agent-shell-transcript.el) and calls this file when a turn ends,
;; through `agent-shell-transcript-turn-end-functions'.  agent-shell.el
;; binds the keys and agent-shell-turn.el sends the prompts.

;;; Code:

(require 'cl-lib)
(require 'subr-x)
(require 'agent-shell-custom)
(require 'agent-shell-session)
(require 'agent-shell-transcript)
(require 'agent-shell-bridge)

(declare-function agent-shell-send "agent-shell-turn" (text))
(declare-function agent-shell-context-capture "agent-shell-context" ())
(defvar agent-shell-context-pending)
(declare-function agent-shell-input "agent-shell-input" ())
(declare-function agent-shell-set-input "agent-shell-input" (text))
(declare-function agent-shell-send-input "agent-shell-turn" ())

;;; The queue

(defun agent-shell-queue-busy-p ()
  "Return non-nil while this shell buffer has a turn (sent or running)."
  (and agent-shell--session (agent-shell-session-turn-id agent-shell--session) t))

(defun agent-shell-queue--first-line (text)
  "Return the first line of TEXT, shortened for one line of display."
  (let ((line (car (split-string (string-trim text) "\n"))))
    (truncate-string-to-width (or line "") 72 nil nil "…")))

(defun agent-shell-queue-refresh ()
  "Show this buffer's queue above the prompt; update the header."
  (let ((queue (agent-shell-session-prompt-queue agent-shell--session))
        (n 0))
    (setf (agent-shell-session-queue-display agent-shell--session)
          (and queue
               (mapconcat
                (lambda (text)
                  (propertize (format "  queued %d: %s\n" (cl-incf n)
                                      (agent-shell-queue--first-line text))
                              'face 'agent-shell-queued-face))
                queue "")))
    (agent-shell-transcript-update-prompt-gap)
    (force-mode-line-update)))

(defun agent-shell-queue-add (text)
  "Queue TEXT to be sent as its own turn after the running one.
Return its position in the queue."
  (setf (agent-shell-session-prompt-queue agent-shell--session)
        (append (agent-shell-session-prompt-queue agent-shell--session) (list text)))
  (unless (equal text (car (agent-shell-session-history agent-shell--session)))
    (push text (agent-shell-session-history agent-shell--session)))
  (setf (agent-shell-session-history-index agent-shell--session) -1)
  (let ((inhibit-read-only t))
    (delete-region (agent-shell-session-input-marker agent-shell--session) (point-max)))
  (agent-shell-queue-refresh)
  (length (agent-shell-session-prompt-queue agent-shell--session)))

(defun agent-shell-queue-restore-input ()
  "Put every queued prompt back into the input, before what is typed there."
  (when-let ((queue (agent-shell-session-prompt-queue agent-shell--session)))
    (setf (agent-shell-session-prompt-queue agent-shell--session) nil)
    (agent-shell-queue--prepend-input queue)
    (agent-shell-queue-refresh)))

(defun agent-shell-queue--prepend-input (texts)
  "Put TEXTS (a list) into the input, one paragraph each, before what is there."
  (let ((typed (agent-shell-input)))
    (agent-shell-set-input
     (string-join (append texts (unless (string-empty-p (string-trim typed))
                                  (list typed)))
                  "\n\n"))))

(defun agent-shell-queue-send-next ()
  "Send the oldest queued prompt of this buffer unless a turn is on; return it."
  (when-let ((queue (and (not (agent-shell-queue-busy-p))
                         (agent-shell-session-prompt-queue agent-shell--session))))
    (let ((text (car queue))
          (typed (agent-shell-input)))
      (setf (agent-shell-session-prompt-queue agent-shell--session) (cdr queue))
      (agent-shell-queue-refresh)
      (condition-case err
          (progn
            ;; `agent-shell-send' moves the input into the transcript:
            ;; what the user is typing meanwhile must stay.
            (let ((inhibit-read-only t))
              (delete-region (agent-shell-session-input-marker agent-shell--session)
                             (point-max)))
            ;; Attachments read when it was queued go with it; a prompt
            ;; edited in the queue (or typed without them) has its
            ;; mentions read now, as the input would.
            (if-let ((attachments (get-text-property 0 'agent-shell-queue-attachments text)))
                (setq agent-shell-context-pending attachments)
              (agent-shell-set-input text)
              (agent-shell-context-capture))
            (agent-shell-send (substring-no-properties text))
            (unless (agent-shell-queue-busy-p) (error "The prompt was refused"))
            (agent-shell-set-input typed))
        (error
         (setq agent-shell-context-pending nil)
         (agent-shell-set-input typed)
         (push text (agent-shell-session-prompt-queue agent-shell--session))
         (agent-shell-queue-refresh)
         (message "agent-shell: the queued prompt was not sent: %s"
                  (error-message-string err))))
      text)))

(defun agent-shell-queue-on-turn-end (update)
  "After the turn described by the `turn_end' UPDATE: the steers, then the queue.
Steers the turn had no model call left for are sent as the next prompt,
ahead of the queue; after a cancel they and the queue are put back into
the input instead."
  (let ((steers (append (alist-get 'steers update) nil))
        (cancelled (equal (alist-get 'stopReason update) "cancelled")))
    (cond
     (cancelled
      (agent-shell-queue-restore-input)
      (when steers (agent-shell-queue--prepend-input steers)))
     (t
      (when steers
        (setf (agent-shell-session-prompt-queue agent-shell--session)
              (cons (string-join steers "\n\n")
                    (agent-shell-session-prompt-queue agent-shell--session))))
      (agent-shell-queue-send-next)))))

(defun agent-shell-queue--turn-end-hook (update)
  "Run `agent-shell-queue-on-turn-end' on UPDATE in a shell buffer."
  (when agent-shell--session
    (agent-shell-queue-on-turn-end update)))

(add-hook 'agent-shell-transcript-turn-end-functions #'agent-shell-queue--turn-end-hook)

;;; Steering

(defun agent-shell-queue--show-steer (text)
  "Move TEXT from the input into the transcript, marked as a steer."
  (unless (equal text (car (agent-shell-session-history agent-shell--session)))
    (push text (agent-shell-session-history agent-shell--session)))
  (setf (agent-shell-session-history-index agent-shell--session) -1)
  (let ((inhibit-read-only t))
    (delete-region (agent-shell-session-input-marker agent-shell--session) (point-max)))
  (agent-shell-transcript-editing
    (agent-shell-transcript-close-block)
    (unless (bobp) (agent-shell-transcript-insert "\n"))
    (agent-shell-transcript-insert (concat "> (steer) " text "\n\n")
                                    'face 'agent-shell-user-face
                                    'agent-shell-role 'user)))

(defun agent-shell-queue-steer (text)
  "Send TEXT to the running turn of this buffer as a steer.
When the bridge has no turn to take it, TEXT is sent as a prompt (or
queued first, while this buffer still waits for the turn's end)."
  (let ((buffer (current-buffer)))
    (agent-shell-queue--show-steer text)
    (agent-shell-bridge-request
     "session/steer"
     `((sessionId . ,(agent-shell-session-id agent-shell--session)) (text . ,text))
     :on-success
     (lambda (result)
       (when (and (buffer-live-p buffer) (not (eq (alist-get 'accepted result) t)))
         (with-current-buffer buffer
           (setf (agent-shell-session-prompt-queue agent-shell--session)
                 (cons text (agent-shell-session-prompt-queue agent-shell--session)))
           (agent-shell-queue-refresh)
           (agent-shell-queue-send-next))))
     :on-error
     (lambda (err)
       (when (buffer-live-p buffer)
         (with-current-buffer buffer
           (agent-shell-transcript-notice
            (format "The steer was not sent (%s); it is back in the input"
                    (alist-get 'message err)))
           (agent-shell-queue--prepend-input (list text))))))))

;;; Commands

(defun agent-shell-steer ()
  "Steer the running turn with the input; with no turn running, send it.
The words reach the model at its next model call as your message."
  (interactive)
  (unless (derived-mode-p 'agent-shell-mode)
    (user-error "Not in an agent-shell buffer"))
  (if (not (and (agent-shell-queue-busy-p) (agent-shell-session-id agent-shell--session)))
      (agent-shell-send-input)
    (let ((text (string-trim (agent-shell-input))))
      (when (string-empty-p text)
        (user-error "Nothing to steer with"))
      (agent-shell-queue-steer text))))

(defvar-local agent-shell-queue--shell nil
  "In a queue edit buffer: the shell buffer whose queue it edits.")

(defvar-local agent-shell-queue--original nil
  "In a queue edit buffer: the queue as it was when the edit began.")

(defconst agent-shell-queue--separator "---"
  "The line between two prompts in a queue edit buffer.")

(defvar agent-shell-queue-edit-mode-map
  (let ((map (make-sparse-keymap)))
    (define-key map (kbd "C-c C-c") #'agent-shell-queue-edit-finish)
    (define-key map (kbd "C-c C-k") #'agent-shell-queue-edit-abort)
    map)
  "Keymap of `agent-shell-queue-edit-mode'.")

(define-derived-mode agent-shell-queue-edit-mode text-mode "Agent-Queue"
  "Edit the prompts queued in a shell buffer, oldest first.
Prompts are separated by lines holding only \"---\"; an empty part is
dropped.  \\[agent-shell-queue-edit-finish] keeps the edit, \
\\[agent-shell-queue-edit-abort] drops it.

\\{agent-shell-queue-edit-mode-map}")

(defun agent-shell-queue-edit ()
  "Edit the queue of this shell buffer in a small buffer."
  (interactive)
  (unless (derived-mode-p 'agent-shell-mode)
    (user-error "Not in an agent-shell buffer"))
  (let ((shell (current-buffer))
        (queue (copy-sequence (agent-shell-session-prompt-queue agent-shell--session)))
        (edit (get-buffer-create
               (format "*agent-shell queue: %s*"
                       (agent-shell-session-name agent-shell--session)))))
    (unless queue
      (user-error "No prompt is queued"))
    (with-current-buffer edit
      (agent-shell-queue-edit-mode)
      (erase-buffer)
      (insert (string-join queue (concat "\n" agent-shell-queue--separator "\n")))
      (goto-char (point-min))
      (setq agent-shell-queue--shell shell
            agent-shell-queue--original queue)
      (setq header-line-format
            (substitute-command-keys
             "\\<agent-shell-queue-edit-mode-map>Queued prompts, oldest first, \
between lines of ---: \\[agent-shell-queue-edit-finish] keeps, \
\\[agent-shell-queue-edit-abort] drops the edit")))
    (pop-to-buffer edit '((display-buffer-below-selected) (window-height . 10)))
    edit))

(defun agent-shell-queue--parse (text)
  "Return the parts of the queue edit TEXT, without the empty ones."
  (delq nil (mapcar (lambda (part)
                      (let ((part (string-trim part)))
                        (and (not (string-empty-p part)) part)))
                    (split-string text (concat "^" (regexp-quote agent-shell-queue--separator)
                                               "[ \t]*$")))))

(defun agent-shell-queue-edit-finish ()
  "Make the edited parts the queue of the shell buffer.
Prompts sent while the edit was open are not queued again."
  (interactive)
  (let ((shell agent-shell-queue--shell)
        (original agent-shell-queue--original)
        (edited (agent-shell-queue--parse
                 (buffer-substring-no-properties (point-min) (point-max))))
        (edit (current-buffer)))
    (unless (buffer-live-p shell)
      (user-error "The shell buffer of this queue is gone"))
    (with-current-buffer shell
      (let* ((now (agent-shell-session-prompt-queue agent-shell--session))
             (sent (cl-remove-if (lambda (p) (member p now)) original)))
        (setf (agent-shell-session-prompt-queue agent-shell--session)
              (cl-remove-if (lambda (p) (member p sent)) edited))
        (agent-shell-queue-refresh)
        (agent-shell-queue-send-next)))
    (quit-window t (get-buffer-window edit))
    (when (buffer-live-p edit) (kill-buffer edit))))

(defun agent-shell-queue-edit-abort ()
  "Close the queue edit buffer; the queue stays as it was."
  (interactive)
  (let ((edit (current-buffer)))
    (quit-window t (get-buffer-window edit))
    (when (buffer-live-p edit) (kill-buffer edit))))

(provide 'agent-shell-queue)
;;; agent-shell-queue.el ends here
