;;; agent-shell-tools.el --- Dispatcher and shared helpers for Emacs-side tools  -*- lexical-binding: t; -*-

;; SPDX-License-Identifier: GPL-3.0-or-later

;;; Commentary:

;; The bridge asks Emacs to run a tool with a JSON-RPC request `tool/call';
;; the RPC layer hands NAME, ARGS and CONTEXT to `agent-shell-tools-call',
;; which finds the handler in `agent-shell-tools-catalogue', loads the file
;; that defines it and returns the handler's JSON-ready result.
;;
;; This file also holds what the perception tools
;; (agent-shell-perception.el) and the action tools
;; (agent-shell-actions.el) share: argument checking, path confinement
;; (defence in depth behind the bridge's own policy), hashing of file
;; bytes, and a bounded subprocess runner with a scrubbed environment.
;;
;; Every failure a model should see is signalled as
;; `agent-shell-tool-error' with a one-line message saying what to do.

;;; Code:

(require 'cl-lib)
(require 'subr-x)

;;; Errors

(unless (get 'agent-shell-error 'error-conditions)
  (define-error 'agent-shell-error "agent-shell error"))

(define-error 'agent-shell-tool-error "agent-shell tool error" 'agent-shell-error)

;;; Options

(defgroup agent-shell-tools nil
  "Emacs-side tools of agent-shell."
  :group 'tools
  :prefix "agent-shell-tools-")

(defcustom agent-shell-tools-process-timeout 10
  "Seconds a helper subprocess (git, rg, diff) may run before it is killed."
  :type 'number
  :group 'agent-shell-tools
  :package-version '(agent-shell . "0.1.0"))

(defcustom agent-shell-tools-max-output-bytes (* 4 1024 1024)
  "Largest subprocess output kept; a process producing more is stopped."
  :type 'integer
  :group 'agent-shell-tools
  :package-version '(agent-shell . "0.1.0"))

;;; Catalogue and dispatch

(defconst agent-shell-tools-catalogue
  '(("buffer_overview" agent-shell-perception-buffer-overview agent-shell-perception)
    ("project_status" agent-shell-perception-project-status agent-shell-perception)
    ("symbol_search" agent-shell-perception-symbol-search agent-shell-perception)
    ("org_search" agent-shell-perception-org-search agent-shell-perception)
    ("open_file" agent-shell-perception-open-file agent-shell-perception)
    ("replace_region" agent-shell-actions-replace-region agent-shell-actions)
    ("insert_text" agent-shell-actions-insert-text agent-shell-actions)
    ("replace_pattern" agent-shell-actions-replace-pattern agent-shell-actions)
    ("write_file" agent-shell-actions-write-file agent-shell-actions)
    ("magit_stage" agent-shell-actions-magit-stage agent-shell-actions))
  "Emacs-side tools: (NAME HANDLER FEATURE).
HANDLER is called with ARGS and CONTEXT; FEATURE is required first.")

(defun agent-shell-tools-names ()
  "Return the names of the Emacs-side tools, as a list of strings."
  (mapcar #'car agent-shell-tools-catalogue))

(defun agent-shell-tools-error (format-string &rest args)
  "Signal `agent-shell-tool-error' with a message from FORMAT-STRING and ARGS."
  (signal 'agent-shell-tool-error (list (apply #'format format-string args))))

(defun agent-shell-tools-call (name args context)
  "Run the Emacs-side tool NAME with ARGS in CONTEXT and return its result.
ARGS is an alist with symbol keys as decoded by `json-parse-string'.
CONTEXT is an alist with `root', `op_id', `turn_id', `session_id',
`expected_sha256' and `extra_roots'.  The result is a value that
`json-serialize' accepts: booleans are t or `:json-false', arrays
are vectors, and absent values are left out rather than sent as null.
Failures signal `agent-shell-tool-error'."
  (let ((entry (assoc name agent-shell-tools-catalogue)))
    (unless entry
      (agent-shell-tools-error "Unknown Emacs-side tool: %s" name))
    (unless (listp args)
      (agent-shell-tools-error "Tool arguments must be a JSON object"))
    (let ((root (agent-shell-tools-context-root context)))
      (unless (file-directory-p root)
        (agent-shell-tools-error "Project root does not exist: %s" root)))
    (require (nth 2 entry))
    (agent-shell-tools--drop-nulls (funcall (nth 1 entry) args context))))

(defun agent-shell-tools--alist-p (value)
  "Return non-nil when VALUE is a non-empty alist with symbol keys."
  (and (consp value)
       (cl-every (lambda (pair) (and (consp pair) (symbolp (car pair)))) value)))

(defun agent-shell-tools--drop-nulls (value)
  "Return VALUE with every (KEY . :null) pair removed, recursively.
Handlers mark absent values with `:null'; leaving the key out keeps
the result independent of the serializer's null convention."
  (cond ((vectorp value) (vconcat (mapcar #'agent-shell-tools--drop-nulls value)))
        ((agent-shell-tools--alist-p value)
         (delq nil (mapcar (lambda (pair)
                             (unless (eq (cdr pair) :null)
                               (cons (car pair)
                                     (agent-shell-tools--drop-nulls (cdr pair)))))
                           value)))
        (t value)))

;;; Arguments

(defun agent-shell-tools-arg (args key type &optional required)
  "Return argument KEY from ARGS, checked against TYPE.
TYPE is one of `string', `integer', `boolean', `list'.  When REQUIRED
is non-nil a missing argument is an error.  Booleans come back as t
or nil."
  (let ((value (alist-get key args)))
    (when (eq value :null) (setq value nil))
    (cond
     ((null value)
      (when required
        (agent-shell-tools-error "Missing required argument `%s'" key))
      nil)
     ((eq type 'boolean)
      (cond ((eq value :json-false) nil)
            ((eq value t) t)
            (t (agent-shell-tools-error "Argument `%s' must be true or false" key))))
     ((eq type 'string)
      (unless (stringp value)
        (agent-shell-tools-error "Argument `%s' must be a string" key))
      value)
     ((eq type 'integer)
      (unless (integerp value)
        (agent-shell-tools-error "Argument `%s' must be an integer" key))
      value)
     ((eq type 'list)
      (let ((items (if (vectorp value) (append value nil) value)))
        (unless (and (listp items) (cl-every #'stringp items))
          (agent-shell-tools-error "Argument `%s' must be a list of strings" key))
        items))
     (t (error "Unknown argument type %s" type)))))

(defun agent-shell-tools-context-root (context)
  "Return the project root of CONTEXT as an absolute directory name."
  (let ((root (alist-get 'root context)))
    (unless (and (stringp root) (file-name-absolute-p root))
      (agent-shell-tools-error "Context has no absolute project root"))
    (when (agent-shell-tools-remote-p root)
      (agent-shell-tools-error "Remote project roots are not supported: %s" root))
    (file-name-as-directory (agent-shell-tools--expand root))))

(defun agent-shell-tools-bool (value)
  "Return t when VALUE is non-nil, else `:json-false'."
  (if value t :json-false))

(defun agent-shell-tools-truncate (string max)
  "Return STRING cut to at most MAX characters, marking a cut with an ellipsis."
  (if (<= (length string) max)
      string
    (concat (substring string 0 (max 0 (1- max))) "…")))

;;; Paths

;; File names that a model or a repository chooses must never reach a
;; file name handler: "/sudo::/etc/passwd" would start sudo and
;; "/ssh:host:/x" would start ssh while the name is merely being
;; expanded.  Remote names are refused, and expansion and symlink
;; resolution run with the handlers switched off.

(defun agent-shell-tools-remote-p (file)
  "Return non-nil when FILE is a remote (TRAMP) file name.
Only the name is parsed; no connection is made."
  (and (stringp file) (file-remote-p file) t))

(defun agent-shell-tools--expand (file &optional dir)
  "Return FILE expanded against DIR with no file name handler involved."
  (let ((file-name-handler-alist nil))
    (expand-file-name file dir)))

(defun agent-shell-tools-truename (file &optional dir)
  "Return the truename of FILE (expanded against DIR) with no handler involved."
  (let ((file-name-handler-alist nil))
    (file-truename (expand-file-name file dir))))

(defconst agent-shell-tools--protected-files
  '(".agent-shell/allowlist.el" ".agent-shell/config.el")
  "Files under a root that the agent may never write.")

(defconst agent-shell-tools--protected-dirs
  '(".agent-shell/snapshots/" ".agent-shell/logs/" ".agent-shell/sessions/")
  "Directories under a root that the agent may never write into.")

(defun agent-shell-tools--true-dir (dir)
  "Return DIR with symlinks resolved, as a directory name."
  (file-name-as-directory (agent-shell-tools-truename dir)))

(defun agent-shell-tools-roots (context)
  "Return the truenames of the root and the extra roots of CONTEXT."
  (let ((root (agent-shell-tools-context-root context))
        (extra (alist-get 'extra_roots context)))
    (cons (agent-shell-tools--true-dir root)
          (delq nil
                (mapcar (lambda (dir)
                          (and (stringp dir) (file-name-absolute-p dir)
                               (not (agent-shell-tools-remote-p dir))
                               (agent-shell-tools--true-dir dir)))
                        (cond ((vectorp extra) (append extra nil))
                              ((listp extra) extra)))))))

(defun agent-shell-tools--within (file dir)
  "Return non-nil when FILE (a truename) is DIR or lies below it."
  (or (string= (file-name-as-directory file) dir)
      (string-prefix-p dir file)))

(defun agent-shell-tools--containing-root (file roots)
  "Return the first of ROOTS holding FILE, or nil."
  (cl-find-if (lambda (dir) (agent-shell-tools--within file dir)) roots))

(defun agent-shell-tools-resolve (path context &optional for-write)
  "Return the absolute truename of PATH, confined to the roots of CONTEXT.
PATH is relative to the project root or absolute.  Symlinks and
\"..\" are resolved before the check.  With FOR-WRITE non-nil also
refuse `.git' internals and agent-shell's own protected files."
  (when (or (not (stringp path)) (string-empty-p path))
    (agent-shell-tools-error "Path must be a non-empty string"))
  (when (string-match-p "\0" path)
    (agent-shell-tools-error "Path contains a NUL byte"))
  (when (agent-shell-tools-remote-p path)
    (agent-shell-tools-error "Remote file names are not allowed: %s" path))
  (let* ((root (agent-shell-tools-context-root context))
         (roots (agent-shell-tools-roots context))
         (true (directory-file-name (agent-shell-tools-truename path root)))
         (home (agent-shell-tools--containing-root true roots)))
    (unless home
      (agent-shell-tools-error
       "Path `%s' is outside the project root; only files under %s may be used"
       path (abbreviate-file-name root)))
    (when (agent-shell-tools-remote-p true)
      (agent-shell-tools-error "Remote file names are not allowed: %s" path))
    (when for-write
      (agent-shell-tools--check-writable true home path))
    true))

(defun agent-shell-tools-inside-roots (file context)
  "Return the truename of FILE when it is local and under the roots of CONTEXT.
Return nil for remote names, names outside the roots and non-strings."
  (when (and (stringp file) (file-name-absolute-p file)
             (not (agent-shell-tools-remote-p file)))
    (let ((true (directory-file-name (agent-shell-tools-truename file))))
      (and (agent-shell-tools--containing-root true (agent-shell-tools-roots context))
           true))))

(defun agent-shell-tools--check-writable (true home path)
  "Refuse writing TRUE (below root HOME) when it is protected.
PATH is the name the model used, for the message."
  (let* ((rel (file-relative-name true home))
         (parts (split-string rel "/" t))
         (rel-down (downcase rel)))
    (when (string= rel ".")
      (agent-shell-tools-error "Path `%s' is a root directory, not a file" path))
    (when (cl-some (lambda (part) (string= (downcase part) ".git")) parts)
      (agent-shell-tools-error "Writing inside .git is not allowed: %s" path))
    (when (or (member rel-down agent-shell-tools--protected-files)
              (cl-some (lambda (dir) (string-prefix-p dir rel-down))
                       agent-shell-tools--protected-dirs))
      (agent-shell-tools-error
       "`%s' is agent-shell's own configuration or history and cannot be written by the agent"
       rel))))

(defun agent-shell-tools-relative (file context)
  "Return FILE relative to the project root of CONTEXT when inside it.
Files elsewhere are returned as absolute names."
  (let* ((true (agent-shell-tools-truename file))
         (root (car (agent-shell-tools-roots context))))
    (if (agent-shell-tools--within true root)
        (file-relative-name true root)
      true)))

;;; Hashing

(defun agent-shell-tools-file-bytes (file)
  "Return the raw bytes of FILE as a unibyte string."
  (with-temp-buffer
    (set-buffer-multibyte nil)
    (let ((coding-system-for-read 'no-conversion))
      (insert-file-contents-literally file))
    (buffer-string)))

(defun agent-shell-tools-sha256-file (file)
  "Return the hex SHA-256 of the bytes of FILE, or nil when it does not exist."
  (when (file-regular-p file)
    (secure-hash 'sha256 (agent-shell-tools-file-bytes file))))

;;; Subprocesses

(defconst agent-shell-tools--scrubbed-env-prefixes
  '("GIT_" "PAGER=" "LESS" "LC_ALL=" "LANGUAGE=")
  "Environment entries dropped before running a helper process.")

(defun agent-shell-tools-clean-environment ()
  "Return `process-environment' without repository overrides or pagers."
  (append '("GIT_TERMINAL_PROMPT=0" "GIT_OPTIONAL_LOCKS=0" "GIT_PAGER=cat"
            "PAGER=cat" "LC_ALL=C.UTF-8")
          (cl-remove-if (lambda (entry)
                          (cl-some (lambda (prefix) (string-prefix-p prefix entry))
                                   agent-shell-tools--scrubbed-env-prefixes))
                        process-environment)))

(defvar agent-shell-tools-process-coding 'utf-8-unix
  "Coding system decoding the output of `agent-shell-tools-run'.")

(defun agent-shell-tools-json-safe (string)
  "Return STRING with raw bytes shown as \\xNN, so JSON can carry it."
  (if (not (cl-some (lambda (char) (> char #x3fff7f)) string))
      string
    (mapconcat (lambda (char)
                 (if (> char #x3fff7f)
                     (format "\\x%02x" (- char #x3fff00))
                   (string char)))
               string "")))

(defun agent-shell-tools-run (dir program &rest args)
  "Run PROGRAM with ARGS in DIR and return (EXIT-CODE . OUTPUT).
Standard output is decoded with `agent-shell-tools-process-coding';
standard error is discarded.
The process is killed after `agent-shell-tools-process-timeout'
seconds or when it produced more than
`agent-shell-tools-max-output-bytes'; EXIT-CODE is then the symbol
`timeout' or `overflow'.  A missing program gives (nil . \"\")."
  (if (not (executable-find program))
      (cons nil "")
    (let* ((default-directory (file-name-as-directory dir))
           (process-environment (agent-shell-tools-clean-environment))
           (buffer (generate-new-buffer " *agent-shell-tools-process*" t))
           (deadline (+ (float-time) agent-shell-tools-process-timeout))
           (stderr (make-pipe-process :name "agent-shell-tools-stderr"
                                      :buffer nil :noquery t
                                      :filter #'ignore :sentinel #'ignore))
           (proc nil)
           (status nil))
      (unwind-protect
          (progn
            (setq proc (make-process :name "agent-shell-tools" :buffer buffer
                                     :command (cons program args)
                                     :coding (cons agent-shell-tools-process-coding 'utf-8-unix)
                                     :connection-type 'pipe
                                     :stderr stderr
                                     :noquery t :sentinel #'ignore))
            (ignore-errors (process-send-eof proc))
            (while (and (process-live-p proc) (not status))
              ;; Only these two processes are read here, so the bridge's own
              ;; connection cannot re-enter a tool while one is running.
              (accept-process-output proc 0.05 nil t)
              (accept-process-output stderr 0 nil t)
              (cond ((> (float-time) deadline) (setq status 'timeout))
                    ((> (buffer-size buffer) agent-shell-tools-max-output-bytes)
                     (setq status 'overflow))))
            (if status
                (delete-process proc)
              ;; Drain what the process wrote before it exited.
              (while (accept-process-output proc 0 nil t))
              (setq status (process-exit-status proc)))
            (cons status (with-current-buffer buffer (buffer-string))))
        (when (and proc (process-live-p proc)) (delete-process proc))
        (delete-process stderr)
        (kill-buffer buffer)))))

(defun agent-shell-tools-git (root &rest args)
  "Run git with ARGS in ROOT; return (EXIT-CODE . OUTPUT).
File names come through unquoted so non-ASCII names stay readable."
  (apply #'agent-shell-tools-run root "git" "--no-pager" "-c" "core.quotepath=off"
         "-c" "color.ui=false" args))

(provide 'agent-shell-tools)
;;; agent-shell-tools.el ends here
