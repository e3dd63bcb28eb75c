;;; agent-shell-sessions.el --- Every live session of this Emacs at a glance  -*- lexical-binding: t; -*-

;; SPDX-License-Identifier: GPL-3.0-or-later

;;; Commentary:

;; `agent-shell-sessions' lists every shell of this Emacs in a
;; `tabulated-list-mode' buffer: its project, buffer, git branch (and
;; whether it is a linked worktree), what the agent does (running a
;; tool, thinking, waiting for you, idle, error), for how long, tokens,
;; cost, model, the steps waiting for the user, and, with background
;; jobs, how many run.
;;
;; Nothing polls.  Whoever changes what a session shows calls
;; `agent-shell-session-changed' (agent-shell-session.el), which runs
;; `agent-shell-session-state-functions' with the shell buffer; while the
;; dashboard or `agent-shell-sessions-mode-line-mode' lives, this file
;; listens there, notes the buffer and, after
;; `agent-shell-sessions-update-delay', redraws only the rows that
;; changed, so that many streaming sessions cost a few redraws a
;; second.  Only the time column is refreshed by a slow clock, and only
;; while the dashboard is shown.
;;
;; `agent-shell-next-waiting' goes to the next session that waits for
;; the user, from anywhere, and lands on the waiting step of its log.
;;
;; Loaded when first used; it requires agent-shell.el.

;;; Code:

(require 'cl-lib)
(require 'subr-x)
(require 'tabulated-list)
(require 'agent-shell)

;; Background jobs, when agent-shell-jobs.el is loaded.
(declare-function agent-shell-jobs-running "agent-shell-jobs" (buffer))
(defvar agent-shell-jobs-changed-functions nil
  "Functions called with a shell buffer when its background jobs change.")

;;; Options

(defgroup agent-shell-sessions nil
  "The dashboard of every live agent-shell session."
  :group 'agent-shell
  :prefix "agent-shell-sessions-")

(defcustom agent-shell-sessions-update-delay 0.1
  "Seconds between a session's change and the redraw of its row.
Changes that arrive meanwhile (a streaming session changes often)
are drawn together."
  :type 'number
  :group 'agent-shell-sessions
  :package-version '(agent-shell . "0.5.0"))

(defcustom agent-shell-sessions-clock-interval 10
  "Seconds between refreshes of the time column while the dashboard shows.
Nil never refreshes it on its own (states still update at once)."
  :type '(choice (const :tag "Never" nil) (number :tag "Seconds"))
  :group 'agent-shell-sessions
  :package-version '(agent-shell . "0.5.0"))

(defface agent-shell-sessions-waiting-face
  '((t :inherit warning))
  "Face of a session that waits for you in the dashboard."
  :group 'agent-shell-sessions)

(defface agent-shell-sessions-error-face
  '((t :inherit error))
  "Face of a session whose bridge stopped, in the dashboard."
  :group 'agent-shell-sessions)

;;; What a row shows

(defconst agent-shell-sessions--buffer-name "*agent-shell sessions*"
  "Name of the dashboard buffer.")

(defun agent-shell-sessions--shells ()
  "Return the live shell buffers of this Emacs, by name."
  (sort (cl-remove-if-not
         (lambda (buffer)
           (and (eq (buffer-local-value 'major-mode buffer) 'agent-shell-mode)
                (buffer-local-value 'agent-shell--session buffer)))
         (buffer-list))
        (lambda (a b) (string< (buffer-name a) (buffer-name b)))))

(defun agent-shell-sessions--read-small (file)
  "Return the trimmed text of the small regular FILE, or nil."
  (when (and (file-regular-p file) (not (file-symlink-p file)))
    (with-temp-buffer
      (let ((coding-system-for-read 'utf-8-unix))
        (insert-file-contents file nil 0 4096))
      (string-trim (buffer-string)))))

(defvar agent-shell-sessions--heads (make-hash-table :test #'equal)
  "Root to (TIME . HEAD): `agent-shell-sessions-git-head' read at TIME.")

