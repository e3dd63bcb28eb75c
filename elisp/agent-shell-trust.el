;;; agent-shell-trust.el --- Trust the files a project ships  -*- lexical-binding: t; -*-

;; SPDX-License-Identifier: GPL-3.0-or-later

;;; Commentary:

;; A repository can ship files that change what the agent may do: an
;; allowlist of commands that run unasked, a config.el that turns the
;; sandbox off, roles with their own prompts and tools, a `.mcp.json'
;; naming programs to start, and a hooks.json of commands run around
;; the agent's steps.  They arrive with a clone, so the bridge
;; applies each only once the user has trusted the exact bytes of its
;; current content, and again after any change; it keeps the record.
;;
;; One mechanism serves them all, driven by the table
;; `agent-shell-trust-kinds' (kind, file, bridge method, what the user is
;; asked and told, command): the file is shown read-only, the question
;; says what trusting lets it do, and its sha256 goes to the bridge,
;; which refuses when the file no longer has those bytes.
;;
;; `agent-shell-trust-project-file' asks which file; the commands
;; `agent-shell-trust-allowlist', `agent-shell-trust-config',
;; `agent-shell-trust-roles', `agent-shell-trust-mcp' and
;; `agent-shell-trust-hooks' name one.
;; `agent-shell-trust-notice' is the line a new session shows for a file
;; it does not apply yet.  Requests go through agent-shell-bridge.el.

;;; Code:

