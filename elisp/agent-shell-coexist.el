;;; agent-shell-coexist.el --- Refuse to mix with xenodium's agent-shell  -*- lexical-binding: t; -*-

;; SPDX-License-Identifier: GPL-3.0-or-later

;;; Commentary:

;; Another, unrelated package is also called agent-shell: xenodium's
;; ACP client on MELPA (Claude Code, Gemini CLI and others through the
;; Agent Client Protocol).  It has the same file name `agent-shell.el',
;; the same `agent-shell-' prefix, its own `agent-shell-mode' and its own
;; `agent-shell-start'.  Loaded into one Emacs, each package would
;; silently redefine half of the other.
;;
;; This file detects the other package by names only it defines (its
;; agent configurations, its Anthropic and UI files, its version
;; constant) and stops with one error that names both packages and
;; what to do:
;;
;; - when this package loads after the other one, agent-shell.el calls
;;   `agent-shell-coexist-check' before it defines anything;
;; - when the other package's files load after this one, a function on
;;   `after-load-functions' signals the same error as soon as one of them
;;   has loaded: its main file requires those files before it defines
;;   its commands, so its load stops before it overwrites ours.

;;; Code:

(require 'cl-lib)

(defconst agent-shell-coexist--other-features
  '(agent-shell-anthropic agent-shell-openai agent-shell-google
    agent-shell-ui agent-shell-viewport agent-shell-work-buffer
    agent-shell-faces agent-shell-prompt-queue agent-shell-chat-mode)
  "Features that only xenodium's agent-shell provides.")

(defconst agent-shell-coexist--other-functions
  '(agent-shell-make-agent-config agent-shell-anthropic-make-claude-code-config
    agent-shell-select-config)
  "Functions (or autoloads) that only xenodium's agent-shell defines.")

(defconst agent-shell-coexist--other-variables
  '(agent-shell--version agent-shell-agent-configs)
  "Variables that only xenodium's agent-shell defines.")

(defun agent-shell-coexist-other-loaded-p ()
  "Return the first sign that xenodium's agent-shell is in this Emacs, or nil."
  (or (cl-find-if #'featurep agent-shell-coexist--other-features)
      (cl-find-if #'fboundp agent-shell-coexist--other-functions)
      (cl-find-if #'boundp agent-shell-coexist--other-variables)))

(defun agent-shell-coexist--message (sign)
  "Return the error text for the other package, seen through SIGN."
  (format "Two different packages named agent-shell are loaded: this one \
\(a coding agent with a Python bridge; M-x agent-shell-start, \
agent-shell-save-memory) and xenodium/agent-shell from MELPA (ACP shells \
for Claude Code, Gemini CLI...; `%s' comes from it).  They share the file \
name agent-shell.el, the agent-shell- prefix, agent-shell-mode and \
agent-shell-start, so one would overwrite the other.  Keep one: remove \
the other from `load-path' or uninstall it (M-x package-delete), then \
restart Emacs.  M-x list-load-path-shadows shows which agent-shell.el \
wins" sign))

(defun agent-shell-coexist-check ()
  "Signal an error when xenodium's agent-shell is loaded in this Emacs."
  (when-let ((sign (agent-shell-coexist-other-loaded-p)))
    (error "%s" (agent-shell-coexist--message sign))))

(defun agent-shell-coexist--after-load (_file)
  "Stop a load of xenodium's agent-shell after this package has loaded."
  (when-let ((sign (agent-shell-coexist-other-loaded-p)))
    ;; Said once: the hook stays quiet while Emacs unwinds the load.
    (remove-hook 'after-load-functions #'agent-shell-coexist--after-load)
    (error "%s" (agent-shell-coexist--message sign))))

(defun agent-shell-coexist-watch ()
  "Refuse xenodium's agent-shell in any file loaded from now on.
agent-shell.el calls this once it has loaded."
  (add-hook 'after-load-functions #'agent-shell-coexist--after-load))

(provide 'agent-shell-coexist)
;;; agent-shell-coexist.el ends here
