;;; agent-shell-worktree.el --- Sessions in git worktrees of their own  -*- lexical-binding: t; -*-

;; SPDX-License-Identifier: GPL-3.0-or-later

;;; Commentary:

;; Several agents on one repository must not edit the same checkout.
;; `agent-shell-start-worktree' makes a linked git worktree on a new
;; branch beside the repository (`agent-shell-worktree-directory'),
;; copies the untracked files its `.worktreeinclude' names (an
;; `.env.local', say: gitignore patterns, one a line, # for comments;
;; only regular files inside the repository, never through a link), and
;; starts a session there.  The bridge keeps that session's memory and
;; reads its allowlist in the main working tree (its
;; project/worktree.py), so the worktree's agent knows what the
;; project's agents learnt and may run what the project allows.
;;
;; `agent-shell-worktree-finish' ends the work: merge the branch into
;; the branch it came from (with magit when it is there), keep the
;; worktree, or remove it -- and what removing would lose (uncommitted
;; changes, commits not merged) is shown, and needs a yes, first.
;;
;; Loaded when first used; it requires agent-shell.el.

;;; Code:

(require 'cl-lib)
(require 'seq)
(require 'subr-x)
(require 'agent-shell)

(declare-function magit-merge-plain "ext:magit-merge" (rev &optional args nocommit))
(declare-function magit-status-setup-buffer "ext:magit-status" (&optional directory))

;;; Options

(defcustom agent-shell-worktree-directory nil
  "Where `agent-shell-start-worktree' puts new worktrees.
Nil puts them in a directory beside the repository named after it,
REPO.worktrees/BRANCH; a directory puts them in DIRECTORY/REPO/BRANCH.
A branch name's slashes become dashes in the directory name."
  :type '(choice (const :tag "Beside the repository (REPO.worktrees/)" nil)
                 (directory :tag "Under this directory"))
  :group 'agent-shell
  :package-version '(agent-shell . "0.5.0"))

