;;; agent-shell-tools.el --- Dispatcher and shared helpers for Emacs-side tools  -*- lexical-binding: t; -*-

;; SPDX-License-Identifier: GPL-3.0-or-later

;;; Commentary:

;; The bridge asks Emacs to run a tool with a JSON-RPC request `tool/call';
;; the RPC layer hands NAME, ARGS and CONTEXT to `agent-shell-tools-call',
;; which finds the handler in `agent-shell-tools-handlers', loads the file
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
(require 'agent-shell-custom)

;;; Errors

(define-error 'agent-shell-tool-error "agent-shell tool error" 'agent-shell-error)

;;; Options

(defgroup agent-shell-tools nil
  "Emacs-side tools of agent-shell."
  :group 'agent-shell
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

(defcustom agent-shell-secret-paths nil
  "Your own files and directories under $HOME that hold credentials.
They are added to the built-in list, which is the bridge's: keys,
cloud and database clients, package registries, other AI agents,
browser profiles, shell histories and Emacs init files (the command
\"agent-shell-bridge policy secrets\" prints it).  The bridge's
policy, its sandbox and the Emacs-side tools all use the built-in list
with these additions, which reach the bridge when it starts: tools on
both sides refuse to read or write them and everything below them,
whatever the project root, commands that read them ask first, and the
sandbox hides them.  The files named in `auth-sources' are refused too.
Names are relative to the home directory; a `*' matches any characters
within one file name.  Names are compared without regard to case."
  :type '(repeat (string :tag "Name relative to $HOME"))
  :group 'agent-shell-tools
  :package-version '(agent-shell . "0.3.0"))

;;; Handlers and dispatch

;; The tools' contract (names, arguments, side, risk) is the bridge's catalogue;
;; `initialize' returns it.  Emacs keeps only which function runs each tool the
;; bridge gives it, and offers exactly these names in its capabilities.

