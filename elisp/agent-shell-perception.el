;;; agent-shell-perception.el --- Read-only tools that let the agent see Emacs  -*- lexical-binding: t; -*-

;; SPDX-License-Identifier: GPL-3.0-or-later

;;; Commentary:

;; The perception tools give the model a structured snapshot instead of a
;; dump: `buffer_overview' (the user's buffer, point, region, function at
;; point), `project_status' (git state through a plain git subprocess),
;; `symbol_search' (xref first, ripgrep as the fallback), `org_search'
;; (an org file's heading outline) and `open_file' (show a file to the
;; user without taking their window).  Each prompt also carries
;; `agent-shell-perception-context-snapshot', a cheap description of the
;; user's editing context.
;;
;; Each handler takes ARGS and CONTEXT as described in
;; agent-shell-tools.el, which dispatches to them, and returns an alist
;; ready for `json-serialize'.

;;; Code:

(require 'cl-lib)
(require 'subr-x)
(require 'agent-shell-tools)
(require 'agent-shell-tools-process)
(require 'agent-shell-custom)
(require 'agent-shell-session)

(declare-function flymake-diagnostics "flymake" (&optional beg end))
(declare-function xref-find-backend "xref" ())
(declare-function xref-backend-definitions "xref" (backend identifier))
(declare-function xref-backend-references "xref" (backend identifier))
(declare-function xref-item-location "xref" (item) t)
(declare-function xref-location-marker "xref" (location))
(declare-function xref-location-group "xref" (location))
(declare-function org-heading-components "org" ())
(declare-function org-get-tags "org" (&optional pos local))
(declare-function outline-next-heading "outline" ())

(defvar org-complex-heading-regexp)
(defvar tags-file-name)
(defvar tags-table-list)

;;; Options

(defcustom agent-shell-perception-max-hits 50
  "Most hits `symbol_search' returns for each kind."
  :type 'integer
  :group 'agent-shell-tools
  :package-version '(agent-shell . "0.1.0"))

(defcustom agent-shell-perception-xref-timeout 3
  "Seconds an xref backend may take before ripgrep is used instead."
  :type 'number
  :group 'agent-shell-tools
  :package-version '(agent-shell . "0.1.0"))

(defcustom agent-shell-perception-max-headings 300
  "Most headings `org_search' returns."
  :type 'integer
  :group 'agent-shell-tools
  :package-version '(agent-shell . "0.1.0"))

(defcustom agent-shell-perception-max-files 200
  "Most file names `project_status' lists in each category."
  :type 'integer
  :group 'agent-shell-tools
  :package-version '(agent-shell . "0.1.0"))

;;; Buffers

(defun agent-shell-perception--agent-buffer-p (buffer)
  "Return non-nil when BUFFER belongs to agent-shell itself."
  (with-current-buffer buffer
    (or (string-prefix-p "*agent-shell" (buffer-name))
        (string-prefix-p " *agent-shell" (buffer-name))
        (and (symbolp major-mode)
             (string-prefix-p "agent-shell" (symbol-name major-mode))))))

(defun agent-shell-perception--user-buffer-p (buffer)
  "Return non-nil when BUFFER is a live file buffer of the user."
  (and (buffer-live-p buffer)
       (buffer-file-name buffer)
       (not (agent-shell-perception--agent-buffer-p buffer))))

(defun agent-shell-perception-user-buffer ()
  "Return the user's most recent file buffer that is not agent-shell's, or nil.
The buffer of the selected window wins when it visits a file."
  (let ((selected (window-buffer (selected-window))))
    (if (agent-shell-perception--user-buffer-p selected)
        selected
      (cl-find-if #'agent-shell-perception--user-buffer-p (buffer-list)))))

(defun agent-shell-perception--buffer-point (buffer)
  "Return the point the user sees in BUFFER."
  (let ((window (get-buffer-window buffer t)))
    (if window (window-point window) (with-current-buffer buffer (point)))))

(defun agent-shell-perception--line-count ()
  "Return the number of lines in the current buffer, ignoring narrowing."
  (save-restriction
    (widen)
    (count-lines (point-min) (point-max))))

(defun agent-shell-perception--defun-at-point ()
  "Return the name of the function around point, or nil."
  (or (ignore-errors (add-log-current-defun))
      (and (fboundp 'which-function) (ignore-errors (which-function)))))

(defun agent-shell-perception--inside-p (buffer context)
  "Return non-nil when BUFFER visits a local file under the roots of CONTEXT."
  (let ((file (buffer-file-name buffer)))
    (and file (agent-shell-tools-inside-roots file context))))

(defun agent-shell-perception-buffer-overview (args context)
  "Handle `buffer_overview' with ARGS in CONTEXT.
Only a buffer visiting a file under the roots is described; for any
other buffer the answer says only that it is outside the project, so
neither its file name nor its text reaches the model."
  (let* ((name (agent-shell-tools-arg args 'buffer 'string))
         (buffer (if name
                     (or (get-buffer name)
                         (agent-shell-tools-error "No buffer named `%s'" name))
                   (or (agent-shell-perception-user-buffer)
                       (agent-shell-tools-error "The user has no file buffer open")))))
    (if (agent-shell-perception--inside-p buffer context)
        (agent-shell-perception-describe
         buffer (agent-shell-tools-relative (buffer-file-name buffer) context))
      (agent-shell-perception-outside name))))

(defun agent-shell-perception-outside (name)
  "Return the overview of a buffer outside the project.
NAME is the buffer name the model asked for, or nil for the user's
current buffer."
  `((outside_project . t)
    (message . ,(concat (if name "That buffer" "The user's current buffer")
                        " does not visit a file inside the project;"
                        " its details are not shared"))))

(defun agent-shell-perception-describe (buffer file)
  "Return the overview of BUFFER, a file buffer of the project.
FILE is its file's name as the model sees it (relative to the root).
Nothing here touches the file, so a TRAMP buffer is described from
what Emacs has, without a connection."
  (let ((pos (agent-shell-perception--buffer-point buffer)))
    (with-current-buffer buffer
      (save-excursion
        (save-restriction
          (widen)
          (goto-char pos)
          (let* ((region (and mark-active (mark t)
                              (cons (region-beginning) (region-end))))
                 (region-text (and region
                                   (buffer-substring-no-properties
                                    (car region)
                                    (min (cdr region) (+ (car region) 200))))))
            `((buffer . ,(buffer-name))
              (file . ,file)
              (major_mode . ,(symbol-name major-mode))
              (line_count . ,(agent-shell-perception--line-count))
              (size . ,(buffer-size))
              (point_line . ,(line-number-at-pos))
              (point_column . ,(current-column))
              (function . ,(or (agent-shell-perception--defun-at-point) :null))
              (region_active . ,(agent-shell-tools-bool region))
              (region_preview . ,(or region-text :null))
              (region_length . ,(if region (- (cdr region) (car region)) 0))
              (modified . ,(agent-shell-tools-bool (buffer-modified-p)))
              (read_only . ,(agent-shell-tools-bool buffer-read-only))
              ,@(when (bound-and-true-p flymake-mode)
                  `((flymake_diagnostics . ,(length (flymake-diagnostics))))))))))))

;;; Project status

(defun agent-shell-perception--git-lines (root separator &rest args)
  "Run git with ARGS in ROOT; return its output split at SEPARATOR, or nil."
  (let ((result (apply #'agent-shell-tools-git root args)))
    (when (eql (car result) 0)
      (split-string (cdr result) separator t))))

(defun agent-shell-perception--capped (items)
  "Return ITEMS as a vector of at most `agent-shell-perception-max-files'."
  (vconcat (seq-take items agent-shell-perception-max-files)))

(defun agent-shell-perception--parse-status (output)
  "Parse `git status --porcelain=v1 -z' OUTPUT.
Return a plist with :staged, :changed and :untracked lists."
  (let ((entries (split-string output "\0" t))
        staged changed untracked)
    (while entries
      (let* ((entry (pop entries))
             (x (aref entry 0))
             (y (aref entry 1))
             (file (substring entry 3)))
        ;; A rename or copy is followed by its source name.
        (when (memq x '(?R ?C)) (pop entries))
        (cond ((and (eq x ??) (eq y ??)) (push file untracked))
              ((and (eq x ?!) (eq y ?!)))
              (t (unless (memq x '(?\s ??)) (push (format "%c %s" x file) staged))
                 (unless (memq y '(?\s ??)) (push (format "%c %s" y file) changed))))))
    (list :staged (nreverse staged) :changed (nreverse changed)
          :untracked (nreverse untracked))))

(defun agent-shell-perception-project-status (_args context)
  "Handle `project_status' in CONTEXT."
  (let* ((root (agent-shell-tools-context-root context))
         (inside (agent-shell-tools-git root "rev-parse" "--is-inside-work-tree")))
    (cond
     ((null (car inside))
      `((root . ,root) (git . :json-false) (message . "git is not installed")))
     ((not (eql (car inside) 0))
      `((root . ,root) (git . :json-false)
        (message . "The project root is not inside a git repository")))
     (t
      (let* ((head (agent-shell-perception--git-lines root "\n" "rev-parse" "--verify" "-q" "HEAD"))
             (branch (car (or (agent-shell-perception--git-lines
                               root "\n" "symbolic-ref" "--short" "-q" "HEAD")
                              (and head '("(detached HEAD)")))))
             (status (agent-shell-perception--parse-status
                      (cdr (agent-shell-tools-git
                            root "status" "--porcelain=v1" "-z" "--untracked-files=all"))))
             (commits (and head
                           (agent-shell-perception--git-lines
                            root "\n" "log" "-5" "--date=short"
                            "--format=%h%x1f%ad%x1f%an%x1f%s")))
             (stat (agent-shell-tools-git
                    root "diff" "--stat=120" (if head "HEAD" "--cached")))
             (total (+ (length (plist-get status :staged))
                       (length (plist-get status :changed))
                       (length (plist-get status :untracked)))))
        `((root . ,root)
          (git . t)
          (branch . ,(or branch :null))
          (staged . ,(agent-shell-perception--capped (plist-get status :staged)))
          (changed . ,(agent-shell-perception--capped (plist-get status :changed)))
          (untracked . ,(agent-shell-perception--capped (plist-get status :untracked)))
          (truncated . ,(agent-shell-tools-bool
                         (cl-some (lambda (key)
                                    (> (length (plist-get status key))
                                       agent-shell-perception-max-files))
                                  '(:staged :changed :untracked))))
          (clean . ,(agent-shell-tools-bool (zerop total)))
          (commits . ,(vconcat
                       (mapcar (lambda (line)
                                 (pcase-let ((`(,hash ,date ,author ,subject)
                                              (split-string line "\x1f")))
                                   `((hash . ,hash) (date . ,date)
                                     (author . ,author) (subject . ,(or subject "")))))
                               commits)))
          (diff_stat . ,(if (eql (car stat) 0)
                            (agent-shell-tools-truncate (string-trim-right (cdr stat)) 4000)
                          ""))))))))

;;; Symbol search

(defun agent-shell-perception--hit (file line column text context)
  "Return a search hit for FILE at LINE and COLUMN showing TEXT in CONTEXT."
  `((path . ,(agent-shell-tools-relative file context))
    (line . ,line)
    (column . ,column)
    (text . ,(agent-shell-tools-truncate (string-trim text) 200))))

(defun agent-shell-perception--search-buffer (context)
  "Return a file buffer inside the roots of CONTEXT whose xref backend to use."
  (let ((roots (agent-shell-tools-roots context))
        (preferred (agent-shell-perception-user-buffer)))
    (cl-find-if (lambda (buffer)
                  (and (agent-shell-perception--user-buffer-p buffer)
                       (not (agent-shell-tools-remote-p (buffer-file-name buffer)))
                       (agent-shell-tools-containing-root
                        (agent-shell-tools-truename (buffer-file-name buffer)) roots)))
                (if preferred (cons preferred (buffer-list)) (buffer-list)))))

(defun agent-shell-perception--usable-backend (buffer root)
  "Return the xref backend of BUFFER, or nil when it could prompt or is missing.
ROOT is searched for a TAGS file before etags is accepted."
  (when (and buffer (require 'xref nil t))
    (with-current-buffer buffer
      (let ((backend (ignore-errors (xref-find-backend))))
        (cond ((null backend) nil)
              ((eq backend 'etags)
               (and (or (bound-and-true-p tags-file-name)
                        (bound-and-true-p tags-table-list)
                        (file-exists-p (expand-file-name "TAGS" root)))
                    backend))
              (t backend))))))

(defmacro agent-shell-perception--without-prompts (&rest body)
  "Run BODY refusing any minibuffer prompt, so that BODY cannot block."
  (declare (indent 0) (debug t))
  `(cl-letf (((symbol-function 'read-from-minibuffer)
              (lambda (&rest _) (error "Prompt refused")))
             ((symbol-function 'yes-or-no-p) (lambda (&rest _) nil))
             ((symbol-function 'y-or-n-p) (lambda (&rest _) nil)))
     ,@body))

(defun agent-shell-perception--xref-hits (buffer backend symbol kind context)
  "Return hits for SYMBOL of KIND from xref BACKEND in BUFFER, or `failed'.
KIND is `definitions' or `references'.  Hits outside the roots of
CONTEXT are dropped."
  (let ((roots (agent-shell-tools-roots context))
        (items
         (with-current-buffer buffer
           (with-timeout (agent-shell-perception-xref-timeout 'failed)
             (condition-case nil
                 (agent-shell-perception--without-prompts
                   (if (eq kind 'definitions)
                       (xref-backend-definitions backend symbol)
                     (xref-backend-references backend symbol)))
               (error 'failed))))))
    (if (eq items 'failed)
        'failed
      (delq nil
            (mapcar
             (lambda (item)
               (let* ((location (xref-item-location item))
                      (group (ignore-errors (xref-location-group location)))
                      (file (and (stringp group) (file-name-absolute-p group)
                                 (not (agent-shell-tools-remote-p group))
                                 (let ((file-name-handler-alist nil))
                                   (file-exists-p group))
                                 (agent-shell-tools-truename group))))
                 (when (and file (agent-shell-tools-containing-root file roots)
                            (not (agent-shell-tools-secret-reason group file)))
                   (let ((marker (ignore-errors
                                   (agent-shell-perception--without-prompts
                                     (xref-location-marker location)))))
                     (when marker
                       (with-current-buffer (marker-buffer marker)
                         (save-excursion
                           (goto-char marker)
                           (agent-shell-perception--hit
                            file (line-number-at-pos) (1+ (current-column))
                            (buffer-substring-no-properties
                             (line-beginning-position) (line-end-position))
                            context))))))))
             items)))))

(defconst agent-shell-perception--definition-keywords
  (concat "(?:def|defun|defmacro|defvar|defcustom|defconst|defsubst|cl-defun"
          "|cl-defmethod|cl-defgeneric|define-[a-z-]+|class|struct|enum|interface"
          "|trait|type|function|func|fn|let|const|var|val|module|package|sub|async def)")
  "Ripgrep alternation of keywords that introduce a definition.")

(defun agent-shell-perception--rg-quote (string)
  "Quote STRING for use as a literal in a ripgrep (Rust) regexp."
  (replace-regexp-in-string "[][\\\\.+*?(){}|^$]" "\\\\\\&" string t))

(defun agent-shell-perception--rg-match (line root symbol context keep)
  "Return the hit of ripgrep's JSON LINE for SYMBOL in ROOT, or nil.
Nil unless LINE is a match event in a file (an absolute name) that
the function KEEP accepts.  CONTEXT relativises the path."
  (let ((event (ignore-errors
                 (json-parse-string line :object-type 'alist
                                    :null-object nil :false-object nil))))
    (when (equal (alist-get 'type event) "match")
      (let* ((data (alist-get 'data event))
             (file (alist-get 'text (alist-get 'path data)))
             (found (and file (expand-file-name file root))))
        (when (and found (funcall keep found))
          (let* ((text (string-trim-right
                        (or (alist-get 'text (alist-get 'lines data)) "")))
                 (submatch (let ((subs (alist-get 'submatches data)))
                             (and (> (length subs) 0) (aref subs 0))))
                 (bytes (encode-coding-string text 'utf-8))
                 (start (length (decode-coding-string
                                 (substring bytes 0 (min (length bytes)
                                                         (if submatch
                                                             (alist-get 'start submatch)
                                                           0)))
                                 'utf-8)))
                 (column (1+ (or (string-search symbol text start) start))))
            (agent-shell-perception--hit found (alist-get 'line_number data)
                                         column text context)))))))

(defun agent-shell-perception--rg-hits (root symbol kind lispy context)
  "Search ROOT for SYMBOL with ripgrep; return (HITS . STATUS).
KIND `definitions' looks only at lines where a definition keyword
precedes SYMBOL.  With LISPY non-nil a dash counts as part of a
symbol.  CONTEXT relativises paths.  STATUS is `missing' when
ripgrep is not installed.
Ripgrep's output is read as it comes and ripgrep is stopped once
there is one hit more than `agent-shell-perception-max-hits' (which
says the list was cut); only the hits read so far are checked
against the user's secrets, once per file."
  (let* ((word (if lispy "A-Za-z0-9_-" "A-Za-z0-9_"))
         (quoted (agent-shell-perception--rg-quote symbol))
         (pattern (if (eq kind 'definitions)
                      (format "(^|[^%s])\\(?%s\\s+[\"']?%s([^%s]|$)"
                              word agent-shell-perception--definition-keywords
                              quoted word)
                    (format "(^|[^%s])%s([^%s]|$)" word quoted word)))
         (wanted (1+ agent-shell-perception-max-hits))
         (secret (make-hash-table :test #'equal))
         (hits nil)
         (count 0)
         (status
          (agent-shell-tools-run-lines
           root "rg"
           (list "--json" "--no-config" "--no-messages" "--max-count" "50"
                 "--max-columns" "1000" "-e" pattern "--" ".")
           (lambda (line)
             (let ((hit (agent-shell-perception--rg-match
                         line root symbol context
                         (lambda (found)
                           (let ((refused (gethash found secret 'unknown)))
                             (when (eq refused 'unknown)
                               (setq refused (and (agent-shell-tools-secret-reason
                                                   found (agent-shell-tools-truename found))
                                                  t))
                               (puthash found refused secret))
                             (not refused))))))
               (when hit
                 (push hit hits)
                 (setq count (1+ count))))
             (>= count wanted)))))
    (if (null status)
        (cons nil 'missing)
      (cons (nreverse hits) 'ok))))

(defun agent-shell-perception--take (hits)
  "Return HITS capped at `agent-shell-perception-max-hits' and a truncated flag."
  (cons (vconcat (seq-take hits agent-shell-perception-max-hits))
        (> (length hits) agent-shell-perception-max-hits)))

(defun agent-shell-perception-symbol-search (args context)
  "Handle `symbol_search' with ARGS in CONTEXT."
  (let* ((symbol (string-trim (agent-shell-tools-arg args 'symbol 'string t)))
         (kind-name (or (agent-shell-tools-arg args 'kind 'string) "both"))
         (kinds (pcase kind-name
                  ("definitions" '(definitions))
                  ("references" '(references))
                  ("both" '(definitions references))
                  (_ (agent-shell-tools-error
                      "Argument `kind' must be definitions, references or both"))))
         (root (agent-shell-tools-context-root context))
         (buffer (agent-shell-perception--search-buffer context))
         (backend (agent-shell-perception--usable-backend buffer root))
         (lispy (or (string-search "-" symbol)
                    (and buffer (provided-mode-derived-p
                                 (buffer-local-value 'major-mode buffer)
                                 'lisp-data-mode))))
         (used nil)
         (truncated nil)
         (result nil))
    (when (string-empty-p symbol)
      (agent-shell-tools-error "Argument `symbol' must not be empty"))
    (dolist (kind kinds)
      (let ((hits 'failed))
        ;; Only language servers resolve references precisely; for other
        ;; backends the default reference search scans whole load paths,
        ;; so ripgrep is both faster and better bounded.
        (when (and backend (or (eq kind 'definitions) (eq backend 'eglot)))
          (setq hits (agent-shell-perception--xref-hits buffer backend symbol kind context))
          (when (and (listp hits) (or hits (eq kind 'references)))
            (push (format "xref:%s" backend) used)))
        (when (or (eq hits 'failed) (null hits))
          (let ((rg (agent-shell-perception--rg-hits root symbol kind lispy context)))
            (when (eq (cdr rg) 'missing)
              (agent-shell-tools-error "No xref backend answered and ripgrep (rg) is not installed"))
            (setq hits (car rg))
            (push "ripgrep" used)))
        (let ((taken (agent-shell-perception--take hits)))
          (when (cdr taken) (setq truncated t))
          (push (cons kind (car taken)) result))))
    `((symbol . ,symbol)
      (kind . ,kind-name)
      (backend . ,(string-join (delete-dups (nreverse used)) ","))
      ,@(nreverse result)
      (truncated . ,(agent-shell-tools-bool truncated)))))

;;; Org outline

(defun agent-shell-perception--default-org-file (context)
  "Return the org file for `org_search' when CONTEXT names none."
  (let* ((root (agent-shell-tools-context-root context))
         (roots (agent-shell-tools-roots context))
         (buffer (cl-find-if
                  (lambda (buffer)
                    (and (agent-shell-perception--user-buffer-p buffer)
                         (eq (buffer-local-value 'major-mode buffer) 'org-mode)
                         (not (agent-shell-tools-remote-p (buffer-file-name buffer)))
                         (agent-shell-tools-containing-root
                          (agent-shell-tools-truename (buffer-file-name buffer)) roots)))
                  (buffer-list))))
    (or (and buffer (buffer-file-name buffer))
        (cl-find-if #'file-regular-p
                    (mapcar (lambda (name) (expand-file-name name root))
                            '("README.org" "TODO.org")))
        (agent-shell-tools-error
         "No org file given, none open, and no README.org or TODO.org at the root"))))

(defun agent-shell-perception--org-headings ()
  "Return the headings of the current org buffer as a list of alists."
  (let (headings)
    (save-excursion
      (save-restriction
        (widen)
        (goto-char (point-min))
        (unless (looking-at-p "^\\*+ ") (outline-next-heading))
        (while (not (eobp))
          (pcase-let ((`(,_ ,level ,todo ,_ ,title ,_) (org-heading-components)))
            (push `((level . ,level)
                    (title . ,(or title ""))
                    (todo . ,(or todo :null))
                    (tags . ,(vconcat (mapcar #'substring-no-properties
                                              (org-get-tags nil t))))
                    (line . ,(line-number-at-pos)))
                  headings))
          (outline-next-heading))))
    (nreverse headings)))

(defun agent-shell-perception--heading-matches-p (heading query)
  "Return non-nil when HEADING's title, todo or tags contain QUERY."
  (let ((case-fold-search t)
        (needle (regexp-quote query)))
    (or (string-match-p needle (alist-get 'title heading))
        (let ((todo (alist-get 'todo heading)))
          (and (stringp todo) (string-match-p needle todo)))
        (cl-some (lambda (tag) (string-match-p needle tag))
                 (alist-get 'tags heading)))))

(defun agent-shell-perception-org-search (args context)
  "Handle `org_search' with ARGS in CONTEXT."
  (let* ((name (agent-shell-tools-arg args 'file 'string))
         (query (agent-shell-tools-arg args 'query 'string))
         (file (if name
                   (agent-shell-tools-resolve name context)
                 (agent-shell-tools-truename
                  (agent-shell-perception--default-org-file context))))
         (visiting (find-buffer-visiting file)))
    (agent-shell-tools-check-secret (or name file) file)
    (unless (file-regular-p file)
      (agent-shell-tools-error "No such org file: %s" (or name file)))
    (require 'org)
    (let* ((headings
            (if (and visiting (eq (buffer-local-value 'major-mode visiting) 'org-mode))
                (with-current-buffer visiting (agent-shell-perception--org-headings))
              (with-temp-buffer
                (insert-file-contents file)
                (delay-mode-hooks (org-mode))
                (agent-shell-perception--org-headings))))
           (matching (if (and query (not (string-empty-p query)))
                         (cl-remove-if-not
                          (lambda (h) (agent-shell-perception--heading-matches-p h query))
                          headings)
                       headings)))
      `((file . ,(agent-shell-tools-relative file context))
        (query . ,(or query :null))
        (total_headings . ,(length headings))
        (headings . ,(vconcat (seq-take matching agent-shell-perception-max-headings)))
        (truncated . ,(agent-shell-tools-bool
                       (> (length matching) agent-shell-perception-max-headings)))))))

;;; Showing files

(defun agent-shell-perception--show (buffer)
  "Show BUFFER in a window, keeping the user's selected window; return it."
  (or (get-buffer-window buffer)
      (ignore-errors
        (display-buffer buffer '((display-buffer-reuse-window
                                  display-buffer-use-some-window
                                  display-buffer-pop-up-window)
                                 (inhibit-same-window . t))))))

(defun agent-shell-perception--visit (file)
  "Return a buffer visiting FILE, without any question to the user.
An unmodified buffer whose file changed on disk is reverted first."
  (let ((buffer (find-buffer-visiting file)))
    (if buffer
        (with-current-buffer buffer
          (unless (or (buffer-modified-p) (verify-visited-file-modtime buffer))
            (let ((inhibit-message t)) (revert-buffer t t t)))
          buffer)
      (let ((inhibit-message t)
            (enable-local-variables :safe)
            (large-file-warning-threshold nil))
        (find-file-noselect file)))))

(defun agent-shell-perception-open-file (args context)
  "Handle `open_file' with ARGS in CONTEXT."
  (let* ((path (agent-shell-tools-arg args 'path 'string t))
         (line (agent-shell-tools-arg args 'line 'integer))
         (file (agent-shell-tools-resolve path context)))
    (unless (file-regular-p file)
      (agent-shell-tools-error "No such file: %s" path))
    (let* ((buffer (agent-shell-perception--visit file))
           (window (agent-shell-perception--show buffer))
           (count nil)
           (target nil))
      (with-current-buffer buffer
        (setq count (agent-shell-perception--line-count))
        (when line
          (unless (<= 1 line (max 1 count))
            (agent-shell-tools-error "Line %d is outside 1..%d of %s" line count path))
          (save-restriction
            (widen)
            (goto-char (point-min))
            (forward-line (1- line))
            (setq target (point))))
        (when target
          (goto-char target)
          (when window (set-window-point window target))))
      `((path . ,(agent-shell-tools-relative file context))
        (buffer . ,(buffer-name buffer))
        (line . ,(or line (with-current-buffer buffer (line-number-at-pos))))
        (line_count . ,count)
        (major_mode . ,(symbol-name (buffer-local-value 'major-mode buffer)))
        (displayed . ,(agent-shell-tools-bool window))))))

;;; The context snapshot sent with each prompt

(defun agent-shell-perception--user-buffer ()
  "Return the buffer the user most recently worked in, or nil."
  (cl-find-if (lambda (b)
                (and (buffer-file-name b)
                     (not (string-prefix-p " " (buffer-name b)))))
              (buffer-list (selected-frame))))

(defun agent-shell-perception-context-snapshot (&optional root)
  "Return a cheap snapshot of the user's editing context for `session/prompt'.
It names the file of the most recent file buffer, its point line and
column, whether the region is active, and the project ROOT.  A file
outside ROOT and `agent-shell-extra-allowed-paths' is not described:
the snapshot only says that the user's buffer is outside the project."
  (let* ((root (or root
                   (and agent-shell--session
                        (agent-shell-session-root agent-shell--session))
                   default-directory))
         (buffer (agent-shell-perception--user-buffer))
         (inside (and buffer
                      (ignore-error agent-shell-tool-error
                        (agent-shell-tools-inside-roots
                         (buffer-file-name buffer)
                         `((root . ,(expand-file-name root))
                           (extra_roots . ,(mapcar #'expand-file-name
                                                   agent-shell-extra-allowed-paths))))))))
    `((root . ,root)
      ,@(when (and buffer (not inside))
          '((outside_project . t)))
      ,@(when inside
          (with-current-buffer buffer
            `((file . ,(buffer-file-name buffer))
              (buffer . ,(buffer-name buffer))
              (major_mode . ,(symbol-name major-mode))
              (line . ,(line-number-at-pos nil t))
              (column . ,(current-column))
              (modified . ,(if (buffer-modified-p) t :json-false))
              (region . ,(if (region-active-p) t :json-false))
              ,@(when (region-active-p)
                  `((region_start_line . ,(line-number-at-pos (region-beginning) t))
                    (region_end_line . ,(line-number-at-pos (region-end) t))))))))))

;;; Obsolete names

(define-obsolete-function-alias 'agent-shell-context-snapshot
  #'agent-shell-perception-context-snapshot "0.2")

(provide 'agent-shell-perception)
;;; agent-shell-perception.el ends here
