;;; agent-shell-context.el --- Hand the agent a region, a buffer, a file or an error  -*- lexical-binding: t; -*-

;; SPDX-License-Identifier: GPL-3.0-or-later

;;; Commentary:

;; The send commands, usable from any buffer: `agent-shell-send-region',
;; `agent-shell-send-buffer', `agent-shell-send-file' and
;; `agent-shell-send-dwim'.  Each puts a mention (`@src/a.py:3-9',
;; `@*compilation*') into the input of the session of the buffer's
;; project, asking which when there are several and starting one when
;; there is none; with a prefix argument the prompt is sent at once.
;;
;; A mention is only a name until the prompt is sent: then
;; `agent-shell-context-capture' reads what each mention of the input
;; names (the region's lines as they are now, the buffer, the file),
;; cuts each to `agent-shell-attachment-max-chars', and the prompt
;; carries them as its `attachments' (see doc/protocol.org); the bridge
;; frames them as data for the model and records them in the log.
;; Mentions typed or completed in the input (agent-shell-mention.el)
;; are resolved the same way, but never attach a file outside the
;; project or one holding credentials: only a send command can, because
;; running it is the user's consent.
;;
;; Works with agent-shell-diagnostics.el (the diagnostic at point, the
;; project's diagnostics) and agent-shell-mention.el (what `@' names).

;;; Code:

(require 'cl-lib)
(require 'subr-x)
(require 'agent-shell-custom)
(require 'agent-shell-session)
(require 'agent-shell-tools)
(require 'agent-shell-transcript)
(require 'agent-shell-diagnostics)
(require 'agent-shell-mention)

(declare-function agent-shell-start "agent-shell" (&optional ask))
(declare-function project-current "project" (&optional maybe-prompt directory))
(declare-function agent-shell-send-input "agent-shell-turn" ())
(declare-function dired-get-marked-files "dired"
                  (&optional localp arg filter distinguish-one-marked error))
(declare-function compilation--message->loc "compile" (cl-x) t)
(declare-function compilation--loc->file-struct "compile" (cl-x) t)
(declare-function compilation--loc->line "compile" (cl-x) t)
(declare-function xref-item-location "xref" (item) t)
(declare-function xref-item-summary "xref" (item) t)
(declare-function xref-location-group "xref" (location))
(declare-function xref-location-line "xref" (location))
(declare-function diff-beginning-of-hunk "diff-mode" (&optional try-harder))
(declare-function diff-end-of-hunk "diff-mode" (&optional style donttrustheader))
(declare-function diff-find-file-name "diff-mode" (&optional old noprompt prefix))
(declare-function magit-current-section "ext:magit-section" ())
(declare-function magit-section-match "ext:magit-section" (condition &optional section))
(declare-function eieio-oref "eieio-core" (obj slot))

(defvar compilation-arguments)
(defvar dired-directory)

;;; Options

(defcustom agent-shell-attachment-max-chars 20000
  "Most characters of one attachment the agent gets.
A longer region, buffer or file is cut, and the transcript, the
model and the log say how much was cut.  The bridge applies the same
cap again (and never more than 200000)."
  :type 'integer
  :group 'agent-shell
  :package-version '(agent-shell . "0.2"))

(defcustom agent-shell-context-lines-around 3
  "Lines shown before and after a diagnostic or an error's line."
  :type 'integer
  :group 'agent-shell
  :package-version '(agent-shell . "0.2"))

(defface agent-shell-context-mention-face '((t :inherit link))
  "Face of a mention a send command put into the input."
  :group 'agent-shell)

;;; Mentions in the input

(defvar-local agent-shell-context-pending nil
  "The attachments captured from the input of the prompt being sent.
A list of alists in the wire shape of `session/prompt'; set when the
input becomes a prompt, taken by `agent-shell-context-take-pending'.")

(defun agent-shell-context--shell-root ()
  "Return the project root of the current shell buffer."
  (and agent-shell--session (agent-shell-session-root agent-shell--session)))

(defun agent-shell-context-display-name (file root)
  "Return FILE as a mention names it: relative to ROOT when inside it."
  (let ((file (expand-file-name file)))
    (if (and root (string-prefix-p (file-name-as-directory (expand-file-name root)) file))
        (file-relative-name file root)
      (abbreviate-file-name file))))

(defun agent-shell-context-mention (spec root)
  "Return the mention text of attachment SPEC for a shell of ROOT."
  (let* ((file (plist-get spec :path))
         (base (cond (file (agent-shell-context-display-name file root))
                     (t (plist-get spec :buffer))))
         (start (plist-get spec :start))
         (end (plist-get spec :end)))
    (concat "@" base
            (cond ((null start) "")
                  ((or (null end) (= start end)) (format ":%d" start))
                  (t (format ":%d-%d" start end))))))

(defun agent-shell-context-insert-mention (spec)
  "Insert the mention of SPEC at the end of the current shell's input."
  (goto-char (point-max))
  (unless (or (<= (point) (agent-shell-session-input-marker agent-shell--session))
              (memq (char-before) '(?\s ?\n)))
    (insert " "))
  (insert (propertize (agent-shell-context-mention spec (agent-shell-context--shell-root))
                      'agent-shell-context-attachment spec
                      'face 'agent-shell-context-mention-face
                      'rear-nonsticky t)
          " "))

;;; Capture when the prompt is sent

(defun agent-shell-context--cap (text)
  "Return (TEXT-CUT . ORIGINAL-LENGTH-OR-NIL) for TEXT and the cap."
  (let ((cap (max 1 agent-shell-attachment-max-chars)))
    (if (> (length text) cap)
        (cons (substring text 0 cap) (length text))
      (cons text nil))))

(defun agent-shell-context--file-buffer (file)
  "Return a live buffer visiting FILE, or nil."
  (and file (find-buffer-visiting file)))

(defun agent-shell-context--lines (source start end)
  "Return lines START to END (nil: to the end) of SOURCE, a buffer or a file."
  (let ((grab (lambda ()
                (save-restriction
                  (widen)
                  (save-excursion
                    (goto-char (point-min))
                    (forward-line (1- (or start 1)))
                    (let ((from (point)))
                      (if end (forward-line (1+ (- end (or start 1))))
                        (goto-char (point-max)))
                      (buffer-substring-no-properties from (point))))))))
    (if (bufferp source)
        (with-current-buffer source (funcall grab))
      (with-temp-buffer
        (let ((coding-system-for-read 'utf-8))
          (insert-file-contents source))
        (funcall grab)))))

(defun agent-shell-context--capture-text (spec)
  "Return the text SPEC names now, or signal a `user-error'."
  (let* ((file (plist-get spec :path))
         (live (or (let ((b (plist-get spec :buffer-object)))
                     (and (buffer-live-p b) b))
                   (agent-shell-context--file-buffer file)
                   (and (plist-get spec :buffer) (not file)
                        (get-buffer (plist-get spec :buffer))))))
    (cond
     ((plist-get spec :text))
     ((eq (plist-get spec :kind) 'diagnostics)
      (agent-shell-diagnostics-project-text (plist-get spec :root)))
     (live (agent-shell-context--lines live (plist-get spec :start) (plist-get spec :end)))
     ((and file (file-readable-p file) (not (file-directory-p file)))
      (agent-shell-context--lines file (plist-get spec :start) (plist-get spec :end)))
     (t (user-error "Cannot attach %s: it is gone" (or file (plist-get spec :buffer)))))))

(defun agent-shell-context--wire (spec name)
  "Return the `session/prompt' attachment of SPEC, mentioned as NAME."
  (let* ((captured (agent-shell-context--cap (agent-shell-context--capture-text spec)))
         (file (plist-get spec :path))
         (buffer (plist-get spec :buffer)))
    `((name . ,(string-remove-prefix "@" name))
      (kind . ,(symbol-name (plist-get spec :kind)))
      ,@(and file `((path . ,(expand-file-name file))))
      ,@(and buffer `((buffer . ,buffer)))
      ,@(and (plist-get spec :start) `((startLine . ,(plist-get spec :start))))
      ,@(and (plist-get spec :end) `((endLine . ,(plist-get spec :end))))
      (text . ,(car captured))
      ,@(and (cdr captured) `((originalChars . ,(cdr captured))))
      (explicit . ,(if (plist-get spec :explicit) t :json-false)))))

(defun agent-shell-context--typed-mentions (start end)
  "Return (SPEC . NAME) of each @ mention typed between START and END.
Mentions a send command put there carry their spec already and are
left to `agent-shell-context-capture'."
  (let ((root (agent-shell-context--shell-root))
        (found nil))
    (save-excursion
      ;; From the prompt's space: a mention may open the input.
      (goto-char (max (point-min) (1- start)))
      (while (re-search-forward "\\(?:^\\|[ \t\n]\\)\\(@[^ \t\n]+\\)" end t)
        (let ((name (match-string-no-properties 1))
              (at (match-beginning 1)))
          (unless (get-text-property at 'agent-shell-context-attachment)
            (when-let ((spec (agent-shell-mention-resolve (substring name 1) root)))
              (push (cons spec name) found))))))
    (nreverse found)))

(defun agent-shell-context-capture ()
  "Capture the attachments the current input mentions, into the pending list.
Return the list.  A typed mention that names a file outside the
project, or one holding credentials, is not attached; a notice says
how to send it."
  (let* ((start (agent-shell-session-input-marker agent-shell--session))
         (end (point-max))
         (specs nil)
         (pos start))
    (while (< pos end)
      (let ((spec (get-text-property pos 'agent-shell-context-attachment))
            (next (next-single-property-change pos 'agent-shell-context-attachment nil end)))
        (when spec
          (push (cons spec (buffer-substring-no-properties pos next)) specs))
        (setq pos next)))
    (setq specs (append (nreverse specs) (agent-shell-context--typed-mentions start end)))
    (let ((out nil))
      (dolist (pair specs)
        (let ((refusal (and (not (plist-get (car pair) :explicit))
                            (agent-shell-mention-refusal (car pair)
                                                         (agent-shell-context--shell-root)))))
          (if refusal
              (agent-shell-transcript-notice
               (format "Not attached: %s %s; send it with M-x agent-shell-send-file"
                       (cdr pair) refusal))
            (push (agent-shell-context--wire (car pair) (cdr pair)) out))))
      (setq agent-shell-context-pending (nreverse out)))))

(defun agent-shell-context-take-pending ()
  "Return the pending attachments as a vector and forget them."
  (prog1 (vconcat agent-shell-context-pending)
    (setq agent-shell-context-pending nil)))

(defun agent-shell-context--size (item)
  "Return the size text of the attachment ITEM."
  (let* ((text (alist-get 'text item))
         (lines (with-temp-buffer (insert text) (count-lines (point-min) (point-max))))
         (original (alist-get 'originalChars item)))
    (format "%d line%s, %s" lines (if (= lines 1) "" "s")
            (if original
                (format "%d of %d chars: cut at %d" (length text) original
                        agent-shell-attachment-max-chars)
              (format "%d chars" (length text))))))

(defun agent-shell-context-show-pending ()
  "Show each pending attachment in the transcript as one folded line."
  (dolist (item agent-shell-context-pending)
    (agent-shell-transcript-attachment
     (format "%s (%s)" (alist-get 'name item) (agent-shell-context--size item))
     (alist-get 'text item))))

(defun agent-shell-context-on-result (result)
  "Show what the bridge refused of the prompt's attachments, from RESULT."
  (dolist (no (append (alist-get 'refused result) nil))
    (agent-shell-transcript-notice
     (format "Not attached: %s (%s)" (alist-get 'name no) (alist-get 'reason no)))))

;;; Where a send lands

(defun agent-shell-context--shells ()
  "Return the live shell buffers that have a project root."
  (cl-remove-if-not
   (lambda (b)
     (and (eq (buffer-local-value 'major-mode b) 'agent-shell-mode)
          (buffer-local-value 'agent-shell--session b)
          (agent-shell-session-root (buffer-local-value 'agent-shell--session b))))
   (buffer-list)))

(defun agent-shell-context--root-of (buffer)
  "Return the root of the shell BUFFER, a directory name."
  (file-name-as-directory
   (file-truename (agent-shell-session-root (buffer-local-value 'agent-shell--session buffer)))))

(defun agent-shell-context-shell-for (dir)
  "Return the shell buffer for DIR: its project's, chosen or started.
Shells whose root holds DIR are candidates; with several, ask which.
When DIR is in no project at all (a file in /tmp, say), any shell is a
candidate: sending such a file to a session is what the user asked."
  (let* ((true (file-name-as-directory (file-truename dir)))
         (all (agent-shell-context--shells))
         (shells (cl-remove-if-not
                  (lambda (b) (string-prefix-p (agent-shell-context--root-of b) true))
                  all)))
    (when (and (null shells) all (null (project-current nil true)))
      (setq shells all))
    (cond
     ((null shells)
      (let ((default-directory true))
        (save-window-excursion (agent-shell-start))))
     ((null (cdr shells)) (car shells))
     (t (get-buffer (completing-read "Send to session: " (mapcar #'buffer-name shells)
                                     nil t))))))

(defun agent-shell-context--source-dir ()
  "Return the directory of this buffer: its project gets what is sent."
  (cond ((buffer-file-name) (file-name-directory (buffer-file-name)))
        ((and (derived-mode-p 'dired-mode) (stringp dired-directory))
         (expand-file-name dired-directory))
        (t default-directory)))

(defun agent-shell-context-deliver (specs send)
  "Put the mentions of SPECS into the input of this buffer's session.
With SEND non-nil, send the prompt at once.  Return the shell buffer."
  (let ((shell (agent-shell-context-shell-for (agent-shell-context--source-dir))))
    (with-current-buffer shell
      (dolist (spec specs)
        (agent-shell-context-insert-mention (plist-put spec :explicit t)))
      (when send
        (goto-char (point-max))
        (agent-shell-send-input)))
    (pop-to-buffer shell)
    (goto-char (point-max))
    shell))

;;; What a command sends

(defun agent-shell-context--line (pos)
  "Return the line number of POS, counting from the buffer's start."
  (save-restriction (widen) (line-number-at-pos pos)))

(defun agent-shell-context--where ()
  "Return the :path or :buffer part of a spec for the current buffer."
  (if (buffer-file-name)
      (list :path (buffer-file-name) :buffer-object (current-buffer))
    (list :buffer (buffer-name) :buffer-object (current-buffer))))

(defun agent-shell-context-region-spec (start end &optional kind)
  "Return the spec of the lines from START to END of this buffer, as KIND."
  (let* ((first (agent-shell-context--line start))
         (last (agent-shell-context--line
                (if (and (> end start)
                         (save-excursion (goto-char end) (bolp)))
                    (1- end)
                  end))))
    (append (list :kind (or kind 'region) :start first :end last)
            (agent-shell-context--where))))

(defun agent-shell-context--numbered (source from to)
  "Return lines FROM to TO of SOURCE (a buffer or file), each with its number."
  (let ((n from))
    (mapconcat (lambda (line) (prog1 (format "%5d  %s" n line) (cl-incf n)))
               (split-string (string-remove-suffix
                              "\n" (agent-shell-context--lines source from to))
                             "\n")
               "\n")))

(defun agent-shell-context--around (source line)
  "Return (FROM TO TEXT): the lines of SOURCE around LINE, numbered."
  (let* ((from (max 1 (- line agent-shell-context-lines-around)))
         (to (+ line agent-shell-context-lines-around)))
    (list from to (agent-shell-context--numbered source from to))))

(defun agent-shell-context--located-spec (kind file line header &optional source)
  "Return a spec of KIND: HEADER, then lines of FILE around LINE.
SOURCE is where the lines are read (default: a buffer visiting FILE,
else FILE)."
  (let* ((source (or source (agent-shell-context--file-buffer file) file))
         (around (agent-shell-context--around source line)))
    (list :kind kind :path file :start line
          :text (format "%s\n%s:%d\n%s\n" header
                        (agent-shell-context-display-name file nil) line (nth 2 around)))))

(defun agent-shell-context-diagnostic-spec ()
  "Return a spec for the Flymake or Flycheck diagnostic at point, or nil."
  (when-let ((diag (agent-shell-diagnostics-at-point)))
    (let ((line (plist-get diag :line)))
      (agent-shell-context--located-spec
       'diagnostic (or (buffer-file-name) (buffer-name)) line
       (format "%s at line %d (%s): %s" (plist-get diag :type) line
               (plist-get diag :backend) (plist-get diag :text))
       (current-buffer)))))

(defun agent-shell-context--compilation-spec ()
  "Return a spec for the error or match on this line of a compilation buffer."
  (when-let* ((pos (text-property-not-all (line-beginning-position) (line-end-position)
                                          'compilation-message nil))
              (message (get-text-property pos 'compilation-message))
              (loc (compilation--message->loc message))
              (spec (car (compilation--loc->file-struct loc)))
              (file (expand-file-name (car spec) (or (cadr spec) default-directory)))
              (line (compilation--loc->line loc)))
    (when (file-readable-p file)
      (agent-shell-context--located-spec
       'compilation file line
       (format "From %s%s:\n%s" (buffer-name)
               (if (consp compilation-arguments)
                   (format " (%s)" (car compilation-arguments)) "")
               (buffer-substring-no-properties (line-beginning-position)
                                               (line-end-position)))))))

(defun agent-shell-context--xref-spec ()
  "Return a spec for the xref item on this line, or nil."
  (when-let* ((pos (text-property-not-all (line-beginning-position) (line-end-position)
                                          'xref-item nil))
              (item (get-text-property pos 'xref-item))
              (location (xref-item-location item))
              (file (ignore-errors (xref-location-group location)))
              (line (ignore-errors (xref-location-line location))))
    (when (and (stringp file) (integerp line) (file-readable-p file))
      (agent-shell-context--located-spec
       'compilation (expand-file-name file) line
       (format "From %s: %s" (buffer-name) (xref-item-summary item))))))

(defun agent-shell-context--hunk-spec ()
  "Return a spec for the diff hunk at point (magit or `diff-mode'), or nil."
  (cond
   ((and (fboundp 'magit-current-section)
         (derived-mode-p 'magit-diff-mode 'magit-status-mode 'magit-revision-mode)
         (magit-section-match 'hunk))
    (let ((section (magit-current-section))
          (from 'start) (to 'end))          ; slot names, read when magit is loaded
      (list :kind 'hunk :buffer (buffer-name)
            :text (buffer-substring-no-properties (eieio-oref section from)
                                                  (eieio-oref section to)))))
   ((derived-mode-p 'diff-mode)
    (save-excursion
      (let* ((start (progn (diff-beginning-of-hunk t) (point)))
             (end (progn (diff-end-of-hunk) (point)))
             (file (ignore-errors (save-excursion (goto-char start)
                                                  (diff-find-file-name nil t)))))
        (list :kind 'hunk :buffer (buffer-name)
              :text (concat (if file (format "Hunk of %s:\n" file) "")
                            (buffer-substring-no-properties start end))))))))

(defun agent-shell-context--function-spec ()
  "Return a spec for the function at point, or nil."
  (when-let ((bounds (bounds-of-thing-at-point 'defun)))
    (agent-shell-context-region-spec (car bounds) (cdr bounds) 'function)))

(defun agent-shell-context--dired-specs ()
  "Return a file spec for each marked file of this Dired buffer."
  (let ((files (cl-remove-if #'file-directory-p (dired-get-marked-files))))
    (unless files (user-error "No marked files (directories are not sent)"))
    (mapcar (lambda (f) (list :kind 'file :path f)) files)))

;;; Commands

;;;###autoload
(defun agent-shell-send-region (start end &optional send)
  "Mention the lines of the region from START to END in the session's input.
The mention is @PATH:START-END (or @BUFFER:START-END); the lines are
read when the prompt is sent.  With a prefix argument SEND, send now."
  (interactive "r\nP")
  (when (and (called-interactively-p 'any) (not (use-region-p)))
    (user-error "No active region"))
  (let ((spec (agent-shell-context-region-spec start end)))
    (deactivate-mark)
    (agent-shell-context-deliver (list spec) send)))

;;;###autoload
(defun agent-shell-send-buffer (&optional send)
  "Mention the whole current buffer in the session's input.
File buffers and others (*compilation*, *Help*) alike; the text is
read when the prompt is sent.  With a prefix argument SEND, send now."
  (interactive "P")
  (agent-shell-context-deliver (list (append (list :kind 'buffer)
                                             (agent-shell-context--where)))
                               send))

;;;###autoload
(defun agent-shell-send-file (&optional send)
  "Mention the visited file, or in Dired the marked files, in the session's input.
With a prefix argument SEND, send the prompt now."
  (interactive "P")
  (agent-shell-context-deliver
   (cond ((derived-mode-p 'dired-mode) (agent-shell-context--dired-specs))
         ((buffer-file-name) (list (list :kind 'file :path (buffer-file-name))))
         (t (user-error "This buffer visits no file; try `agent-shell-send-buffer'")))
   send))

(defun agent-shell-context-dwim-specs ()
  "Return the specs `agent-shell-send-dwim' would send from here."
  (cond
   ((use-region-p) (list (agent-shell-context-region-spec (region-beginning) (region-end))))
   ((agent-shell-context-diagnostic-spec) (list (agent-shell-context-diagnostic-spec)))
   ((and (derived-mode-p 'compilation-mode) (agent-shell-context--compilation-spec))
    (list (agent-shell-context--compilation-spec)))
   ((and (derived-mode-p 'xref--xref-buffer-mode) (agent-shell-context--xref-spec))
    (list (agent-shell-context--xref-spec)))
   ((agent-shell-context--hunk-spec) (list (agent-shell-context--hunk-spec)))
   ((derived-mode-p 'dired-mode) (agent-shell-context--dired-specs))
   ((agent-shell-context--function-spec) (list (agent-shell-context--function-spec)))
   (t (user-error "Nothing here to send: no region, diagnostic, error, hunk or function"))))

;;;###autoload
(defun agent-shell-send-dwim (&optional send)
  "Mention what is at point in the session's input.
The region if active; else the Flymake or Flycheck diagnostic at
point with the lines around it; else, in *compilation*, *grep* or an
xref buffer, the message of this line with its location and lines;
else the diff hunk at point (magit or `diff-mode'); else in Dired
the marked files; else the function at point.  With a prefix argument
SEND, send the prompt now."
  (interactive "P")
  (let ((specs (agent-shell-context-dwim-specs)))
    (when (use-region-p) (deactivate-mark))
    (agent-shell-context-deliver specs send)))

(provide 'agent-shell-context)
;;; agent-shell-context.el ends here
