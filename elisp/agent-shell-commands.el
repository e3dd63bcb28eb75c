;;; agent-shell-commands.el --- Custom /commands and project instructions  -*- lexical-binding: t; -*-

;; SPDX-License-Identifier: GPL-3.0-or-later

;;; Commentary:

;; Custom commands are prompts kept as Markdown files:
;; `.agent-shell/commands/NAME.md' in the project and
;; `~/.config/agent-shell/commands/NAME.md' for the user.  Typing
;; "/NAME text" at the prompt sends the file with $ARGUMENTS replaced;
;; the bridge does the expansion, so `agent-shell-bridge run' and the
;; shell behave alike.  This file offers the names for completion at the
;; prompt and opens the instruction files (AGENTS.md, CLAUDE.md) the
;; session loaded.

;;; Code:

(require 'subr-x)
(require 'agent-shell-session)

(defconst agent-shell-commands--builtin
  '(("ask" . "Run this one prompt in ask mode (no edits, no commands)")
    ("act" . "Run this one prompt in act mode"))
  "The prompt prefixes the bridge itself understands.")

(defun agent-shell-commands--user-dir ()
  "Return the user's agent-shell directory under XDG_CONFIG_HOME or ~/.config."
  (expand-file-name "agent-shell"
                    (or (getenv "XDG_CONFIG_HOME")
                        (expand-file-name ".config" "~"))))

(defun agent-shell-commands--description (file)
  "Return the description in FILE's header, or nil."
  (with-temp-buffer
    (insert-file-contents file nil 0 4096)
    (goto-char (point-min))
    (when (looking-at-p "---[ \t]*$")
      (forward-line 1)
      (let ((case-fold-search t) found)
        (while (and (not found) (not (eobp)) (not (looking-at-p "---[ \t]*$")))
          (when (looking-at "description:[ \t]*\\(.*?\\)[ \t]*$")
            (setq found (string-trim (match-string 1) "[\"']+" "[\"']+")))
          (forward-line 1))
        found))))

(defun agent-shell-commands-list (root)
  "Return the custom commands of ROOT as (NAME . DESCRIPTION), sorted.
The user's own file wins over a project file of the same name, as
in the bridge."
  (let ((table (make-hash-table :test #'equal)) out)
    (dolist (dir (list (expand-file-name ".agent-shell/commands" root)
                       (expand-file-name "commands" (agent-shell-commands--user-dir))))
      (when (file-directory-p dir)
        (dolist (file (directory-files dir t "\\`[A-Za-z0-9][A-Za-z0-9_.-]*\\.md\\'"))
          (let ((name (file-name-base file)))
            (unless (assoc name agent-shell-commands--builtin)
              (puthash name (or (ignore-errors
                                  (agent-shell-commands--description file))
                                "")
                       table))))))
    (maphash (lambda (name description) (push (cons name description) out)) table)
    (sort out (lambda (a b) (string< (car a) (car b))))))

(defun agent-shell-commands--candidates ()
  "Return completion candidates for this shell buffer: built-ins and files."
  (append agent-shell-commands--builtin
          (and (agent-shell-session-root agent-shell--session)
               (agent-shell-commands-list
                (agent-shell-session-root agent-shell--session)))))

(defun agent-shell-commands-completion-at-point ()
  "Complete a /command name at the start of the prompt.
Each candidate is annotated with its description."
  (when (and agent-shell--session
             (agent-shell-session-input-marker agent-shell--session)
             (>= (point) (agent-shell-session-input-marker agent-shell--session))
             (eq (char-after (agent-shell-session-input-marker agent-shell--session)) ?/))
    (let ((start (1+ (agent-shell-session-input-marker agent-shell--session)))
          (end (save-excursion
                 (goto-char (1+ (agent-shell-session-input-marker agent-shell--session)))
                 (skip-chars-forward "A-Za-z0-9_.-")
                 (point))))
      (when (<= start (point) end)
        (let ((candidates (agent-shell-commands--candidates)))
          (list start end (mapcar #'car candidates)
                :exclusive 'no
                :annotation-function
                (lambda (name)
                  (let ((description (cdr (assoc name candidates))))
                    (if (and description (not (string-empty-p description)))
                        (concat "  " description)
                      "")))))))))

(defun agent-shell-commands-on-session (result)
  "Remember the instruction files in session RESULT; return a notice or nil."
  (let ((files (append (alist-get 'instructions result) nil)))
    (setf (agent-shell-session-instructions agent-shell--session) files)
    (when files
      (format "Instructions loaded: %s"
              (mapconcat (lambda (f) (alist-get 'label f)) files ", ")))))

(defun agent-shell-instructions ()
  "Open an instruction file the current session loaded.
These are the project's AGENTS.md (or CLAUDE.md), the user's
global AGENTS.md, and nested AGENTS.md files that became relevant."
  (interactive)
  (let ((files (mapcar (lambda (f) (cons (alist-get 'label f) (alist-get 'path f)))
                       (and agent-shell--session
                            (agent-shell-session-instructions agent-shell--session)))))
    (cond
     ((null files)
      (user-error "This session loaded no instructions (AGENTS.md or CLAUDE.md at \
the project root, or %s)"
                  (abbreviate-file-name
                   (expand-file-name "AGENTS.md" (agent-shell-commands--user-dir)))))
     ((null (cdr files)) (find-file (cdar files)))
     (t (find-file (cdr (assoc (completing-read "Instructions: " files nil t) files)))))))

(provide 'agent-shell-commands)
;;; agent-shell-commands.el ends here
