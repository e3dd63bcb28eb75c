;;; agent-shell-mention.el --- What an @ in the shell input can name  -*- lexical-binding: t; -*-

;; SPDX-License-Identifier: GPL-3.0-or-later

;;; Commentary:

;; `@' mentions in the input of a shell buffer: project files (from
;; project.el), open buffers (file buffers and others: *compilation*,
;; *grep*, *xref*, magit, shells, *Help*) and `@diagnostics' (the
;; project's Flymake or Flycheck diagnostics).
;; `agent-shell-mention-completion-at-point' completes them, annotated
;; with kind and size; `agent-shell-mention-resolve' turns a mention's
;; text into what agent-shell-context.el attaches when the prompt is
;; sent, and `agent-shell-mention-refusal' says why a mention may not
;; attach a file (outside the project, or holding credentials: only a
;; send command attaches those).
;;
;; The file list is cached per project: listed once (git ls-files for a
;; git repository, else `project-files'), then refreshed in the
;; background by a subprocess when it is older than
;; `agent-shell-mention-refresh-seconds' or a file unknown to it is
;; saved, so no keystroke waits for a scan.

;;; Code:

(require 'cl-lib)
(require 'subr-x)
(require 'agent-shell-custom)
(require 'agent-shell-session)
(require 'agent-shell-tools)

(declare-function project-files "project" (project &optional dirs))
(declare-function project-current "project" (&optional maybe-prompt directory))

;;; Options

(defcustom agent-shell-mention-refresh-seconds 30
  "Seconds a project's cached file list is used before it is listed again.
The new listing runs in the background; completion keeps using the
old one until it arrives."
  :type 'number
  :group 'agent-shell
  :package-version '(agent-shell . "0.2"))

;;; The file list of a project

(cl-defstruct (agent-shell-mention-files (:constructor agent-shell-mention-files-create)
                                         (:copier nil))
  "The cached file list of one project root."
  (names nil :documentation "File names relative to the root, a list.")
  (table nil :documentation "The same names in a hash table.")
  (time 0 :documentation "When the listing finished, as a float time.")
  (stale nil :documentation "Non-nil when a saved file was not in the list.")
  (process nil :documentation "The background listing under way, or nil."))

(defvar agent-shell-mention--files (make-hash-table :test #'equal)
  "Cached file lists, by project root (a directory name).")

(defun agent-shell-mention--git-p (root)
  "Return non-nil when ROOT is a git work tree (its top)."
  (file-exists-p (expand-file-name ".git" root)))

(defun agent-shell-mention--git-command ()
  "Return the command line listing a git work tree's files, NUL separated."
  (list "git" "-c" "core.fsmonitor=false" "ls-files" "-z" "--cached" "--others"
        "--exclude-standard"))

(defun agent-shell-mention--table (names)
  "Return a hash table holding NAMES."
  (let ((table (make-hash-table :test #'equal :size (max 64 (length names)))))
    (dolist (n names) (puthash n t table))
    table))

(defun agent-shell-mention--list-now (root)
  "Return ROOT's file names relative to ROOT, listed now."
  (if (agent-shell-mention--git-p root)
      (with-temp-buffer
        (let ((default-directory root))
          (when (eql 0 (apply #'process-file (car (agent-shell-mention--git-command)) nil t nil
                              (cdr (agent-shell-mention--git-command))))
            (split-string (buffer-string) "\0" t))))
    (when-let ((project (project-current nil root)))
      (mapcar (lambda (f) (file-relative-name f root)) (project-files project)))))

(defun agent-shell-mention--store (root names)
  "Keep NAMES as ROOT's file list; return the record."
  (let ((record (or (gethash root agent-shell-mention--files)
                    (agent-shell-mention-files-create))))
    (setf (agent-shell-mention-files-names record) names
          (agent-shell-mention-files-table record) (agent-shell-mention--table names)
          (agent-shell-mention-files-time record) (float-time)
          (agent-shell-mention-files-stale record) nil)
    (puthash root record agent-shell-mention--files)
    (add-hook 'after-save-hook #'agent-shell-mention-note-saved)
    record))

(defun agent-shell-mention--refresh (root record)
  "List ROOT's files again in the background into RECORD."
  (unless (process-live-p (agent-shell-mention-files-process record))
    (if (not (agent-shell-mention--git-p root))
        (run-with-idle-timer 0.5 nil (lambda () (agent-shell-mention--store
                                                 root (agent-shell-mention--list-now root))))
      (let* ((buffer (generate-new-buffer " *agent-shell-mention ls-files*"))
             (default-directory root)
             (process
              (make-process
               :name "agent-shell-mention-ls" :buffer buffer :noquery t
               :connection-type 'pipe :coding 'utf-8
               :command (agent-shell-mention--git-command)
               :sentinel
               (lambda (proc _event)
                 (unless (process-live-p proc)
                   (when (and (eql 0 (process-exit-status proc)) (buffer-live-p buffer))
                     (agent-shell-mention--store
                      root (with-current-buffer buffer
                             (split-string (buffer-string) "\0" t))))
                   (when (buffer-live-p buffer) (kill-buffer buffer)))))))
        (setf (agent-shell-mention-files-process record) process)))))

(defun agent-shell-mention-project-files (root)
  "Return ROOT's file names relative to ROOT, from the cache when there is one.
The first call lists them; later ones start a background listing when
the cache is old or stale and return the cached list meanwhile."
  (let* ((root (file-name-as-directory (expand-file-name root)))
         (record (gethash root agent-shell-mention--files)))
    (if (not (and record (agent-shell-mention-files-table record)))
        (agent-shell-mention-files-names
         (agent-shell-mention--store root (agent-shell-mention--list-now root)))
      (when (or (agent-shell-mention-files-stale record)
                (> (- (float-time) (agent-shell-mention-files-time record))
                   agent-shell-mention-refresh-seconds))
        (agent-shell-mention--refresh root record))
      (agent-shell-mention-files-names record))))

(defun agent-shell-mention-note-saved ()
  "Mark a cached file list stale when the saved file is new to it.
On `after-save-hook': a hash lookup, no listing."
  (when-let ((file (buffer-file-name)))
    (maphash (lambda (root record)
               (when (and (string-prefix-p root file)
                          (not (gethash (substring file (length root))
                                        (agent-shell-mention-files-table record))))
                 (setf (agent-shell-mention-files-stale record) t)))
             agent-shell-mention--files)))

