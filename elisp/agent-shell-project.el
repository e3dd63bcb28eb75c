;;; agent-shell-project.el --- Project root, key and `.agent-shell/' files  -*- lexical-binding: t; -*-

;; SPDX-License-Identifier: GPL-3.0-or-later

;;; Commentary:

;; What agent-shell knows about a project before it opens a session:
;;
;; - the model API key, from `agent-shell-api-key', `auth-source' or
;;   the environment (`agent-shell-project-api-key');
;; - the project root (`agent-shell-project-root');
;; - the `.agent-shell/' directory and its files (`agent-shell-project-scaffold');
;; - `.agent-shell/config.el' and `.agent-shell/allowlist.el', which are
;;   data: `agent-shell-project-read-data-file' reads them with `read' and
;;   evaluates nothing, and `agent-shell-project-read-config' keeps only literal
;;   settings of `agent-shell-project--config-variables' with the right type.
;;
;; Whether the bridge applies these files is the user's choice, made in
;; agent-shell-trust.el.  The options read here are defined in
;; agent-shell-custom.el.

;;; Code:

(require 'cl-lib)
(require 'agent-shell-session)
(require 'subr-x)
(require 'project)
(require 'auth-source)
(require 'url-parse)

;; Defined in agent-shell-custom.el.
(defvar agent-shell-api-base)
(defvar agent-shell-api-key)
(defvar agent-shell-workspace-root)

;;; The key and the project's files

(defun agent-shell-project-nonempty (value)
  "Return VALUE when it is a non-empty string, else nil."
  (and (stringp value) (not (string-empty-p value)) value))

(defun agent-shell-project--api-host ()
  "Return the host part of `agent-shell-api-base'."
  (url-host (url-generic-parse-url agent-shell-api-base)))

(defun agent-shell-project--auth-source-key ()
  "Return the key stored in `auth-source' for the API host, or nil."
  (when-let* ((host (agent-shell-project--api-host))
              (found (car (auth-source-search :host host :require '(:secret)
                                              :max 1)))
              (secret (plist-get found :secret)))
    (agent-shell-project-nonempty (if (functionp secret) (funcall secret) secret))))

(defun agent-shell-project-api-key-and-source ()
  "Return (KEY . SOURCE) for the model API key.
SOURCE says where KEY was found, never what it is: \"option\",
\"auth-source\", \"env:NAME\", or \"none\" with KEY nil.  The
order is `agent-shell-api-key', `auth-source' for the host of
`agent-shell-api-base', then the environment variables
AGENT_SHELL_API_KEY, DEEPSEEK_API_KEY and OPENAI_API_KEY."
  (let ((option (agent-shell-project-nonempty (if (functionp agent-shell-api-key)
                                                  (funcall agent-shell-api-key)
                                                agent-shell-api-key))))
    (if option
        (cons option "option")
      (let ((stored (agent-shell-project--auth-source-key)))
        (if stored
            (cons stored "auth-source")
          (or (cl-some (lambda (var)
                         (let ((value (agent-shell-project-nonempty (getenv var))))
                           (and value (cons value (concat "env:" var)))))
                       '("AGENT_SHELL_API_KEY" "DEEPSEEK_API_KEY" "OPENAI_API_KEY"))
              (cons nil "none")))))))

(defun agent-shell-project-api-key ()
  "Return the model API key, or nil when none is configured.
The order is `agent-shell-api-key', `auth-source' for the host of
`agent-shell-api-base', then the environment variables
AGENT_SHELL_API_KEY, DEEPSEEK_API_KEY and OPENAI_API_KEY."
  (car (agent-shell-project-api-key-and-source)))

(defconst agent-shell-project--config-variables
  '(agent-shell-model agent-shell-context-window agent-shell-max-steps
    agent-shell-default-mode agent-shell-sandbox)
  "Variables a project's `.agent-shell/config.el' may set.
The API base, the key and the extra allowed paths are absent on purpose:
a cloned repository must not be able to send the user's key to a host
of its choosing, nor widen what the agent may read and write.
`agent-shell-sandbox' is read by the bridge itself, and a nil value
takes effect only once the user trusts the file
\=(`agent-shell-trust-config').")

(defconst agent-shell-project--config-template
  ";; agent-shell project settings.  This file is DATA: it is read, never
;; evaluated.  Only `setq' forms of literal values are understood, for
;; the variables agent-shell-model, agent-shell-context-window,
;; agent-shell-max-steps and agent-shell-default-mode.
;;
;; (setq agent-shell-default-mode 'ask)
;; (setq agent-shell-max-steps 40)
;;
;; No sandbox for this project's commands (takes effect only after
;; M-x agent-shell-trust-config):
;; (setq agent-shell-sandbox nil)
"
  "Initial content of `.agent-shell/config.el'.")

(defconst agent-shell-project--allowlist-template
  ";; Commands the agent may run without asking, even when the policy
;; would call them dangerous.  This file is DATA: it is read, never
;; evaluated, and the agent cannot write it.
;;
;; (setq agent-shell-allowlist
;;       '((command . \"make test\")
;;         (command . \"docker compose up -d\")))
"
  "Initial content of `.agent-shell/allowlist.el'.")

(defconst agent-shell-project--gitignore-template
  "# agent-shell's own records stay out of the repository; memory/, config.el and
# allowlist.el are yours to commit (or not).
logs/
snapshots/
outputs/
sessions/
workspace/
"
  "Initial content of `.agent-shell/.gitignore'.
The bridge writes the same file when a session opens without one.")

(defun agent-shell-project-scaffold (root)
  "Create ROOT's `.agent-shell/' directory and files when missing.
Return the directory.  Existing files are left alone.  The
`.gitignore' keeps the records (logs, sessions, snapshots, outputs,
workspace) out of git; the settings and memory may be committed."
  (let ((dir (expand-file-name ".agent-shell/" root)))
    (dolist (sub '("memory/" "logs/" "workspace/"))
      (make-directory (expand-file-name sub dir) t))
    (dolist (file `(("config.el" . ,agent-shell-project--config-template)
                    ("allowlist.el" . ,agent-shell-project--allowlist-template)
                    (".gitignore" . ,agent-shell-project--gitignore-template)))
      (let ((path (expand-file-name (car file) dir)))
        (unless (file-exists-p path)
          (with-temp-file path (insert (cdr file))))))
    dir))

(defun agent-shell-project--literal (form)
  "Return (t . VALUE) when FORM is a literal, else nil.
Literals are strings, numbers, nil, t, keywords and quoted data."
  (cond ((or (stringp form) (numberp form) (keywordp form) (memq form '(nil t)))
         (cons t form))
        ((and (consp form) (eq (car form) 'quote) (consp (cdr form))
              (null (cddr form)))
         (cons t (cadr form)))))

(defun agent-shell-project-read-data-file (file)
  "Read FILE as a sequence of Lisp forms, without evaluating any of them.
Return the list of forms; a syntax error ends the list with a warning."
  (when (file-readable-p file)
    (with-temp-buffer
      (insert-file-contents file)
      (set-syntax-table emacs-lisp-mode-syntax-table)
      (goto-char (point-min))
      (let ((read-circle nil) forms)
        (condition-case err
            (while (progn (forward-comment (buffer-size)) (not (eobp)))
              (push (read (current-buffer)) forms))
          (error (display-warning 'agent-shell
                                  (format "%s: unreadable after %d forms: %s"
                                          file (length forms)
                                          (error-message-string err)))))
        (nreverse forms)))))

(defun agent-shell-project-read-config (root)
  "Return ROOT's project settings as an alist (VARIABLE . VALUE).
Only `(setq VARIABLE LITERAL ...)' forms naming a variable of
`agent-shell-project--config-variables' count; anything else is ignored with a
warning.  Nothing in the file is evaluated."
  (let ((file (expand-file-name ".agent-shell/config.el" root))
        settings)
    (dolist (form (agent-shell-project-read-data-file file))
      (if (not (and (consp form) (eq (car form) 'setq) (proper-list-p form)
                    (cl-evenp (length (cdr form)))))
          (display-warning 'agent-shell (format "%s: ignoring %S" file form))
        (let ((pairs (cdr form)))
          (while pairs
            (let ((var (pop pairs)) (literal (agent-shell-project--literal (pop pairs))))
              (cond
               ((not (and (memq var agent-shell-project--config-variables) literal))
                (display-warning
                 'agent-shell (format "%s: ignoring setting of %S" file var)))
               ((not (agent-shell-project--config-value-ok-p var (cdr literal)))
                (display-warning
                 'agent-shell (format "%s: ignoring %S: %S is not %s" file var
                                      (cdr literal)
                                      (agent-shell-project--config-expected var))))
               (t (push (cons var (cdr literal)) settings))))))))
    (nreverse settings)))

(defun agent-shell-project--config-value-ok-p (var value)
  "Return non-nil when VALUE has the type project settings allow for VAR."
  (pcase var
    ('agent-shell-model (and (agent-shell-project-nonempty value) t))
    ('agent-shell-context-window (or (null value) (and (integerp value) (> value 0))))
    ('agent-shell-max-steps (and (integerp value) (> value 0)))
    ('agent-shell-default-mode (memq value '(act ask)))
    ('agent-shell-sandbox (memq value '(nil t off)))))

(defun agent-shell-project--config-expected (var)
  "Describe the values project settings allow for VAR."
  (pcase var
    ('agent-shell-model "a non-empty string")
    ('agent-shell-context-window "nil or a positive integer")
    ('agent-shell-max-steps "a positive integer")
    ('agent-shell-default-mode "the symbol act or ask (quoted: 'ask)")
    ('agent-shell-sandbox "nil or t")))

(defun agent-shell-project-setting (settings var)
  "Return VAR's value from SETTINGS, else its global value."
  (let ((cell (assq var settings)))
    (if cell (cdr cell) (symbol-value var))))

(defun agent-shell-project-root (&optional ask)
  "Return the project root for a new session.
With ASK non-nil, read a directory."
  (file-name-as-directory
   (expand-file-name
    (cond (ask (read-directory-name "Project directory: " nil nil t))
          ((when-let ((project (project-current nil)))
             (if (fboundp 'project-root)
                 (project-root project)
               (car (with-no-warnings (project-roots project))))))
          (agent-shell-workspace-root)
          (t default-directory)))))

(defun agent-shell-project--wide-root (root)
  "Return a description of ROOT when it is $HOME or /, else nil.
Such a directory is never a project silently: the agent could read
and change everything below it."
  (let* ((file-name-handler-alist nil)
         (true (file-name-as-directory (file-truename (expand-file-name root))))
         (home (getenv "HOME")))
    (cond ((equal true "/") "the root directory /")
          ((and home (file-name-absolute-p home)
                (equal true (file-name-as-directory (file-truename home))))
           (format "your home directory %s" (directory-file-name home))))))

(defun agent-shell-project-confirmed-root (root)
  "Return (ROOT . WIDE-CONFIRMED) for a new session, asking when ROOT is too wide.
When ROOT is $HOME or /, read a project directory instead, saying
why.  Choosing $HOME or / again needs an explicit `yes-or-no-p';
WIDE-CONFIRMED is then t, and only then may the session's parameters
carry the override the bridge asks for."
  (let ((confirmed nil))
    (while (let ((wide (and (not confirmed) (agent-shell-project--wide-root root))))
             (when wide
               (setq root (read-directory-name
                           (format "agent-shell: %s is not a project (the agent could \
read and change everything in it).  Project directory: " wide)
                           nil nil t))
               (when-let ((again (agent-shell-project--wide-root root)))
                 (setq confirmed
                       (yes-or-no-p
                        (format "The agent could read and change any file in %s \
\(credential files excepted).  Really use it as the project? " again))))
               t)))
    (cons (file-name-as-directory (expand-file-name root)) confirmed)))

;;; Obsolete names

(define-obsolete-function-alias 'agent-shell-api-key
  #'agent-shell-project-api-key "0.2")
(define-obsolete-function-alias 'agent-shell-scaffold
  #'agent-shell-project-scaffold "0.2")
(define-obsolete-function-alias 'agent-shell-read-data-file
  #'agent-shell-project-read-data-file "0.2")
(define-obsolete-function-alias 'agent-shell-read-config
  #'agent-shell-project-read-config "0.2")

(provide 'agent-shell-project)
;;; agent-shell-project.el ends here