(defcustom agent-shell-worktree-branch-prefix "agent/"
  "Prefix of the branch name `agent-shell-start-worktree' proposes."
  :type 'string
  :group 'agent-shell
  :package-version '(agent-shell . "0.5.0"))

(defcustom agent-shell-worktree-use-magit t
  "Non-nil means `agent-shell-worktree-finish' merges through magit when installed."
  :type 'boolean
  :group 'agent-shell
  :package-version '(agent-shell . "0.5.0"))

;;; Git

(define-error 'agent-shell-worktree-git-error "Git failed" 'agent-shell-error)

(defun agent-shell-worktree--git (dir &rest args)
  "Run git with ARGS in DIR; return its output, or signal its error output."
  (let ((default-directory (file-name-as-directory dir))
        (coding-system-for-read 'utf-8)
        (coding-system-for-write 'utf-8))
    (with-temp-buffer
      (let ((status (apply #'process-file "git" nil t nil
                           "-c" "core.quotePath=false" args)))
        (unless (eq status 0)
          (signal 'agent-shell-worktree-git-error
                  (list (format "git %s: %s" (string-join args " ")
                                (string-trim (buffer-string))))))
        (buffer-string)))))

(defun agent-shell-worktree--git-lines (dir &rest args)
  "Return the NUL-separated output of git ARGS in DIR as a list."
  (split-string (apply #'agent-shell-worktree--git dir args) "\0" t))

(defun agent-shell-worktree--toplevel (dir)
  "Return the top of the working tree holding DIR, or signal a `user-error'."
  (condition-case nil
      (file-name-as-directory
       (string-trim (agent-shell-worktree--git dir "rev-parse" "--show-toplevel")))
    (agent-shell-worktree-git-error
     (user-error "%s is not in a git repository" (abbreviate-file-name dir)))))

(defun agent-shell-worktree--main (dir)
  "Return the main working tree of the repository of DIR."
  (let ((common (expand-file-name
                 (string-trim (agent-shell-worktree--git
                               dir "rev-parse" "--git-common-dir"))
                 dir)))
    (file-name-as-directory (file-name-directory (directory-file-name common)))))

(defun agent-shell-worktree--branch (dir)
  "Return the branch checked out in DIR, or nil when detached."
  (let ((name (string-trim (agent-shell-worktree--git
                            dir "rev-parse" "--abbrev-ref" "HEAD"))))
    (unless (equal name "HEAD") name)))

(defun agent-shell-worktree--origin-file (dir)
  "Return the file in DIR's git admin directory naming the branch it came from."
  (expand-file-name "agent-shell-origin"
                    (expand-file-name (string-trim (agent-shell-worktree--git
                                                    dir "rev-parse" "--git-dir"))
                                      dir)))

(defun agent-shell-worktree-linked-p (dir)
  "Return non-nil when DIR is the top of a linked worktree (not the main one)."
  (file-regular-p (expand-file-name ".git" dir)))

;;; Starting

(defun agent-shell-worktree-branch-from-prompt (prompt)
  "Return a branch name proposed for PROMPT, or nil when none can be made.
Its first few ASCII words, lower case, joined by dashes, after
`agent-shell-worktree-branch-prefix'."
  (let* ((words (split-string (downcase (or prompt "")) "[^a-z0-9]+" t))
         (slug (string-join (seq-take words 5) "-")))
    (unless (string-empty-p slug)
      (concat agent-shell-worktree-branch-prefix (substring slug 0 (min 40 (length slug)))))))

(defun agent-shell-worktree--valid-branch-p (dir branch)
  "Return non-nil when BRANCH is a valid new branch name in DIR's repository."
  (and (not (string-empty-p branch))
       (eq 0 (let ((default-directory dir))
               (process-file "git" nil nil nil "check-ref-format" "--branch" branch)))))

(defun agent-shell-worktree-directory-for (main branch)
  "Return the directory of a new worktree of MAIN on BRANCH."
  (let* ((repo (file-name-nondirectory (directory-file-name main)))
         (leaf (replace-regexp-in-string "/" "-" branch)))
    (file-name-as-directory
     (if agent-shell-worktree-directory
         (expand-file-name leaf (expand-file-name repo agent-shell-worktree-directory))
       (expand-file-name leaf (expand-file-name (concat repo ".worktrees")
                                                (file-name-directory
                                                 (directory-file-name main))))))))

(defun agent-shell-worktree--include-patterns (from)
  "Return the file `.worktreeinclude' of FROM, or nil when it has none usable."
  (let ((file (expand-file-name ".worktreeinclude" from)))
    (and (file-regular-p file) (not (file-symlink-p file)) file)))

(defun agent-shell-worktree--inside-p (file root)
  "Return non-nil when FILE is a regular file in ROOT reached through no link."
  (let ((path (expand-file-name file root)))
    (and (file-regular-p path)
         (equal (file-truename path)
                (expand-file-name file (file-truename root))))))

(defun agent-shell-worktree-copy-included (from to)
  "Copy FROM's untracked files that its `.worktreeinclude' names into TO.
Only regular files inside FROM are copied, never through a symbolic
link; return the copied paths, relative to FROM."
  (when-let ((patterns (agent-shell-worktree--include-patterns from)))
    (let ((copied nil))
      (dolist (file (agent-shell-worktree--git-lines
                     from "ls-files" "-z" "--others" "--ignored"
                     (concat "--exclude-from=" patterns)))
        (when (agent-shell-worktree--inside-p file from)
          (let ((target (expand-file-name file to)))
            (make-directory (file-name-directory target) t)
            (copy-file (expand-file-name file from) target t t nil t)
            (push file copied))))
      (nreverse copied))))

(defun agent-shell-worktree--read-prompt ()
  "Return the first prompt for the new session: the shell's input, or asked."
  (let ((typed (and (derived-mode-p 'agent-shell-mode)
                    (string-trim (agent-shell-input)))))
    (if (and typed (not (string-empty-p typed)))
        typed
      (string-trim (read-string "First prompt for the new session (empty for none): ")))))

(defun agent-shell-worktree-create (from branch &optional directory)
  "Make a worktree of FROM's repository on the new BRANCH; return its directory.
It starts at FROM's HEAD, in DIRECTORY or `agent-shell-worktree-directory-for';
the untracked files of `.worktreeinclude' are copied, and the branch
FROM has checked out is remembered as the one to merge back into."
  (let* ((from (agent-shell-worktree--toplevel from))
         (main (agent-shell-worktree--main from))
         (origin (agent-shell-worktree--branch from))
         (dir (file-name-as-directory
               (expand-file-name (or directory (agent-shell-worktree-directory-for
                                                main branch))))))
    (unless (agent-shell-worktree--valid-branch-p from branch)
      (user-error "Not a valid branch name: %s" branch))
    (when (file-exists-p dir)
      (user-error "%s exists already" (abbreviate-file-name dir)))
    (make-directory (file-name-directory (directory-file-name dir)) t)
    (agent-shell-worktree--git from "worktree" "add" "-b" branch
                               (directory-file-name dir) "HEAD")
    (when origin
      (with-temp-file (agent-shell-worktree--origin-file dir)
        (insert origin "\n")))
    (agent-shell-worktree-copy-included from dir)
    dir))

;;;###autoload
(defun agent-shell-start-worktree (branch &optional prompt)
  "Start a session in a new git worktree on the new BRANCH.
The worktree starts at the current checkout's HEAD, beside the
repository (`agent-shell-worktree-directory'), with the untracked
files `.worktreeinclude' names copied.  PROMPT, when non-empty, is sent
as the session's first prompt.

Interactively the prompt comes first: the input typed in the current
shell buffer, else one read (empty for none); the branch name
proposed is made of its words (`agent-shell-worktree-branch-prefix').
A prompt taken from a shell's input leaves that input.  The session's
memory and allowlist are the main project's."
  (interactive
   (let* ((prompt (agent-shell-worktree--read-prompt))
          (default (agent-shell-worktree-branch-from-prompt prompt)))
     (list (read-string (format-prompt "Branch for the worktree" default)
                        nil nil default)
           prompt)))
  (let* ((source (current-buffer))
         (dir (agent-shell-worktree-create default-directory branch))
         (buffer (let ((default-directory dir)) (agent-shell-start))))
    ;; A prompt taken from this shell's input went to the new session.
    (when (and prompt (buffer-live-p source))
      (with-current-buffer source
        (when (and (derived-mode-p 'agent-shell-mode)
                   (equal (string-trim (agent-shell-input)) prompt))
          (agent-shell-set-input ""))))
    (when (and prompt (not (string-empty-p prompt)))
      (with-current-buffer buffer
        (agent-shell-set-input prompt)
        (agent-shell-send-input)))
    (message "agent-shell: session in worktree %s (branch %s)"
             (abbreviate-file-name dir) branch)
    buffer))

;;; Finishing

(defun agent-shell-worktree--here ()
  "Return the top of the linked worktree of the current buffer, or signal."
  (let ((top (agent-shell-worktree--toplevel
              (or (and (derived-mode-p 'agent-shell-mode)
                       (agent-shell-session-root agent-shell--session))
                  default-directory))))
    (unless (agent-shell-worktree-linked-p top)
      (user-error "%s is the main working tree, not a worktree of its own"
                  (abbreviate-file-name top)))
    top))

(defun agent-shell-worktree-origin (dir)
  "Return the branch the worktree DIR came from, or nil when unknown."
  (let ((file (agent-shell-worktree--origin-file dir)))
    (when (file-regular-p file)
      (with-temp-buffer
        (insert-file-contents file)
        (agent-shell-project-nonempty (string-trim (buffer-string)))))))

(defun agent-shell-worktree-unsaved-work (dir)
  "Return (STATUS . COMMITS) of what removing the worktree DIR would lose.
STATUS is `git status --short' (the agent's records in .agent-shell/
aside), COMMITS the log of its commits not in the branch it came from
\(all of its commits not on any other branch when that is unknown);
each is \"\" when there is nothing."
  (let* ((branch (agent-shell-worktree--branch dir))
         (origin (agent-shell-worktree-origin dir))
         (status (agent-shell-worktree--git dir "status" "--short" "--" "."
                                            ":(exclude).agent-shell"))
         (commits (cond ((null branch) "")
                        (origin (agent-shell-worktree--git
                                 dir "log" "--oneline" (concat origin ".." branch)))
                        (t (agent-shell-worktree--git
                            dir "log" "--oneline" branch "--not"
                            (concat "--exclude=" branch) "--branches")))))
    (cons status commits)))

(defun agent-shell-worktree--show-loss (dir loss)
  "Show in a buffer what removing worktree DIR would lose, LOSS as from above."
  (let ((buffer (get-buffer-create "*agent-shell worktree*")))
    (with-current-buffer buffer
      (let ((inhibit-read-only t))
        (erase-buffer)
        (insert (format "Removing %s would lose:\n\n" (abbreviate-file-name dir)))
        (unless (string-empty-p (car loss))
          (insert "Uncommitted changes (git status --short):\n" (car loss) "\n"))
        (unless (string-empty-p (cdr loss))
          (insert "Commits not merged:\n" (cdr loss))))
      (special-mode))
    (display-buffer buffer)
    buffer))

(defun agent-shell-worktree--end-sessions (dir)
  "Kill the shell buffers of sessions in the worktree DIR."
  (dolist (buffer (buffer-list))
    (when (and (eq (buffer-local-value 'major-mode buffer) 'agent-shell-mode)
               (let ((root (agent-shell-session-root
                            (buffer-local-value 'agent-shell--session buffer))))
                 (and root (file-in-directory-p root dir))))
      (kill-buffer buffer))))

(defun agent-shell-worktree-remove (dir &optional confirmed)
  "Remove the worktree DIR and its branch, ending its sessions.
Unless CONFIRMED, what would be lost is shown first and needs a yes;
without one nothing is removed.  Return non-nil when it was removed."
  (let* ((loss (agent-shell-worktree-unsaved-work dir))
         (clean (and (string-empty-p (car loss)) (string-empty-p (cdr loss))))
         (branch (agent-shell-worktree--branch dir))
         (main (agent-shell-worktree--main dir)))
    (when (or clean confirmed
              (progn (agent-shell-worktree--show-loss dir loss)
                     (yes-or-no-p (format "Remove %s and lose what is listed? "
                                          (abbreviate-file-name dir)))))
      (agent-shell-worktree--end-sessions dir)
      (agent-shell-worktree--git main "worktree" "remove" "--force"
                                 (directory-file-name dir))
      (when branch
        (agent-shell-worktree--git main "branch" "-D" branch))
      t)))

(defun agent-shell-worktree-merge (dir)
  "Merge the branch of the worktree DIR into the branch it came from.
The merge runs in the main working tree, which must have that branch
checked out; through magit when it is installed, else with git."
  (let* ((branch (or (agent-shell-worktree--branch dir)
                     (user-error "The worktree's HEAD is detached: no branch to merge")))
         (main (agent-shell-worktree--main dir))
         (origin (or (agent-shell-worktree-origin dir)
                     (read-string (format "Merge %s into which branch? " branch))))
         (status (car (agent-shell-worktree-unsaved-work dir))))
    (unless (string-empty-p status)
      (agent-shell-worktree--show-loss dir (cons status ""))
      (user-error "The worktree has uncommitted changes: commit them first"))
    (unless (equal (agent-shell-worktree--branch main) origin)
      (user-error "%s must have %s checked out to merge into it"
                  (abbreviate-file-name main) origin))
    (if (and agent-shell-worktree-use-magit (require 'magit nil t))
        (let ((default-directory main))
          (magit-merge-plain branch)
          (magit-status-setup-buffer main))
      (agent-shell-worktree--git main "merge" "--no-edit" branch)
      (message "agent-shell: merged %s into %s" branch origin))
    t))

;;;###autoload
(defun agent-shell-worktree-finish (action)
  "Finish the worktree of the current session or buffer with ACTION.
ACTION is \"merge\" (its branch into the branch it came from, in
the main working tree: with magit when installed), \"keep\" (nothing
changes) or \"remove\" (the worktree and its branch go, with the
sessions in it).  Uncommitted changes and unmerged commits are never
lost silently: they are shown and need a yes."
  (interactive
   (list (completing-read (format "Worktree %s: "
                                  (abbreviate-file-name (agent-shell-worktree--here)))
                          '("merge" "keep" "remove") nil t)))
  (let ((dir (agent-shell-worktree--here)))
    (pcase action
      ("merge" (agent-shell-worktree-merge dir))
      ("keep" (message "agent-shell: kept %s" (abbreviate-file-name dir)) nil)
      ("remove" (if (agent-shell-worktree-remove dir)
                    (message "agent-shell: removed %s" (abbreviate-file-name dir))
                  (message "agent-shell: kept %s" (abbreviate-file-name dir))))
      (_ (user-error "Unknown action %s: merge, keep or remove" action)))))

(provide 'agent-shell-worktree)
;;; agent-shell-worktree.el ends here
