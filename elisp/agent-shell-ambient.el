;;; agent-shell-ambient.el --- What every prompt tells of where the user is  -*- lexical-binding: t; -*-

;; SPDX-License-Identifier: GPL-3.0-or-later

;;; Commentary:

;; The automatic context of a prompt, beside the editing snapshot of
;; agent-shell-perception.el: the buffers visible in the selected frame
;; (name, file, line of point, region lines), the clocked-in org task
;; (heading and first lines), the git branch (read from .git/HEAD, no
;; process) and the latest *compilation* or *grep* run of the project
;; (command, how it ended, first error).  One option for each; nothing
;; from outside the project is named.  It is cheap: no process, no file
;; read but HEAD, well under a millisecond (bench/mention.py measures
;; it), and a few hundred characters of JSON.

;;; Code:

(require 'cl-lib)
(require 'subr-x)
(require 'agent-shell-custom)

(defvar compilation-arguments)

;;; Options

(defcustom agent-shell-context-visible-buffers t
  "Non-nil: each prompt names the buffers visible in the selected frame.
For each: its name, its file (inside the project only), the line of
point and the region's lines."
  :type 'boolean
  :group 'agent-shell
  :package-version '(agent-shell . "0.2"))

(defcustom agent-shell-context-org-clock 'project
  "Whether each prompt names the clocked-in org task.
`project': only when the task's org file is inside the project;
`always': wherever it is; nil: never."
  :type '(choice (const :tag "When its file is in the project" project)
                 (const :tag "Always" always)
                 (const :tag "Never" nil))
  :group 'agent-shell
  :package-version '(agent-shell . "0.2"))

(defcustom agent-shell-context-git-branch t
  "Non-nil: each prompt names the project's git branch (read from .git/HEAD)."
  :type 'boolean
  :group 'agent-shell
  :package-version '(agent-shell . "0.2"))

(defcustom agent-shell-context-last-run t
  "Non-nil: each prompt describes the latest *compilation* or *grep* run.
Its command, how it ended and its first error with the location; only
for a run in the project."
  :type 'boolean
  :group 'agent-shell
  :package-version '(agent-shell . "0.2"))

(defvar org-clock-marker)
(defvar org-clock-current-task)
(declare-function org-clocking-p "org-clock" ())
(declare-function org-end-of-meta-data "org" (&optional full))
(declare-function compilation-next-error "compile" (n &optional different-file pt))

(defconst agent-shell-ambient--cap 160
  "Longest string of the automatic context.")

(defun agent-shell-ambient--short (text)
  "Return TEXT on one line, at most `agent-shell-ambient--cap' characters."
  (let ((flat (replace-regexp-in-string "[ \t\n\r]+" " " (string-trim text))))
    (if (> (length flat) agent-shell-ambient--cap)
        (concat (substring flat 0 agent-shell-ambient--cap) "…")
      flat)))

(defun agent-shell-ambient--inside (file root)
  "Return FILE relative to ROOT when it is inside, else nil (no truename)."
  (let ((file (expand-file-name file)))
    (and (string-prefix-p root file) (substring file (length root)))))

(defun agent-shell-ambient--visible (root)
  "Return the buffers visible in the selected frame, as alists, for ROOT."
  (let ((out nil) (outside 0))
    (dolist (w (window-list (selected-frame) 'no-minibuf))
      (let* ((b (window-buffer w))
             (file (buffer-file-name b))
             (rel (and file (agent-shell-ambient--inside file root))))
        (cond
         ((eq (buffer-local-value 'major-mode b) 'agent-shell-mode))
         ((and file (not rel)) (cl-incf outside))
         ((assoc (buffer-name b) out))
         (t
          (with-current-buffer b
            (push `(,(buffer-name b)
                    (buffer . ,(buffer-name b))
                    ,@(and rel `((file . ,rel)))
                    (mode . ,(symbol-name major-mode))
                    (line . ,(line-number-at-pos (window-point w)))
                    ,@(and (eq w (selected-window)) (region-active-p)
                           `((region . ,(format "%d-%d" (line-number-at-pos (region-beginning))
                                                (line-number-at-pos (region-end)))))))
                  out))))))
    (append (mapcar #'cdr (nreverse out))
            (and (> outside 0) `(((outside_project . ,outside)))))))

(defun agent-shell-ambient--org-task (root)
  "Return the clocked-in org task as an alist, or nil, for ROOT."
  (when (and agent-shell-context-org-clock (fboundp 'org-clocking-p) (org-clocking-p)
             (markerp org-clock-marker) (marker-buffer org-clock-marker))
    (let* ((buffer (marker-buffer org-clock-marker))
           (file (buffer-file-name buffer))
           (rel (and file (agent-shell-ambient--inside file root))))
      (when (or rel (eq agent-shell-context-org-clock 'always))
        (with-current-buffer buffer
          (save-excursion
            (save-restriction
              (widen)
              (goto-char org-clock-marker)
              (let ((heading (or org-clock-current-task "")))
                (forward-line 1)
                (let ((start (point)))
                  (forward-line 3)
                  `((heading . ,(agent-shell-ambient--short heading))
                    ,@(and rel `((file . ,rel)))
                    (body . ,(agent-shell-ambient--short
                              (buffer-substring-no-properties start (point))))))))))))))

(defun agent-shell-ambient-git-branch (root)
  "Return ROOT's git branch from its HEAD file (no git process), or nil."
  (let* ((dot (expand-file-name ".git" root))
         (gitdir (cond ((file-directory-p dot) dot)
                       ((file-regular-p dot)
                        (with-temp-buffer
                          (insert-file-contents dot)
                          (and (re-search-forward "^gitdir: \\(.+\\)$" nil t)
                               (expand-file-name (match-string 1) root))))))
         (head (and gitdir (expand-file-name "HEAD" gitdir))))
    (when (and head (file-readable-p head))
      (with-temp-buffer
        (insert-file-contents head nil 0 300)
        (if (re-search-forward "\\`ref: refs/heads/\\(.+\\)$" nil t)
            (match-string 1)
          (concat "detached at " (buffer-substring 1 (min (point-max) 13))))))))

(defun agent-shell-ambient--run-status ()
  "Return how the compilation of the current buffer ended, or \"running\"."
  (if (get-buffer-process (current-buffer)) "running"
    (save-excursion
      (goto-char (point-max))
      (if (re-search-backward "^\\(Compilation\\|Grep\\) \\(.*\\) at "
                              (max (point-min) (- (point) 500)) t)
          (match-string-no-properties 2)
        "unknown"))))

(defun agent-shell-ambient--first-error ()
  "Return the first error of the current compilation buffer as text, or nil."
  (save-excursion
    (goto-char (point-min))
    (when (ignore-errors (compilation-next-error 1) t)
      (agent-shell-ambient--short
       (buffer-substring-no-properties (line-beginning-position) (line-end-position))))))

(defun agent-shell-ambient--last-run (root)
  "Return the latest *compilation* or *grep* run in ROOT, as an alist, or nil."
  (when-let ((b (cl-find-if (lambda (b)
                              (and (provided-mode-derived-p
                                    (buffer-local-value 'major-mode b) 'compilation-mode)
                                   (agent-shell-ambient--inside
                                    (buffer-local-value 'default-directory b) root)))
                            (buffer-list))))
    (with-current-buffer b
      `((buffer . ,(buffer-name b))
        ,@(and (consp compilation-arguments)
               `((command . ,(agent-shell-ambient--short (car compilation-arguments)))))
        (status . ,(agent-shell-ambient--run-status))
        ,@(when-let ((first (agent-shell-ambient--first-error)))
            `((first_error . ,first)))))))

(defun agent-shell-ambient-context (root)
  "Return the automatic context of a prompt in ROOT, an alist for JSON.
What each of `agent-shell-context-visible-buffers',
`agent-shell-context-org-clock', `agent-shell-context-git-branch' and
`agent-shell-context-last-run' allows; nothing from outside ROOT
except as those options say."
  (let ((root (file-name-as-directory (expand-file-name root))))
    (delq nil
          (list
           (when-let ((visible (and agent-shell-context-visible-buffers
                                    (agent-shell-ambient--visible root))))
             (cons 'visible (vconcat visible)))
           (when-let ((task (agent-shell-ambient--org-task root)))
             (cons 'org_task task))
           (when-let ((branch (and agent-shell-context-git-branch
                                   (agent-shell-ambient-git-branch root))))
             (cons 'branch branch))
           (when-let ((run (and agent-shell-context-last-run
                                (agent-shell-ambient--last-run root))))
             (cons 'last_run run))))))

(provide 'agent-shell-ambient)
;;; agent-shell-ambient.el ends here
