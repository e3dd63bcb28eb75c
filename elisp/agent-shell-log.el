;;; agent-shell-log.el --- Live org action log and confirmation keys  -*- lexical-binding: t; -*-

;; SPDX-License-Identifier: GPL-3.0-or-later

;;; Commentary:

;; The action log shows every step of an agent-shell session as an org
;; heading: an inactive timestamp, the source, a properties drawer (tool,
;; decision, risk, exit code, tokens...) and bounded output in src blocks.
;; Steps that need the user's consent carry the TODO keyword WAIT; the user
;; answers from the log buffer with a key:
;;
;;   y, C-c C-c   approve          n, C-c C-k   reject (asks for a reason)
;;   a            approve this kind of write for the rest of the session
;;   d            show the full diff      w   next waiting step
;;   f, M-n       next step               b, M-p   previous step
;;   RET, o       visit the file and line a step touched
;;   !            sparse tree of failed and rejected steps
;;   L            open the current or a past log file
;;
;; The decision keys (y, n, a, d) live in agent-shell-log-keys.el, which
;; binds them in `agent-shell-log-mode-map' when loaded.
;;
;; The bridge is the only renderer of the log: it writes each entry to
;; .agent-shell/logs/*.org and sends the very same text with the
;; `log/entry' (`org') and `log/update' (`org_head', `org_body_append')
;; notifications.  This file inserts that text as it comes and keeps the
;; structure around it: which entry a region belongs to, where a step
;; goes (after the last entry of its parent), the waiting steps, folded
;; drawers and notifications.  An update replaces one heading and drawer
;; and appends to one body, so the cost of a notification does not grow
;; with the buffer, and the buffer's entries stay equal to the file's.
;;
;; The drawers are folded by agent-shell-log-fold.el, with a text
;; property rather than an overlay each, and no entry holds a marker:
;; an entry's place is found again by its `agent-shell-log-id' text
;; property, so a day's log costs what a new one does to add to.
;;
;; agent-shell-permissions.el wires `agent-shell-log-decision-function' to
;; the bridge; agent-shell-handlers.el calls `agent-shell-log-buffer',
;; `agent-shell-log-insert-entry' and `agent-shell-log-apply-update',
;; agent-shell.el `agent-shell-log-set-file'.

;;; Code:

(require 'cl-lib)
(require 'subr-x)
(require 'org)
(require 'agent-shell-log-fold)
(require 'agent-shell-log-files)

(declare-function notifications-notify "notifications" (&rest params))

;;; Options

(defgroup agent-shell-log nil
  "The org action log of agent-shell sessions."
  :group 'agent-shell
  :prefix "agent-shell-log-")

(defcustom agent-shell-log-notify-on-wait t
  "When non-nil, a step waiting for approval shows the log and notifies.
The log buffer is displayed without selecting it, and a desktop
notification is raised when D-Bus is available, else a message."
  :type '(choice (const :tag "Display the log and notify" t)
                 (const :tag "Stay quiet" nil))
  :group 'agent-shell-log
  :package-version '(agent-shell . "0.1.0"))

(defvar agent-shell-log-decision-function nil
  "Function delivering the user's decision on a waiting step to the bridge.
It is called with ENTRY-ID (a string), DECISION (one of the symbols
`approve', `reject' and `approve-session') and REASON (a string or
nil).  The entry's keyword changes only when the bridge answers with
a `log/update'.")

