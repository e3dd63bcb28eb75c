;;; agent-shell-transcript.el --- The transcript of an agent-shell buffer  -*- lexical-binding: t; -*-

;; SPDX-License-Identifier: GPL-3.0-or-later

;;; Commentary:

;; How a shell buffer of `agent-shell-mode' shows a session.  Output
;; goes in at `agent-shell--output-marker', before the prompt, as
;; read-only text, with the user's input and its undo list left
;; intact.  Assistant text streams into one message block; thoughts,
;; tool calls and the plan are one-line entries whose bodies fold;
;; notices come from agent-shell itself.  The header line shows the
;; model, the mode, the state, tokens and context fill.
;;
;; `agent-shell--apply-update' renders one `session/update' of the
;; bridge: message and thought chunks, tool calls and their updates,
;; usage, the plan (also handed to agent-shell-plan.el) and the end of
;; a turn (whose file citations agent-shell-citations.el links).
;; `agent-shell--insert-history' renders a resumed session's messages.
;;
;; agent-shell.el requires this file; it owns the session state (name,
;; root, mode, model, running turn, input history) read here, and
;; calls these functions from its handlers and commands.

;;; Code:

(require 'cl-lib)
(require 'subr-x)
(require 'agent-shell-citations)
(require 'agent-shell-plan)

;; Session state owned by agent-shell.el.
(defvar agent-shell-model)
(defvar agent-shell-notify-function)
(defvar agent-shell-notify-threshold)
(defvar agent-shell--name)
(defvar agent-shell--root)
(defvar agent-shell--mode)
(defvar agent-shell--model)
(defvar agent-shell--turn-id)
(defvar agent-shell--turn-start)
(defvar agent-shell--stale-turns)
(defvar agent-shell--history)

;;; Options

(defcustom agent-shell-tool-output-max-chars 4000
  "Largest piece of tool output shown in the shell buffer per update.
The action log and its files keep the full output."
  :type 'integer
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

(defvar-local agent-shell--plan-entry nil
  "Id of the transcript entry showing the current plan, or nil.")
(defvar-local agent-shell--state 'starting "What the agent is doing.")
(defvar-local agent-shell--state-detail nil "Tool name while running one.")
(defvar-local agent-shell--usage nil "The last `usage' update, an alist.")
(defvar-local agent-shell--output-marker nil "Where transcript output goes.")
(defvar-local agent-shell--block nil
  "The open transcript block: nil, `message', or an entry id string.")
(defvar-local agent-shell--body-open nil
  "Non-nil when the open entry already has body text.")
(defvar-local agent-shell--entries nil
  "Entry id to plist (:start MARKER :folded BOOL :title STRING).
START is a marker because the plan entry is redrawn in place.")
(defvar-local agent-shell--entry-counter 0 "Counter for entry ids.")
(defvar-local agent-shell--tools nil "Tool call id to entry id.")

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

(provide 'agent-shell-transcript)
;;; agent-shell-transcript.el ends here
