;;; agent-shell-memory.el --- Save and browse agent-shell experiences  -*- lexical-binding: t; -*-

;; SPDX-License-Identifier: GPL-3.0-or-later

;;; Commentary:

;; Experiences are Markdown files in <root>/.agent-shell/memory/ (format
;; in memory_schema/FORMAT.md); the bridge writes them and indexes them.
;;
;; - `agent-shell-save-memory' asks the bridge (`memory/save') to extract
;;   an experience from the current session now, then opens the new file
;;   for review.
;; - `agent-shell-memory-browse' lists the project's experiences, newest
;;   first, in a `tabulated-list-mode' buffer: RET opens one, k deletes
;;   it after confirmation, g refreshes.
;;
;; The session and connection come from agent-shell.el, which this
;; file requires; agent-shell.el only autoloads these commands.

;;; Code:

(require 'cl-lib)
(require 'agent-shell-session)
(require 'subr-x)
(require 'tabulated-list)

(require 'agent-shell)

;;; Options

(defcustom agent-shell-memory-save-timeout 180
  "Seconds to wait for the bridge to extract an experience."
  :type 'number
  :group 'agent-shell
  :package-version '(agent-shell . "0.1.0"))

;;; Internals

(defconst agent-shell-memory--header-bytes 8192
  "How much of an experience file is read to find its front matter.")

(defun agent-shell-memory--shell-buffer ()
  "Return the shell buffer to save from: the current one, else the project's."
  (if (and (derived-mode-p 'agent-shell-mode) (agent-shell-session-id agent-shell--session))
      (current-buffer)
    (let ((root (agent-shell-project-root)))
      (or (cl-find-if (lambda (b)
                        (with-current-buffer b
                          (and (derived-mode-p 'agent-shell-mode)
                               (agent-shell-session-id agent-shell--session)
                               (equal (agent-shell-session-root agent-shell--session) root))))
                      (buffer-list))
          (user-error "No agent-shell session for %s" root)))))

(defun agent-shell-memory--unquote (value)
  "Return VALUE with the JSON string quoting of the format undone."
  (if (and (string-prefix-p "\"" value) (string-suffix-p "\"" value)
           (> (length value) 1))
      (condition-case nil (json-parse-string value) (error value))
    value))

(defun agent-shell-memory-front-matter (file)
  "Return FILE's front matter as an alist of (KEY . STRING).
Keys are symbols with `-' turned into `_'; only the start of the file
is read."
  (with-temp-buffer
    (insert-file-contents file nil 0 agent-shell-memory--header-bytes)
    (goto-char (point-min))
    (let (fields)
      (when (looking-at "---[ \t]*$")
        (forward-line 1)
        (while (and (not (eobp)) (not (looking-at "---[ \t]*$")))
          (when (looking-at "\\([A-Za-z_-]+\\):[ \t]*\\(.*?\\)[ \t]*$")
            (push (cons (intern (replace-regexp-in-string
                                 "-" "_" (downcase (match-string 1))))
                        (agent-shell-memory--unquote (match-string 2)))
                  fields))
          (forward-line 1)))
      (nreverse fields))))

(defun agent-shell-memory--dir (root)
  "Return ROOT's experience directory."
  (expand-file-name ".agent-shell/memory/" root))

(defun agent-shell-memory-files (root)
  "Return ROOT's experience files, newest first.
Only regular `*.md' files not starting with a dot count."
  (let ((dir (agent-shell-memory--dir root)))
    (when (file-directory-p dir)
      (sort (cl-remove-if-not
             (lambda (f) (and (file-regular-p f) (not (file-symlink-p f))))
             (directory-files dir t "\\`[^.].*\\.md\\'"))
            (lambda (a b)
              (let ((na (file-name-nondirectory a))
                    (nb (file-name-nondirectory b)))
                (if (string= (substring na 0 (min 10 (length na)))
                             (substring nb 0 (min 10 (length nb))))
                    (time-less-p (file-attribute-modification-time
                                  (file-attributes b))
                                 (file-attribute-modification-time
                                  (file-attributes a)))
                  (string> na nb))))))))

(defvar-local agent-shell-memory--root nil
  "The project root whose experiences this buffer lists.")

(defun agent-shell-memory--entries ()
  "Return the tabulated list entries of the listed project."
  (mapcar
   (lambda (file)
     (let* ((fm (condition-case nil (agent-shell-memory-front-matter file)
                  (error nil)))
            (name (file-name-nondirectory file)))
       (list file
             (vector (or (alist-get 'date fm) (substring name 0 (min 10 (length name))))
                     (or (alist-get 'title fm) name)
                     (or (alist-get 'task_type fm) "")
                     (string-trim (or (alist-get 'tags fm) "") "\\[" "\\]")))))
   (agent-shell-memory-files agent-shell-memory--root)))

(defun agent-shell-memory--refresh ()
  "Recompute the list of experiences."
  (setq tabulated-list-entries (agent-shell-memory--entries)))

(defun agent-shell-memory--file-at-point ()
  "Return the experience file on the current line."
  (or (tabulated-list-get-id) (user-error "No experience on this line")))

;;; Commands

;;;###autoload
(defun agent-shell-save-memory ()
  "Extract an experience from the current session now and open it for review."
  (interactive)
  (let* ((buffer (agent-shell-memory--shell-buffer))
         (session (agent-shell-session-id (buffer-local-value 'agent-shell--session buffer)))
         (conn (or (agent-shell-bridge-live-connection)
                   (user-error "The bridge is not running"))))
    (message "agent-shell: saving an experience…")
    (agent-shell-rpc-request
     conn "memory/save" `((sessionId . ,session))
     :timeout agent-shell-memory-save-timeout
     :on-success (lambda (result)
                   (let ((path (alist-get 'path result)))
                     (message "agent-shell: saved \"%s\"" (alist-get 'title result))
                     (when (and path (file-readable-p path))
                       (find-file-other-window path))))
     :on-error (lambda (err)
                 (message "agent-shell: saving the experience failed: %s"
                          (alist-get 'message err))))))

(defun agent-shell-memory-open ()
  "Open the experience on the current line."
  (interactive)
  (find-file-other-window (agent-shell-memory--file-at-point)))

(defun agent-shell-memory-delete ()
  "Delete the experience on the current line after confirmation."
  (interactive)
  (let ((file (agent-shell-memory--file-at-point)))
    (when (yes-or-no-p (format "Delete experience %s? "
                               (file-name-nondirectory file)))
      (delete-file file)
      (revert-buffer))))

(defvar agent-shell-memory-mode-map
  (let ((map (make-sparse-keymap)))
    (define-key map (kbd "RET") #'agent-shell-memory-open)
    (define-key map (kbd "k") #'agent-shell-memory-delete)
    map)
  "Keymap of `agent-shell-memory-mode'.")

(define-derived-mode agent-shell-memory-mode tabulated-list-mode "Agent-Memory"
  "Major mode listing a project's agent-shell experiences, newest first.

\\{agent-shell-memory-mode-map}"
  (setq tabulated-list-format [("Date" 10 t) ("Title" 50 t) ("Type" 10 t)
                               ("Tags" 30 nil)])
  (setq tabulated-list-sort-key nil)
  (add-hook 'tabulated-list-revert-hook #'agent-shell-memory--refresh nil t)
  (tabulated-list-init-header))

;;;###autoload
(defun agent-shell-memory-browse (&optional root)
  "List the experiences of project ROOT (default: the current project)."
  (interactive)
  (let* ((root (file-name-as-directory
                (expand-file-name (or root (agent-shell-project-root)))))
         (buffer (get-buffer-create
                  (format "*agent-shell memory: %s*"
                          (file-name-nondirectory (directory-file-name root))))))
    (with-current-buffer buffer
      (agent-shell-memory-mode)
      (setq agent-shell-memory--root root
            default-directory root)
      (agent-shell-memory--refresh)
      (tabulated-list-print))
    (pop-to-buffer buffer)
    buffer))

(provide 'agent-shell-memory)
;;; agent-shell-memory.el ends here