(defconst agent-shell-sessions--head-ttl 5
  "Seconds a root's git head is taken as read, for the rows.")

(defun agent-shell-sessions--cached-head (root)
  "Return `agent-shell-sessions-git-head' of ROOT, read at most every few seconds.
A session's branch changes rarely; its row is redrawn often."
  (let ((cached (gethash root agent-shell-sessions--heads))
        (now (float-time)))
    (if (and cached (< (- now (car cached)) agent-shell-sessions--head-ttl))
        (cdr cached)
      (let ((head (agent-shell-sessions-git-head root)))
        (puthash root (cons now head) agent-shell-sessions--heads)
        head))))

(defun agent-shell-sessions-git-head (root)
  "Return (BRANCH . WORKTREE-P) of the git checkout ROOT, or nil.
BRANCH is the branch name, or the short commit when detached;
WORKTREE-P is non-nil for a linked worktree.  Git's files are read,
no git process runs."
  (when root
    (let* ((dot (expand-file-name ".git" root))
           (pointer (and (file-regular-p dot) (agent-shell-sessions--read-small dot)))
           (gitdir (cond ((file-directory-p dot) dot)
                         ((and pointer (string-prefix-p "gitdir:" pointer))
                          (expand-file-name (string-trim (substring pointer 7)) root))))
           (head (and gitdir (agent-shell-sessions--read-small
                              (expand-file-name "HEAD" gitdir)))))
      (when head
        (cons (if (string-prefix-p "ref: refs/heads/" head)
                  (substring head 16)
                (substring head 0 (min 7 (length head))))
              (and pointer t))))))

(defun agent-shell-sessions--waiting-count (session)
  "Return the number of decisions and questions SESSION (a record) waits for."
  (let ((id (agent-shell-session-id session)))
    (+ (if (agent-shell-session-question session) 1 0)
       (if (and id agent-shell-bridge--current)
           (cl-count-if (lambda (p)
                          (and (equal (agent-shell-bridge-permission-session p) id)
                               (not (agent-shell-bridge-permission-sending p))))
                        (agent-shell-bridge-permissions agent-shell-bridge--current))
         0))))

