;;; agent-shell-transcript.el --- The transcript of an agent-shell buffer  -*- lexical-binding: t; -*-

;; SPDX-License-Identifier: GPL-3.0-or-later

;;; Commentary:

;; How a shell buffer of `agent-shell-mode' shows a session.  Output
;; goes in at the session's output marker, before the prompt, as
;; read-only text, with the user's input and its undo list left
;; intact.  Assistant text streams into one message block; thoughts,
;; tool calls and the plan are one-line entries whose bodies fold;
;; notices come from agent-shell itself.  The header line is
;; agent-shell-header.el's; the text of a tool call's entry comes from
;; agent-shell-tool-text.el.
;;
;; `agent-shell-transcript-apply-update' renders one `session/update'
;; of the bridge: message and thought chunks, tool calls and their
;; updates, usage, the plan (also handed to agent-shell-plan.el) and
;; the end of a turn (whose file citations agent-shell-citations.el
;; links).  `agent-shell-transcript-insert-history' renders a resumed
;; session's messages.
;;
;; The state read and written here is the buffer's `agent-shell-session'
;; (agent-shell-session.el).  agent-shell.el requires this file and
;; calls these functions from its handlers and commands.

;;; Code:

(require 'cl-lib)
(require 'agent-shell-session)
(require 'subr-x)
(require 'agent-shell-custom)
(require 'agent-shell-header)
(require 'agent-shell-tool-text)
(require 'agent-shell-citations)
(require 'agent-shell-plan)
(require 'agent-shell-mcp)

(declare-function agent-shell-lifecycle-cancel-running-tools "agent-shell-lifecycle" (why))

;;; The transcript

(defun agent-shell-transcript--shift-undo (list pos delta)
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

(defun agent-shell-transcript-update-prompt-gap ()
  "Keep the prompt off the end of the transcript's last line.
While a tool runs, its line has no newline yet; a display-only line
break (never text in the buffer) goes before the prompt until it has."
  (when (and (markerp (agent-shell-session-output-marker agent-shell--session))
             (marker-buffer (agent-shell-session-output-marker agent-shell--session)))
    (let* ((pos (marker-position (agent-shell-session-output-marker agent-shell--session)))
           (glued (and (> pos (point-min))
                       (not (and (eq (char-before pos) ?\n)
                                 (not (get-text-property (1- pos) 'invisible)))))))
      (if (and (overlayp (agent-shell-session-prompt-gap agent-shell--session))
               (overlay-buffer (agent-shell-session-prompt-gap agent-shell--session)))
          (move-overlay (agent-shell-session-prompt-gap agent-shell--session) pos pos)
        ;; One of a transcript erased by `agent-shell-mode' may be left over.
        (remove-overlays (point-min) (point-max) 'agent-shell-prompt-gap t)
        (setf (agent-shell-session-prompt-gap agent-shell--session)
              (make-overlay pos pos nil nil nil))
        (overlay-put (agent-shell-session-prompt-gap agent-shell--session)
                     'agent-shell-prompt-gap t))
      (overlay-put (agent-shell-session-prompt-gap agent-shell--session) 'before-string
                   (let ((queued (agent-shell-session-queue-display agent-shell--session)))
                     (if queued (concat (and glued "\n") queued) (and glued "\n")))))))

(defmacro agent-shell-transcript-editing (&rest body)
  "Run BODY at the output marker with the transcript writable.
Modification hooks are off and the insertion is kept out of the undo
list, whose recorded input positions are shifted instead."
  (declare (indent 0) (debug t))
  (let ((start (make-symbol "start")) (undo (make-symbol "undo")))
    `(let ((,start (marker-position
                    (agent-shell-session-output-marker agent-shell--session)))
           (,undo buffer-undo-list))
       (prog1 (let ((inhibit-read-only t)
                    (inhibit-modification-hooks t)
                    (buffer-undo-list t))
                (save-excursion
                  (goto-char (agent-shell-session-output-marker agent-shell--session))
                  ,@body))
         (agent-shell-transcript-update-prompt-gap)
         (unless (eq ,undo t)
           (setq buffer-undo-list
                 (agent-shell-transcript--shift-undo
                  ,undo ,start
                  (- (marker-position
                      (agent-shell-session-output-marker
                       agent-shell--session)) ,start))))))))

(defun agent-shell-transcript-insert (text &rest props)
  "Insert TEXT with PROPS at point as read-only transcript text.
The properties go on the inserted region, so TEXT (a whole streamed
frame) is not copied first."
  (let ((start (point)))
    (insert text)
    (add-text-properties start (point)
                         (append '(read-only t front-sticky (read-only)) props))))

(defun agent-shell-transcript--fresh-line ()
  "Start a new line at point unless already at the start of one.
A newline hidden in a folded body does not count: the next line
would show glued to the entry's header."
  (unless (or (bobp)
              (and (eq (char-before) ?\n)
                   (not (get-text-property (1- (point)) 'invisible))))
    (agent-shell-transcript-insert "\n")))

(defun agent-shell-transcript-close-block ()
  "End the open block, so that the next output begins on a new line."
  (when (agent-shell-session-block agent-shell--session)
    (agent-shell-transcript--fresh-line)
    (setf (agent-shell-session-block agent-shell--session) nil
          (agent-shell-session-body-open agent-shell--session) nil)))

(defun agent-shell-transcript-notice (text)
  "Append TEXT to the transcript as a notice from agent-shell.
Return (START . END), markers around TEXT."
  (agent-shell-transcript-editing
    (agent-shell-transcript-close-block)
    (let ((start (copy-marker (point))))
      (agent-shell-transcript-insert text 'face 'agent-shell-notice-face)
      (prog1 (cons start (copy-marker (point)))
        (agent-shell-transcript-insert "\n" 'face 'agent-shell-notice-face)))))

(defun agent-shell-transcript-replace-notice (range text)
  "Show TEXT instead of the notice between the markers of RANGE."
  (let ((start (car range)) (end (cdr range)))
    (when (and (markerp start) (marker-buffer start)
               (eq (marker-buffer start) (current-buffer))
               (<= start end))
      (agent-shell-transcript-editing
        (goto-char end)
        ;; Inserted after the old text, then the old text deleted: markers
        ;; of later entries and the output marker move the right way.
        (agent-shell-transcript-insert text 'face 'agent-shell-notice-face)
        (delete-region start end)
        (set-marker end (+ start (length text)))))))

(defun agent-shell-transcript-note-waiting (call-id range title)
  "Remember RANGE, the waiting notice of tool CALL-ID showing TITLE."
  (when call-id
    (setf (alist-get call-id (agent-shell-session-waiting-notices agent-shell--session) nil
                     nil #'equal)
          (list (car range) (cdr range) title))))

(defun agent-shell-transcript-resolve-waiting (call-id text)
  "Replace the waiting notice of tool CALL-ID with TEXT, if it is still shown.
TEXT is a format string whose one %s is the step's title."
  (when-let ((cell
              (assoc call-id (agent-shell-session-waiting-notices agent-shell--session))))
    (setf (agent-shell-session-waiting-notices agent-shell--session)
          (delq cell (agent-shell-session-waiting-notices agent-shell--session)))
    (pcase-let ((`(,start ,end ,title) (cdr cell)))
      (agent-shell-transcript-replace-notice
       (cons start end) (format text (or title "the step"))))))

(defun agent-shell-transcript--append-message (text &optional refusal)
  "Append TEXT to the assistant's message.
When REFUSAL is non-nil, TEXT is the model refusing the request and
is shown in `agent-shell-refusal-face'."
  (agent-shell-transcript-editing
    (unless (eq (agent-shell-session-block agent-shell--session) 'message)
      (agent-shell-transcript-close-block)
      (setf (agent-shell-session-block agent-shell--session) 'message))
    (if refusal
        (agent-shell-transcript-insert text 'agent-shell-role 'assistant
                                        'agent-shell-refusal t 'face 'agent-shell-refusal-face)
      (agent-shell-transcript-insert text 'agent-shell-role 'assistant))))

(defun agent-shell-transcript--fold-char (folded)
  "Return the arrow shown before an entry that is FOLDED or not."
  (if folded "▸" "▾"))

(defun agent-shell-transcript--new-entry (kind glyph title)
  "Open a foldable entry of KIND with status GLYPH and TITLE; return its id.
Call inside `agent-shell-transcript-editing'."
  (agent-shell-transcript-close-block)
  (let ((id (format "%s-%d" kind
                    (cl-incf (agent-shell-session-entry-counter agent-shell--session))))
        (start (point))
        (title (replace-regexp-in-string "[\n\r\t]+" " " (or title ""))))
    (agent-shell-transcript-insert
     (concat (agent-shell-transcript--fold-char t) " " glyph " " title)
     'agent-shell-entry id 'agent-shell-header t
     'face 'agent-shell-entry-face
     'help-echo "TAB: show or hide")
    ;; A marker: an entry shown again in place (the plan) moves later ones.
    (push (cons id (list :start (copy-marker start) :folded t :title title))
          (agent-shell-session-entries agent-shell--session))
    (setf (agent-shell-session-block agent-shell--session) id
          (agent-shell-session-body-open agent-shell--session) nil)
    id))

(defun agent-shell-transcript-attachment (title text)
  "Show an attachment of the prompt as one folded entry: TITLE, then TEXT.
Call inside `agent-shell-transcript-editing'.  Return the entry's id."
  (let ((id (agent-shell-transcript--new-entry "attachment" "@" title)))
    (agent-shell-transcript--append-body id (string-trim-right text "\n+"))
    (agent-shell-transcript-close-block)
    id))

(defun agent-shell-transcript-entry (id)
  "Return entry ID's plist, or nil when it is gone."
  (let ((plist (cdr (assoc id (agent-shell-session-entries agent-shell--session)))))
    (and plist
         (equal (get-text-property (plist-get plist :start) 'agent-shell-entry) id)
         plist)))

(defun agent-shell-transcript-entry-put (id prop value)
  "Set PROP of entry ID's plist to VALUE."
  (setf (plist-get (cdr (assoc id (agent-shell-session-entries agent-shell--session)))
                   prop)
        value))

(defun agent-shell-transcript--append-body (id text)
  "Append TEXT to the body of entry ID, which must be the open block.
Call inside `agent-shell-transcript-editing'."
  (let ((plist (agent-shell-transcript-entry id)))
    (insert (propertize
             (if (agent-shell-session-body-open agent-shell--session) text
               (concat "\n" text))
             'read-only t 'front-sticky '(read-only)
             'agent-shell-entry id
             'agent-shell-body id
             'invisible (plist-get plist :folded)))
    (setf (agent-shell-session-body-open agent-shell--session) t)))

(defun agent-shell-transcript-entry-at (pos)
  "Return the id of the entry on the transcript line of POS, or nil.
Point at the end of a header line (after \\[move-end-of-line]) sits on
the newline that ends it, or just after a folded body: the entry is
found from the character before, then from the line start."
  (when (< pos (agent-shell-session-output-marker agent-shell--session))
    (or (get-text-property pos 'agent-shell-entry)
        (and (> pos (point-min))
             (eq (char-after pos) ?\n)
             (get-text-property (1- pos) 'agent-shell-entry))
        (save-excursion
          (goto-char pos)
          (get-text-property (line-beginning-position) 'agent-shell-entry)))))

(defun agent-shell-transcript--header-end (id)
  "Return the end of entry ID's header line."
  (let ((start (plist-get (agent-shell-transcript-entry id) :start)))
    (or (next-single-property-change start 'agent-shell-header)
        (point-max))))

(defun agent-shell-transcript-set-entry-title (id title)
  "Show TITLE in entry ID's header, after the fold arrow and glyph."
  (when-let ((plist (agent-shell-transcript-entry id)))
    (let* ((title (replace-regexp-in-string "[\n\r\t]+" " " title))
           (start (+ 4 (plist-get plist :start)))
           (end (agent-shell-transcript--header-end id)))
      (when (<= start end)
        (let ((props (text-properties-at (plist-get plist :start))))
          (agent-shell-transcript-editing
            (goto-char end)
            (insert (apply #'propertize title props))
            (delete-region start end)))
        (agent-shell-transcript-entry-put id :title title)))))

(defun agent-shell-transcript--entry-add (id text)
  "Add TEXT as new lines at the end of entry ID's body, wherever it is.
Unlike `agent-shell-transcript--append-body', ID need not be the open block:
an update that arrives after other output (a notice, a later entry)
still lands in its own entry."
  (let ((text (string-trim-right text "[\n]+")))
    (when-let ((plist (and (not (string-empty-p text)) (agent-shell-transcript-entry id))))
      (agent-shell-transcript-editing
        (let* ((bounds (agent-shell-transcript--entry-body-bounds id))
               (pos (if bounds (cdr bounds) (agent-shell-transcript--header-end id)))
               (open (equal (agent-shell-session-block agent-shell--session) id)))
          (goto-char pos)
          (insert-before-markers
           (propertize (concat (if (eq (char-before) ?\n) "" "\n") text)
                       'read-only t 'front-sticky '(read-only)
                       'agent-shell-entry id 'agent-shell-body id
                       'invisible (plist-get plist :folded)))
          (if open
              (setf (agent-shell-session-body-open agent-shell--session) t)
            ;; What follows the entry must still start on its own line.
            (unless (or (eq (char-after) ?\n)
                        (>= (point) (agent-shell-session-output-marker
                                     agent-shell--session)))
              (insert-before-markers
               (propertize "\n" 'read-only t 'front-sticky '(read-only))))))))))

(defun agent-shell-transcript--replace-char (pos string)
  "Replace the character at POS with STRING, keeping its properties."
  (let ((props (text-properties-at pos))
        (inhibit-read-only t)
        (inhibit-modification-hooks t)
        (buffer-undo-list t))
    (save-excursion
      (goto-char pos)
      (insert (apply #'propertize string props))
      (delete-char 1))))

(defun agent-shell-transcript--entry-body-bounds (id)
  "Return (START . END) of entry ID's body, or nil when it has none."
  (when-let* ((plist (agent-shell-transcript-entry id))
              (start (next-single-property-change (plist-get plist :start)
                                                  'agent-shell-header)))
    (when (equal (get-text-property start 'agent-shell-body) id)
      (cons start (or (next-single-property-change start 'agent-shell-body)
                      (point-max))))))

(defun agent-shell-transcript-set-folded (id folded)
  "Fold entry ID when FOLDED is non-nil, else unfold it."
  (when-let ((plist (agent-shell-transcript-entry id)))
    (agent-shell-transcript-entry-put id :folded folded)
    (agent-shell-transcript--replace-char (plist-get plist :start)
                                          (agent-shell-transcript--fold-char folded))
    (when-let ((bounds (agent-shell-transcript--entry-body-bounds id)))
      (let ((inhibit-read-only t) (inhibit-modification-hooks t)
            (buffer-undo-list t))
        (put-text-property (car bounds) (cdr bounds) 'invisible folded)))
    (agent-shell-transcript-update-prompt-gap)))

(defun agent-shell-transcript-set-entry-glyph (id glyph)
  "Show status GLYPH (one character) in entry ID's header."
  (when-let ((plist (agent-shell-transcript-entry id)))
    (agent-shell-transcript--replace-char (+ 2 (plist-get plist :start)) glyph)))

(defun agent-shell-transcript-status-glyph (status)
  "Return the one-character glyph of a tool STATUS string."
  (pcase status
    ("pending" "○")
    ("in_progress" "◐")
    ("completed" "●")
    ((or "failed" "denied" "rejected" "cancelled") "✗")
    (_ "·")))

;;; Session updates

(defvar agent-shell-transcript-turn-end-functions nil
  "Functions called with the `turn_end' update once a turn has ended.
They run in the shell buffer, after it shows the turn as ended (the
queued prompts go out from here, agent-shell-queue.el).")

(defvar agent-shell-transcript-compaction-functions nil
  "Functions called with the `compaction' update when the bridge compacted.
They run in the shell buffer; the transcript itself shows nothing (the
action log has the summary).")

(defun agent-shell-transcript--on-tool-call (update)
  "Render the tool call announced by UPDATE."
  (let* ((call-id (alist-get 'toolCallId update))
         (title (or (alist-get 'title update) (alist-get 'kind update) "tool"))
         (status (alist-get 'status update))
         (input (alist-get 'rawInput update)))
    (agent-shell-transcript-editing
      (let ((id (agent-shell-transcript--new-entry "tool"
                                                   (agent-shell-transcript-status-glyph
                                                    status)
                                                   title)))
        (push (cons call-id id) (agent-shell-session-tools agent-shell--session))
        (agent-shell-transcript-entry-put id :status
                                           (or status "pending"))
        (when input
          (agent-shell-transcript--append-body
           id (concat "args: " (agent-shell-tool-text-arguments-line input))))))
    (unless (eq (agent-shell-session-state agent-shell--session) 'waiting)
      (agent-shell-header-set-state 'running title))))

(defun agent-shell-transcript--on-tool-call-update (update)
  "Render UPDATE to an earlier tool call in the tool's own entry.
The entry's body gets the output, the error or refusal, the exit
code, the test summary and the diff; a failure's reason also shows
on the entry's line."
  (let* ((call-id (alist-get 'toolCallId update))
         (id (cdr (assoc call-id (agent-shell-session-tools agent-shell--session))))
         (plist (and id (agent-shell-transcript-entry id)))
         (status (alist-get 'status update))
         (raw (alist-get 'rawOutput update))
         (raw (and (consp raw) raw))
         (content (alist-get 'content update))
         (text (string-join
                (delq nil
                      (append
                       (agent-shell-tool-text-outcome-lines raw)
                       (let ((c (and content (agent-shell-tool-text-content content))))
                         (and c (not (string-empty-p c))
                              (list (agent-shell-tool-text-cap c))))))
                "\n"))
         (detail (and status (agent-shell-tool-text-failure-detail status raw))))
    (when status
      (pcase status
        ("failed" (agent-shell-transcript-resolve-waiting
                   call-id (concat "Not run: %s"
                                   (if-let ((e (alist-get 'error raw)))
                                       (concat " — " (string-replace
                                                      "%" "%%"
                                                      (agent-shell-tool-text-first-line e
                                                                                        80)))
                                     ""))))
        (_ (agent-shell-transcript-resolve-waiting call-id "Approved: %s"))))
    (when (and id status)
      (when plist
        (agent-shell-transcript-entry-put id :status status))
      (agent-shell-transcript-set-entry-glyph id
                                              (agent-shell-transcript-status-glyph
                                               status)))
    (when (and plist detail)
      (let ((base (or (plist-get plist :base-title) (plist-get plist :title))))
        (agent-shell-transcript-entry-put id :base-title base)
        (agent-shell-transcript-set-entry-title id (concat base " — " detail))))
    (unless (string-empty-p text)
      (if plist
          (agent-shell-transcript--entry-add id text)
        ;; An update for a call this buffer never saw (a resumed turn).
        (agent-shell-transcript-editing
          (let ((new (agent-shell-transcript--new-entry
                      "tool" (agent-shell-transcript-status-glyph status)
                      (concat (or call-id "tool") (if detail (concat " — " detail) "")))))
            (push (cons call-id new) (agent-shell-session-tools agent-shell--session))
            (agent-shell-transcript--append-body new text)))))
    (pcase status
      ("in_progress" (unless (eq (agent-shell-session-state agent-shell--session) 'waiting)
                       (agent-shell-header-set-state
                        'running (or (plist-get plist :title) "tool"))))
      ((or "completed" "failed")
       (unless (eq (agent-shell-session-state agent-shell--session) 'waiting)
         (agent-shell-header-set-state 'thinking))))))

(defun agent-shell-transcript--on-thought (text)
  "Append TEXT to the current thought entry, opening one if needed."
  (agent-shell-transcript-editing
    (let ((id (if (and (stringp (agent-shell-session-block agent-shell--session))
                       (string-prefix-p "thought-"
                                        (agent-shell-session-block agent-shell--session)))
                  (agent-shell-session-block agent-shell--session)
                (agent-shell-transcript--new-entry "thought" "…" "Thinking"))))
      (agent-shell-transcript--append-body id text))))

(defun agent-shell-transcript--on-plan (update)
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
      ;; Another plan gets its own entry; the earlier one stays as it was.
      (let ((plan-id (alist-get 'planId update)))
        (when (and plan-id (agent-shell-session-plan-id agent-shell--session)
                   (not (equal plan-id (agent-shell-session-plan-id agent-shell--session))))
          (setf (agent-shell-session-plan-entry agent-shell--session) nil))
        (when plan-id (setf (agent-shell-session-plan-id agent-shell--session) plan-id)))
      (unless (and (agent-shell-session-plan-entry agent-shell--session)
                   (agent-shell-transcript-entry
                    (agent-shell-session-plan-entry agent-shell--session))
                   (agent-shell-transcript--replace-entry
                    (agent-shell-session-plan-entry agent-shell--session) title body))
        (agent-shell-transcript-editing
          (let ((id (agent-shell-transcript--new-entry "plan" "≡" title)))
            (setf (agent-shell-session-plan-entry agent-shell--session) id)
            (agent-shell-transcript--append-body id body)))))
    (agent-shell-plan-on-update (agent-shell-session-name agent-shell--session) update)))

(defun agent-shell-transcript--replace-entry (id title body)
  "Show TITLE and BODY in the existing entry ID, in place; return non-nil.
The entry keeps its place and folding; the transcript after it moves,
and so do the undo positions of the user's input."
  (when-let* ((plist (agent-shell-transcript-entry id))
              (start (marker-position (plist-get plist :start)))
              (end (min (or (next-single-property-change start 'agent-shell-entry)
                            (point-max))
                        (agent-shell-session-output-marker agent-shell--session))))
    (let ((folded (plist-get plist :folded))
          (title (replace-regexp-in-string "[\n\r\t]+" " " title))
          (undo buffer-undo-list)
          (size (buffer-size)))
      (let ((inhibit-read-only t)
            (inhibit-modification-hooks t)
            (buffer-undo-list t))
        (save-excursion
          (goto-char start)
          (insert (propertize
                   (concat (agent-shell-transcript--fold-char folded) " ≡ " title)
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
              (agent-shell-transcript--shift-undo undo start (- (buffer-size) size))))
      (agent-shell-transcript-entry-put id :title title)
      t)))

(defun agent-shell-transcript--stale-turn-end-p (update)
  "Return non-nil when the `turn_end' UPDATE is not for the current turn.
A turn that was cancelled can report its end after the next turn
began; that report must not end the new turn."
  (let ((id (alist-get 'turnId update)))
    (and (stringp id)
         (agent-shell-session-turn-id agent-shell--session)
         (or (member id (agent-shell-session-stale-turns agent-shell--session))
             (and (stringp (agent-shell-session-turn-id agent-shell--session))
                  (not (equal id (agent-shell-session-turn-id agent-shell--session))))))))

(defun agent-shell-transcript--on-turn-end (update)
  "Finish the turn described by UPDATE, unless it is an older turn's."
  (let ((stale (agent-shell-transcript--stale-turn-end-p update)))
    (setf (agent-shell-session-stale-turns agent-shell--session)
          (delete (alist-get 'turnId update)
                  (agent-shell-session-stale-turns agent-shell--session)))
    (unless stale
      (agent-shell-transcript--finish-turn update))))

(defun agent-shell-transcript--finish-turn (update)
  "Finish the current turn as the `turn_end' UPDATE describes."
  (let* ((reason (alist-get 'stopReason update))
         (err (alist-get 'error update))
         (elapsed (and (agent-shell-session-turn-start agent-shell--session)
                       (float-time (time-since
                                    (agent-shell-session-turn-start
                                     agent-shell--session))))))
    (agent-shell-citations-link (agent-shell-session-output-marker agent-shell--session)
                                (agent-shell-session-root agent-shell--session))
    (cond (err (agent-shell-transcript-notice
                (format "[turn ended with an error: %s]" (alist-get 'message err))))
          ((and reason (not (equal reason "end_turn")))
           (agent-shell-transcript-notice (format "[turn ended: %s]" reason)))
          ((alist-get 'summary update)
           (agent-shell-transcript-notice (format "Done: %s" (alist-get 'summary update))))
          (t (agent-shell-transcript-editing (agent-shell-transcript-close-block))))
    ;; A step the turn never finished (cancelled, stopped) has no spinner left.
    (agent-shell-lifecycle-cancel-running-tools
     (if (equal reason "cancelled") "cancelled" "not finished"))
    (setf (agent-shell-session-turn-id agent-shell--session) nil
          (agent-shell-session-turn-start agent-shell--session) nil)
    (agent-shell-header-set-state 'idle)
    (run-hook-with-args 'agent-shell-transcript-turn-end-functions update)
    (when (and elapsed (> elapsed agent-shell-notify-threshold))
      (funcall agent-shell-notify-function
               (format "agent-shell %s: turn finished after %d s (%s)"
                       (agent-shell-session-name agent-shell--session) (round elapsed) (or
                                                                                        reason "done"))))))

(defun agent-shell-transcript-apply-update (update)
  "Render one session UPDATE in the current shell buffer."
  (pcase (alist-get 'sessionUpdate update)
    ("agent_message_chunk"
     (when (memq (agent-shell-session-state agent-shell--session) '(idle starting))
       (agent-shell-header-set-state 'thinking))
     (agent-shell-transcript--append-message
      (or (alist-get 'text (alist-get 'content update)) "")
      (eq (alist-get 'refusal update) t)))
    ("agent_thought_chunk"
     (agent-shell-transcript--on-thought
      (or (alist-get 'text (alist-get 'content update)) "")))
    ("tool_call" (agent-shell-transcript--on-tool-call update))
    ("tool_call_update" (agent-shell-transcript--on-tool-call-update update))
    ("plan" (agent-shell-transcript--on-plan update))
    ("usage" (setf (agent-shell-session-usage agent-shell--session) update)
     (force-mode-line-update)
     (agent-shell-session-changed))
    ("turn_end" (agent-shell-transcript--on-turn-end update))
    ("mcp_servers" (agent-shell-mcp-on-update update))
    ("compaction" (run-hook-with-args 'agent-shell-transcript-compaction-functions update))
    (kind (message "agent-shell: unknown session update %S" kind))))

(defun agent-shell-transcript-start-turn-entries ()
  "Forget the plan entry of the turn before, for a new turn.
Its plan keeps its entry; a plan of the new turn gets a new one."
  (setf (agent-shell-session-plan-entry agent-shell--session) nil
        (agent-shell-session-plan-id agent-shell--session) nil))

(defun agent-shell-transcript--history-view (item)
  "Return the call as the client last saw it, kept with the history ITEM, or nil."
  (let ((view (alist-get 'view item)))
    (and (consp view) view)))

(defun agent-shell-transcript--history-title (item view)
  "Return the entry line of the resumed tool ITEM, with its failure as live.
VIEW is the call as last seen (see `agent-shell-transcript--history-view')."
  (let* ((title (or (alist-get 'title view) (alist-get 'title item) "tool"))
         (raw (alist-get 'rawOutput view))
         (detail (and view (agent-shell-tool-text-failure-detail
                            (alist-get 'status view) (and (consp raw) raw)))))
    (if detail (concat title " — " detail) title)))

(defun agent-shell-transcript--view-text (view)
  "Return the body a tool entry showed live for VIEW: arguments, outcome, content."
  (let* ((input (alist-get 'rawInput view))
         (raw (alist-get 'rawOutput view))
         (content (alist-get 'content view))
         (shown (and content (agent-shell-tool-text-content content))))
    (string-join
     (delq nil (append
                (and (consp input)
                     (list (concat "args: " (agent-shell-tool-text-arguments-line input))))
                (agent-shell-tool-text-outcome-lines (and (consp raw) raw))
                (and shown (not (string-empty-p shown)) (list shown))))
     "\n")))

(defun agent-shell-transcript-insert-history (history)
  "Render HISTORY, the list of past messages from `session/resume'.
Each item is (role, text, toolCallId?, title?, status?).  Every message
starts on its own line, and the transcript ends on a fresh line so
that the prompt does not stick to the last answer."
  (dolist (item history)
    (let ((text (or (alist-get 'text item) "")))
      (pcase (alist-get 'role item)
        ("user"
         (agent-shell-transcript-editing
           (agent-shell-transcript-close-block)
           (unless (bobp) (agent-shell-transcript-insert "\n"))
           (agent-shell-transcript-insert (concat "> " text "\n")
                                           'face 'agent-shell-user-face 'agent-shell-role 'user)
           ;; What was attached: the names and sizes (the texts stay in the log).
           (dolist (a (append (alist-get 'attachments item) nil))
             (agent-shell-transcript-insert
              (format "@ %s (%s chars%s)\n" (alist-get 'name a) (alist-get 'chars a)
                      (if (and (numberp (alist-get 'cut a)) (> (alist-get 'cut a) 0))
                          (format ", %s cut" (alist-get 'cut a))
                        ""))
              'face 'agent-shell-entry-face))
           (agent-shell-transcript-insert "\n"))
         (agent-shell-transcript-start-turn-entries)
         (push text (agent-shell-session-history agent-shell--session)))
        ("assistant"
         (agent-shell-transcript-editing (agent-shell-transcript-close-block))
         (agent-shell-transcript--append-message text)
         (agent-shell-transcript-editing (agent-shell-transcript-close-block)))
        ("system" (agent-shell-transcript-notice text))
        ("tool"
         (agent-shell-transcript-editing
           (let* ((view (agent-shell-transcript--history-view item))
                  (text (if view (agent-shell-transcript--view-text view) text))
                  (id (agent-shell-transcript--new-entry
                       "tool" (agent-shell-transcript-status-glyph (alist-get 'status item))
                       (agent-shell-transcript--history-title item view))))
             (when-let ((call-id (alist-get 'toolCallId item)))
               (push (cons call-id id) (agent-shell-session-tools agent-shell--session)))
             (unless (string-empty-p text)
               (agent-shell-transcript--append-body id
                                                    (agent-shell-tool-text-cap
                                                     text)))))))))
  (agent-shell-transcript-editing
    (agent-shell-transcript-close-block)
    (agent-shell-transcript--fresh-line)))

(provide 'agent-shell-transcript)
;;; agent-shell-transcript.el ends here