;;; Buffers

(defun agent-shell-mention-buffer-p (buffer)
  "Return non-nil when BUFFER can be mentioned: live, shown, not agent-shell's."
  (let ((name (buffer-name buffer)))
    (and name (not (string-prefix-p " " name))
         (not (string-prefix-p "*agent-shell" name))
         (not (eq (buffer-local-value 'major-mode buffer) 'agent-shell-mode)))))

(defun agent-shell-mention--buffer-names ()
  "Return the names of the buffers a mention can name."
  (delq nil (mapcar (lambda (b) (and (agent-shell-mention-buffer-p b) (buffer-name b)))
                    (buffer-list))))

;;; Resolving a mention

(defun agent-shell-mention--file-spec (name root)
  "Return a file spec for NAME under ROOT (or absolute), or nil."
  (let ((file (expand-file-name name root)))
    (and (file-regular-p file) (list :kind 'file :path file))))

(defun agent-shell-mention--base-spec (name root)
  "Return the spec of NAME, a buffer name or a file under ROOT, without lines."
  (let ((buffer (get-buffer name)))
    (cond
     ((and buffer (agent-shell-mention-buffer-p buffer))
      (if (buffer-file-name buffer)
          (list :kind 'buffer :buffer name :path (buffer-file-name buffer)
                :buffer-object buffer)
        (list :kind 'buffer :buffer name :buffer-object buffer)))
     (t (agent-shell-mention--file-spec name root)))))

(defun agent-shell-mention-resolve (name root)
  "Return the spec NAME (a mention without its @) names in ROOT, or nil.
NAME is `diagnostics', a buffer name, or a file relative to ROOT,
each optionally followed by :LINE or :START-END."
  (let ((name (replace-regexp-in-string "[,;.!?)]+\\'" "" name)))
    (cond
     ((string= name "diagnostics") (list :kind 'diagnostics :root root))
     ((agent-shell-mention--base-spec name root))
     ((string-match "\\`\\(.+\\):\\([0-9]+\\)\\(?:-\\([0-9]+\\)\\)?\\'" name)
      (let ((start (string-to-number (match-string 2 name)))
            (end (and (match-string 3 name) (string-to-number (match-string 3 name))))
            (base (agent-shell-mention--base-spec (match-string 1 name) root)))
        (when (and base (> start 0))
          (append (list :kind 'region :start start :end (max start (or end start)))
                  (cl-loop for (k v) on base by #'cddr
                           unless (eq k :kind) append (list k v)))))))))

(defun agent-shell-mention-refusal (spec root)
  "Return why SPEC may not be attached by a mention in ROOT's shell, or nil.
A file outside ROOT (and `agent-shell-extra-allowed-paths'), or one
among the user's secrets, needs an explicit send command."
  (when-let ((file (plist-get spec :path)))
    (condition-case err
        (unless (agent-shell-tools-inside-roots
                 (expand-file-name file)
                 `((root . ,(expand-file-name root))
                   (extra_roots . ,(mapcar #'expand-file-name
                                           agent-shell-extra-allowed-paths))))
          (if (agent-shell-tools-secret-reason (expand-file-name file)
                                               (file-truename file))
              "holds credentials"
            "is outside the project"))
      (agent-shell-tool-error (format "cannot be checked (%s)" (error-message-string err))))))

;;; Completion

(defun agent-shell-mention--size-text (n)
  "Return N characters or bytes as a short size."
  (cond ((null n) "")
        ((< n 1024) (format "%d B" n))
        ((< n (* 1024 1024)) (format "%.1f KB" (/ n 1024.0)))
        (t (format "%.1f MB" (/ n 1048576.0)))))

(defun agent-shell-mention--annotate (root)
  "Return an annotation function for candidates of ROOT: kind and size."
  (lambda (candidate)
    (let ((buffer (get-buffer candidate)))
      (cond
       ((string= candidate "diagnostics") "  diagnostics of the project")
       ((and buffer (agent-shell-mention-buffer-p buffer))
        (format "  buffer %s, %s" (buffer-local-value 'major-mode buffer)
                (agent-shell-mention--size-text (buffer-size buffer))))
       (t (format "  file, %s"
                  (agent-shell-mention--size-text
                   (file-attribute-size (file-attributes (expand-file-name candidate
                                                                           root))))))))))

(defun agent-shell-mention--exit (root)
  "Return an exit function marking a completed buffer mention in ROOT's input."
  (lambda (candidate status)
    (when (memq status '(finished sole exact))
      (when-let* ((spec (agent-shell-mention-resolve candidate root))
                  (start (- (point) (length candidate) 1)))
        (when (and (>= start (point-min)) (eq (char-after start) ?@)
                   (string-search " " candidate))
          ;; A buffer name with spaces: the spec keeps the mention whole.
          (put-text-property start (point) 'agent-shell-context-attachment spec))))))

(defun agent-shell-mention-candidates (root)
  "Return a completion table of what an @ can name in ROOT."
  (completion-table-merge
   (list "diagnostics")
   (agent-shell-mention--buffer-names)
   (agent-shell-mention-project-files root)))

(defun agent-shell-mention-completion-at-point ()
  "Complete an @ mention in the input of a shell buffer.
Files of the project, open buffers and `diagnostics', annotated with
their kind and size."
  (when-let* ((session agent-shell--session)
              (marker (agent-shell-session-input-marker session))
              (root (agent-shell-session-root session))
              ((>= (point) marker)))
    (let* ((start (save-excursion (skip-chars-backward "^ \t\n@" marker) (point)))
           (end (save-excursion (skip-chars-forward "^ \t\n") (point))))
      (when (and (> start marker) (eq (char-before start) ?@)
                 (or (= (1- start) marker)
                     (memq (char-before (1- start)) '(?\s ?\t ?\n))))
        (list start end (agent-shell-mention-candidates root)
              :exclusive 'no
              :annotation-function (agent-shell-mention--annotate root)
              :exit-function (agent-shell-mention--exit root))))))

(provide 'agent-shell-mention)
;;; agent-shell-mention.el ends here
