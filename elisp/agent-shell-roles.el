;;; agent-shell-roles.el --- Roles: the reviewer and the user's own roles  -*- lexical-binding: t; -*-

;; SPDX-License-Identifier: GPL-3.0-or-later

;;; Commentary:

;; The bridge runs roles as sub-sessions with their own context: the lead
;; delegates to the explorer or the tester, and the reviewer looks at
;; every turn that changed files.  These options go to the bridge with
;; each new session.

;;; Code:

(declare-function agent-shell-project--review-allowlist "agent-shell-project" (file bytes &optional question))
(declare-function agent-shell-bridge--request "agent-shell-bridge" (method params &rest args))
(declare-function agent-shell-project--trust-root "agent-shell-project" (root))
(declare-function agent-shell-project--file-bytes "agent-shell-project" (file))

(defcustom agent-shell-review-changes t
  "Whether the reviewer role checks every turn that changed files.
The reviewer cannot write; it approves or sends comments back to the
agent, which goes on (at most two rounds)."
  :type 'boolean
  :group 'agent-shell
  :package-version '(agent-shell . "0.2.0"))

(defcustom agent-shell-roles nil
  "Your own roles, or changes to the built-in ones (explorer, reviewer, tester).
Each element is a plist with :name (lower case) and any of
:description, :prompt, :tools (a list of tool names), :max-steps,
:model (for example a cheaper model for the explorer) and
:write-globs (where the role may write).  A new role needs :prompt and
:tools.  Example:

  \\='((:name \"explorer\" :model \"deepseek-chat\" :max-steps 8)
    (:name \"docs\" :prompt \"Improve the documentation you are pointed at.\"
     :tools (\"read_file\" \"grep\" \"replace_region\" \"task_complete\")
     :write-globs (\"docs/*\" \"*.md\")))"
  :type '(repeat (plist :key-type symbol :value-type sexp))
  :group 'agent-shell
  :package-version '(agent-shell . "0.2.0"))

(defun agent-shell-roles--param (role)
  "Return ROLE, a plist of `agent-shell-roles', as the bridge's JSON object."
  (let (out)
    (dolist (key '(:name :description :prompt :tools :max-steps :model :write-globs))
      (let ((value (plist-get role key)))
        (when value
          (push (cons (intern (string-replace "-" "_" (substring (symbol-name key) 1)))
                      (if (listp value) (vconcat value) value))
                out))))
    (nreverse out)))

(defun agent-shell-roles-params ()
  "Return the role part of `session/new': the review switch and the roles."
  `((review . ,(if agent-shell-review-changes t :json-false))
    (roles . ,(vconcat (mapcar #'agent-shell-roles--param agent-shell-roles)))))

(defun agent-shell-roles-notice (result)
  "Return what the user should know of the project's roles in session RESULT."
  (let* ((project (alist-get 'projectRoles result))
         (status (alist-get 'status project)))
    (cond
     ((equal status "untrusted")
      (substitute-command-keys
       "This project's .agent-shell/roles.el is used only once you trust it: \
\\[agent-shell-trust-roles]"))
     ((equal status "invalid")
      (format "This project's .agent-shell/roles.el is not used: %s"
              (alist-get 'error project))))))

(defun agent-shell-trust-roles (&optional root)
  "Review ROOT's `.agent-shell/roles.el' and let new sessions use its roles.
The file arrives with the repository, so its roles (prompts, tools and
models) apply only after you trust its current content; any change
needs trust again.  Your own `agent-shell-roles' win on a name.  ROOT
defaults to this session's project, else the current project."
  (interactive)
  (let* ((root (agent-shell-project--trust-root root))
         (file (expand-file-name ".agent-shell/roles.el" root))
         (bytes (agent-shell-project--file-bytes file)))
    (when (or (not (called-interactively-p 'interactive))
              (agent-shell-project--review-allowlist
               file bytes "Trust %s as shown, letting its roles run in new sessions? "))
      (agent-shell-bridge--request
       "roles/trust" `((cwd . ,(directory-file-name root))
                       (sha256 . ,(secure-hash 'sha256 bytes)))
       :on-success
       (lambda (result)
         (message "roles.el trusted: %s"
                  (mapconcat #'identity (append (alist-get 'roles result) nil) ", ")))
       :on-error
       (lambda (err) (message "Trusting roles.el failed: %s" (alist-get 'message err)))))))

(provide 'agent-shell-roles)
;;; agent-shell-roles.el ends here
