;;; agent-shell-header.el --- The header line of a shell buffer  -*- lexical-binding: t; -*-

;; SPDX-License-Identifier: GPL-3.0-or-later

;;; Commentary:

;; The header line of a shell buffer of `agent-shell-mode': the model,
;; the mode (act or ask), what the agent is doing, tokens, context fill,
;; cost, grants, a missing sandbox and the MCP servers.  It reads the
;; buffer's `agent-shell-session'; `agent-shell-header-set-state' is
;; how the other parts change what the agent is said to be doing.

;;; Code:

(require 'subr-x)
(require 'agent-shell-custom)
(require 'agent-shell-session)
(require 'agent-shell-mcp)

;;; The header line

(defun agent-shell-header-set-state (state &optional detail)
  "Set this buffer's STATE, with DETAIL (a tool name) for `running'."
  (unless (and (eq state (agent-shell-session-state agent-shell--session))
               (equal detail (agent-shell-session-state-detail agent-shell--session)))
    (unless (eq state (agent-shell-session-state agent-shell--session))
      (setf (agent-shell-session-state-since agent-shell--session) (current-time)))
    (setf (agent-shell-session-state agent-shell--session) state
          (agent-shell-session-state-detail agent-shell--session) detail)
    (force-mode-line-update)
    (agent-shell-session-changed)))

(defun agent-shell-header--state-text ()
  "Return the state as shown in the header line."
  (pcase (agent-shell-session-state agent-shell--session)
    ('running (format "running %s"
                      (or (agent-shell-session-state-detail agent-shell--session) "tool")))
    ('waiting "waiting for you")
    ('dead "bridge stopped")
    ('starting (if (agent-shell-session-queued-prompt agent-shell--session)
                   "starting, 1 prompt queued" "starting"))
    (state (symbol-name state))))

(defun agent-shell-header--format-tokens (n)
  "Return token count N in a short form."
  (cond ((not (numberp n)) "0")
        ((>= n 1000000) (format "%.1fM" (/ n 1e6)))
        ((>= n 1000) (format "%.1fk" (/ n 1e3)))
        (t (format "%d" n))))

(defun agent-shell-header-line ()
  "Return the header line of a shell buffer.
It is the value of a `header-line-format' :eval form, hence a mode
line construct: every % in it is doubled, so that the one of the
context fill and any in the model name show as written."
  (let* ((session agent-shell--session)
         (grants (agent-shell-session-grants session))
         (usage (agent-shell-session-usage session))
         (total (alist-get 'totalTokens usage))
         (used (alist-get 'contextUsed usage))
         (window (alist-get 'contextWindow usage))
         (cost (alist-get 'costUsd usage)))
    (string-replace
     "%" "%%"
     (concat
      (format " %s │ %s │ %s │ %s tokens"
              (or (agent-shell-session-model session) agent-shell-model)
              (if (eq (agent-shell-session-mode session) 'ask) "ask" "act")
              (agent-shell-header--state-text)
              (agent-shell-header--format-tokens total))
      (if (and (numberp used) (numberp window) (> window 0))
          (format " │ context %d%%" (round (* 100.0 (/ (float used) window))))
        "")
      (if (numberp cost) (format " │ $%.4f" cost) "")
      (let ((queued (length (agent-shell-session-prompt-queue session))))
        (if (> queued 0) (format " │ %d queued" queued) ""))
      (let ((queued (length (agent-shell-session-prompt-queue session))))
        (if (> queued 0) (format " │ %d queued" queued) ""))
      (if grants
          (format " │ %d grant%s" (length grants) (if (cdr grants) "s" ""))
        "")
      (let* ((sandbox (agent-shell-session-sandbox session))
             (label (alist-get 'label sandbox)))
        ;; The bridge's label says where: "no sandbox (remote)" on a remote host.
        (if (eq (alist-get 'available sandbox) :json-false)
            (concat " │ " (if (stringp label) label "no sandbox"))
          ""))
      (agent-shell-mcp-header)))))

(provide 'agent-shell-header)
;;; agent-shell-header.el ends here
