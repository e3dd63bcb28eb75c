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

(defun agent-shell-extend--check-spec (name function args risk description)
  "Signal an error unless NAME, FUNCTION, ARGS, RISK and DESCRIPTION are valid."
  (unless (and (stringp name)
               (string-match-p "\\`[A-Za-z][A-Za-z0-9_-]\\{0,63\\}\\'" name))
    (error "Tool :name must be letters, digits, _ or - (64 at most): %S" name))
  (when (or (assoc name agent-shell-tools-handlers) (string-prefix-p "mcp__" name))
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

(defun agent-shell-extend-tool-p (name)
  "Return non-nil when NAME is a tool defined with `agent-shell-define-tool'."
  (and (assoc name agent-shell-extend--tools) t))

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
                 (parameters . ,(agent-shell-extend--schema (plist-get spec :args))))))
           (reverse agent-shell-extend--tools))))

(defun agent-shell-extend-prompt-params ()
  "Return the entries `session/prompt' gets from the user's tools."
  `((userTools . ,(agent-shell-extend-declarations))))

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
  (let* ((spec (or (cdr (assoc name agent-shell-extend--tools))
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
    (dolist (entry (reverse agent-shell-extend--tools))
      (let ((spec (cdr entry)))
        (push (list (car entry)
                    (format "user%s" (if-let ((file (plist-get spec :file)))
                                         (format " (%s)" (abbreviate-file-name file))
                                       ""))
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