(require 'cl-lib)
(require 'subr-x)
(require 'agent-shell-session)

(declare-function agent-shell-bridge-request "agent-shell-bridge" (method params &rest args))
(declare-function agent-shell-project-root "agent-shell-project" (&optional ask))

;;; The trusted kinds

(defconst agent-shell-trust-kinds
  '((allowlist
     :file ".agent-shell/allowlist.el"
     :method "policy/trust_allowlist"
     :command agent-shell-trust-allowlist
     :mode emacs-lisp-mode
     :question "Trust %s as shown, letting its commands run unasked? "
     :trusted agent-shell-trust--allowlist-trusted
     :notice "This project's allowlist is not applied until you trust it")
    (config
     :file ".agent-shell/config.el"
     :method "policy/trust_config"
     :command agent-shell-trust-config
     :mode emacs-lisp-mode
     :question "Trust %s as shown, letting it turn the sandbox off? "
     :trusted agent-shell-trust--config-trusted
     :notice "This project's config.el turns the sandbox off only once you trust it")
    (roles
     :file ".agent-shell/roles.el"
     :method "roles/trust"
     :command agent-shell-trust-roles
     :mode emacs-lisp-mode
     :question "Trust %s as shown, letting its roles run in new sessions? "
     :trusted agent-shell-trust--roles-trusted
     :notice "This project's .agent-shell/roles.el is used only once you trust it")
    (mcp
     :file ".mcp.json"
     :method "mcp/trust"
     :command agent-shell-trust-mcp
     :mode js-mode
     :question agent-shell-trust--mcp-question
     :trusted agent-shell-trust--mcp-trusted
     :notice "This project's .mcp.json starts no server until you trust it")
    (hooks
     :file ".agent-shell/hooks.json"
     :method "hooks/trust"
     :command agent-shell-trust-hooks
     :mode js-mode
     :question "Run the commands of %s as shown around the agent's steps (in the sandbox)? "
     :trusted agent-shell-trust--hooks-trusted
     :notice "This project's .agent-shell/hooks.json runs no command until you trust it"))
  "The files a project ships that apply only once the user trusts them.
Each element is (KIND . PLIST).  PLIST has :file, the file's name
relative to the project root; :method, the bridge's method that
records the trust (params `cwd' and `sha256'); :command, the command
trusting this kind; :mode, the major mode showing the file for review;
:question, a format string for the file's name, or a function of the
file and its text, giving the question asked; :trusted, a function of
the bridge's result saying what now applies; and :notice, what a
session says while the file is not trusted.")

(defun agent-shell-trust--kind (kind)
  "Return the plist of KIND in `agent-shell-trust-kinds'."
  (or (alist-get kind agent-shell-trust-kinds)
      (error "Unknown kind of project file to trust: %S" kind)))

(defun agent-shell-trust--allowlist-trusted (result)
  "Say which commands run unasked once the allowlist is trusted (RESULT)."
  (let ((n (length (alist-get 'commands result))))
    (if (= n 1) "1 command runs unasked" (format "%d commands run unasked" n))))

(defun agent-shell-trust--config-trusted (result)
  "Say what the sandbox is after config.el was trusted with RESULT."
  (format "sandbox %s" (or (alist-get 'label (alist-get 'sandbox result)) "?")))

(defun agent-shell-trust--roles-trusted (result)
  "Name the roles new sessions use after roles.el was trusted with RESULT."
  (let ((roles (append (alist-get 'roles result) nil)))
    (if roles (concat "roles " (string-join roles ", ")) "no roles")))

(defun agent-shell-trust--mcp-trusted (result)
  "Name the servers new sessions start after `.mcp.json' was trusted with RESULT."
  (let ((servers (append (alist-get 'servers result) nil)))
    (concat (if servers (concat "servers " (string-join servers ", ")) "no servers")
            " (used from the next session on)")))

(defun agent-shell-trust--hooks-trusted (result)
  "Say how many hook commands run once hooks.json was trusted with RESULT."
  (let ((hooks (alist-get 'hooks result)) (parts nil))
    (dolist (event '(pre_tool post_tool turn_end))
      (let ((n (length (alist-get event hooks))))
        (when (> n 0) (push (format "%s %d" event n) parts))))
    (concat (if parts (string-join (nreverse parts) ", ") "no commands")
            " (run in the sandbox from the next step on)")))

(defun agent-shell-trust--env-names (text)
  "Return the sorted names of the variables in TEXT: ${NAME}, ${NAME:-x}.
The bridge fills them in from its own environment, which holds your
model's API key: trusting the file also hands these to its servers."
  (let ((names nil) (start 0))
    (while (string-match "\\${\\([A-Za-z_][A-Za-z0-9_]*\\)\\(?::-[^}]*\\)?}" text start)
      (push (match-string 1 text) names)
      (setq start (match-end 0)))
    (sort (delete-dups names) #'string<)))

(defun agent-shell-trust--mcp-question (file text)
  "Return the question asked before trusting FILE, a `.mcp.json' holding TEXT."
  (let ((names (agent-shell-trust--env-names text)))
    (format "Start the MCP servers of %s as shown%s, in new sessions? "
            (abbreviate-file-name file)
            (if names
                (format " (they get %s from your environment)"
                        (mapconcat (lambda (name) (concat "$" name)) names ", "))
              ""))))

;;; Internals

(defconst agent-shell-trust--review-buffer "*agent-shell trust review*"
  "Name of the buffer showing a project file while the user decides.")

(defun agent-shell-trust--root (root)
  "Return ROOT, else this session's project, else the current project."
  (file-name-as-directory (or root
                              (and agent-shell--session
                                   (agent-shell-session-root agent-shell--session))
                              (agent-shell-project-root))))

(defun agent-shell-trust--file-bytes (file)
  "Return the exact bytes of the project's FILE, to review and hash.
Signal a `user-error' when it is missing or a symlink."
  (unless (and (file-regular-p file) (not (file-symlink-p file)))
    (user-error "No %s (or a symlink) at %s"
                (file-name-nondirectory file) (file-name-directory file)))
  (with-temp-buffer
    (set-buffer-multibyte nil)
    (insert-file-contents-literally file)
    (buffer-string)))

(defun agent-shell-trust--question (kind file text)
  "Return the question asked before trusting FILE of KIND, whose content is TEXT."
  (let ((question (plist-get (agent-shell-trust--kind kind) :question)))
    (if (functionp question)
        (funcall question file text)
      (format question (abbreviate-file-name file)))))

(defun agent-shell-trust--review (kind file bytes)
  "Show BYTES, the content of FILE of KIND, and ask whether to trust it.
The review buffer goes away once the question is answered (or quit)."
  (let ((review (get-buffer-create agent-shell-trust--review-buffer))
        (text (decode-coding-string bytes 'utf-8)))
    (unwind-protect
        (progn
          (with-current-buffer review
            (let ((inhibit-read-only t))
              (erase-buffer)
              (insert text)
              (funcall (plist-get (agent-shell-trust--kind kind) :mode))
              (setq buffer-read-only t)))
          (display-buffer review)
          (yes-or-no-p (agent-shell-trust--question kind file text)))
      (when (buffer-live-p review)
        (dolist (window (get-buffer-window-list review nil t))
          (quit-window nil window))
        (kill-buffer review)))))

(defun agent-shell-trust--read-kind (root)
  "Ask which of the files ROOT ships to trust; return its kind."
  (let ((table (cl-loop for (kind . plist) in agent-shell-trust-kinds
                        when (file-regular-p (expand-file-name (plist-get plist :file) root))
                        collect (cons (plist-get plist :file) kind))))
    (unless table
      (user-error "%s ships none of %s" (abbreviate-file-name root)
                  (mapconcat (lambda (entry) (plist-get (cdr entry) :file))
                             agent-shell-trust-kinds ", ")))
    (cdr (assoc (completing-read "Trust which file of the project? " table nil t
                                 nil nil (caar table))
                table))))

;;; Commands

(defun agent-shell-trust-notice (kind)
  "Return the notice of a session whose project file of KIND is not trusted.
It names the command that trusts it."
  (let ((plist (agent-shell-trust--kind kind)))
    (substitute-command-keys
     (format "%s: \\[%s]" (plist-get plist :notice) (plist-get plist :command)))))

(defun agent-shell-trust-project-file (kind &optional root review)
  "Trust the file of KIND that ROOT's project ships, as it is now.
KIND is a key of `agent-shell-trust-kinds'.  With REVIEW non-nil
\(always when called interactively), show the file and ask first;
interactively, also ask which of the project's files to trust.  The
bridge trusts exactly the bytes shown: if the file changes before it
reads it, trust is refused.  ROOT defaults to this session's project,
else the current project."
  (interactive
   (let ((root (agent-shell-trust--root nil)))
     (list (agent-shell-trust--read-kind root) root t)))
  (let* ((plist (agent-shell-trust--kind kind))
         (root (agent-shell-trust--root root))
         (file (expand-file-name (plist-get plist :file) root))
         (bytes (agent-shell-trust--file-bytes file)))
    (when (or (not review) (agent-shell-trust--review kind file bytes))
      (agent-shell-bridge-request
       (plist-get plist :method) `((cwd . ,(directory-file-name root))
                                   (sha256 . ,(secure-hash 'sha256 bytes)))
       :on-success
       (lambda (result)
         (message "Trusted %s: %s" (abbreviate-file-name file)
                  (funcall (plist-get plist :trusted) result)))
       :on-error
       (lambda (err)
         (message "Trusting %s failed: %s" (file-name-nondirectory file)
                  (alist-get 'message err)))))))

(defun agent-shell-trust-allowlist (&optional root review)
  "Review ROOT's `.agent-shell/allowlist.el' and let its commands run unasked.
The bridge applies a project's allowlist only after you trust its
current content, so a cloned repository cannot allow itself dangerous
commands; any later change to the file needs trust again.  REVIEW
non-nil (interactively, always) shows the file and asks first.  See
`agent-shell-trust-project-file' for ROOT."
  (interactive (list nil t))
  (agent-shell-trust-project-file 'allowlist root review))

(defun agent-shell-trust-config (&optional root review)
  "Review ROOT's `.agent-shell/config.el' and let it turn the sandbox off.
A project's config.el may set `agent-shell-sandbox' to nil, so that
the commands that run without your yes run outside the bridge's
sandbox.  The bridge applies that only after you trust the file's
current content, and live sessions of the project follow; any change
needs trust again.  REVIEW non-nil (interactively, always) shows the
file and asks first.  See `agent-shell-trust-project-file' for ROOT."
  (interactive (list nil t))
  (agent-shell-trust-project-file 'config root review))

(defun agent-shell-trust-roles (&optional root review)
  "Review ROOT's `.agent-shell/roles.el' and let new sessions use its roles.
Its roles (prompts, tools and models) apply only after you trust the
file's current content; any change needs trust again.  Your own
`agent-shell-roles' win on a name.  REVIEW non-nil (interactively,
always) shows the file and asks first.  See
`agent-shell-trust-project-file' for ROOT."
  (interactive (list nil t))
  (agent-shell-trust-project-file 'roles root review))

(defun agent-shell-trust-hooks (&optional root review)
  "Review ROOT's `.agent-shell/hooks.json' and let it run its commands.
The file names commands run before a step (they may deny it, make
it ask, or rewrite its arguments, which the policy judges again),
after one (their output is added to the result) and at a turn's end.
They are programs of the repository, so the bridge runs them only
after you trust the file's current content, only in the sandbox and
with the project as working directory; any change to the file needs
trust again.  A hook can only tighten: what the policy denies or asks
about stays so.  REVIEW non-nil (interactively, always) shows the
file and asks first.  See `agent-shell-trust-project-file' for ROOT."
  (interactive (list nil t))
  (agent-shell-trust-project-file 'hooks root review))

(defun agent-shell-trust-mcp (&optional root review)
  "Review ROOT's `.mcp.json' and let new sessions start its servers.
Its servers are programs that run on your machine, so the bridge
starts them only after you trust the file's current content; any
change needs trust again.  The question names the environment
variables the file hands to its servers.  REVIEW non-nil
\(interactively, always) shows the file and asks first.  See
`agent-shell-trust-project-file' for ROOT."
  (interactive (list nil t))
  (agent-shell-trust-project-file 'mcp root review))

;;; Obsolete names

(define-obsolete-function-alias 'agent-shell-project-trust-allowlist
  #'agent-shell-trust-allowlist "0.2")
(define-obsolete-function-alias 'agent-shell-project-trust-config
  #'agent-shell-trust-config "0.2")

(provide 'agent-shell-trust)
;;; agent-shell-trust.el ends here