(defun agent-shell-sessions--waiting-p (buffer)
  "Return non-nil when the shell BUFFER's session waits for the user."
  (let ((session (buffer-local-value 'agent-shell--session buffer)))
    (or (eq (agent-shell-session-state session) 'waiting)
        (> (agent-shell-sessions--waiting-count session) 0))))

(defun agent-shell-sessions--state-text (session)
  "Return the state of SESSION as shown in the dashboard."
  (pcase (agent-shell-session-state session)
    ('running (format "running %s" (or (agent-shell-session-state-detail session) "tool")))
    ('waiting (propertize "waiting for you" 'face 'agent-shell-sessions-waiting-face))
    ('dead (propertize "error: bridge stopped" 'face 'agent-shell-sessions-error-face))
    (state (symbol-name state))))

(defun agent-shell-sessions--duration (since)
  "Return the time elapsed from SINCE in a short form, or \"\"."
  (if (not since) ""
    (let ((s (max 0 (floor (float-time (time-subtract nil since))))))
      (cond ((< s 60) (format "%ds" s))
            ((< s 3600) (format "%dm%02ds" (/ s 60) (% s 60)))
            (t (format "%dh%02dm" (/ s 3600) (% (/ s 60) 60)))))))

(defun agent-shell-sessions--tokens (n)
  "Return the token count N in a short form."
  (cond ((not (numberp n)) "")
        ((>= n 1000000) (format "%.1fM" (/ n 1e6)))
        ((>= n 1000) (format "%.1fk" (/ n 1e3)))
        (t (number-to-string n))))

(defun agent-shell-sessions--jobs-p ()
  "Return non-nil when background jobs can be listed."
  (fboundp 'agent-shell-jobs-running))

(defun agent-shell-sessions--jobs-text (buffer)
  "Return how many background jobs of the shell BUFFER run, as text."
  (let ((running (cl-count-if (lambda (job) (member (format "%s" (plist-get job :state))
                                                    '("running" "run")))
                              (ignore-errors (agent-shell-jobs-running buffer)))))
    (if (> running 0) (number-to-string running) "")))

(defun agent-shell-sessions--row (buffer)
  "Return the tabulated list entry of the shell BUFFER."
  (let* ((session (buffer-local-value 'agent-shell--session buffer))
         (root (agent-shell-session-root session))
         (usage (agent-shell-session-usage session))
         (cost (alist-get 'costUsd usage))
         (head (and root (agent-shell-sessions--cached-head root)))
         (waiting (agent-shell-sessions--waiting-count session)))
    (list buffer
          (vconcat
           (list (if root (file-name-nondirectory (directory-file-name root)) "")
                 (buffer-name buffer)
                 (cond ((null head) "")
                       ((cdr head) (concat (car head) " (worktree)"))
                       (t (car head)))
                 (agent-shell-sessions--state-text session)
                 (agent-shell-sessions--duration (agent-shell-session-state-since session))
                 (agent-shell-sessions--tokens (alist-get 'totalTokens usage))
                 (if (numberp cost) (format "$%.4f" cost) "")
                 (format "%s" (or (agent-shell-session-model session) agent-shell-model))
                 (if (> waiting 0)
                     (propertize (number-to-string waiting)
                                 'face 'agent-shell-sessions-waiting-face)
                   ""))
           (and (agent-shell-sessions--jobs-p)
                (list (agent-shell-sessions--jobs-text buffer)))))))

;;; Keeping up with the sessions

(defvar agent-shell-sessions--changed nil
  "Shell buffers changed since the last redraw.")

(defvar agent-shell-sessions--timer nil
  "The timer that redraws the changed rows, or nil.")

(defvar agent-shell-sessions--mode-line ""
  "What `agent-shell-sessions-mode-line-mode' shows.")
(put 'agent-shell-sessions--mode-line 'risky-local-variable t)

(defvar agent-shell-sessions-mode-line-mode)

(defun agent-shell-sessions--note (buffer)
  "Note that the shell BUFFER changed; redraw it soon.
This is on `agent-shell-session-state-functions': it only notes."
  (unless (memq buffer agent-shell-sessions--changed)
    (push buffer agent-shell-sessions--changed))
  (unless agent-shell-sessions--timer
    (setq agent-shell-sessions--timer
          (run-with-timer agent-shell-sessions-update-delay nil
                          #'agent-shell-sessions--flush))))

(defun agent-shell-sessions--flush ()
  "Redraw the rows of the sessions changed since the last time."
  (let ((changed (prog1 agent-shell-sessions--changed
                   (setq agent-shell-sessions--changed nil
                         agent-shell-sessions--timer nil))))
    (when-let ((dashboard (get-buffer agent-shell-sessions--buffer-name)))
      (with-current-buffer dashboard
        (unless (cl-every #'agent-shell-sessions--redraw-row changed)
          (agent-shell-sessions--refresh))))
    (when agent-shell-sessions-mode-line-mode
      (agent-shell-sessions--update-mode-line))))

(defun agent-shell-sessions--watch (&optional closing)
  "Listen to the sessions while a dashboard or the mode line needs them.
CLOSING non-nil means the dashboard is going."
  (if (or (and (not closing) (get-buffer agent-shell-sessions--buffer-name))
          agent-shell-sessions-mode-line-mode)
      (progn (add-hook 'agent-shell-session-state-functions #'agent-shell-sessions--note)
             (add-hook 'agent-shell-jobs-changed-functions #'agent-shell-sessions--note))
    (remove-hook 'agent-shell-session-state-functions #'agent-shell-sessions--note)
    (remove-hook 'agent-shell-jobs-changed-functions #'agent-shell-sessions--note)
    (when agent-shell-sessions--timer
      (cancel-timer agent-shell-sessions--timer)
      (setq agent-shell-sessions--timer nil agent-shell-sessions--changed nil))))

;;; The dashboard

(defvar-local agent-shell-sessions--clock nil
  "The timer refreshing the time column, or nil.")

(defun agent-shell-sessions--format ()
  "Return the columns of the dashboard."
  (vconcat
   '(("Project" 14 t) ("Buffer" 26 t) ("Branch" 18 t) ("State" 22 t)
     ("Time" 7 nil :right-align t) ("Tokens" 7 nil :right-align t)
     ("Cost" 9 nil :right-align t) ("Model" 16 t) ("Wait" 4 nil :right-align t))
   (and (agent-shell-sessions--jobs-p) '(("Jobs" 4 nil :right-align t)))))

(defun agent-shell-sessions--refresh ()
  "Redraw every row of the dashboard (the current buffer)."
  (clrhash agent-shell-sessions--heads)
  (let ((format (agent-shell-sessions--format)))
    (unless (equal format tabulated-list-format)
      (setq tabulated-list-format format)
      (tabulated-list-init-header)))
  (setq tabulated-list-entries
        (mapcar #'agent-shell-sessions--row (agent-shell-sessions--shells)))
  (tabulated-list-print t))

(defun agent-shell-sessions--row-bounds (buffer)
  "Return (BEG . END) of the row of BUFFER in the dashboard, or nil."
  (when-let ((pos (text-property-any (point-min) (point-max) 'tabulated-list-id buffer)))
    (save-excursion
      (goto-char pos)
      (cons (line-beginning-position) (line-beginning-position 2)))))

(defun agent-shell-sessions--redraw-row (buffer)
  "Redraw the row of the shell BUFFER in place; return nil when it cannot.
A buffer that is gone, or new to the list, needs the whole list redrawn."
  (let ((entry (assq buffer tabulated-list-entries))
        (bounds (agent-shell-sessions--row-bounds buffer)))
    (when (and entry bounds (buffer-live-p buffer)
               (buffer-local-value 'agent-shell--session buffer))
      (let ((row (agent-shell-sessions--row buffer)))
        (unless (equal (cadr row) (cadr entry))
          (agent-shell-sessions--replace-row entry row bounds)))
      t)))

(defun agent-shell-sessions--replace-row (entry row bounds)
  "Draw ROW instead of ENTRY, whose text is at BOUNDS, keeping points."
  (let* ((windows (get-buffer-window-list (current-buffer) nil t))
         (points (cons (point) (mapcar #'window-point windows)))
         (beg (car bounds)) (end (cdr bounds))
         (inhibit-read-only t))
    (setcdr entry (cdr row))
    (save-excursion
      (goto-char beg)
      (delete-region beg end)
      (tabulated-list-print-entry (car row) (cadr row)))
    (let* ((new-end (save-excursion (goto-char beg) (line-beginning-position 2)))
           (move (lambda (pos)
                   (cond ((< pos beg) pos)
                         ((>= pos end) (+ pos (- new-end end)))
                         (t (min pos (1- new-end)))))))
      (goto-char (funcall move (car points)))
      (cl-mapc (lambda (window pos) (set-window-point window (funcall move pos)))
               windows (cdr points)))))

(defun agent-shell-sessions--tick (dashboard)
  "Refresh the time column of DASHBOARD when it is displayed."
  (when (and (buffer-live-p dashboard) (get-buffer-window dashboard 'visible))
    (with-current-buffer dashboard
      (mapc #'agent-shell-sessions--redraw-row
            (mapcar #'car tabulated-list-entries)))))

(defun agent-shell-sessions--shell-at-point ()
  "Return the live shell buffer of the row at point, or signal a `user-error'."
  (let ((buffer (tabulated-list-get-id)))
    (unless (buffer-live-p buffer)
      (user-error "No session on this line"))
    buffer))

(defun agent-shell-sessions--closed ()
  "Stop listening when the dashboard is killed."
  (when agent-shell-sessions--clock
    (cancel-timer agent-shell-sessions--clock))
  (agent-shell-sessions--watch t))

;;; Commands

(defun agent-shell-sessions-visit ()
  "Show the shell of the session at point."
  (interactive)
  (pop-to-buffer (agent-shell-sessions--shell-at-point)))

(defun agent-shell-sessions-log ()
  "Show the action log of the session at point."
  (interactive)
  (let ((shell (agent-shell-sessions--shell-at-point)))
    (pop-to-buffer (agent-shell-log-buffer
                    (agent-shell-session-name (buffer-local-value 'agent-shell--session shell))))))

(defun agent-shell-sessions-cancel ()
  "Cancel the running turn of the session at point."
  (interactive)
  (with-current-buffer (agent-shell-sessions--shell-at-point)
    (unless (agent-shell-session-turn-id agent-shell--session)
      (user-error "No turn is running in %s" (buffer-name)))
    (agent-shell-cancel)))

(defun agent-shell-sessions-end ()
  "End the session at point, after asking: its shell buffer is killed.
The bridge closes the session (`session/close': its turn, background
jobs and servers end); the action log buffer stays, and the session
can be resumed later."
  (interactive)
  (let* ((shell (agent-shell-sessions--shell-at-point))
         (session (buffer-local-value 'agent-shell--session shell)))
    (when (yes-or-no-p (format "End the session of %s%s? " (buffer-name shell)
                               (if (agent-shell-session-turn-id session)
                                   " (its turn is cancelled)" "")))
      (when-let ((id (agent-shell-session-id session))
                 (conn (agent-shell-bridge-live-connection)))
        (ignore-errors
          (agent-shell-rpc-notify conn "session/close" `((sessionId . ,id)))))
      (kill-buffer shell)
      (agent-shell-sessions--refresh))))

(defun agent-shell-sessions-refresh ()
  "Redraw every row of the dashboard."
  (interactive)
  (agent-shell-sessions--refresh))

(defvar agent-shell-sessions-mode-map
  (let ((map (make-sparse-keymap)))
    (set-keymap-parent map tabulated-list-mode-map)
    (define-key map (kbd "RET") #'agent-shell-sessions-visit)
    (define-key map (kbd "l") #'agent-shell-sessions-log)
    (define-key map (kbd "w") #'agent-shell-next-waiting)
    (define-key map (kbd "k") #'agent-shell-sessions-cancel)
    (define-key map (kbd "D") #'agent-shell-sessions-end)
    (define-key map (kbd "g") #'agent-shell-sessions-refresh)
    map)
  "Keymap of `agent-shell-sessions-mode'.")

(define-derived-mode agent-shell-sessions-mode tabulated-list-mode "Agent-Sessions"
  "The live sessions of this Emacs, one a line, updated as they change.
The state column says what the agent does (running a tool, thinking,
waiting for you, idle, error) and the time column for how long.

\\{agent-shell-sessions-mode-map}"
  (setq tabulated-list-format (agent-shell-sessions--format)
        tabulated-list-sort-key nil
        tabulated-list-padding 1)
  (tabulated-list-init-header)
  (add-hook 'kill-buffer-hook #'agent-shell-sessions--closed nil t))

;;;###autoload
(defun agent-shell-sessions ()
  "List every live agent-shell session of this Emacs, updated as they change."
  (interactive)
  (let ((buffer (get-buffer-create agent-shell-sessions--buffer-name)))
    (with-current-buffer buffer
      (unless (derived-mode-p 'agent-shell-sessions-mode)
        (agent-shell-sessions-mode))
      (agent-shell-sessions--watch)
      (agent-shell-sessions--refresh)
      (when (and agent-shell-sessions-clock-interval (not agent-shell-sessions--clock))
        (setq agent-shell-sessions--clock
              (run-with-timer agent-shell-sessions-clock-interval
                              agent-shell-sessions-clock-interval
                              #'agent-shell-sessions--tick buffer))))
    (pop-to-buffer buffer)
    buffer))

(defvar agent-shell-sessions--last-waiting nil
  "The shell buffer `agent-shell-next-waiting' went to last.")

(defun agent-shell-sessions--shell-of (buffer)
  "Return the shell buffer BUFFER belongs to (itself, or its log's shell), or nil."
  (cond ((eq (buffer-local-value 'major-mode buffer) 'agent-shell-mode) buffer)
        ((string-match "\\`\\*agent-shell-log: \\(.*\\)\\*\\'" (buffer-name buffer))
         (get-buffer (format "*agent-shell: %s*" (match-string 1 (buffer-name buffer)))))))

;;;###autoload
(defun agent-shell-next-waiting ()
  "Go to the next session that waits for you, cycling through them.
A step waiting for a decision is shown in its action log, point on
the WAIT step; a question of the model in its shell buffer.  Usable
from any buffer; bind it globally if you like, for instance
\(global-set-key (kbd \"C-c a w\") #\\='agent-shell-next-waiting)."
  (interactive)
  (let* ((waiting (cl-remove-if-not #'agent-shell-sessions--waiting-p
                                    (agent-shell-sessions--shells)))
         (here (or (agent-shell-sessions--shell-of (current-buffer))
                   agent-shell-sessions--last-waiting))
         (next (or (cadr (memq here waiting)) (car waiting))))
    (unless next
      (user-error "No session waits for you"))
    (setq agent-shell-sessions--last-waiting next)
    (let* ((session (buffer-local-value 'agent-shell--session next))
           (log (get-buffer (format "*agent-shell-log: %s*"
                                    (agent-shell-session-name session)))))
      (if (and log (agent-shell-log-pending log))
          (progn (pop-to-buffer log)
                 (goto-char (point-min))
                 (agent-shell-log-next-wait))
        (pop-to-buffer next)))
    (message "agent-shell: %s waits for you%s" (buffer-name next)
             (if (cdr waiting) (format " (%d sessions wait)" (length waiting)) ""))
    next))

;;; The mode line

(defun agent-shell-sessions--update-mode-line ()
  "Recount the waiting sessions for the mode line."
  (let* ((n (cl-count-if #'agent-shell-sessions--waiting-p (agent-shell-sessions--shells)))
         (text (if (> n 0)
                   (propertize (format " agents: %d waiting " n)
                               'face 'agent-shell-sessions-waiting-face
                               'help-echo "mouse-1: go to the next waiting session"
                               'mouse-face 'mode-line-highlight
                               'local-map (make-mode-line-mouse-map
                                           'mouse-1 #'agent-shell-next-waiting))
                 "")))
    (unless (equal text agent-shell-sessions--mode-line)
      (setq agent-shell-sessions--mode-line text)
      (force-mode-line-update t))))

;;;###autoload
(define-minor-mode agent-shell-sessions-mode-line-mode
  "Show in every mode line how many agent-shell sessions wait for you.
It reads \"agents: 1 waiting\" (nothing when none waits); a click goes
to the next waiting session (`agent-shell-next-waiting')."
  :global t
  :group 'agent-shell-sessions
  (if agent-shell-sessions-mode-line-mode
      (progn
        (unless (memq 'agent-shell-sessions--mode-line global-mode-string)
          (setq global-mode-string
                (append (or global-mode-string '("")) '(agent-shell-sessions--mode-line))))
        (agent-shell-sessions--update-mode-line))
    (setq global-mode-string
          (delq 'agent-shell-sessions--mode-line global-mode-string))
    (setq agent-shell-sessions--mode-line ""))
  (agent-shell-sessions--watch))

(provide 'agent-shell-sessions)
;;; agent-shell-sessions.el ends here
