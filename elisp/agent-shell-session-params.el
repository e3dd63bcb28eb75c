;;; agent-shell-session-params.el --- What a new session is opened with  -*- lexical-binding: t; -*-

;; SPDX-License-Identifier: GPL-3.0-or-later

;;; Commentary:

;; The params of `session/new' for a project root (its settings, the
;; user's extra paths, roles and MCP servers) and the error callback
;; that reports a failed start or resume in the shell buffer.  The
;; commands that open sessions are in agent-shell.el and
;; agent-shell-lifecycle.el.

;;; Code:

(require 'agent-shell-custom)
(require 'agent-shell-project)
(require 'agent-shell-remote)
(require 'agent-shell-mcp)
(require 'agent-shell-roles)
(require 'agent-shell-header)
(require 'agent-shell-transcript)
(require 'agent-shell-lifecycle)

(defun agent-shell-new-session-params (root &optional settings wide-confirmed)
  "Return the params of `session/new' for ROOT.
SETTINGS are ROOT's project settings, read when not given.
WIDE-CONFIRMED non-nil means the user explicitly confirmed ROOT
although it is $HOME or /; only then is `allow_wide_root' sent."
  (let ((settings (or settings
                      ;; A remote one's is read on its host, by the bridge.
                      (and (not (agent-shell-remote-p root))
                           (agent-shell-project-read-config root)))))
    `((cwd . ,(directory-file-name root))
      ,@(agent-shell-remote-session-params root)
      ,@(and wide-confirmed '((allow_wide_root . t)))
      (mode . ,(symbol-name
                (agent-shell-project-setting settings 'agent-shell-default-mode)))
      (model . ((model . ,(agent-shell-project-setting settings 'agent-shell-model))
                ,@(when-let ((window (agent-shell-project-setting
                                      settings 'agent-shell-context-window)))
                    `((context_window . ,window)))))
      (max_steps . ,(agent-shell-project-setting settings 'agent-shell-max-steps))
      ;; Only the user's own setting: never one from the project's files.
      (extra_allowed_paths
       . ,(vconcat (mapcar #'expand-file-name agent-shell-extra-allowed-paths)))
      ,@(agent-shell-roles-params)
      ,@(agent-shell-mcp-session-params))))

(defun agent-shell-failure-reporter (buffer what)
  "Return an error callback reporting WHAT failed in BUFFER."
  (lambda (err)
    (when (buffer-live-p buffer)
      (with-current-buffer buffer
        (agent-shell-lifecycle-unqueue)
        (agent-shell-transcript-notice
         (format "%s failed: %s" what (alist-get 'message err)))
        (agent-shell-header-set-state 'dead)))))

(provide 'agent-shell-session-params)
;;; agent-shell-session-params.el ends here
