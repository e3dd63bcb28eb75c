;;; agent-shell-undo.el --- Undo a turn: put back the files it changed  -*- lexical-binding: t; -*-

;; SPDX-License-Identifier: GPL-3.0-or-later

;;; Commentary:

;; `agent-shell-undo-turn' restores every file a turn of the agent
;; changed, from the snapshots agent-shell-actions.el saved before each
;; write (<root>/.agent-shell/snapshots/ and its index.jsonl).  It
;; refuses when the user edited one of those files since, or when the
;; index points outside the project; the bridge is told, so the action
;; log records the undo and the model hears of it.
;;
;; A remote (TRAMP) project's index and snapshots are in its local
;; mirror (`agent-shell-remote-mirror'), its files on the host: they are
;; checked and restored through TRAMP, confined to the remote root after
;; the host resolved their links, and buffers visiting them are reverted.

;;; Code:

(require 'cl-lib)
(require 'subr-x)
(require 'agent-shell-session)
(require 'agent-shell-tools)
(require 'agent-shell-tools-process)
(require 'agent-shell-actions)
(require 'agent-shell-remote)

(declare-function project-current "project" (&optional maybe-prompt directory))
(declare-function project-root "project" (project))
(declare-function agent-shell-transcript-notice "agent-shell-transcript" (text))
(declare-function agent-shell-bridge-report-undo "agent-shell-bridge" (turn-id paths))
(declare-function agent-shell-bridge-live-connection "agent-shell-bridge" ())
(declare-function agent-shell-rpc-request-sync "agent-shell-rpc-protocol"
                  (conn method params &optional timeout))
(declare-function agent-shell-transcript-insert-history "agent-shell-transcript" (history))
(declare-function agent-shell-set-input "agent-shell-input" (text))
(declare-function agent-shell-open-fork "agent-shell" (root result))
(declare-function agent-shell-mcp-session-params "agent-shell-mcp" ())
(declare-function diff-no-select "diff" (old new &optional switches no-async buf))

;;; Internals

(defun agent-shell-undo--records (root)
  "Return the directory holding ROOT's snapshot index and action logs.
That is ROOT itself, or the local mirror of a remote ROOT."
  (if (agent-shell-tools-remote-p root)
      (or (agent-shell-remote-mirror root)
          (agent-shell-tools-error
           "No records of the remote project %s on this machine (no session has run there)"
           root))
    root))

(defun agent-shell-undo--read-index (root)
  "Return the entries of ROOT's snapshot index (its mirror's when remote)."
  (agent-shell-actions-read-index (agent-shell-undo--records root)))

(defun agent-shell-undo--append-index (root entry)
  "Append ENTRY to ROOT's snapshot index (its mirror's when remote)."
  (agent-shell-actions-append-index (agent-shell-undo--records root) entry))

(defun agent-shell-undo--turn-entries (root turn-id)
  "Return the index entries of ROOT written during TURN-ID, oldest first."
  (cl-remove-if-not (lambda (entry)
                      (and (equal (alist-get 'turn_id entry) turn-id)
                           (alist-get 'op_id entry)))
                    (agent-shell-undo--read-index root)))

(defun agent-shell-undo-last-turn (root)
  "Return the id of the last turn in ROOT's index that was not undone."
  (let ((undone nil)
        (last nil))
    (dolist (entry (agent-shell-undo--read-index root))
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

(defun agent-shell-undo--put-bytes (snapshot file)
  "Write the bytes of the local SNAPSHOT over the remote FILE, keeping its mode."
  (with-temp-buffer
    (set-buffer-multibyte nil)
    (let ((coding-system-for-read 'no-conversion))
      (insert-file-contents-literally snapshot))
    (let ((coding-system-for-write 'no-conversion)
          (create-lockfiles nil)
          (backup-inhibited t))
      (write-region nil nil file nil 'silent))))

(defun agent-shell-undo--restore (root file first)
  "Put FILE of ROOT back as the index entry FIRST found it."
  (let ((buffer (find-buffer-visiting file)))
    (if (alist-get 'existed first)
        (let ((snapshot (agent-shell-undo--snapshot-file root first)))
          (if (agent-shell-tools-remote-p file)
              (agent-shell-undo--put-bytes snapshot file)
            (copy-file snapshot file t t t))
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

(defun agent-shell-undo--remote-path (name root)
  "Return the TRAMP name of the file NAME of the remote project ROOT.
NAME must be a plain relative name; the host resolves its links, and
the result must stay under ROOT's own truename and be writable there
by the rules of local files (nothing under .git or .agent-shell)."
  (let ((parts (split-string name "/")))
    (when (or (file-name-absolute-p name) (string-prefix-p "~" name)
              (cl-some (lambda (part) (member part '("" "." ".."))) parts))
      (agent-shell-tools-error "Not a plain name relative to the project"))
    (let* ((base (file-name-as-directory (file-truename root)))
           (true (directory-file-name (file-truename (concat base name))))
           (below (and (string-prefix-p base true) (substring true (length base)))))
      (unless (and below (not (string-empty-p below)))
        (agent-shell-tools-error "It leads out of the project %s" root))
      (when-let ((reason (or (agent-shell-tools-protected-reason parts)
                             (agent-shell-tools-protected-reason
                              (split-string below "/" t)))))
        (agent-shell-tools-error "%s" reason))
      true)))

(defun agent-shell-undo--index-path (entry context)
  "Return the file that index ENTRY names, resolved for writing.
The name goes through `agent-shell-tools-resolve' in CONTEXT, so
symlinks are followed before the check and protected files refused;
in a remote project, through `agent-shell-undo--remote-path'."
  (let ((name (alist-get 'path entry))
        (root (alist-get 'root context)))
    (unless (and (stringp name) (not (string-empty-p name)))
      (agent-shell-tools-error "Snapshot index entry has a bad path: %S" name))
    (condition-case err
        (if (agent-shell-tools-remote-p root)
            (agent-shell-undo--remote-path name root)
          (agent-shell-tools-resolve name context t))
      (agent-shell-tool-error
       (agent-shell-tools-error "Refusing snapshot index entry for %S: %s"
                                name (cadr err))))))

(defun agent-shell-undo--snapshot-file (root entry)
  "Return the snapshot file of index ENTRY of ROOT, a regular file.
It must lie inside ROOT's snapshot directory with no symlink on the way."
  (let* ((name (alist-get 'snapshot entry))
         (dir (file-name-as-directory
               (agent-shell-tools-truename agent-shell-actions--snapshot-dir
                                           (agent-shell-undo--records root))))
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
track the index: a repository could otherwise ship one.  A remote
ROOT's index is in its mirror, which no repository holds."
  (let* ((root (agent-shell-undo--records root))
         (index (agent-shell-actions-index-file root))
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

(defun agent-shell-undo--same-root (root)
  "Return a predicate telling whether a session root names ROOT.
Remote names are compared as names, opening no connection."
  (if (agent-shell-tools-remote-p root)
      (let ((want (agent-shell-remote-canonical-name root)))
        (lambda (other) (equal (agent-shell-remote-canonical-name other) want)))
    (let ((root (file-truename (file-name-as-directory root))))
      (lambda (other)
        (and (not (agent-shell-tools-remote-p other))
             (equal (file-truename (file-name-as-directory other)) root))))))

(defun agent-shell-undo--shell-for-root (root)
  "Return the live agent-shell buffer whose project is ROOT, or nil."
  (let ((same (agent-shell-undo--same-root root)))
    (cl-find-if (lambda (buffer)
                  (and (eq (buffer-local-value 'major-mode buffer) 'agent-shell-mode)
                       (let ((other (agent-shell-session-root
                                     (buffer-local-value 'agent-shell--session buffer))))
                         (and (stringp other) (funcall same other)))))
                (buffer-list))))

(defun agent-shell-undo--prompt-from-logs (root turn-id)
  "Return the task title of TURN-ID in ROOT's action logs, or nil.
The task heading of a turn carries its id in the :TURN: property."
  (let ((dir (expand-file-name ".agent-shell/logs/" (agent-shell-undo--records root)))
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
  (let* ((root (file-name-as-directory
                (if (agent-shell-tools-remote-p root) root (agent-shell-tools-expand root))))
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
        (agent-shell-undo--append-index
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

;;; Rewind

(defconst agent-shell-undo--rewind-choices
  '("code and conversation" "conversation only" "code only")
  "What `agent-shell-rewind' can take back, as offered.")

(defun agent-shell-undo--session-entries (root session-id)
  "Return ROOT's index entries of edits made in SESSION-ID, oldest first."
  (cl-remove-if-not (lambda (entry)
                      (and (alist-get 'op_id entry)
                           (equal (alist-get 'session_id entry) session-id)))
                    (agent-shell-undo--read-index root)))

(defun agent-shell-undo--files-from (entries turn-ids)
  "Return the paths ENTRIES changed in TURN-IDS, in order, each once."
  (let (paths)
    (dolist (entry entries)
      (when (member (alist-get 'turn_id entry) turn-ids)
        (cl-pushnew (alist-get 'path entry) paths :test #'equal)))
    (nreverse paths)))

(defun agent-shell-undo--prompt-label (turn files)
  "Return the completion label of TURN and FILES, the files changed after it."
  (let* ((time (alist-get 'time turn))
         (clock (if (and (stringp time) (string-match "T\\([0-9]+:[0-9]+\\)" time))
                    (match-string 1 time)
                  "--:--"))
         (first (car (split-string (or (alist-get 'prompt turn) "") "\n" t "[ \t]+"))))
    (format "%s  %s  [%s]  %s" clock
            (truncate-string-to-width (or first "") 60 nil nil "…")
            (if files
                (format "%d file%s after it: %s" (length files) (if (cdr files) "s" "")
                        (string-join files ", "))
              "no files changed after it")
            (alist-get 'turnId turn))))

(defun agent-shell-undo--choose-prompt (choices entries verb)
  "Return the index in CHOICES, oldest first, of the one picked to VERB to.
ENTRIES are the session's snapshot index entries."
  (let* ((ids (mapcar (lambda (turn) (alist-get 'turnId turn)) choices))
         (labels (cl-loop for turn in choices
                          for rest on ids
                          collect (agent-shell-undo--prompt-label
                                   turn (agent-shell-undo--files-from entries rest))))
         (newest-first (reverse labels))
         (table (lambda (string pred action)
                  (if (eq action 'metadata)
                      '(metadata (display-sort-function . identity)
                                 (cycle-sort-function . identity))
                    (complete-with-action action newest-first string pred))))
         (chosen (completing-read (format "%s to before which prompt? " verb)
                                  table nil t nil nil (car newest-first))))
    (or (cl-position chosen labels :test #'equal)
        (user-error "No such prompt: %s" chosen))))

(defun agent-shell-undo--target-file (root first)
  "Return the file holding what index entry FIRST found in ROOT.
Nil when there was no file then."
  (and (alist-get 'existed first) (agent-shell-undo--snapshot-file root first)))

(defun agent-shell-undo--show-diff (file target rel)
  "Show how FILE differs from TARGET (nil: no file), as REL, in a diff buffer."
  (require 'diff)
  (let ((buffer (get-buffer-create (format "*agent-shell rewind: %s*" rel))))
    (diff-no-select (if (file-exists-p file) file null-device)
                    (or target null-device) nil t buffer)
    (display-buffer buffer)
    buffer))

(defun agent-shell-undo--rewind-files (root plan)
  "Restore the files of PLAN in ROOT; return (RESTORED SKIPPED BACKUPS).
A file the user edited since the agent's last change is shown as a
diff and skipped unless confirmed.  Each file's content before the
rewind is copied aside first (BACKUPS, for `agent-shell-rewind-undo')."
  (let ((key (format "rewind-%s-%04x" (format-time-string "%Y%m%dT%H%M%S")
                     (random 65536)))
        (edited (agent-shell-undo--edited-since plan))
        restored skipped backups)
    (dolist (step plan)
      (pcase-let* ((`(,file ,first ,_last) step)
                   (rel (alist-get 'path first))
                   (target (agent-shell-undo--target-file root first)))
        (if (and (member file edited)
                 (let ((diff (agent-shell-undo--show-diff file target rel)))
                   (prog1 (not (y-or-n-p
                                (format "%s was edited since the agent changed it; \
restore it anyway (the diff shows what would change)? " rel)))
                     (quit-windows-on diff))))
            (push rel skipped)
          (let* ((name (format "%s/%d" key (length backups)))
                 (backup (expand-file-name
                          name (expand-file-name agent-shell-actions--snapshot-dir
                                                 (agent-shell-undo--records root)))))
            (when (file-exists-p file)
              (make-directory (file-name-directory backup) t)
              (copy-file file backup t t t))
            (push `((path . ,rel) (existed . ,(agent-shell-tools-bool (file-exists-p file)))
                    (snapshot . ,(if (file-exists-p file) name :null)))
                  backups)
            (agent-shell-undo--restore root file first)
            (push rel restored)))))
    (list (nreverse restored) (nreverse skipped) (nreverse backups))))

(defun agent-shell-undo--redraw (history)
  "Draw this shell buffer's transcript again from HISTORY (as `session/resume')."
  (let ((inhibit-read-only t) (inhibit-modification-hooks t))
    (delete-region (point-min) (agent-shell-session-output-marker agent-shell--session)))
  (setf (agent-shell-session-entries agent-shell--session) nil
        (agent-shell-session-tools agent-shell--session) nil
        (agent-shell-session-block agent-shell--session) nil
        (agent-shell-session-body-open agent-shell--session) nil
        (agent-shell-session-waiting-notices agent-shell--session) nil)
  (agent-shell-transcript-insert-history history))

(defun agent-shell-undo--shell-session ()
  "Return (CONN ROOT SESSION-ID) of this idle shell buffer.
Signal a `user-error' when it has no session or a turn runs."
  (unless (and (derived-mode-p 'agent-shell-mode)
               (agent-shell-session-id agent-shell--session))
    (user-error "Not in an agent-shell buffer with a session"))
  (when (agent-shell-session-turn-id agent-shell--session)
    (user-error "A turn is running; cancel it (C-c C-k) first"))
  (list (or (agent-shell-bridge-live-connection)
            (user-error "The bridge is not running; C-c C-r restarts it"))
        (file-name-as-directory (agent-shell-session-root agent-shell--session))
        (agent-shell-session-id agent-shell--session)))

(defun agent-shell-undo--request (conn method params)
  "Call METHOD with PARAMS on CONN and return the result.
A failure is a `user-error'."
  (condition-case err
      (agent-shell-rpc-request-sync conn method params 30)
    (agent-shell-rpc-error
     (user-error "%s failed: %s" method (error-message-string err)))))

;;;###autoload
(defun agent-shell-rewind (&optional fork)
  "Go back to before a prompt of this session.
Offer the prompts (time, first line, files changed after it), then
what to take back: \"code and conversation\", \"conversation only\" or
\"code only\".  Code: every file the agent changed in that turn and
later ones returns to its state before it, from the snapshots (with
or without git; files the agent did not change are never touched); a
file you edited since is shown as a diff and skipped unless you
confirm.  Conversation: the history is cut before that prompt, whose
text comes back into the input.  `agent-shell-rewind-undo' restores
what a rewind replaced.  With a prefix argument FORK, open instead a
new shell whose session has the history before the chosen prompt (its
own log and checkpoints; this session is untouched)."
  (interactive "P")
  (progn
    (pcase-let* ((`(,conn ,root ,sid) (agent-shell-undo--shell-session))
                 (turns (append (alist-get 'turns (agent-shell-undo--request
                                                   conn "session/turns"
                                                   `((sessionId . ,sid))))
                                nil)))
      (unless turns (user-error "This session has no prompt yet"))
      (let* ((entries (agent-shell-undo--session-entries root sid))
             (index (agent-shell-undo--choose-prompt turns entries "Rewind"))
             (turn (nth index turns))
             (later (mapcar (lambda (turn) (alist-get 'turnId turn)) (nthcdr index turns)))
             (what (and (not fork)
                        (completing-read "Rewind what? " agent-shell-undo--rewind-choices
                                         nil t nil nil
                                         (car agent-shell-undo--rewind-choices)))))
        (if fork
            (agent-shell-undo--fork conn root sid (alist-get 'turnId turn))
         (agent-shell-undo-rewind-to root sid (alist-get 'turnId turn) later
                                    (not (equal what "code only"))
                                    (not (equal what "conversation only"))
                                    entries))))))

(defun agent-shell-undo--fork (conn root sid turn-id)
  "Fork session SID of ROOT on CONN into a new shell buffer.
With TURN-ID non-nil, the fork has the history before that turn."
  (agent-shell-open-fork
   root (agent-shell-undo--request conn "session/fork"
                                   `((sessionId . ,sid)
                                     ,@(and turn-id `((turnId . ,turn-id)))
                                     ,@(agent-shell-mcp-session-params)))))

;;;###autoload
(defun agent-shell-fork ()
  "Open a new shell whose session has this session's history so far.
The fork has its own log and checkpoints and goes on from here; this
session is untouched.  \\[universal-argument] \\[agent-shell-rewind] forks before an earlier
prompt instead."
  (interactive)
  (pcase-let ((`(,conn ,root ,sid) (agent-shell-undo--shell-session)))
    (agent-shell-undo--fork conn root sid nil)))

(defun agent-shell-undo-rewind-to (root sid turn-id later conversation code
                                        &optional entries)
  "Rewind session SID of ROOT to before TURN-ID, in the current shell buffer.
LATER are TURN-ID and the turns after it.  CONVERSATION non-nil cuts the
history; CODE non-nil restores the files those turns changed (from
ENTRIES, the session's index entries).  Return the bridge's answer."
  (let* ((conn (agent-shell-bridge-live-connection))
         (entries (or entries (agent-shell-undo--session-entries root sid)))
         (files (and code (progn (agent-shell-undo--check-index root)
                                 (agent-shell-undo--undo-plan
                                  root (cl-remove-if-not
                                        (lambda (e) (member (alist-get 'turn_id e) later))
                                        entries)))))
         (done (if files (agent-shell-undo--rewind-files root files) (list nil nil nil)))
         (result (agent-shell-undo--request
                  conn "session/rewind"
                  `((sessionId . ,sid) (turnId . ,turn-id)
                    (conversation . ,(agent-shell-tools-bool conversation))
                    (restored . ,(vconcat (nth 0 done)))
                    (skipped . ,(vconcat (nth 1 done)))))))
    (when (nth 2 done)
      (agent-shell-undo--append-index
       root `((rewind_id . ,(alist-get 'rewindId result)) (session_id . ,sid)
              (rewind_to . ,turn-id) (backups . ,(vconcat (nth 2 done)))
              (time . ,(agent-shell-actions-now)))))
    (if conversation
        (progn (agent-shell-undo--redraw (alist-get 'history result))
               (agent-shell-set-input (or (alist-get 'prompt result) "")))
      (agent-shell-transcript-notice
       (format "Rewound the code to before turn %s" turn-id)))
    (agent-shell-transcript-notice
     (format "Rewind: %d file(s) restored%s%s" (length (nth 0 done))
             (if (nth 0 done) (concat ": " (string-join (nth 0 done) ", ")) "")
             (if (nth 1 done)
                 (format "; left as you edited them: %s" (string-join (nth 1 done) ", "))
               "")))
    (when-let ((commands (alist-get 'commandsNotUndone result)))
      (agent-shell-transcript-notice
       (format "Not undone: what %d command(s) run since then changed: %s"
               (length commands) (string-join commands "; "))))
    result))

;;;###autoload
(defun agent-shell-rewind-undo ()
  "Restore what the newest rewind of this session replaced.
The files it restored get back the content they had just before it,
and a cut conversation comes back."
  (interactive)
  (pcase-let* ((`(,conn ,root ,sid) (agent-shell-undo--shell-session))
               (result (agent-shell-undo--request conn "session/rewind_undo"
                                                  `((sessionId . ,sid))))
               (id (alist-get 'rewindId result))
               (record (cl-find-if (lambda (e) (equal (alist-get 'rewind_id e) id))
                                   (agent-shell-undo--read-index root)))
               (restored nil))
    (dolist (backup (append (alist-get 'backups record) nil))
      (let* ((context (agent-shell-undo--undo-context root))
             (file (agent-shell-undo--index-path backup context)))
        (agent-shell-undo--restore root file backup)
        (push (alist-get 'path backup) restored)))
    (when record
      (agent-shell-undo--append-index
       root `((rewind_undone . ,id) (time . ,(agent-shell-actions-now)))))
    (when (eq (alist-get 'conversationRestored result) t)
      (agent-shell-undo--redraw (alist-get 'history result)))
    (agent-shell-transcript-notice
     (format "Rewind undone: %d file(s) put back%s%s" (length restored)
             (if restored (concat ": " (string-join (nreverse restored) ", ")) "")
             (if (eq (alist-get 'conversationRestored result) t)
                 "; the conversation is back" "")))
    result))

;;; Obsolete names

(define-obsolete-function-alias 'agent-shell-actions-last-turn
  #'agent-shell-undo-last-turn "0.2")

(provide 'agent-shell-undo)
;;; agent-shell-undo.el ends here
