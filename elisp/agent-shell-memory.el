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
;;   first, in a `tabulated-list-mode' buffer: RET opens one, f forgets
;;   it, k deletes it after confirmation, g refreshes.
;; - `agent-shell-memory-review' is the inbox: the experiences still
;;   `status: new', one at a time; a accepts, e accepts and opens the
;;   file for editing, r rejects, f forgets, n skips.  The bridge
;;   (`memory/review') marks the file, indexes it again and records the
;;   decision in the action log of the project's sessions.
;; - `agent-shell-memory-forget' takes one experience out of the memory:
;;   its file stays, marked `status: forgotten', and is never found again.
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

(defvar-local agent-shell-memory--inbox nil
  "The experience files still to review in this inbox buffer.")

(defvar-local agent-shell-memory--reviewing nil
  "The experience file shown in this inbox buffer.")

(defvar-local agent-shell-memory--reviewed 0
  "How many experiences this inbox has decided on.")

(defun agent-shell-memory--connection ()
  "Return the live bridge connection, or signal a user error."
  (or (agent-shell-bridge-live-connection)
      (user-error "The bridge is not running")))

(defun agent-shell-memory-parse-list (value)
  "Return the items of the front matter list VALUE (\"[a, \\\"b, c\\\"]\")."
  (let ((s (string-trim (or value "")))
        (items nil))
    (setq s (string-trim (string-remove-suffix "]" (string-remove-prefix "[" s))))
    (while (not (string-empty-p s))
      (if (string-prefix-p "\"" s)
          (let ((end (and (string-match "\\`\"\\(?:[^\"\\\\]\\|\\\\.\\)*\"" s)
                          (match-end 0))))
            (if end
                (progn (push (json-parse-string (substring s 0 end)) items)
                       (setq s (substring s end)))
              (push s items)
              (setq s "")))
        (let ((comma (or (string-search "," s) (length s))))
          (push (string-trim (substring s 0 comma)) items)
          (setq s (substring s comma))))
      (setq s (string-trim (string-remove-prefix "," (string-trim s)))))
    (delete "" (nreverse items))))

