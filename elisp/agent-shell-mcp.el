;;; agent-shell-mcp.el --- The user's MCP servers for agent sessions  -*- lexical-binding: t; -*-

;; SPDX-License-Identifier: GPL-3.0-or-later

;;; Commentary:

;; Model Context Protocol servers become tools of agent sessions.  The
;; bridge runs them; this file only says which:
;;
;; - `agent-shell-mcp-servers' names them, in Claude Code's `.mcp.json'
;;   shape (an alist NAME -> command, args, env, cwd; or url, type,
;;   headers for a remote server) or as the path of such a JSON file;
;;   `agent-shell-mcp-session-params' turns them into `session/new''s
;;   `mcpServers' list, in the Agent Client Protocol's shape (env and
;;   headers as lists of name/value objects);
;; - `agent-shell-mcp-server-policy' marks servers trusted (every tool
;;   runs unasked) or denied (never started);
;; - a project's own `.mcp.json' is used once the user trusts it
;;   (`agent-shell-trust-mcp', in agent-shell-trust.el);
;; - the session's MCP status (servers connected, notices) is kept in
;;   `agent-shell-mcp--status' for the header line.
;;
;; agent-shell.el requires this file; notices go through
;; `agent-shell-transcript-notice'.

;;; Code:

(require 'cl-lib)
(require 'subr-x)

(declare-function agent-shell-transcript-notice "agent-shell-transcript" (text))

;;; Options

(defcustom agent-shell-mcp-servers nil
  "MCP servers for agent sessions, in the shape of Claude Code's `.mcp.json'.
Either the path of a JSON file {\"mcpServers\": {NAME: {...}}}, or an
alist of (NAME . SPEC).  For a server the bridge starts, SPEC is an
alist with `command' (a string), `args' (a list of strings), `env' (an
alist of variable name and value) and `cwd' (a directory; default the
project root).  For a remote server, SPEC has `url' (http or https),
optionally `type' (\"http\", the default, for streamable HTTP, or
\"sse\" for the older HTTP+SSE transport) and `headers' (an alist of
header name and value, e.g. a bearer token; never shown in the log).
${VAR} and ${VAR:-default} in commands, arguments, environment
values, URLs and header values are filled in by the bridge from its
environment.  Each server's tools reach the model as mcp__NAME__TOOL;
a tool its server annotates read-only runs unasked, every other tool
asks first.

Example:
  ((\"time\" . ((command . \"uvx\") (args . (\"mcp-server-time\"))))
   (\"git\" . ((command . \"uvx\")
             (args . (\"mcp-server-git\"))
             (env . ((\"GIT_PAGER\" . \"cat\")))))
   (\"docs\" . ((url . \"https://mcp.example.com/mcp\")
              (headers . ((\"Authorization\" . \"Bearer ${DOCS_TOKEN}\"))))))"
  :type '(choice (const :tag "None" nil)
                 (file :tag "JSON file (.mcp.json shape)")
                 (alist :tag "Servers"
                        :key-type (string :tag "Name")
                        :value-type (alist :tag "Server"
                                           :key-type symbol
                                           :value-type sexp)))
  :group 'agent-shell
  :package-version '(agent-shell . "0.2.0"))

(defcustom agent-shell-mcp-server-policy nil
  "Per-server policy overrides: an alist of (NAME . POLICY).
POLICY `trusted' lets every tool of server NAME run without asking;
`denied' keeps the server from starting at all.  Servers not named
here follow the default rule: read-only tools run, others ask."
  :type '(alist :key-type (string :tag "Server")
                :value-type (choice (const :tag "Trusted: never ask" trusted)
                                    (const :tag "Denied: never start" denied)))
  :group 'agent-shell
  :package-version '(agent-shell . "0.2.0"))

(defcustom agent-shell-mcp-start-timeout 30
  "Seconds an MCP server has to start and answer the MCP handshake."
  :type 'number
  :group 'agent-shell
  :package-version '(agent-shell . "0.2.0"))

;;; Internals

(defvar-local agent-shell-mcp--status nil
  "The session's MCP status from the bridge: servers, connected, notices.")

(defun agent-shell-mcp--name (key)
  "Return KEY, a symbol or string, as a string."
  (if (symbolp key) (symbol-name key) key))

(defun agent-shell-mcp--get (spec key)
  "Return the value of KEY (a symbol) in server SPEC.
SPEC is an alist keyed by symbols or strings."
  (cdr (or (assq key spec) (assoc (symbol-name key) spec))))

(defun agent-shell-mcp--read-file (file)
  "Return the `mcpServers' alist of the JSON FILE."
  (let ((data (condition-case err
                  (with-temp-buffer
                    (insert-file-contents file)
                    (json-parse-buffer :object-type 'alist :array-type 'list
                                       :null-object nil :false-object nil))
                (file-missing (user-error "MCP configuration %s does not exist" file))
                (json-parse-error
                 (user-error "MCP configuration %s is not valid JSON: %s"
                             file (error-message-string err))))))
    (unless (and (listp data) (listp (alist-get 'mcpServers data)))
      (user-error "MCP configuration %s has no \"mcpServers\" object" file))
    (alist-get 'mcpServers data)))

(defun agent-shell-mcp--servers ()
  "Return `agent-shell-mcp-servers' as an alist of (NAME . SPEC)."
  (let ((value agent-shell-mcp-servers))
    (cond ((null value) nil)
          ((stringp value) (agent-shell-mcp--read-file (expand-file-name value)))
          ((listp value) value)
          (t (user-error "`agent-shell-mcp-servers' is neither a file nor an alist")))))

(defun agent-shell-mcp--wire-server (name spec)
  "Return server NAME with SPEC as an ACP `mcpServers' entry."
  (if (agent-shell-mcp--get spec 'url)
      (agent-shell-mcp--wire-remote name spec)
    (let ((command (agent-shell-mcp--get spec 'command))
          (args (agent-shell-mcp--get spec 'args))
          (env (agent-shell-mcp--get spec 'env))
          (cwd (agent-shell-mcp--get spec 'cwd)))
      (unless (and (stringp command) (not (string-empty-p command)))
        (user-error "MCP server %s needs a `command' string (or a `url')" name))
      `((name . ,(agent-shell-mcp--name name))
        (command . ,command)
        (args . ,(vconcat (mapcar (lambda (a) (format "%s" a)) args)))
        (env . ,(agent-shell-mcp--pairs env))
        ,@(when (stringp cwd) `((cwd . ,(expand-file-name cwd))))))))

(defun agent-shell-mcp--pairs (alist)
  "Return ALIST of (NAME . VALUE) as a vector of ACP name/value objects."
  (vconcat (mapcar (lambda (pair)
                     `((name . ,(agent-shell-mcp--name (car pair)))
                       (value . ,(format "%s" (cdr pair)))))
                   alist)))

(defun agent-shell-mcp--wire-remote (name spec)
  "Return the remote server NAME with SPEC (a `url') as an ACP `mcpServers' entry.
The bridge checks the URL and fills in ${VAR} references."
  (let ((url (agent-shell-mcp--get spec 'url))
        (type (agent-shell-mcp--get spec 'type)))
    (setq type (if type (agent-shell-mcp--name type) "http"))
    (unless (and (stringp url) (not (string-empty-p url)))
      (user-error "MCP server %s: `url' must be a string" name))
    (unless (member type '("http" "sse"))
      (user-error "MCP server %s: `type' must be \"http\" or \"sse\", not %S" name type))
    `((type . ,type)
      (name . ,(agent-shell-mcp--name name))
      (url . ,url)
      (headers . ,(agent-shell-mcp--pairs (agent-shell-mcp--get spec 'headers))))))

(defun agent-shell-mcp-session-params ()
  "Return the MCP part of the params of `session/new' (and `session/resume').
An alist with `mcpServers' (a vector of ACP server objects),
`mcpServerPolicy' and `mcpStartTimeoutS'."
  `((mcpServers . ,(vconcat (mapcar (lambda (entry)
                                      (agent-shell-mcp--wire-server (car entry) (cdr entry)))
                                    (agent-shell-mcp--servers))))
    (mcpServerPolicy . ,(mapcar (lambda (entry)
                                  (cons (intern (agent-shell-mcp--name (car entry)))
                                        (symbol-name (cdr entry))))
                                agent-shell-mcp-server-policy))
    (mcpStartTimeoutS . ,agent-shell-mcp-start-timeout)))

(defun agent-shell-mcp-on-status (status &optional show-notices)
  "Keep the session's MCP STATUS; with SHOW-NOTICES, show its notices."
  (when status
    (setq agent-shell-mcp--status status)
    (when show-notices
      (let ((notices (alist-get 'notices status)))
        (dolist (notice (if (vectorp notices) (append notices nil) notices))
          (agent-shell-transcript-notice notice))))
    (force-mode-line-update)))

(defun agent-shell-mcp-on-update (update)
  "Apply an `mcp_servers' session UPDATE: new status, and its notice if any."
  (setq agent-shell-mcp--status update)
  (when-let ((notice (alist-get 'notice update)))
    (agent-shell-transcript-notice notice))
  (force-mode-line-update))

(defun agent-shell-mcp-header ()
  "Return the header line's MCP part, e.g. \" │ MCP 2/3\", or \"\"."
  (let ((configured (alist-get 'configured agent-shell-mcp--status)))
    (if (and (numberp configured) (> configured 0))
        (format " │ MCP %d/%d" (or (alist-get 'connected agent-shell-mcp--status) 0)
                configured)
      "")))

(provide 'agent-shell-mcp)
;;; agent-shell-mcp.el ends here