(define-obsolete-variable-alias 'agent-shell-tools-catalogue
  'agent-shell-tools-handlers "0.2")

(defconst agent-shell-tools-handlers
  '(("buffer_overview" agent-shell-perception-buffer-overview agent-shell-perception)
    ("project_status" agent-shell-perception-project-status agent-shell-perception)
    ("project_diagnostics" agent-shell-diagnostics-project-tool agent-shell-diagnostics)
    ("symbol_search" agent-shell-perception-symbol-search agent-shell-perception)
    ("org_search" agent-shell-perception-org-search agent-shell-perception)
    ("open_file" agent-shell-perception-open-file agent-shell-perception)
    ("replace_region" agent-shell-actions-replace-region agent-shell-actions)
    ("insert_text" agent-shell-actions-insert-text agent-shell-actions)
    ("replace_pattern" agent-shell-actions-replace-pattern agent-shell-actions)
    ("write_file" agent-shell-actions-write-file agent-shell-actions)
    ("magit_stage" agent-shell-actions-magit-stage agent-shell-actions))
  "Handlers of the Emacs-side tools: (NAME HANDLER FEATURE).
NAME is a tool the bridge's catalogue puts on the Emacs side.  HANDLER
is called with ARGS and CONTEXT; FEATURE is required first.")

(declare-function agent-shell-extend-call "agent-shell-extend")
(declare-function agent-shell-extend-tool-p "agent-shell-extend")

(defun agent-shell-tools-names ()
  "Return the names of the Emacs-side tools, as a list of strings."
  (mapcar #'car agent-shell-tools-handlers))

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
  (let ((entry (assoc name agent-shell-tools-handlers)))
    (when (and (not entry) (fboundp 'agent-shell-extend-tool-p)
               (agent-shell-extend-tool-p name))
      ;; A tool defined with `agent-shell-define-tool'.
      (setq entry (list name (lambda (args _context) (agent-shell-extend-call name args))
                        'agent-shell-extend)))
    (unless entry
      (agent-shell-tools-error "Unknown Emacs-side tool: %s" name))
    (unless (listp args)
      (agent-shell-tools-error "Tool arguments must be a JSON object"))
    (let ((root (agent-shell-tools-context-root context)))
      (unless (file-directory-p root)
        (agent-shell-tools-error "Project root does not exist: %s" root)))
    (require (nth 2 entry))
    (agent-shell-tools-drop-nulls (funcall (nth 1 entry) args context))))

(defun agent-shell-tools--alist-p (value)
  "Return non-nil when VALUE is a non-empty alist with symbol keys."
  (and (consp value)
       (cl-every (lambda (pair) (and (consp pair) (symbolp (car pair)))) value)))

(defun agent-shell-tools-drop-nulls (value)
  "Return VALUE with every (KEY . :null) pair removed, recursively.
Handlers mark absent values with `:null'; leaving the key out keeps
the result independent of the serializer's null convention."
  (cond ((vectorp value) (vconcat (mapcar #'agent-shell-tools-drop-nulls value)))
        ((agent-shell-tools--alist-p value)
         (delq nil (mapcar (lambda (pair)
                             (unless (eq (cdr pair) :null)
                               (cons (car pair)
                                     (agent-shell-tools-drop-nulls (cdr pair)))))
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
    (file-name-as-directory (agent-shell-tools-expand root))))

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

(defun agent-shell-tools-expand (file &optional dir)
  "Return FILE expanded against DIR with no file name handler involved."
  (let ((file-name-handler-alist nil))
    (expand-file-name file dir)))

(defun agent-shell-tools-truename (file &optional dir)
  "Return the truename of FILE (expanded against DIR) with no handler involved.
A symlink loop is a tool error."
  (let ((file-name-handler-alist nil))
    (condition-case err
        (file-truename (expand-file-name file dir))
      (error (agent-shell-tools-error "Cannot resolve `%s': %s" file
                                      (error-message-string err))))))

;;; Home references and secrets

;; A tool path starting with a home reference is read the way a shell
;; would read it, and the bridge reads it the same way
;; (tests/fixtures/policy/home_paths.jsonl holds the shared cases):
;; "~" and "~/..." name $HOME; so do "$HOME" and "${HOME}" when the
;; variable name ends there.  "~user" and "$HOMEX" (another variable)
;; are refused rather than guessed at.  Only the start of a path counts:
;; "./~/x" and "src/~" are ordinary names inside the project.

(defun agent-shell-tools--home ()
  "Return $HOME as a directory name, or signal a tool error when unset."
  (let ((home (getenv "HOME")))
    (unless (and home (file-name-absolute-p home))
      (agent-shell-tools-error "$HOME is not set to an absolute directory"))
    (file-name-as-directory (agent-shell-tools-expand home))))

(defun agent-shell-tools-expand-home (path)
  "Return PATH with a leading home reference replaced by $HOME.
\"~\", \"~/REST\", \"$HOME\", \"$HOME/REST\", \"${HOME}\" and
\"${HOME}REST\" expand as in a POSIX shell; any other PATH comes back
unchanged.  \"~user...\", \"$HOMEX...\" and any other leading variable
\($PWD, ${X}) signal a tool error, as in the bridge: a shell would expand
them to something this side cannot know."
  (cond
   ((string-match "\\`~\\([^/]*\\)" path)
    (unless (string-empty-p (match-string 1 path))
      (agent-shell-tools-error
       "Path `%s' names another user's home directory; only ~ and ~/ are understood"
       path))
    (concat (directory-file-name (agent-shell-tools--home))
            (substring path (match-end 0))))
   ((string-prefix-p "${HOME}" path)
    (concat (directory-file-name (agent-shell-tools--home))
            (substring path (length "${HOME}"))))
   ((string-prefix-p "$HOME" path)
    (let ((rest (substring path (length "$HOME"))))
      (when (string-match-p "\\`[A-Za-z0-9_]" rest)
        (agent-shell-tools-error
         "Path `%s' starts with a variable other than $HOME; use a real path" path))
      (concat (directory-file-name (agent-shell-tools--home)) rest)))
   ((string-prefix-p "$" path)
    (agent-shell-tools-error
     "Path `%s' starts with a variable other than $HOME; write the path in full \
\(or ./$... for a file literally named so)" path))
   (t path)))

(defun agent-shell-tools--glob-regexp (pattern)
  "Return a regexp matching PATTERN and anything below it.
A `*' in PATTERN matches any characters except a slash."
  (concat "\\`"
          (mapconcat #'regexp-quote (split-string pattern "\\*") "[^/]*")
          "\\(?:/\\|\\'\\)"))

(defvar agent-shell-tools--builtin-secret-paths nil
  "The bridge's built-in list of secrets, relative to $HOME; nil until known.
Set from the result of `initialize', or asked of the bridge program
the first time a tool needs it before any bridge started.")

(defvar agent-shell-tools--secret-regexp nil
  "The last list of secret names and the one regexp matching any of them.")

(declare-function agent-shell-rpc-bridge-program "agent-shell-rpc")

(defun agent-shell-tools-set-builtin-secret-paths (paths)
  "Use PATHS, the bridge's list of secret names, from now on.
PATHS is a list or vector of strings, as `initialize' returns it;
anything else is ignored."
  (let ((names (if (vectorp paths) (append paths nil) paths)))
    (when (and (consp names) (cl-every #'stringp names))
      (setq agent-shell-tools--builtin-secret-paths names))))

(declare-function agent-shell-tools-run "agent-shell-tools-process" (dir program &rest args))

(defun agent-shell-tools--ask-bridge-for-secrets ()
  "Return the list \"agent-shell-bridge policy secrets\" prints, or nil."
  (condition-case nil
      (progn
        (require 'agent-shell-rpc)
        (require 'agent-shell-tools-process)
        (let* ((program (agent-shell-rpc-bridge-program))
               (out (apply #'agent-shell-tools-run temporary-file-directory (car program)
                           (append (cdr program) '("policy" "secrets")))))
          (and (eql (car out) 0)
               (json-parse-string (cdr out) :array-type 'list))))
    (error nil)))

(defun agent-shell-tools-secret-paths ()
  "Return the names of the user's secrets: the bridge's list, then their own.
The bridge's list comes from its `initialize' result, or from the
bridge program itself when no bridge has started yet.  Without it
every tool call fails rather than guess."
  (unless agent-shell-tools--builtin-secret-paths
    (agent-shell-tools-set-builtin-secret-paths (agent-shell-tools--ask-bridge-for-secrets)))
  (unless agent-shell-tools--builtin-secret-paths
    (agent-shell-tools-error
     "The bridge did not say which files hold your secrets, so no file is used; \
check `agent-shell-bridge-command'"))
  (delete-dups (append agent-shell-tools--builtin-secret-paths agent-shell-secret-paths)))

(defun agent-shell-tools--secret-name-regexp (names)
  "Return one regexp matching what any of NAMES matches, ignoring case."
  (unless (equal (car agent-shell-tools--secret-regexp) names)
    (setq agent-shell-tools--secret-regexp
          (cons names
                (concat "\\`\\(?:"
                        (mapconcat (lambda (name)
                                     (mapconcat #'regexp-quote
                                                (split-string (downcase name) "\\*")
                                                "[^/]*"))
                                   names "\\|")
                        "\\)\\(?:/\\|\\'\\)"))))
  (cdr agent-shell-tools--secret-regexp))

(defun agent-shell-tools--present-secrets (home names)
  "Return the files under HOME that NAMES name now.
One listing of HOME tells which names can be there at all."
  (let* ((file-name-handler-alist nil)
         (present (make-hash-table :test #'equal)))
    (dolist (entry (ignore-errors (directory-files home nil nil t)))
      (puthash (downcase entry) t present))
    (cl-loop for name in names
             for first = (car (split-string name "/" t))
             when (and first (or (string-search "*" first) (gethash (downcase first) present)))
             append (mapcar (lambda (file) (cons name file))
                            (file-expand-wildcards (concat home name) t)))))

(defvar auth-sources)

(defun agent-shell-tools--auth-source-files ()
  "Return the expanded file names listed in `auth-sources'."
  (delq nil
        (mapcar (lambda (source)
                  (let ((file (cond ((stringp source) source)
                                    ((and (consp source) (stringp (plist-get source :source)))
                                     (plist-get source :source)))))
                    (and file (not (agent-shell-tools-remote-p file))
                         (agent-shell-tools-expand file))))
                (and (boundp 'auth-sources) (listp auth-sources) auth-sources))))

(defun agent-shell-tools--under-p (file dir)
  "Return non-nil when FILE is DIR or below it, ignoring case."
  (let ((file (downcase (directory-file-name file)))
        (dir (downcase (directory-file-name dir))))
    (or (string= file dir) (string-prefix-p (file-name-as-directory dir) file))))

(defun agent-shell-tools-secret-reason (&rest files)
  "Return why one of FILES is a credential store, or nil when none is.
FILES are absolute names; pass both the name as written and its
truename, so neither a symlink to a secret nor a symlinked secret
directory slips through.  The secrets are `agent-shell-tools-secret-paths'."
  (let* ((names (agent-shell-tools-secret-paths))
         (regexp (agent-shell-tools--secret-name-regexp names))
         (home (agent-shell-tools--home))
         (true-home (file-name-as-directory (agent-shell-tools-truename home)))
         (homes (delete-dups (list home true-home)))
         (present 'unknown))
    (cl-loop
     for file in (delq nil files)
     thereis
     (or (cl-loop
          for base in homes
          for rel = (and (agent-shell-tools--under-p file base)
                         (downcase (substring (file-name-as-directory file) (length base))))
          thereis
          (and rel (string-match-p regexp rel)
               (cl-find-if (lambda (name)
                             (string-match-p (agent-shell-tools--glob-regexp (downcase name))
                                             rel))
                           names)))
         ;; A secret directory may itself be a symlink to somewhere else.
         (cl-loop
          for (name . match) in (if (eq present 'unknown)
                                    (setq present (agent-shell-tools--present-secrets
                                                   home names))
                                  present)
          when (agent-shell-tools--under-p file (agent-shell-tools-truename match))
          return name)
         (cl-loop for source in (agent-shell-tools--auth-source-files)
                  when (or (agent-shell-tools--under-p file source)
                           (agent-shell-tools--under-p
                            file (agent-shell-tools-truename source)))
                  return (format "%s (in `auth-sources')"
                                 (abbreviate-file-name source)))))))

(defun agent-shell-tools-check-secret (path &rest files)
  "Refuse PATH when one of FILES (its expansions) is a credential store."
  (when-let ((reason (apply #'agent-shell-tools-secret-reason files)))
    (agent-shell-tools-error
     "`%s' holds credentials (%s); agent-shell's tools never read or write it"
     path reason)))

(defconst agent-shell-tools--protected-files '("allowlist.el" "config.el")
  "Files in a `.agent-shell' directory that the agent may never write.")

(defconst agent-shell-tools--protected-dirs '("logs" "snapshots" "sessions")
  "Directories in a `.agent-shell' directory the agent may never write into.
They hold the bridge's records: the log, undo snapshots and checkpoints.")

(defconst agent-shell-tools--max-path-chars 4096
  "Longest path a tool may name, as the bridge allows.")

(defconst agent-shell-tools--max-component-bytes 255
  "Longest file name (in UTF-8 bytes) within a path.")

(defun agent-shell-tools-protected-reason (parts)
  "Return why writing the path made of PARTS is refused, or nil.
PARTS are the file names below a root.  Anything under `.git', the
`.agent-shell' directory itself, its settings and its records are
protected, at any depth; names are compared case-folded so that a
case-insensitive file system cannot be used to sneak past.  This is
the bridge's rule (policy/paths.py), case for case."
  (let ((folded (mapcar #'downcase parts)))
    (cond
     ((member ".git" folded)
      "nothing inside .git may be written (hooks there would run code)")
     (t
      (cl-loop
       for tail on folded
       for i from 0
       when (equal (car tail) ".agent-shell")
       return
       (cond ((null (cdr tail))
              (format "%s/ holds agent-shell's settings and records; it cannot be replaced"
                      (nth i parts)))
             ((member (cadr tail) agent-shell-tools--protected-files)
              (format "%s/%s is agent-shell's own configuration and cannot be written by the agent"
                      (nth i parts) (nth (1+ i) parts)))
             ((member (cadr tail) agent-shell-tools--protected-dirs)
              (format "%s/%s/ holds agent-shell's history and cannot be written by the agent"
                      (nth i parts) (nth (1+ i) parts)))))))))

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

(defun agent-shell-tools-containing-root (file roots)
  "Return the first of ROOTS holding FILE, or nil."
  (cl-find-if (lambda (dir) (agent-shell-tools--within file dir)) roots))

(defun agent-shell-tools-resolve (path context &optional for-write)
  "Return the absolute truename of PATH, confined to the roots of CONTEXT.
PATH is relative to the project root or absolute; a leading home
reference is expanded first (`agent-shell-tools-expand-home').
Symlinks and \"..\" are resolved before the check, and files holding
credentials (`agent-shell-secret-paths') are refused.  With FOR-WRITE
non-nil also
refuse `.git' internals and agent-shell's own protected files."
  (agent-shell-tools--check-syntax path)
  (when (agent-shell-tools-remote-p path)
    (agent-shell-tools-error "Remote file names are not allowed: %s" path))
  (let* ((root (agent-shell-tools-context-root context))
         (roots (agent-shell-tools-roots context))
         (expanded (agent-shell-tools-expand (agent-shell-tools-expand-home path) root))
         (true (directory-file-name (agent-shell-tools-truename expanded)))
         (home (agent-shell-tools-containing-root true roots)))
    (unless home
      (agent-shell-tools-error
       "Path `%s' is outside the project root; only files under %s may be used"
       path (abbreviate-file-name root)))
    (when (agent-shell-tools-remote-p true)
      (agent-shell-tools-error "Remote file names are not allowed: %s" path))
    (agent-shell-tools-check-secret path expanded true)
    (when for-write
      (agent-shell-tools--check-writable true expanded roots path))
    true))

(defun agent-shell-tools-inside-roots (file context)
  "Return the truename of FILE when it is local and under the roots of CONTEXT.
Return nil for remote names, names outside the roots, files holding
credentials and non-strings."
  (when (and (stringp file) (file-name-absolute-p file)
             (not (agent-shell-tools-remote-p file)))
    (let ((true (directory-file-name (agent-shell-tools-truename file))))
      (and (agent-shell-tools-containing-root true (agent-shell-tools-roots context))
           (not (agent-shell-tools-secret-reason (agent-shell-tools-expand file) true))
           true))))

(defun agent-shell-tools--parts-below (file roots)
  "Return FILE's names below the first of ROOTS holding it, else all its names."
  (let ((base (agent-shell-tools-containing-root file roots)))
    (split-string (if base (substring (file-name-as-directory file) (length base)) file)
                  "/" t)))

(defun agent-shell-tools--check-writable (true expanded roots path)
  "Refuse writing TRUE, named EXPANDED before symlinks, when it is protected.
ROOTS are the allowed roots; PATH is the name the model used, for the
message.  A regular file with other hard links is refused too, since
writing it would change the other names' content."
  (when (cl-some (lambda (root) (string= (file-name-as-directory true) root)) roots)
    (agent-shell-tools-error "Path `%s' is a root directory, not a file" path))
  (let ((reason (or (agent-shell-tools-protected-reason
                     (agent-shell-tools--parts-below true roots))
                    ;; The name as written may pass through a symlink to .git.
                    (agent-shell-tools-protected-reason
                     (agent-shell-tools--parts-below expanded roots)))))
    (when reason
      (agent-shell-tools-error "Writing `%s' is refused: %s" path reason)))
  (let ((attributes (let ((file-name-handler-alist nil)) (file-attributes true))))
    (when (and attributes (null (file-attribute-type attributes))
               (> (file-attribute-link-number attributes) 1))
      (agent-shell-tools-error
       "`%s' is hard-linked elsewhere; writing it is refused" path))))

(defun agent-shell-tools--check-syntax (path)
  "Refuse PATH when it is empty, too long or has a NUL byte."
  (when (or (not (stringp path)) (string-empty-p path))
    (agent-shell-tools-error "Path must be a non-empty string"))
  (when (string-match-p "\0" path)
    (agent-shell-tools-error "Path contains a NUL byte"))
  (when (> (length path) agent-shell-tools--max-path-chars)
    (agent-shell-tools-error "Path is longer than %d characters"
                             agent-shell-tools--max-path-chars))
  (when (cl-some (lambda (part) (> (string-bytes (encode-coding-string part 'utf-8))
                                   agent-shell-tools--max-component-bytes))
                 (split-string path "/"))
    (agent-shell-tools-error "A path component is longer than %d bytes"
                             agent-shell-tools--max-component-bytes)))

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

(provide 'agent-shell-tools)
;;; agent-shell-tools.el ends here