(defun agent-shell-memory-read-search-terms (drafted)
  "Ask for an experience's search terms, offering the list DRAFTED.
They are how someone would later describe the same problem; return a
list of strings."
  (let ((answer (read-string "Search terms (comma-separated, how you would describe it later): "
                             (string-join drafted ", "))))
    (delete "" (mapcar #'string-trim (split-string answer "," t)))))

(defun agent-shell-memory--review-request (conn path decision terms on-done)
  "Send `memory/review' on CONN for PATH with DECISION and TERMS.
DECISION is a string or nil, TERMS a list or nil; call ON-DONE with the
result."
  (agent-shell-rpc-request
   conn "memory/review"
   `((path . ,path)
     ,@(and decision `((decision . ,decision)))
     ,@(and terms `((searchTerms . ,(vconcat terms)))))
   :on-success on-done
   :on-error (lambda (err)
               (message "agent-shell: %s failed: %s" (or decision "updating search terms")
                        (alist-get 'message err)))))

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
                     (agent-shell-memory-status file)
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
         (conn (agent-shell-memory--connection)))
    (message "agent-shell: saving an experience…")
    (agent-shell-rpc-request
     conn "memory/save" `((sessionId . ,session))
     :timeout agent-shell-memory-save-timeout
     :on-success (lambda (result)
                   (let* ((path (alist-get 'path result))
                          (drafted (append (alist-get 'searchTerms result) nil))
                          (terms (agent-shell-memory-read-search-terms drafted)))
                     (message "agent-shell: saved \"%s\"" (alist-get 'title result))
                     (unless (equal terms drafted)
                       (agent-shell-memory--review-request conn path nil terms #'ignore))
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

(defun agent-shell-memory-status (file)
  "Return FILE's review status: \"new\", \"accepted\", \"rejected\", \"forgotten\".
A file without one was saved before reviews existed: accepted."
  (let ((status (condition-case nil
                    (alist-get 'status (agent-shell-memory-front-matter file))
                  (error nil))))
    (if (or (null status) (string-empty-p status)) "accepted" (downcase status))))

;;;###autoload
(defun agent-shell-memory-forget (file)
  "Take the experience FILE out of the memory; the file stays, marked.
The bridge marks it `status: forgotten' (nothing else in it changes),
drops it from the index and records it in the action log.
Interactively: the experience on the current line of the browser, else
one chosen among the project's experiences."
  (interactive
   (list (or (and (derived-mode-p 'agent-shell-memory-mode) (tabulated-list-get-id))
             (and (derived-mode-p 'agent-shell-memory-review-mode)
                  agent-shell-memory--reviewing)
             (let* ((files (agent-shell-memory-files (agent-shell-project-root)))
                    (names (mapcar (lambda (f) (cons (file-name-nondirectory f) f)) files)))
               (or (cdr (assoc (completing-read "Forget experience: " names nil t) names))
                   (user-error "No experience chosen"))))))
  (agent-shell-memory--review-request
   (agent-shell-memory--connection) file "forget" nil
   (lambda (_result)
     (message "agent-shell: forgot %s" (file-name-nondirectory file))
     (dolist (b (buffer-list))
       (with-current-buffer b
         (when (derived-mode-p 'agent-shell-memory-mode)
           (revert-buffer)))))))

(defvar agent-shell-memory-mode-map
  (let ((map (make-sparse-keymap)))
    (define-key map (kbd "RET") #'agent-shell-memory-open)
    (define-key map (kbd "f") #'agent-shell-memory-forget)
    (define-key map (kbd "k") #'agent-shell-memory-delete)
    map)
  "Keymap of `agent-shell-memory-mode'.")

(define-derived-mode agent-shell-memory-mode tabulated-list-mode "Agent-Memory"
  "Major mode listing a project's agent-shell experiences, newest first.

\\{agent-shell-memory-mode-map}"
  (setq tabulated-list-format [("Date" 10 t) ("Title" 50 t) ("Type" 10 t)
                               ("Status" 9 t) ("Tags" 30 nil)])
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

;;; The review inbox

(defun agent-shell-memory-inbox (root)
  "Return ROOT's experience files still `status: new', oldest first."
  (reverse (cl-remove-if-not (lambda (f) (equal (agent-shell-memory-status f) "new"))
                             (agent-shell-memory-files root))))

(defun agent-shell-memory--review-show ()
  "Show the first experience of the inbox, or say that it is empty."
  (let ((inhibit-read-only t)
        (file (car agent-shell-memory--inbox)))
    (setq agent-shell-memory--reviewing file)
    (erase-buffer)
    (if (not file)
        (insert (format "No experience left to review (%d decided).\n\nq: quit\n"
                        agent-shell-memory--reviewed))
      (let ((fm (agent-shell-memory-front-matter file)))
        (insert (propertize (or (alist-get 'title fm) (file-name-nondirectory file))
                            'face 'bold)
                (format "\n%s  ·  %s  ·  %d left to review\n\n"
                        (or (alist-get 'date fm) "") (file-name-nondirectory file)
                        (length agent-shell-memory--inbox))
                "Summary: " (or (alist-get 'summary fm) "") "\n"
                "Search terms: "
                (string-join (agent-shell-memory-parse-list (alist-get 'search_terms fm)) "; ")
                "\n\n"
                (with-temp-buffer
                  (insert-file-contents file)
                  (goto-char (point-min))
                  (when (looking-at "---[ \t]*$")
                    (forward-line 1)
                    (re-search-forward "^---[ \t]*$" nil 'move)
                    (forward-line 1))
                  (buffer-substring-no-properties (point) (point-max)))
                "\na: accept   e: accept and edit   r: reject   f: forget   "
                "n: skip   q: quit\n")))
    (goto-char (point-min))))

(defun agent-shell-memory--review-decide (decision)
  "Send DECISION on the experience shown, then show the next one."
  (let ((file (or agent-shell-memory--reviewing (user-error "Nothing to review")))
        (buffer (current-buffer)))
    (agent-shell-memory--review-request
     (agent-shell-memory--connection) file decision nil
     (lambda (_result)
       (message "agent-shell: %s %s" decision (file-name-nondirectory file))
       (when (buffer-live-p buffer)
         (with-current-buffer buffer
           (when (equal agent-shell-memory--reviewing file)
             (setq agent-shell-memory--inbox (cdr agent-shell-memory--inbox))
             (cl-incf agent-shell-memory--reviewed)
             (agent-shell-memory--review-show))))
       (when (equal decision "edit")
         (find-file-other-window file))))))

(defun agent-shell-memory-review-accept ()
  "Accept the experience shown: it is injected into later tasks."
  (interactive)
  (agent-shell-memory--review-decide "accept"))

(defun agent-shell-memory-review-edit ()
  "Accept the experience shown and open its file for editing."
  (interactive)
  (agent-shell-memory--review-decide "edit"))

(defun agent-shell-memory-review-reject ()
  "Reject the experience shown: it stays on disk, never injected."
  (interactive)
  (agent-shell-memory--review-decide "reject"))

(defun agent-shell-memory-review-forget ()
  "Forget the experience shown: marked `status: forgotten', out of the index."
  (interactive)
  (agent-shell-memory--review-decide "forget"))

(defun agent-shell-memory-review-skip ()
  "Leave the experience shown for later and show the next one."
  (interactive)
  (setq agent-shell-memory--inbox
        (append (cdr agent-shell-memory--inbox)
                (and (cdr agent-shell-memory--inbox) (list (car agent-shell-memory--inbox)))))
  (agent-shell-memory--review-show))

(defvar agent-shell-memory-review-mode-map
  (let ((map (make-sparse-keymap)))
    (define-key map (kbd "a") #'agent-shell-memory-review-accept)
    (define-key map (kbd "e") #'agent-shell-memory-review-edit)
    (define-key map (kbd "r") #'agent-shell-memory-review-reject)
    (define-key map (kbd "f") #'agent-shell-memory-review-forget)
    (define-key map (kbd "n") #'agent-shell-memory-review-skip)
    map)
  "Keymap of `agent-shell-memory-review-mode'.")

(define-derived-mode agent-shell-memory-review-mode special-mode "Agent-Review"
  "Major mode of the memory review inbox: one new experience at a time.

\\{agent-shell-memory-review-mode-map}")

;;;###autoload
(defun agent-shell-memory-review (&optional root)
  "Review the new experiences of project ROOT (default: the current project).
They are shown one at a time; each decision is sent to the bridge,
which marks the file and records it in the action log."
  (interactive)
  (let* ((root (file-name-as-directory
                (expand-file-name (or root (agent-shell-project-root)))))
         (buffer (get-buffer-create
                  (format "*agent-shell review: %s*"
                          (file-name-nondirectory (directory-file-name root))))))
    (with-current-buffer buffer
      (agent-shell-memory-review-mode)
      (setq default-directory root
            agent-shell-memory--inbox (agent-shell-memory-inbox root)
            agent-shell-memory--reviewed 0)
      (agent-shell-memory--review-show))
    (pop-to-buffer buffer)
    buffer))

(provide 'agent-shell-memory)
;;; agent-shell-memory.el ends here
