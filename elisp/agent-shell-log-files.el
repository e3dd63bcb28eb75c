;;; agent-shell-log-files.el --- Past action logs: listing, choosing, opening  -*- lexical-binding: t; -*-

;; SPDX-License-Identifier: GPL-3.0-or-later

;;; Commentary:

;; Each session writes its action log under <root>/.agent-shell/logs/
;; (a long session's in parts: BASE.org, BASE-2.org, ...).  Here they
;; are listed newest first, offered for completion with the title of
;; their first task, and opened read-only in `agent-shell-log-mode', so
;; that the review keys of a live log work on past ones too.
;; `agent-shell-log' shows the current session's live log, or picks a
;; past one.

;;; Code:

(require 'subr-x)

(defvar agent-shell-log--file)
(declare-function agent-shell-log-mode "agent-shell-log" ())
(declare-function agent-shell-show-log "agent-shell" ())

(defun agent-shell-log-root ()
  "Return the project root of this log, or nil."
  (if agent-shell-log--file
      (let ((logs (file-name-directory agent-shell-log--file)))
        (if (string-match "/\\.agent-shell/logs/\\'" logs)
            (substring logs 0 (1+ (match-beginning 0)))
          logs))
    (locate-dominating-file default-directory ".agent-shell")))

(defun agent-shell-log--file-key (file)
  "Return (BASE . PART) for log FILE: its session's name and part number.
A long session's log goes on in BASE-2.org, BASE-3.org and so on; the
first part is BASE.org, part 1."
  (let ((name (file-name-nondirectory file)))
    (if (string-match "\\`\\(.*-[0-9a-f]\\{6\\}\\)-\\([0-9]\\{1,4\\}\\)\\.org\\'" name)
        (cons (match-string 1 name) (string-to-number (match-string 2 name)))
      (cons (file-name-sans-extension name) 1))))

(defun agent-shell-log--log-files (root)
  "Return the log files under ROOT, newest first.
A session's parts stay together, its newest part first (part 10
comes before part 9)."
  (let ((dir (expand-file-name ".agent-shell/logs/" root)))
    (and (file-directory-p dir)
         (sort (directory-files dir t "\\`[^.].*\\.org\\'")
               (lambda (a b)
                 (let ((ka (agent-shell-log--file-key a))
                       (kb (agent-shell-log--file-key b)))
                   (if (equal (car ka) (car kb))
                       (> (cdr ka) (cdr kb))
                     (string> (car ka) (car kb)))))))))

(defconst agent-shell-log--peek-bytes 4096
  "Bytes read from the start of a log file to find its first task.")

(defun agent-shell-log--first-task (file)
  "Return the title of the first heading of log FILE, or nil.
Only the first `agent-shell-log--peek-bytes' bytes are read."
  (with-temp-buffer
    (let ((coding-system-for-read 'utf-8))
      (ignore-errors (insert-file-contents file nil 0 agent-shell-log--peek-bytes)))
    (goto-char (point-min))
    (let ((case-fold-search nil))
      (and (re-search-forward
            "^\\* \\(?:[A-Z]+ \\)?\\(?:\\[[^]\n]*\\] *\\)?\\(.*\\)$" nil t)
           (let ((title (string-trim (match-string-no-properties 1))))
             (and (not (string-empty-p title)) title))))))

(defun agent-shell-log--file-label (file)
  "Return the completion label of log FILE: its name and first task."
  (let ((task (agent-shell-log--first-task file)))
    (concat (file-name-nondirectory file)
            (if task (concat "  " (truncate-string-to-width task 70 nil nil "…")) ""))))

(defun agent-shell-log-open-file (file)
  "Open FILE, the current or a past action log, read-only.
Interactively, choose among the logs in <root>/.agent-shell/logs/,
newest first, each shown with the title of its first task."
  (interactive
   (let* ((root (or (and (derived-mode-p 'agent-shell-log-mode)
                         (agent-shell-log-root))
                    (locate-dominating-file default-directory ".agent-shell")
                    (user-error "No .agent-shell directory above %s"
                                default-directory)))
          (files (or (agent-shell-log--log-files root)
                     (user-error "No action logs under %s" root)))
          (labels (mapcar (lambda (f) (cons (agent-shell-log--file-label f) f))
                          files))
          (names (mapcar #'car labels))
          (current (and (derived-mode-p 'agent-shell-log-mode) agent-shell-log--file
                        (car (rassoc (expand-file-name agent-shell-log--file)
                                     (mapcar (lambda (c) (cons (car c)
                                                               (expand-file-name (cdr c))))
                                             labels)))))
          (table (lambda (string pred action)
                   (if (eq action 'metadata)
                       '(metadata (display-sort-function . identity)
                                  (cycle-sort-function . identity))
                     (complete-with-action action names string pred))))
          (choice (completing-read "Action log: " table nil t nil nil
                                   (or current (car names)))))
     (list (cdr (assoc choice labels)))))
  ;; The review keys (steps, WAIT, visit, failures) work on past logs too.
  (switch-to-buffer (agent-shell-log--visit file)))

(defun agent-shell-log--visit (file)
  "Return a buffer visiting the log FILE in `agent-shell-log-mode', read-only.
Org runs once: the file is visited in the log's mode directly, as
UTF-8 (the bridge writes nothing else), and without the question Emacs
asks before opening a large file (the bridge's own log is no surprise).
A buffer already visiting FILE in the log's mode is returned as it is."
  (let* ((file (expand-file-name file))
         (buffer (or (get-file-buffer file)
                     (let ((large-file-warning-threshold nil)
                           (coding-system-for-read 'utf-8)
                           (auto-mode-alist
                            (cons (cons (concat "/" (regexp-quote (file-name-nondirectory file))
                                                "\\'")
                                        #'agent-shell-log--file-mode)
                                  auto-mode-alist)))
                       (find-file-noselect file)))))
    (with-current-buffer buffer
      (unless (derived-mode-p 'agent-shell-log-mode)
        (agent-shell-log--file-mode))
      (setq buffer-read-only t))
    buffer))

(defun agent-shell-log--file-mode ()
  "Turn on `agent-shell-log-mode' for a log file."
  (agent-shell-log-mode)
  (setq agent-shell-log--file (expand-file-name buffer-file-name)))

;;;###autoload
(defun agent-shell-log (&optional pick)
  "Show the action log of the current session.
In a shell buffer this is the live log of its session.  With a
prefix argument PICK (\\[universal-argument]), or outside a shell buffer, pick
a past log of the project instead: the logs are offered newest first,
each with its first task, through `agent-shell-log-open-file'."
  (interactive "P")
  (if (and (not pick) (derived-mode-p 'agent-shell-mode))
      (agent-shell-show-log)
    (call-interactively #'agent-shell-log-open-file)))

(provide 'agent-shell-log-files)
;;; agent-shell-log-files.el ends here
