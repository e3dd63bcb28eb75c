;;; agent-shell-undo.el --- Undo a turn: put back the files it changed  -*- lexical-binding: t; -*-

;; SPDX-License-Identifier: GPL-3.0-or-later

;;; Commentary:

;; `agent-shell-undo-turn' restores every file a turn of the agent
;; changed, from the snapshots agent-shell-actions.el saved before each
;; write (<root>/.agent-shell/snapshots/ and its index.jsonl).  It
;; refuses when the user edited one of those files since, or when the
;; index points outside the project; the bridge is told, so the action
;; log records the undo and the model hears of it.

;;; Code:

(require 'cl-lib)
(require 'subr-x)
(require 'agent-shell-session)
(require 'agent-shell-tools)
(require 'agent-shell-actions)

(declare-function project-current "project" (&optional maybe-prompt directory))
(declare-function project-root "project" (project))
(declare-function agent-shell-transcript-notice "agent-shell-transcript" (text))
(declare-function agent-shell-bridge-report-undo "agent-shell-bridge" (turn-id paths))

;;; Internals

(defun agent-shell-undo--turn-entries (root turn-id)
  "Return the index entries of ROOT written during TURN-ID, oldest first."
  (cl-remove-if-not (lambda (entry)
                      (and (equal (alist-get 'turn_id entry) turn-id)
                           (alist-get 'op_id entry)))
                    (agent-shell-actions-read-index root)))

(defun agent-shell-undo-last-turn (root)
  "Return the id of the last turn in ROOT's index that was not undone."
  (let ((undone nil)
        (last nil))
    (dolist (entry (agent-shell-actions-read-index root))
      (let ((turn (alist-get 'turn_id entry)))
        (cond ((alist-get 'undo_of entry) (push (alist-get 'undo_of entry) undone))
              ((and turn (alist-get 'op_id entry)) (setq last turn)))))
    (and last (not (member last undone)) last)))

(defun agent-shell-undo--undo-plan (root entries)
  "Return ((FILE FIRST-ENTRY LAST-ENTRY) ...) for ENTRIES of ROOT, one per file.
Every entry must name a writable file under ROOT or the user's extra
roots and record what the turn left (`sha256_after')."
  (let ((context (agent-shell-undo--undo-context root))
        plan)
    (dolist (entry entries)
      (unless (stringp (alist-get 'sha256_after entry))
        (agent-shell-tools-error "Snapshot index entry for %S records no resulting content"
                                 (alist-get 'path entry)))
      (let* ((file (agent-shell-undo--index-path entry context))
             (cell (assoc file plan)))
        (if cell
            (setcar (cddr cell) entry)
          (push (list file entry entry) plan))))
    (nreverse plan)))

(defun agent-shell-undo--edited-since (plan)
  "Return the files of PLAN whose content differs from what the turn left."
  (cl-loop for (file _first last) in plan
           for buffer = (find-buffer-visiting file)
           unless (and (equal (agent-shell-tools-sha256-file file)
                              (alist-get 'sha256_after last))
                       (not (and buffer (buffer-modified-p buffer))))
           collect file))

(defun agent-shell-undo--restore (root file first)
  "Put FILE of ROOT back as the index entry FIRST found it."
  (let ((buffer (find-buffer-visiting file)))
    (if (alist-get 'existed first)
        (let ((snapshot (agent-shell-undo--snapshot-file root first)))
          (copy-file snapshot file t t t)
          (when buffer
            (with-current-buffer buffer
              (let ((inhibit-message t)) (revert-buffer t t t)))))
      (when (file-exists-p file) (delete-file file))
      (when buffer (kill-buffer buffer)))))

(defun agent-shell-undo--project-root ()
  "Return the root of the current project, or nil."
  (when (require 'project nil t)
    (let ((project (project-current)))
      (and project (project-root project)))))

(defvar agent-shell-extra-allowed-paths)

(defun agent-shell-undo--undo-context (root)
  "Return the tool context confining an undo in ROOT.
Besides ROOT only the user's own `agent-shell-extra-allowed-paths'
count, never anything the index itself names."
  `((root . ,root)
    (extra_roots . ,(mapcar #'expand-file-name
                            (bound-and-true-p agent-shell-extra-allowed-paths)))))

(defun agent-shell-undo--index-path (entry context)
  "Return the file that index ENTRY names, resolved for writing.
The name goes through `agent-shell-tools-resolve' in CONTEXT, so
symlinks are followed before the check and protected files refused."
  (let ((name (alist-get 'path entry)))
    (unless (and (stringp name) (not (string-empty-p name)))
      (agent-shell-tools-error "Snapshot index entry has a bad path: %S" name))
    (condition-case err
        (agent-shell-tools-resolve name context t)
      (agent-shell-tool-error
       (agent-shell-tools-error "Refusing snapshot index entry for %S: %s"
                                name (cadr err))))))

(defun agent-shell-undo--snapshot-file (root entry)
  "Return the snapshot file of index ENTRY of ROOT, a regular file.
It must lie inside ROOT's snapshot directory with no symlink on the way."
  (let* ((name (alist-get 'snapshot entry))
         (dir (file-name-as-directory
               (agent-shell-tools-truename agent-shell-actions--snapshot-dir root)))
         (file (and (stringp name) (not (file-name-absolute-p name))
                    (agent-shell-tools-expand name dir))))
    (unless (and file
                 (string-prefix-p dir file)
                 (equal (agent-shell-tools-truename file) file)
                 (file-regular-p file))
      (agent-shell-tools-error "Snapshot index entry has a bad snapshot: %S" name))
    file))

(defun agent-shell-undo--check-index (root)
  "Refuse to undo from ROOT's index unless agent-shell itself wrote it.
The index and its directories must not be symlinks, and git must not
track the index: a repository could otherwise ship one."
  (let* ((index (agent-shell-actions-index-file root))
         (expected (agent-shell-tools-expand
                    (concat agent-shell-actions--snapshot-dir "index.jsonl")
                    (agent-shell-tools-truename root))))
    (unless (file-exists-p index)
      (agent-shell-tools-error "No snapshot index in %s" root))
    (unless (and (equal (agent-shell-tools-truename index) expected)
                 (file-regular-p index))
      (agent-shell-tools-error "The snapshot index of %s is a symlink or lies behind one"
                               root))
    (when (eql 0 (car (agent-shell-tools-git
                       root "ls-files" "--error-unmatch" "--"
                       (concat agent-shell-actions--snapshot-dir "index.jsonl"))))
      (agent-shell-tools-error
       "The snapshot index of %s is tracked by git, so it may come from the repository; not undoing from it"
       root))))

(defun agent-shell-undo--shell-for-root (root)
  "Return the live agent-shell buffer whose project is ROOT, or nil."
  (let ((root (file-truename (file-name-as-directory root))))
    (cl-find-if (lambda (buffer)
                  (and (eq (buffer-local-value 'major-mode buffer) 'agent-shell-mode)
                       (let ((other (agent-shell-session-root
                                     (buffer-local-value 'agent-shell--session buffer))))
                         (and (stringp other)
                              (equal (file-truename (file-name-as-directory other))
                                     root)))))
                (buffer-list))))

(defun agent-shell-undo--prompt-from-logs (root turn-id)
  "Return the task title of TURN-ID in ROOT's action logs, or nil.
The task heading of a turn carries its id in the :TURN: property."
  (let ((dir (expand-file-name ".agent-shell/logs/" root))
        (case-fold-search nil))
    (when (file-directory-p dir)
      (cl-loop
       for file in (sort (directory-files dir t "\\`[^.].*\\.org\\'") #'string>)
       thereis
       (with-temp-buffer
         (let ((coding-system-for-read 'utf-8))
           (ignore-errors (insert-file-contents file)))
         (goto-char (point-min))
         (and (re-search-forward (concat "^:TURN: " (regexp-quote turn-id) "[ \t]*$")
                                 nil t)
              (re-search-backward
               "^\\*+ \\(?:[A-Z]+ \\)?\\(?:\\[[^]\n]*\\] *\\)?\\(.*\\)$" nil t)
              (let ((title (string-trim (match-string-no-properties 1))))
                (and (not (string-empty-p title)) title))))))))

(defun agent-shell-undo--turn-prompt (root turn-id)
  "Return the prompt that started TURN-ID in ROOT, or nil when unknown.
The shell buffer of ROOT remembers its turns' prompts; a turn of an
earlier session is found by its task heading in the action logs."
  (let ((shell (agent-shell-undo--shell-for-root root)))
    (or (and shell
             (cdr (assoc turn-id (agent-shell-session-turn-prompts
                                  (buffer-local-value 'agent-shell--session shell)))))
        (agent-shell-undo--prompt-from-logs root turn-id))))

(defun agent-shell-undo--turn-label (turn-id prompt)
  "Return TURN-ID described with its PROMPT's first line when known."
  (if prompt
      (format "%s (“%s”)" turn-id
              (truncate-string-to-width
               (car (split-string prompt "\n" t "[ \t]+")) 60 nil nil "…"))
    turn-id))

;;;###autoload
(defun agent-shell-undo-turn (root &optional turn-id confirm)
  "Restore every file that the agent changed during turn TURN-ID in ROOT.
TURN-ID defaults to the last turn in ROOT's snapshot index.  Files the
turn created are deleted.  Refuse, listing them, when any file was
edited since the turn.  With CONFIRM non-nil (always when called
interactively) ask first.  Return the list of restored files,
relative to ROOT."
  (interactive
   (list (or (agent-shell-undo--project-root) default-directory) nil t))
  (if confirm
      (condition-case err
          (agent-shell-undo--run root turn-id t)
        (agent-shell-tool-error (user-error "%s" (cadr err))))
    (agent-shell-undo--run root turn-id nil)))

(defun agent-shell-undo--run (root turn-id confirm)
  "Undo TURN-ID in ROOT, asking first when CONFIRM; see `agent-shell-undo-turn'."
  (when (agent-shell-tools-remote-p root)
    (agent-shell-tools-error "Remote project roots are not supported: %s" root))
  (let* ((root (file-name-as-directory (agent-shell-tools-expand root)))
         (_ (agent-shell-undo--check-index root))
         (turn-id (or turn-id (agent-shell-undo-last-turn root)
                      (agent-shell-tools-error "No agent turn to undo in %s" root)))
         (entries (agent-shell-undo--turn-entries root turn-id))
         (plan (agent-shell-undo--undo-plan root entries))
         (rels (mapcar (lambda (step) (alist-get 'path (nth 1 step))) plan)))
    (unless plan
      (agent-shell-tools-error "Turn %s changed no files" turn-id))
    (let ((edited (agent-shell-undo--edited-since plan)))
      (when edited
        (agent-shell-tools-error
         "Not undoing turn %s: edited since then: %s" turn-id
         (mapconcat (lambda (file)
                      (alist-get 'path (nth 1 (assoc file plan))))
                    edited ", "))))
    (let ((label (agent-shell-undo--turn-label
                  turn-id (agent-shell-undo--turn-prompt root turn-id))))
      (when (or (not confirm)
                (yes-or-no-p (format "Undo agent turn %s, restoring %s? " label
                                     (string-join rels ", "))))
        (dolist (step (reverse plan))
          (agent-shell-undo--restore root (nth 0 step) (nth 1 step)))
        (agent-shell-actions-append-index
         root `((undo_of . ,turn-id) (paths . ,(vconcat rels))
                (time . ,(agent-shell-actions-now))))
        (when confirm
          (message "Restored %d file(s) from turn %s" (length rels) label))
        (when-let ((shell (agent-shell-undo--shell-for-root root)))
          (with-current-buffer shell
            (when (fboundp 'agent-shell-transcript-notice)
              (agent-shell-transcript-notice
               (format "Undid turn %s: restored %d file(s): %s"
                       label (length rels) (string-join rels ", "))))
            (when (fboundp 'agent-shell-bridge-report-undo)
              (agent-shell-bridge-report-undo turn-id rels))))
        rels))))

;;; Obsolete names

(define-obsolete-function-alias 'agent-shell-actions-last-turn
  #'agent-shell-undo-last-turn "0.2")

(provide 'agent-shell-undo)
;;; agent-shell-undo.el ends here
