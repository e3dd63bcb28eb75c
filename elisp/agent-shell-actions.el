;;; agent-shell-actions.el --- Write tools: buffer edits with snapshots  -*- lexical-binding: t; -*-

;; SPDX-License-Identifier: GPL-3.0-or-later

;;; Commentary:

;; The action tools change files on the agent's behalf after the bridge
;; has obtained the user's approval: `replace_region', `insert_text',
;; `replace_pattern', `write_file' and `magit_stage'.
;;
;; Every edit goes through the buffer visiting the file, as one undo
;; unit, and is saved without any prompt.  An edit is refused when the
;; user has unsaved changes in that buffer, when the file changed since
;; the agent read it (`expected_sha256'), or when the new text cannot be
;; encoded in the file's coding system.  Files keep their coding system
;; and end-of-line style.
;;
;; Before each write the old bytes go to
;; <root>/.agent-shell/snapshots/<op_id>/ and a manifest line is appended
;; to <root>/.agent-shell/snapshots/index.jsonl.  agent-shell-undo.el
;; uses that history to put back every file a turn changed.
;;
;; Dispatch and shared helpers live in agent-shell-tools.el.

;;; Code:

(require 'cl-lib)
(require 'agent-shell-session)
(require 'subr-x)
(require 'agent-shell-tools)
(require 'agent-shell-tools-process)
(require 'agent-shell-json)

(defvar magit-git-global-arguments)
(declare-function magit-stage-file "ext:magit-apply" (file))
(declare-function agent-shell-transcript-notice "agent-shell-transcript" (text))

;;; Options

(defcustom agent-shell-actions-diff-max-chars 20000
  "Largest unified diff, in characters, returned with an action's result."
  :type 'integer
  :group 'agent-shell-tools
  :package-version '(agent-shell . "0.1.0"))

(defcustom agent-shell-actions-use-magit t
  "Whether `magit_stage' stages through magit when magit is loaded."
  :type 'boolean
  :group 'agent-shell-tools
  :package-version '(agent-shell . "0.1.0"))

;;; Snapshots

(defconst agent-shell-actions--snapshot-dir ".agent-shell/snapshots/"
  "Directory under a project root holding snapshots and their index.")

(defun agent-shell-actions--snapshot-root (root)
  "Return the snapshot directory of ROOT, creating it with a .gitignore."
  (let ((dir (expand-file-name agent-shell-actions--snapshot-dir root)))
    (unless (file-directory-p dir)
      (make-directory dir t))
    (let ((ignore (expand-file-name ".gitignore" dir)))
      (unless (file-exists-p ignore)
        (let ((coding-system-for-write 'utf-8-unix))
          (write-region "*\n" nil ignore nil 'silent))))
    dir))

(defun agent-shell-actions-index-file (root)
  "Return the snapshot index file of ROOT."
  (expand-file-name "index.jsonl" (expand-file-name agent-shell-actions--snapshot-dir root)))

(defun agent-shell-actions--check-op-id (op-id)
  "Return OP-ID when it is safe as a directory name, else signal."
  (unless (and (stringp op-id)
               (string-match-p "\\`[A-Za-z0-9][A-Za-z0-9._-]\\{0,127\\}\\'" op-id))
    (agent-shell-tools-error "Context op_id is missing or not a plain identifier"))
  op-id)

(defun agent-shell-actions--snapshot-name (file context)
  "Return the name, under an operation's snapshot directory, for FILE in CONTEXT."
  (let ((rel (agent-shell-tools-relative file context)))
    (if (file-name-absolute-p rel)
        (concat "_abs" rel)
      rel)))

(defun agent-shell-actions--save-snapshot (file context)
  "Copy the current bytes of FILE into the snapshot of CONTEXT's operation.
Return the snapshot file name relative to the snapshot directory."
  (let* ((root (agent-shell-tools-context-root context))
         (op-id (agent-shell-actions--check-op-id (alist-get 'op_id context)))
         (name (concat op-id "/" (agent-shell-actions--snapshot-name file context)))
         (target (expand-file-name name (agent-shell-actions--snapshot-root root))))
    (make-directory (file-name-directory target) t)
    (copy-file file target t t t)
    name))

(defun agent-shell-actions-append-index (root entry)
  "Append ENTRY, an alist, as one JSON line to the snapshot index of ROOT.
The line is UTF-8, written as bytes."
  (agent-shell-actions--snapshot-root root)
  (let ((coding-system-for-write 'no-conversion)
        (line (concat (agent-shell-json-bytes entry) "\n")))
    (write-region line nil (agent-shell-actions-index-file root) t 'silent)))

(defun agent-shell-actions-now ()
  "Return the current time as an ISO 8601 string."
  (format-time-string "%FT%T%z"))

(defun agent-shell-actions-read-index (root)
  "Return the entries of ROOT's snapshot index, oldest first, as alists."
  (let ((file (agent-shell-actions-index-file root)))
    (when (file-exists-p file)
      (with-temp-buffer
        (let ((coding-system-for-read 'utf-8-unix))
          (insert-file-contents file))
        (delq nil
              (mapcar (lambda (line)
                        (ignore-errors
                          (json-parse-string line :object-type 'alist
                                             :null-object nil
                                             :false-object nil)))
                      (split-string (buffer-string) "\n" t)))))))

;;; Buffers and saving

(defun agent-shell-actions--line-count ()
  "Return the number of lines of the current buffer."
  (count-lines (point-min) (point-max)))

(defun agent-shell-actions-normalize-newlines (text)
  "Return TEXT with CRLF and CR line ends turned into newlines."
  (replace-regexp-in-string "\r\n?" "\n" text t t))

(defun agent-shell-actions-unsaved-message (buffer)
  "Return the reason an edit of BUFFER is refused, BUFFER being modified."
  (format "The user has unsaved changes in buffer `%s'; ask them to save or revert it first"
          (buffer-name buffer)))

(defun agent-shell-actions--buffer (file)
  "Return an unmodified buffer visiting FILE whose text matches the disk.
Refuse when the user has unsaved changes in it."
  (let ((buffer (find-buffer-visiting file)))
    (when (and buffer (buffer-modified-p buffer))
      (agent-shell-tools-error "%s" (agent-shell-actions-unsaved-message buffer)))
    (if (not buffer)
        (let ((inhibit-message t)
              (enable-local-variables :safe)
              (large-file-warning-threshold nil)
              (create-lockfiles nil))
          (find-file-noselect file))
      (unless (verify-visited-file-modtime buffer)
        (with-current-buffer buffer
          (let ((inhibit-message t))
            (revert-buffer t t t))))
      buffer)))

(defun agent-shell-actions--save (file)
  "Save the current buffer to FILE without prompting.
FILE is the buffer's file name or its true name.  The user's
`before-save-hook' is not run: what lands on disk must be exactly the
text the user approved.  No backup file is made (the snapshot is the
backup)."
  (let ((coding (or buffer-file-coding-system 'utf-8-unix)))
    ;; A pure-ASCII file is visited as `undecided'; saving non-ASCII text
    ;; in it would ask the user for a coding system, so settle on UTF-8.
    (when (eq (coding-system-type coding) 'undecided)
      (setq coding (coding-system-change-text-conversion coding 'utf-8))
      (setq buffer-file-coding-system coding))
    (when-let ((pos (unencodable-char-position (point-min) (point-max) coding)))
      (agent-shell-tools-error
       "The new text has a character (%s) that the file's coding system %s cannot encode"
       (string (char-after pos)) coding))
    (let ((before-save-hook nil)
          (write-contents-functions nil)
          (require-final-newline nil)
          (backup-inhibited t)
          (create-lockfiles nil)
          (save-silently t)
          (inhibit-message t)
          (coding-system-for-write nil))
      ;; The same name is checked first: a remote buffer's (TRAMP) name is
      ;; never resolved on its host here.
      (unless (or (equal (buffer-file-name) file)
                  (equal (file-truename (buffer-file-name)) file))
        (error "Buffer does not visit %s" file))
      (basic-save-buffer))))

(defun agent-shell-actions-edit-buffer (buffer file edit)
  "Call EDIT in BUFFER as one undo unit, then save the buffer to FILE.
If EDIT or saving fails, the buffer's text is restored."
  (with-current-buffer buffer
    (save-excursion
      (save-restriction
        (widen)
        ;; The boundary keeps earlier changes out of this edit's undo unit.
        (undo-boundary)
        (let ((group (prepare-change-group))
              (inhibit-read-only t)
              (create-lockfiles nil)
              (done nil))
          (unwind-protect
              (progn
                (activate-change-group group)
                (funcall edit)
                (agent-shell-actions--save file)
                (setq done t))
            (if done
                (progn (undo-amalgamate-change-group group)
                       (accept-change-group group))
              (cancel-change-group group)
              (set-buffer-modified-p nil)))
          (undo-boundary))))))

(defun agent-shell-actions--diff (old-file new-file label coding)
  "Return a bounded unified diff from OLD-FILE to NEW-FILE, named LABEL.
OLD-FILE nil means the file did not exist.  CODING decodes the files'
text.  Return (DIFF ADDED REMOVED)."
  (let* ((agent-shell-tools-process-coding coding)
         (result (agent-shell-tools-run
                  (file-name-directory new-file) "diff" "-u"
                  ;; A new file's old name is /dev/null, as git writes it.
                  "--label" (if old-file (concat "a/" label) "/dev/null")
                  "--label" (concat "b/" label)
                  (or old-file null-device) new-file))
         (text (if (memql (car result) '(0 1)) (cdr result) ""))
         (added 0)
         (removed 0))
    (dolist (line (split-string text "\n"))
      (cond ((string-prefix-p "+++ " line))
            ((string-prefix-p "--- " line))
            ((string-prefix-p "+" line) (setq added (1+ added)))
            ((string-prefix-p "-" line) (setq removed (1+ removed)))))
    (list (agent-shell-tools-json-safe
           (if (> (length text) agent-shell-actions-diff-max-chars)
               (concat (substring text 0 agent-shell-actions-diff-max-chars)
                       "\n[diff truncated]\n")
             text))
          added removed)))

(defun agent-shell-actions--write (path context edit &optional create)
  "Apply EDIT to the buffer of PATH in CONTEXT with every safety check.
EDIT is called in the buffer, widened, and returns an alist of extra
result fields.  With CREATE non-nil the file may be missing and its
directories are created.  Return the tool result."
  (let* ((file (agent-shell-tools-resolve path context t))
         (root (agent-shell-tools-context-root context))
         (rel (agent-shell-tools-relative file context))
         (existed (file-exists-p file))
         (expected (alist-get 'expected_sha256 context)))
    (agent-shell-actions--check-op-id (alist-get 'op_id context))
    (when (file-directory-p file)
      (agent-shell-tools-error "`%s' is a directory, not a file" path))
    (unless (or existed create)
      (agent-shell-tools-error "No such file: %s (use write_file to create it)" path))
    (when (and existed (not (file-writable-p file)))
      (agent-shell-tools-error "File `%s' is not writable" path))
    (let ((sha-before (and existed (agent-shell-tools-sha256-file file))))
      (when (and (stringp expected) (not (equal expected sha-before)))
        (agent-shell-tools-error
         "File `%s' changed since you last read it (the user may have edited or deleted it); read it again before editing"
         path))
      (let* ((fresh (not (find-buffer-visiting file)))
             (buffer (progn (unless existed
                              (make-directory (file-name-directory file) t))
                            (agent-shell-actions--buffer file)))
             (snapshot (and existed (agent-shell-actions--save-snapshot file context)))
             (extra nil)
             (done nil))
        (unwind-protect
            (progn
              (agent-shell-actions-edit-buffer
               buffer file (lambda () (setq extra (funcall edit))))
              (setq done t))
          (unless done
            ;; A refused edit leaves neither a snapshot nor a buffer it opened.
            (when snapshot
              (delete-directory
               (expand-file-name (alist-get 'op_id context)
                                 (agent-shell-actions--snapshot-root root))
               t))
            (when (and fresh (buffer-live-p buffer))
              (with-current-buffer buffer (set-buffer-modified-p nil))
              (kill-buffer buffer))))
        (let* ((sha-after (agent-shell-tools-sha256-file file))
               (old (and snapshot
                         (expand-file-name snapshot (agent-shell-actions--snapshot-root root))))
               (diff (agent-shell-actions--diff
                      old file rel
                      (buffer-local-value 'buffer-file-coding-system buffer))))
          (agent-shell-actions-append-index
           root
           `((op_id . ,(alist-get 'op_id context))
             (turn_id . ,(or (alist-get 'turn_id context) :null))
             (session_id . ,(or (alist-get 'session_id context) :null))
             (path . ,rel)
             (existed . ,(agent-shell-tools-bool existed))
             (snapshot . ,(or snapshot :null))
             (sha256_before . ,(or sha-before :null))
             (sha256_after . ,sha-after)
             (time . ,(agent-shell-actions-now))))
          `((path . ,rel)
            (created . ,(agent-shell-tools-bool (not existed)))
            (sha256_before . ,(or sha-before :null))
            (sha256_after . ,sha-after)
            (coding_system . ,(symbol-name
                               (buffer-local-value 'buffer-file-coding-system buffer)))
            (diff . ,(nth 0 diff))
            (lines_added . ,(nth 1 diff))
            (lines_removed . ,(nth 2 diff))
            (lines_changed . ,(max (nth 1 diff) (nth 2 diff)))
            ,@extra))))))

(defun agent-shell-actions--goto-line (line)
  "Move to the start of LINE (1-based) in the current buffer."
  (goto-char (point-min))
  (forward-line (1- line)))

(defun agent-shell-actions--strip-final-newline (text)
  "Return TEXT without one trailing newline."
  (if (string-suffix-p "\n" text) (substring text 0 -1) text))

;;; Tools

(defun agent-shell-actions-replace-region (args context)
  "Handle `replace_region' with ARGS in CONTEXT.
Lines START_LINE..END_LINE (1-based, inclusive) are replaced by
NEW_TEXT; a trailing newline in NEW_TEXT is optional, and an empty
NEW_TEXT deletes the lines."
  (let ((path (agent-shell-tools-arg args 'path 'string t))
        (start (agent-shell-tools-arg args 'start_line 'integer t))
        (end (agent-shell-tools-arg args 'end_line 'integer t))
        (new-text (agent-shell-actions-normalize-newlines
                   (agent-shell-tools-arg args 'new_text 'string t)))
        (expected (let ((text (agent-shell-tools-arg args 'expected_text 'string)))
                    (and text (agent-shell-actions-normalize-newlines text)))))
    (agent-shell-actions--write
     path context
     (lambda ()
       (let ((count (agent-shell-actions--line-count)))
         (unless (and (<= 1 start) (<= start end) (<= end count))
           (agent-shell-tools-error
            "Lines %d..%d are outside the file, which has %d lines" start end count))
         (agent-shell-actions--goto-line start)
         (let* ((beg (point))
                (stop (progn (agent-shell-actions--goto-line end) (line-end-position)))
                (current (buffer-substring-no-properties beg stop)))
           (when (and expected
                      (not (string= (agent-shell-actions--strip-final-newline expected)
                                    current)))
             (agent-shell-tools-error
              "Lines %d..%d of %s no longer hold the expected text; read the file again"
              start end path))
           (if (string-empty-p new-text)
               ;; Delete the lines together with their line ends.
               (delete-region beg (min (point-max) (1+ stop)))
             (delete-region beg stop)
             (goto-char beg)
             (insert (agent-shell-actions--strip-final-newline new-text)))
           `((start_line . ,start) (end_line . ,end))))))))

(defun agent-shell-actions-insert-text (args context)
  "Handle `insert_text' with ARGS in CONTEXT.
TEXT is inserted as whole lines before LINE; LINE one past the last
line appends."
  (let ((path (agent-shell-tools-arg args 'path 'string t))
        (line (agent-shell-tools-arg args 'line 'integer t))
        (text (agent-shell-actions-normalize-newlines
               (agent-shell-tools-arg args 'text 'string t))))
    (when (string-empty-p text)
      (agent-shell-tools-error "Argument `text' is empty; nothing to insert"))
    (agent-shell-actions--write
     path context
     (lambda ()
       (let ((count (agent-shell-actions--line-count)))
         (unless (<= 1 line (1+ count))
           (agent-shell-tools-error
            "Line %d is outside 1..%d (the file has %d lines)" line (1+ count) count))
         (let ((text (if (string-suffix-p "\n" text) text (concat text "\n"))))
           (if (> line count)
               (progn (goto-char (point-max))
                      (unless (or (bobp) (eq (char-before) ?\n)) (insert "\n"))
                      (insert text))
             (agent-shell-actions--goto-line line)
             (insert text)))
         `((line . ,line)))))))

(defun agent-shell-actions-replace-pattern (args context)
  "Handle `replace_pattern' with ARGS in CONTEXT.
PATTERN is an Emacs regexp unless LITERAL is true; in the regexp case
REPLACEMENT may use \\& and \\N.  Zero matches is an error."
  (let ((path (agent-shell-tools-arg args 'path 'string t))
        (pattern (agent-shell-tools-arg args 'pattern 'string t))
        (replacement (agent-shell-actions-normalize-newlines
                      (agent-shell-tools-arg args 'replacement 'string t)))
        (literal (agent-shell-tools-arg args 'literal 'boolean)))
    (when (string-empty-p pattern)
      (agent-shell-tools-error "Argument `pattern' must not be empty"))
    (unless literal
      (condition-case err
          (string-match-p pattern "")
        (invalid-regexp
         (agent-shell-tools-error "Invalid Emacs regexp `%s': %s" pattern (cadr err)))))
    (agent-shell-actions--write
     path context
     (lambda ()
       (let ((case-fold-search nil)
             (regexp (if literal (regexp-quote pattern) pattern))
             (count 0))
         (goto-char (point-min))
         (while (and (not (eobp)) (re-search-forward regexp nil t))
           (let ((empty (= (match-beginning 0) (match-end 0))))
             (condition-case err
                 (replace-match replacement t literal)
               (error (agent-shell-tools-error "Bad replacement: %s"
                                               (error-message-string err))))
             (setq count (1+ count))
             (when (and empty (not (eobp))) (forward-char 1))))
         (when (zerop count)
           (agent-shell-tools-error "Pattern `%s' matched nothing in %s" pattern path))
         `((replacements . ,count)))))))

(defun agent-shell-actions-write-file (args context)
  "Handle `write_file' with ARGS in CONTEXT.
Create the file and its directories, or replace all of an existing
file's text (refused when `expected_sha256' is given and stale)."
  (let ((path (agent-shell-tools-arg args 'path 'string t))
        (content (agent-shell-tools-arg args 'content 'string t)))
    (agent-shell-actions--write
     path context
     (lambda ()
       ;; A new file is UTF-8; an existing one keeps its coding and line ends.
       (unless (file-exists-p buffer-file-name)
         (setq buffer-file-coding-system
               (if (string-match-p "\r\n" content) 'utf-8-dos 'utf-8-unix)))
       (erase-buffer)
       (insert (agent-shell-actions-normalize-newlines content))
       nil)
     t)))

(defun agent-shell-actions-magit-stage (args context)
  "Handle `magit_stage' with ARGS in CONTEXT.
Stage through magit when it is loaded, else through git add."
  (let* ((paths (agent-shell-tools-arg args 'paths 'list t))
         (root (agent-shell-tools-context-root context))
         (git-root (car (agent-shell-tools-roots context)))
         (files (mapcar (lambda (path)
                          ;; Deleted files resolve too: staging a removal is fine.
                          (file-relative-name
                           (agent-shell-tools-resolve path context t) git-root))
                        paths)))
    (unless files
      (agent-shell-tools-error "Argument `paths' is empty"))
    (unless (eql 0 (car (agent-shell-tools-git root "rev-parse" "--is-inside-work-tree")))
      (agent-shell-tools-error "The project root is not a git repository"))
    (let ((via (if (and agent-shell-actions-use-magit (featurep 'magit)
                        (fboundp 'magit-stage-file))
                   (let ((default-directory root)
                         (inhibit-message t)
                         (magit-git-global-arguments
                          (append (agent-shell-tools-safe-git-args)
                                  (bound-and-true-p magit-git-global-arguments)))
                         ;; Pathspec magic such as ":(glob)*" must not widen
                         ;; what the user approved.
                         (process-environment (cons "GIT_LITERAL_PATHSPECS=1"
                                                    process-environment)))
                     (condition-case err
                         (progn (magit-stage-file files) "magit")
                       (error (agent-shell-tools-error "Magit could not stage: %s"
                                                       (error-message-string err)))))
                 (let ((result (apply #'agent-shell-tools-git root "--literal-pathspecs"
                                      "add" "-A" "--" files)))
                   (unless (eql (car result) 0)
                     (agent-shell-tools-error "Git add failed for %s"
                                              (string-join files ", ")))
                   "git"))))
      `((staged . ,(vconcat files))
        (via . ,via)
        (index . ,(vconcat
                   (split-string (cdr (agent-shell-tools-git
                                       root "--literal-pathspecs"
                                       "diff" "--cached" "--name-only" "-z"))
                                 "\0" t)))))))

(provide 'agent-shell-actions)
;;; agent-shell-actions.el ends here