(defvar agent-shell-log-answerable-function nil
  "Function telling whether a waiting step can still be answered, or nil.
It is called with ENTRY-ID and returns non-nil when a request of the
bridge waits for that step.  Waiting steps it rejects (left over from a
bridge that has gone) are skipped by the decision keys.")

(defvar agent-shell-log-grant-function nil
  "Function saying what \"allow for this session\" would grant, or nil.
It is called with ENTRY-ID and returns a sentence such as \"run exactly
`make' in /proj without asking ...\", or nil when it does not know.")

;;; Text (the bridge renders the entries)

(defconst agent-shell-log--todo-line
  "#+TODO: WAIT | APPROVED REJECTED DONE FAILED"
  "The TODO keyword line every action log starts with.")

(defconst agent-shell-log--no-eval-line "#+PROPERTY: header-args :eval never"
  "The log's header line that keeps Babel from running anything in it.
A log holds text the model chose; an inline src_lang{...} or call_name()
there would otherwise run when the log is exported.")

(defconst agent-shell-log--space-re
  (rx (+ (any " \t\n\r\v\f" #x85 #x2028 #x2029)))
  "Whitespace collapsed to one space in single-line fields.")

(defun agent-shell-log-one-line (text &optional cap)
  "Return TEXT on one line, without control characters.
With CAP, at most CAP characters are kept (default 300)."
  (let* ((case-fold-search nil)
         (cap (or cap 300))
         (s (replace-regexp-in-string agent-shell-log--space-re " " (or text "") t t))
         (s (replace-regexp-in-string (rx (any (0 . 8) (11 . 31) 127)) "" s t t))
         (s (string-trim s " +" " +")))
    (if (> (length s) cap)
        (concat (substring s 0 cap) "…")
      s)))

(defun agent-shell-log--clean-key (key)
  "Return the property name for KEY (a symbol or string), as in the drawer."
  (let ((case-fold-search nil))
    (upcase (replace-regexp-in-string "[^A-Za-z0-9_-]" "_"
                                      (format "%s" key) t t))))

(defun agent-shell-log--merge-props (base extra)
  "Return BASE, an alist of property names, with the JSON alist EXTRA merged.
Known names keep their place; new ones go last.  The names are those
of the drawer, for looking values up (RISK, PATH, LINE)."
  (let ((result (mapcar (lambda (cell) (cons (car cell) (cdr cell))) base)))
    (dolist (cell extra)
      (let ((key (agent-shell-log--clean-key (car cell)))
            (value (cdr cell)))
        (unless (or (string-empty-p key) (null value)
                    (member key '("SOURCE" "LOG_ID")))
          (let ((known (assoc key result)))
            (if known
                (setcdr known value)
              (setq result (append result (list (cons key value)))))))))
    result))

;;; Buffer state

(cl-defstruct (agent-shell-log-node
               (:constructor agent-shell-log--make-node)
               (:copier nil))
  "One entry shown in a log buffer.
POS is where its text started when last seen: a hint, checked and
found again by `agent-shell-log-node-start' (a marker per entry
would slow every insertion in a long log).  ENTRY is the entry's
params without its text, BODY its diff blocks only (for `d')."
  id parent pos head-length entry todo props body last-descendant sent)

(defvar-local agent-shell-log--nodes nil
  "Hash table from entry id to `agent-shell-log-node'.")
(defvar-local agent-shell-log--pending nil
  "Ids of entries in the WAIT state, oldest first.")
(defvar-local agent-shell-log--file nil
  "The log file the bridge writes for this buffer's session.")

(defun agent-shell-log--todo (value)
  "Return VALUE as a TODO keyword string, or nil."
  (and (stringp value) (not (string-empty-p value)) value))

(defun agent-shell-log--start-p (pos id)
  "Return non-nil when POS is the start of the text of the entry with ID.
An entry's text is one run of the `agent-shell-log-id' property, whose
value is the entry's own id string."
  (and pos (<= (point-min) pos) (< pos (point-max))
       (eq (get-text-property pos 'agent-shell-log-id) id)
       (or (= pos (point-min))
           (not (eq (get-text-property (1- pos) 'agent-shell-log-id) id)))))

(defun agent-shell-log--find-start (id)
  "Return the start of the text of the entry with ID, or nil.
The search goes from the end, where the entries that change are."
  (let ((pos (point-max))
        found)
    (while (and (not found) (> pos (point-min)))
      (setq pos (previous-single-property-change pos 'agent-shell-log-id nil (point-min)))
      (when (eq (get-text-property pos 'agent-shell-log-id) id)
        (setq found pos)))
    found))

(defun agent-shell-log-node-start (node)
  "Return the start of NODE's text in the current buffer, or nil when gone.
The position NODE remembers is checked first, and searched for again
when text before it grew or shrank."
  (save-restriction
    (widen)
    (let ((id (agent-shell-log-node-id node))
          (pos (agent-shell-log-node-pos node)))
      (if (agent-shell-log--start-p pos id)
          pos
        (setf (agent-shell-log-node-pos node) (agent-shell-log--find-start id))))))

(defun agent-shell-log--entry-end (node)
  "Return the position just after NODE's text, or nil when it is gone."
  (when-let ((start (agent-shell-log-node-start node)))
    (save-restriction
      (widen)
      (or (next-single-property-change start 'agent-shell-log-id)
          (point-max)))))

(defun agent-shell-log--kept-blocks (blocks)
  "Return the diff src blocks of BLOCKS, all a node needs of its body."
  (cl-remove-if-not (lambda (block)
                      (and (equal (alist-get 'kind block) "src")
                           (equal (alist-get 'lang block) "diff")))
                    blocks))

(defun agent-shell-log--insert (pos text id)
  "Insert TEXT at POS, marked as belonging to entry ID."
  (goto-char pos)
  (insert (propertize text 'agent-shell-log-id id)))

(defmacro agent-shell-log--editing (buffer &rest body)
  "Run BODY in BUFFER with writes allowed, keeping point and tailing windows."
  (declare (indent 1) (debug t))
  (let ((tail (make-symbol "tail")))
    `(with-current-buffer ,buffer
       (let ((,tail (cl-remove-if-not
                     (lambda (w) (= (window-point w) (point-max)))
                     (get-buffer-window-list (current-buffer) nil t)))
             (inhibit-read-only t))
         (save-excursion (save-restriction (widen) ,@body))
         (dolist (w ,tail) (set-window-point w (point-max)))))))

(defun agent-shell-log--set-pending (node todo)
  "Record NODE's new TODO and keep the pending list in step."
  (let ((id (agent-shell-log-node-id node)))
    (setf (agent-shell-log-node-todo node) todo
          (agent-shell-log-node-sent node) nil)
    (if (equal todo "WAIT")
        (unless (member id agent-shell-log--pending)
          (setq agent-shell-log--pending
                (append agent-shell-log--pending (list id))))
      (setq agent-shell-log--pending (delete id agent-shell-log--pending)))))

;;; Public functions

(defun agent-shell-log-buffer (name)
  "Return the live log buffer for session NAME, creating it if needed."
  (let ((buffer (get-buffer-create (format "*agent-shell-log: %s*" name))))
    (with-current-buffer buffer
      (unless (derived-mode-p 'agent-shell-log-mode)
        (agent-shell-log--reset name)
        (agent-shell-log-mode)))
    buffer))

(defun agent-shell-log--reset (name)
  "Empty the current log buffer, titled for session NAME, keeping its mode."
  (let ((inhibit-read-only t))
    (erase-buffer)
    (insert "#+TITLE: agent-shell log: "
            (agent-shell-log-one-line name)
            "\n#+STARTUP: overview\n" agent-shell-log--todo-line
            "\n" agent-shell-log--no-eval-line "\n\n"))
  (setq agent-shell-log--nodes (make-hash-table :test #'equal)
        agent-shell-log--pending nil))

(defun agent-shell-log-set-file (buffer path)
  "Remember PATH as the on-disk log of BUFFER, for the review commands.
When BUFFER shows another log file's entries (a session that ended
in the same project), it starts empty for the new one: each session
has its own file on disk, and its own live log."
  (with-current-buffer buffer
    (let ((file (and path (expand-file-name path))))
      (when (and file agent-shell-log--file
                 (not (equal file agent-shell-log--file))
                 (derived-mode-p 'agent-shell-log-mode))
        (agent-shell-log--reset
         (if (string-match "\\`\\*agent-shell-log: \\(.*\\)\\*\\'" (buffer-name))
             (match-string 1 (buffer-name))
           (buffer-name))))
      (setq agent-shell-log--file file))
    (when-let ((root (agent-shell-log-root)))
      (setq default-directory (file-name-as-directory root)))))

(defun agent-shell-log-follow-file (buffer path)
  "Make PATH the on-disk log of BUFFER without emptying it.
The bridge goes on in a new file (a part) before a long session's
log grows too large to open; the live buffer stays one view of the
whole session, and the review commands read the newest part."
  (when (and path (buffer-live-p buffer))
    (with-current-buffer buffer
      (setq agent-shell-log--file (expand-file-name path)))))

(defun agent-shell-log--unfold-before (pos)
  "Make the newline just before POS visible, keeping the rest folded.
A folded entry (after `org-overview', or a sparse tree from `!')
hides its subtree up to and including that newline; a heading
inserted at POS would then show glued to the folded heading."
  (when (and (> pos (point-min)) (invisible-p (1- pos)))
    (remove-overlays (1- pos) pos 'invisible 'outline)
    (when (fboundp 'org-fold-region)
      (org-fold-region (1- pos) pos nil))))

(defun agent-shell-log--org-text (params field)
  "Return the org text FIELD of notification PARAMS, or nil when absent."
  (let ((text (alist-get field params)))
    (and (stringp text) (not (string-empty-p text)) text)))

(defun agent-shell-log-insert-entry (buffer entry)
  "Insert ENTRY, the parsed params of a `log/entry' notification, in BUFFER.
The text inserted is ENTRY's `org', rendered by the bridge exactly as
in the log file.  A step goes after the last entry of its parent; an
entry without a known parent goes at the end.  An id already shown is
ignored, so a replayed notification does no harm; an entry without its
text is reported and left to the file."
  (let ((text (agent-shell-log--org-text entry 'org))
        node)
    (agent-shell-log--editing buffer
      (let* ((id (format "%s" (alist-get 'id entry)))
             (parent-id (alist-get 'parent_id entry))
             (parent (and parent-id (gethash parent-id agent-shell-log--nodes))))
        (cond
         ((gethash id agent-shell-log--nodes))
         ((null text)
          (message "agent-shell: log entry %s came without its text; see %s"
                   id (or agent-shell-log--file "the log file")))
         (t
          (let* ((todo (agent-shell-log--todo (alist-get 'todo entry)))
                 (pos (or (and parent
                               (agent-shell-log--entry-end
                                (gethash (agent-shell-log-node-last-descendant parent)
                                         agent-shell-log--nodes)))
                          (point-max))))
            (setq node (agent-shell-log--make-node
                        :id id :parent parent-id
                        :entry (cl-remove-if (lambda (cell) (memq (car cell) '(org body)))
                                             entry)
                        :props (agent-shell-log--merge-props
                                nil (alist-get 'properties entry))
                        :body (agent-shell-log--kept-blocks (alist-get 'body entry))
                        :head-length (agent-shell-log--head-length text)
                        :last-descendant id))
            ;; A heading must start a line, even after a damaged entry.
            (when (and (> pos (point-min)) (not (eq (char-before pos) ?\n)))
              (agent-shell-log--insert pos "\n" (get-text-property (1- pos)
                                                                    'agent-shell-log-id))
              (setq pos (point)))
            (agent-shell-log--insert pos text id)
            (agent-shell-log--unfold-before pos)
            (agent-shell-log-fold-entry pos (+ pos (agent-shell-log-node-head-length node)))
            (setf (agent-shell-log-node-pos node) pos)
            (puthash id node agent-shell-log--nodes)
            ;; Ancestors whose subtree ended where the entry went now end with it.
            (let ((ancestor parent)
                  (after (and parent (agent-shell-log-node-last-descendant parent))))
              (while (and ancestor
                          (equal (agent-shell-log-node-last-descendant ancestor) after))
                (setf (agent-shell-log-node-last-descendant ancestor) id)
                (setq ancestor
                      (let ((pid (agent-shell-log-node-parent ancestor)))
                        (and pid (gethash pid agent-shell-log--nodes))))))
            (agent-shell-log--set-pending node todo))))))
    (when (and node (equal (agent-shell-log-node-todo node) "WAIT"))
      (agent-shell-log-notify buffer entry))
    node))

(defun agent-shell-log--head-length (text)
  "Return the length of the heading line and drawer that start TEXT."
  (if (string-match "^:END:\n" text)
      (match-end 0)
    (length text)))

(defun agent-shell-log--replace-head (node head)
  "Replace the heading line and drawer of NODE with HEAD."
  (when-let ((start (agent-shell-log-node-start node)))
    (delete-region start (+ start (agent-shell-log-node-head-length node)))
    (agent-shell-log--insert start head (agent-shell-log-node-id node))
    (setf (agent-shell-log-node-head-length node) (length head)
          (agent-shell-log-node-pos node) start)
    (agent-shell-log-fold-entry start (+ start (length head)))))

(defun agent-shell-log-apply-update (buffer update)
  "Apply UPDATE, the parsed params of a `log/update' notification, in BUFFER.
The bridge's `org_head' replaces the heading and drawer in place, its
`org_body_append' goes at the end of the entry's body; nothing else
in the buffer is touched."
  (let (node became-wait)
    (agent-shell-log--editing buffer
      (setq node (gethash (format "%s" (alist-get 'id update))
                          agent-shell-log--nodes))
      (when node
        (let* ((todo (agent-shell-log--todo (alist-get 'todo update)))
               (new-props (alist-get 'properties update))
               (append-blocks (alist-get 'body_append update))
               (head (agent-shell-log--org-text update 'org_head))
               (more (agent-shell-log--org-text update 'org_body_append)))
          (when todo
            (setq became-wait (and (equal todo "WAIT")
                                   (not (equal todo (agent-shell-log-node-todo node)))))
            (agent-shell-log--set-pending node todo))
          (when new-props
            (setf (agent-shell-log-node-props node)
                  (agent-shell-log--merge-props
                   (agent-shell-log-node-props node) new-props)))
          (when head
            (agent-shell-log--replace-head node head))
          (when append-blocks
            (setf (agent-shell-log-node-body node)
                  (append (agent-shell-log-node-body node)
                          (agent-shell-log--kept-blocks append-blocks))))
          (when-let ((end (and more (agent-shell-log--entry-end node))))
            (agent-shell-log--insert end more (agent-shell-log-node-id node))))))
    (when became-wait
      (agent-shell-log-notify buffer (agent-shell-log-node-entry node)))
    node))

(defun agent-shell-log--abandon (node reason)
  "Mark NODE FAILED in the buffer with a NOTE of REASON.
The bridge that would render the change is gone, so the heading's
keyword and the drawer are edited here; the file keeps WAIT."
  (let* ((start (or (agent-shell-log-node-start node) (point-max)))
         (end (min (point-max) (+ start (agent-shell-log-node-head-length node))))
         (head (buffer-substring-no-properties start end))
         (note (concat ":NOTE: " (agent-shell-log-one-line reason) "\n"))
         (case-fold-search nil))
    (setq head (replace-regexp-in-string "\\`\\(\\*+ \\)WAIT " "\\1FAILED " head t))
    (setq head (replace-regexp-in-string "^:NOTE: .*\n" "" head t t))
    (when (string-match "^:END:\n\\'" head)
      (setq head (concat (substring head 0 (match-beginning 0)) note
                         (substring head (match-beginning 0)))))
    (agent-shell-log--set-pending node "FAILED")
    (setf (agent-shell-log-node-props node)
          (agent-shell-log--merge-props (agent-shell-log-node-props node)
                                        `((NOTE . ,reason))))
    (agent-shell-log--replace-head node head)))

(defun agent-shell-log-abandon-pending (buffer reason)
  "Mark every step waiting in BUFFER as FAILED, noting REASON.
For steps whose request went away with the bridge: they can no longer
be answered, and must not hold the decision keys."
  (when (buffer-live-p buffer)
    (agent-shell-log--editing buffer
      (dolist (id (copy-sequence agent-shell-log--pending))
        (agent-shell-log--abandon (gethash id agent-shell-log--nodes) reason)))))

(defun agent-shell-log-answerable-p (node)
  "Return non-nil when NODE waits for a decision that can still be sent."
  (and (equal (agent-shell-log-node-todo node) "WAIT")
       (or (null agent-shell-log-answerable-function)
           (funcall agent-shell-log-answerable-function
                    (agent-shell-log-node-id node)))))

(defun agent-shell-log-unsend (buffer id)
  "Forget that a decision was sent for entry ID in BUFFER (it failed)."
  (when (buffer-live-p buffer)
    (with-current-buffer buffer
      (when-let ((node (and agent-shell-log--nodes
                            (gethash id agent-shell-log--nodes))))
        (setf (agent-shell-log-node-sent node) nil)))))

(defun agent-shell-log-pending (buffer)
  "Return the ids of BUFFER's entries waiting for a decision, oldest first."
  (copy-sequence (buffer-local-value 'agent-shell-log--pending buffer)))

(defconst agent-shell-log--display-action
  '((display-buffer-reuse-window
     agent-shell-log--display-in-other-window
     display-buffer-pop-up-window
     display-buffer-below-selected)
    (inhibit-same-window . t))
  "How a waiting step shows its log: never in the selected window.
An existing window that shows no shell or log buffer is reused; else
a window is split off (beside or below, as `split-window-sensibly'
decides, else below the selected one).  Never the shell's window.")

(defun agent-shell-log--display-in-other-window (buffer alist)
  "Show BUFFER in a window of the frame other than the selected one.
Windows showing an agent-shell buffer (a shell, another log) are
left alone; ALIST is the display action's."
  (when-let ((window (cl-find-if
                      (lambda (w)
                        (not (or (eq w (selected-window))
                                 (window-dedicated-p w)
                                 (string-prefix-p "*agent-shell"
                                                  (buffer-name (window-buffer w))))))
                      (window-list nil 'nomini))))
    (window--display-buffer buffer window 'reuse alist)))

(defun agent-shell-log-notify (buffer entry)
  "Draw attention to ENTRY, a step in BUFFER waiting for approval.
Does nothing unless `agent-shell-log-notify-on-wait' is non-nil.
Displays BUFFER without selecting it, then raises a desktop
notification when D-Bus is available, else shows a message."
  (when agent-shell-log-notify-on-wait
    (let ((window (or (get-buffer-window buffer 'visible)
                      (display-buffer buffer agent-shell-log--display-action)))
          (node (with-current-buffer buffer
                  (and agent-shell-log--nodes
                       (gethash (alist-get 'id entry) agent-shell-log--nodes)))))
      ;; Show the waiting step itself, not the top of a long log.
      (when-let ((start (and window node
                             (with-current-buffer buffer
                               (agent-shell-log-node-start node)))))
        (set-window-start window start)
        (set-window-point window start)))
    (let ((text (format "Waiting for approval: %s"
                        (agent-shell-log-one-line (alist-get 'title entry)))))
      (unless (agent-shell-log--desktop-notify text)
        (message "agent-shell: %s" text)))))

(defun agent-shell-log--desktop-notify (body)
  "Show BODY as a desktop notification; return non-nil on success."
  (and (featurep 'dbusbind)
       (getenv "DBUS_SESSION_BUS_ADDRESS")
       (require 'notifications nil t)
       (condition-case nil
           (progn (notifications-notify :title "agent-shell" :body body
                                        :app-name "Emacs" :urgency 'normal)
                  t)
         (error nil))))

;;; Commands

(defun agent-shell-log-node-at-point ()
  "Return the node of the entry at point, or nil."
  (let ((id (or (get-text-property (point) 'agent-shell-log-id)
                (and (> (point) (point-min))
                     (get-text-property (1- (point)) 'agent-shell-log-id)))))
    (and id agent-shell-log--nodes (gethash id agent-shell-log--nodes))))

(defun agent-shell-log-ensure-mode ()
  "Signal a `user-error' unless in an action log buffer."
  (unless (and (derived-mode-p 'agent-shell-log-mode) agent-shell-log--nodes)
    (user-error "Not in a live agent-shell log buffer")))

(defun agent-shell-log-next-step (&optional n)
  "Move to the next entry heading; with N, move N headings."
  (interactive "p")
  (dotimes (_ (or n 1))
    (let ((start (point)))
      (end-of-line)
      (unless (re-search-forward org-outline-regexp-bol nil t)
        (goto-char start)
        (user-error "No next step"))
      (beginning-of-line)))
  (org-reveal))

(defun agent-shell-log-previous-step (&optional n)
  "Move to the previous entry heading; with N, move N headings."
  (interactive "p")
  (dotimes (_ (or n 1))
    (let ((start (point)))
      (beginning-of-line)
      (unless (re-search-backward org-outline-regexp-bol nil t)
        (goto-char start)
        (user-error "No previous step"))))
  (org-reveal))

(defun agent-shell-log-next-wait ()
  "Move to the next step waiting for a decision, wrapping around."
  (interactive)
  (agent-shell-log-ensure-mode)
  (let ((here (line-end-position)) after first)
    (dolist (id agent-shell-log--pending)
      (when-let ((pos (agent-shell-log-node-start (gethash id agent-shell-log--nodes))))
        (when (or (null first) (< pos first)) (setq first pos))
        (when (and (> pos here) (or (null after) (< pos after)))
          (setq after pos))))
    (unless first (user-error "No step is waiting for a decision"))
    (goto-char (or after first))
    (org-reveal)))

(defun agent-shell-log-visit ()
  "Visit the file and line the step at point touched (PATH and LINE).
On a link, such as the one to a full output, follow the link instead."
  (interactive)
  (agent-shell-log-ensure-mode)
  (if (org-in-regexp org-link-bracket-re 1)
      (org-open-at-point)
    (agent-shell-log--visit-step)))

(defun agent-shell-log--visit-step ()
  "Visit the PATH and LINE of the step at point."
  (let* ((node (agent-shell-log-node-at-point))
         ;; A past log opened from its file has no nodes: read the drawer.
         (props (if node
                    (agent-shell-log-node-props node)
                  (unless (org-before-first-heading-p)
                    (agent-shell-log--file-step-props))))
         (path (cdr (assoc "PATH" props)))
         (line (cdr (assoc "LINE" props))))
    (unless (or node props)
      (user-error "No step at point"))
    (unless (and (stringp path) (not (string-empty-p path)))
      (user-error "This step touched no file"))
    (find-file-other-window (expand-file-name path (agent-shell-log-root)))
    (when line
      (goto-char (point-min))
      (forward-line (1- (max 1 (if (numberp line) line (string-to-number line))))))
    (current-buffer)))

(defun agent-shell-log--file-step-props ()
  "Return PATH and LINE of the step at point in a log read from its file.
A log file may hold, besides the entries, headings that carry an
entry's later changes or continue it under another parent; their
drawer names the entry (LOG_UPDATE, CONTINUES) instead of being it.
What such a heading lacks is read from the entry's own drawer."
  (let* ((path (org-entry-get nil "PATH"))
         (line (org-entry-get nil "LINE"))
         (of (and (not (and path line))
                  (or (org-entry-get nil "LOG_UPDATE") (org-entry-get nil "CONTINUES")))))
    (when of
      (org-with-wide-buffer
       (goto-char (point-min))
       (when (re-search-forward (concat "^:LOG_ID: " (regexp-quote of) "[ \t]*$") nil t)
         (setq path (or path (org-entry-get nil "PATH"))
               line (or line (org-entry-get nil "LINE"))))))
    (list (cons "PATH" path) (cons "LINE" line))))

(defun agent-shell-log-sparse-failures ()
  "Display a sparse tree of every FAILED or REJECTED step."
  (interactive)
  (let ((count (org-occur (concat org-outline-regexp-bol
                                  "\\(?:FAILED\\|REJECTED\\) "))))
    (message "%d failed or rejected step%s" count (if (= count 1) "" "s"))
    count))

;;; Mode

(defvar agent-shell-log-mode-map
  (let ((map (make-sparse-keymap)))
    (define-key map (kbd "f") #'agent-shell-log-next-step)
    (define-key map (kbd "M-n") #'agent-shell-log-next-step)
    (define-key map (kbd "b") #'agent-shell-log-previous-step)
    (define-key map (kbd "M-p") #'agent-shell-log-previous-step)
    (define-key map (kbd "w") #'agent-shell-log-next-wait)
    (define-key map (kbd "RET") #'agent-shell-log-visit)
    (define-key map (kbd "o") #'agent-shell-log-visit)
    (define-key map (kbd "!") #'agent-shell-log-sparse-failures)
    (define-key map (kbd "L") #'agent-shell-log-open-file)
    (define-key map (kbd "q") #'quit-window)
    (define-key map [remap org-cycle] #'agent-shell-log-fold-cycle)
    map)
  "Keymap of `agent-shell-log-mode'.")

(define-derived-mode agent-shell-log-mode org-mode "Agent-Log"
  "Major mode of the live, read-only agent-shell action log.
Each step is a heading; steps waiting for your decision carry the
keyword WAIT.  A decision key acts on the waiting step at point,
else on the oldest waiting step; the keyword changes when the
bridge confirms.  Org's own commands (TAB, sparse trees, agenda)
work as usual.

\\{agent-shell-log-mode-map}"
  (setq buffer-read-only t)
  (setq-local buffer-undo-list t)
  ;; Native fontification of every shell block would load sh-mode (which talks in
  ;; the echo area) and cost time per entry; the blocks stay plain.
  (setq-local org-src-fontify-natively nil)
  ;; Exporting the log evaluates nothing in it (see `agent-shell-log--no-eval-line').
  (setq-local org-export-use-babel nil)
  (agent-shell-log-fold-setup)
  (setq agent-shell-log--nodes (make-hash-table :test #'equal)
        agent-shell-log--pending nil))

(provide 'agent-shell-log)
;;; agent-shell-log.el ends here
