;;; agent-shell-roles.el --- Roles: the reviewer and the user's own roles  -*- lexical-binding: t; -*-

;; SPDX-License-Identifier: GPL-3.0-or-later

;;; Commentary:

;; The bridge runs roles as sub-sessions with their own context: the lead
;; delegates to the explorer or the tester, and the reviewer looks at
;; every turn that changed files.  These options go to the bridge with
;; each new session.  A project's own .agent-shell/roles.el applies once
;; the user trusts it (agent-shell-trust.el).

;;; Code:

(declare-function agent-shell-trust-notice "agent-shell-trust" (kind))

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
     ((equal status "untrusted") (agent-shell-trust-notice 'roles))
     ((equal status "invalid")
      (format "This project's .agent-shell/roles.el is not used: %s"
              (alist-get 'error project))))))

(provide 'agent-shell-roles)
;;; agent-shell-roles.el ends here
