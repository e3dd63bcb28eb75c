;;; agent-shell-extend.el --- Tools the user defines in Emacs Lisp  -*- lexical-binding: t; -*-

;; SPDX-License-Identifier: GPL-3.0-or-later

;;; Commentary:

;; `agent-shell-define-tool' makes an Emacs Lisp function a tool of the
;; agent.  Every `session/prompt' carries the current list of such
;; tools (`agent-shell-extend-prompt-params'), so a tool defined while a
;; session is open is offered from that session's next turn.  The
;; bridge runs each call through `tool/call' like the built-in
;; Emacs-side tools: its policy decides from the declared risk (`read'
;; runs unasked, `write' and `exec' wait for the user), the step is a
;; log entry, and the result is cut to head and tail.
;;
;; Here the arguments are checked against the declared types before the
;; function runs, the function is called with them as an alist with
;; symbol keys, and what it returns (a string or JSON data) goes back.
;; An error in the function becomes a failed tool result with its
;; message.  `M-x agent-shell-tools' lists every tool and its source.
;; The same `session/prompt' says which hooks around steps the user has
;; (agent-shell-hooks.el runs them) and where the user's skills are.

;;; Code:

(require 'cl-lib)
(require 'subr-x)
(require 'tabulated-list)
(require 'agent-shell-tools)
(require 'agent-shell-json)
(require 'agent-shell-bridge)

(defvar agent-shell-extend--tools nil
  "Tools defined with `agent-shell-define-tool': an alist NAME -> plist.
The plist holds :function, :args, :risk, :description and :file.")

(defconst agent-shell-extend--types
  '((string . "string") (integer . "integer") (number . "number")
    (boolean . "boolean") (array . "array") (object . "object"))
  "Argument types a user tool may declare, with their JSON Schema names.")

;;; Built-in Emacs Lisp tools

(defcustom agent-shell-eval-elisp-enabled nil
  "Non-nil offers the model the tool `eval_elisp'.
It evaluates Emacs Lisp in your Emacs, so every call waits for your
decision and cannot be allowed for the session."
  :type 'boolean
  :group 'agent-shell-tools
  :package-version '(agent-shell . "0.4.0"))

(defcustom agent-shell-describe-symbol-max-chars 4000
  "Longest printed variable value `describe_symbol' returns."
  :type 'integer
  :group 'agent-shell-tools
  :package-version '(agent-shell . "0.4.0"))

(defconst agent-shell-extend--secret-name-regexp
  "pass\\(?:word\\|wd\\|phrase\\)\\|secret\\|token\\|api-?key\\|auth\\|credential\\|private"
  "Variables whose name matches this have their value withheld.")

(declare-function help-function-arglist "help" (def &optional preserve-names))
(declare-function help-split-fundoc "help" (docstring def &optional section))

(defun agent-shell-extend--where (symbol type)
  "Return the file that defined SYMBOL as TYPE (`defun' or `defvar'), or nil."
  (when-let ((file (symbol-file symbol type)))
    (abbreviate-file-name (file-name-sans-extension file))))

(defun agent-shell-extend--describe-symbol (args)
  "Describe the symbol named in ARGS: documentation, signature, file, value."
  (require 'help)
  (let* ((name (alist-get 'name args))
         (symbol (intern-soft name)))
    (unless (and symbol (or (fboundp symbol) (boundp symbol) (facep symbol)
                            (get symbol 'variable-documentation)))
      (agent-shell-tools-error "No function, variable or face is named `%s'" name))
    (let (out)
      (when (fboundp symbol)
        (let* ((function (indirect-function symbol))
               (doc (or (ignore-errors (documentation symbol t)) ""))
               ;; The usage a docstring states (cl-defun's keywords) beats the arglist.
               (usage (help-split-fundoc doc symbol)))
          (push `(function
                  . ((signature . ,(or (car usage)
                                       (format "%S" (cons symbol (help-function-arglist
                                                                  symbol t)))))
                     (kind . ,(cond ((special-form-p function) "special form")
                                    ((macrop function) "macro")
                                    ((commandp symbol) "command")
                                    ((subrp function) "built-in function")
                                    (t "function")))
                     (documentation . ,(if usage (or (cdr usage) "") doc))
                     ,@(when-let ((file (agent-shell-extend--where symbol 'defun)))
                         `((defined_in . ,file)))))
                out)))
      (when (or (boundp symbol) (get symbol 'variable-documentation))
        (push `(variable
                . ((documentation
                    . ,(or (ignore-errors
                             (documentation-property symbol 'variable-documentation t))
                           ""))
                   ,@(when (custom-variable-p symbol) '((customizable . t)))
                   ,@(when-let ((file (agent-shell-extend--where symbol 'defvar)))
                       `((defined_in . ,file)))
                   (value
                    . ,(cond ((not (boundp symbol)) "void")
                             ((string-match-p agent-shell-extend--secret-name-regexp
                                              (symbol-name symbol))
                              "withheld: the name says it may hold a secret")
                             (t (agent-shell-tools-truncate
                                 (let ((print-length 50) (print-level 5))
                                   (prin1-to-string (symbol-value symbol)))
                                 agent-shell-describe-symbol-max-chars))))))
              out))
      (when (facep symbol)
        (push `(face . ((documentation . ,(or (face-documentation symbol) "")))) out))
      (cons `(symbol . ,name) (nreverse out)))))

(defun agent-shell-extend--eval-elisp (args)
  "Evaluate the forms of the code in ARGS; return the last value, printed.
The forms are evaluated in order with lexical binding.
All forms are read before the first one runs, so a syntax error runs nothing."
  (let ((code (alist-get 'code args))
        (position 0)
        (forms nil)
        (value nil))
    (condition-case nil
        (while t
          (let ((read (read-from-string code position)))
            (push (car read) forms)
            (setq position (cdr read))))
      (end-of-file nil))
    (unless (string-match-p "\\`\\(?:[ \t\n\r\f]\\|;[^\n]*\\)*\\'" (substring code position))
      (agent-shell-tools-error "The code ends in an incomplete form: %s"
                               (agent-shell-tools-truncate (substring code position) 80)))
    (unless forms
      (agent-shell-tools-error "The code holds no form"))
    (dolist (form (nreverse forms))
      (setq value (eval form t)))
    (let ((print-length 100) (print-level 8))
      (prin1-to-string value))))

(defvar agent-shell-extend--builtin-tools
  '(("describe_symbol"
     :function agent-shell-extend--describe-symbol :risk read
     :args ((name string "The symbol's name"))
     :description "Describe an Emacs Lisp symbol: documentation, signature and kind of its \
function, the file that defined it, and a variable's current value.")
    ("eval_elisp"
     :function agent-shell-extend--eval-elisp :risk exec :ask-always t
     :args ((code string "Emacs Lisp forms, evaluated in order with lexical binding"))
     :description "Evaluate Emacs Lisp in the user's Emacs and return the last value, \
printed.  Each call waits for the user's approval."))
  "The Emacs Lisp tools that come with agent-shell, in the shape of user tools.")

;;; Defining tools

(defun agent-shell-extend--check-spec (name function args risk description)
  "Signal an error unless NAME, FUNCTION, ARGS, RISK and DESCRIPTION are valid."
  (unless (and (stringp name)
               (string-match-p "\\`[A-Za-z][A-Za-z0-9_-]\\{0,63\\}\\'" name))
    (error "Tool :name must be letters, digits, _ or - (64 at most): %S" name))
  (when (or (assoc name agent-shell-tools-handlers) (string-prefix-p "mcp__" name)
            (assoc name agent-shell-extend--builtin-tools))
    (error "Tool name %s is taken by a built-in tool" name))
  (unless (functionp function)
    (error "Tool %s: :function must be a function" name))
  (unless (memq risk '(read write exec))
    (error "Tool %s: :risk must be read, write or exec, not %S" name risk))
  (unless (and (stringp description) (not (string-empty-p description)))
    (error "Tool %s: :description must be a non-empty string" name))
  (dolist (arg args)
    (unless (and (consp arg) (symbolp (car arg))
                 (assq (nth 1 arg) agent-shell-extend--types)
                 (stringp (nth 2 arg)))
      (error "Tool %s: each of :args is (NAME TYPE \"Description\" [:optional t]), not %S"
             name arg))))

;;;###autoload
(cl-defun agent-shell-define-tool (&key name function args (risk 'read) description)
  "Make FUNCTION the agent tool NAME; return NAME.
NAME is a string of letters, digits, _ and -.  FUNCTION is called
with one argument, the tool's arguments as an alist with symbol keys,
and returns a string or data `json-serialize' accepts.  ARGS
declares the arguments: a list of (ARG TYPE DESCRIPTION [:optional
t]) where ARG is a symbol and TYPE one of `string', `integer',
`number', `boolean', `array' and `object'.  RISK is `read' (the
tool runs unasked), `write' or `exec' (each call waits for the
user, who may allow it for the session).  DESCRIPTION tells the
model what the tool does.  Defining NAME again replaces it; sessions
see the change from their next turn."
  (agent-shell-extend--check-spec name function args risk description)
  (setf (alist-get name agent-shell-extend--tools nil nil #'equal)
        (list :function function :args args :risk risk :description description
              :file (or load-file-name buffer-file-name)))
  name)

(defun agent-shell-undefine-tool (name)
  "Remove the tool NAME defined with `agent-shell-define-tool'."
  (interactive (list (completing-read "Undefine tool: " agent-shell-extend--tools nil t)))
  (setq agent-shell-extend--tools
        (cl-remove name agent-shell-extend--tools :key #'car :test #'equal)))

(defun agent-shell-extend--all ()
  "Return every Emacs Lisp tool offered now: the built-in ones, then the user's.
`eval_elisp' is among them only when `agent-shell-eval-elisp-enabled'."
  (append (cl-remove-if (lambda (entry)
                          (and (equal (car entry) "eval_elisp")
                               (not agent-shell-eval-elisp-enabled)))
                        agent-shell-extend--builtin-tools)
          (reverse agent-shell-extend--tools)))

(defun agent-shell-extend-tool-p (name)
  "Return non-nil when NAME is an Emacs Lisp tool offered now."
  (and (assoc name (agent-shell-extend--all)) t))

;;; What the bridge is told

(defun agent-shell-extend--schema (args)
  "Return the JSON Schema of the arguments ARGS."
  (let (properties required)
    (dolist (arg args)
      (push (cons (car arg)
                  `((type . ,(alist-get (nth 1 arg) agent-shell-extend--types))
                    (description . ,(nth 2 arg))))
            properties)
      (unless (plist-get (nthcdr 3 arg) :optional)
        (push (symbol-name (car arg)) required)))
    `((type . "object")
      (properties . ,(or (nreverse properties) (make-hash-table)))
      (required . ,(vconcat (nreverse required))))))

(defun agent-shell-extend-declarations ()
  "Return the wire declarations of the user's tools, a vector of alists."
  (vconcat
   (mapcar (lambda (entry)
             (let ((spec (cdr entry)))
               `((name . ,(car entry))
                 (description . ,(plist-get spec :description))
                 (risk . ,(symbol-name (plist-get spec :risk)))
                 ,@(and (plist-get spec :ask-always) '((grantable . :json-false)))
                 (parameters . ,(agent-shell-extend--schema (plist-get spec :args))))))
           (agent-shell-extend--all))))

(defvar agent-shell-pre-tool-functions)
(defvar agent-shell-post-tool-functions)

(defun agent-shell-extend-prompt-params ()
  "Return the entries `session/prompt' gets from the user's tools, skills, hooks."
  `((userTools . ,(agent-shell-extend-declarations))
    (skillDirectories . ,(agent-shell-extend--skill-directories))
    (hooks . ,(vconcat (and agent-shell-pre-tool-functions '("pre_tool"))
                       (and agent-shell-post-tool-functions '("post_tool"))))))

;;; Skills

(defcustom agent-shell-skills-directories '("~/.agents/skills/")
  "Your own directories of Agent Skills, each skill a folder with a SKILL.md.
The project's `.agents/skills/' and `.claude/skills/' are always
looked in, and win over a skill of the same name here."
  :type '(repeat directory)
  :group 'agent-shell-tools
  :package-version '(agent-shell . "0.4.0"))

(defun agent-shell-extend--skill-directories ()
  "Return `agent-shell-skills-directories' expanded, as a vector."
  (vconcat (mapcar #'expand-file-name agent-shell-skills-directories)))

(define-derived-mode agent-shell-skills-mode tabulated-list-mode "Agent-Skills"
  "Major mode listing the Agent Skills of a project and of the user."
  (setq tabulated-list-format [("Skill" 24 t) ("Origin" 8 t) ("Description" 60 nil)
                               ("Folder" 0 nil)])
  (setq tabulated-list-padding 1)
  (tabulated-list-init-header))

(defun agent-shell-extend--skill-rows (skills)
  "Return tabulated-list entries for SKILLS, the result of `skills/list'."
  (mapcar (lambda (skill)
            (list (alist-get 'name skill)
                  (vector (alist-get 'name skill) (alist-get 'origin skill)
                          (alist-get 'description skill)
                          (abbreviate-file-name (alist-get 'path skill)))))
          (if (vectorp skills) (append skills nil) skills)))

;;;###autoload
(defun agent-shell-skills (&optional root)
  "List the Agent Skills the agent is offered in ROOT (the current project)."
  (interactive)
  (let* ((root (or root (agent-shell-project-root)))
         (conn (or (agent-shell-bridge-live-connection)
                   (user-error "The bridge is not running; start a session first")))
         (result (agent-shell-rpc-request-sync
                  conn "skills/list"
                  `((cwd . ,(directory-file-name (expand-file-name root)))
                    (directories . ,(agent-shell-extend--skill-directories)))
                  20)))
    (with-current-buffer (get-buffer-create "*agent-shell skills*")
      (agent-shell-skills-mode)
      (setq tabulated-list-entries (agent-shell-extend--skill-rows (alist-get 'skills result)))
      (tabulated-list-print)
      (pop-to-buffer (current-buffer)))))

;;; Calls

(defun agent-shell-extend--value (name type value)
  "Return VALUE of argument NAME checked against TYPE, as Lisp data."
  (pcase type
    ('string (if (stringp value) value
               (agent-shell-tools-error "Argument `%s' must be a string" name)))
    ('integer (if (integerp value) value
                (agent-shell-tools-error "Argument `%s' must be an integer" name)))
    ('number (if (numberp value) value
               (agent-shell-tools-error "Argument `%s' must be a number" name)))
    ('boolean (cond ((eq value t) t)
                    ((eq value :json-false) nil)
                    (t (agent-shell-tools-error "Argument `%s' must be true or false" name))))
    ('array (cond ((vectorp value) (append value nil))
                  (t (agent-shell-tools-error "Argument `%s' must be an array" name))))
    ('object (if (and (listp value) (cl-every #'consp value)) value
               (agent-shell-tools-error "Argument `%s' must be an object" name)))))

(defun agent-shell-extend--arguments (name declared args)
  "Return ARGS of tool NAME checked against DECLARED, as an alist.
A missing required argument, an unknown one or a wrong type is a
tool error, before the tool's function runs."
  (dolist (pair args)
    (unless (assq (car pair) declared)
      (agent-shell-tools-error "Tool %s has no argument `%s'" name (car pair))))
  (let (out)
    (dolist (arg declared)
      (let ((cell (assq (car arg) args)))
        (if (or (null cell) (eq (cdr cell) :null))
            (unless (plist-get (nthcdr 3 arg) :optional)
              (agent-shell-tools-error "Missing required argument `%s'" (car arg)))
          (push (cons (car arg) (agent-shell-extend--value (car arg) (nth 1 arg) (cdr cell)))
                out))))
    (nreverse out)))

(defun agent-shell-extend-call (name args)
  "Run the user tool NAME with ARGS (decoded JSON); return its result object."
  (let* ((spec (or (cdr (assoc name (agent-shell-extend--all)))
                   (agent-shell-tools-error "Unknown tool: %s" name)))
         (checked (agent-shell-extend--arguments name (plist-get spec :args) args))
         (value (condition-case err
                    (funcall (plist-get spec :function) checked)
                  (error (agent-shell-tools-error "%s failed: %s" name
                                                  (error-message-string err))))))
    (cond ((null value) (setq value ""))
          ((stringp value))
          ((not (condition-case nil (progn (agent-shell-json-text (list (cons 'v value))) t)
                  (error nil)))
           (agent-shell-tools-error "%s returned neither a string nor JSON data: %S"
                                    name value)))
    `((result . ,value))))

;;; M-x agent-shell-tools


(defun agent-shell-extend--rows ()
  "Return the rows of `agent-shell-tools': (NAME SOURCE RISK DESCRIPTION)."
  (let* ((info (and agent-shell-bridge--current
                    (agent-shell-bridge-info agent-shell-bridge--current)))
         (catalogue (alist-get 'tools info))
         (rows nil))
    (dolist (tool (if (vectorp catalogue) (append catalogue nil) catalogue))
      (push (list (alist-get 'name tool)
                  (if (equal (alist-get 'side tool) "emacs") "built-in (Emacs)" "built-in (bridge)")
                  (format "%s" (alist-get 'risk tool))
                  (format "%s" (alist-get 'description tool)))
            rows))
    (unless catalogue
      (dolist (name (agent-shell-tools-names))
        (push (list name "built-in (Emacs)" "" "") rows)))
    (dolist (entry (agent-shell-extend--all))
      (let ((spec (cdr entry)))
        (push (list (car entry)
                    (cond ((assoc (car entry) agent-shell-extend--builtin-tools)
                           "built-in (Emacs Lisp)")
                          ((plist-get spec :file)
                           (format "user (%s)" (abbreviate-file-name (plist-get spec :file))))
                          (t "user"))
                    (symbol-name (plist-get spec :risk))
                    (plist-get spec :description))
              rows)))
    (nreverse rows)))

(define-derived-mode agent-shell-tools-mode tabulated-list-mode "Agent-Tools"
  "Major mode listing the agent's tools and where each comes from."
  (setq tabulated-list-format [("Tool" 24 t) ("Source" 28 t) ("Risk" 8 t) ("Description" 0 nil)])
  (setq tabulated-list-padding 1)
  (add-hook 'tabulated-list-revert-hook #'agent-shell-extend--refresh nil t)
  (tabulated-list-init-header))

(defun agent-shell-extend--refresh ()
  "Fill `tabulated-list-entries' with the current tools."
  (setq tabulated-list-entries
        (mapcar (lambda (row) (list (car row) (vconcat row))) (agent-shell-extend--rows))))

;;;###autoload
(defun agent-shell-tools ()
  "List the agent's tools: built-in ones and those defined in Emacs Lisp."
  (interactive)
  (with-current-buffer (get-buffer-create "*agent-shell tools*")
    (agent-shell-tools-mode)
    (agent-shell-extend--refresh)
    (tabulated-list-print)
    (pop-to-buffer (current-buffer))))

(provide 'agent-shell-extend)
;;; agent-shell-extend.el ends here
