;;; agent-shell-input.el --- The input of a shell buffer and its history  -*- lexical-binding: t; -*-

;; SPDX-License-Identifier: GPL-3.0-or-later

;;; Commentary:

;; The input is the text after the prompt at the end of a shell buffer.
;; This file reads and replaces it, inserts newlines into it, walks its
;; history (M-p, M-n) and gives TAB its meaning: fold the transcript
;; entry at point, else complete a /command or an @ mention.

;;; Code:

(require 'agent-shell-session)
(require 'agent-shell-transcript)
(require 'agent-shell-commands)
(require 'agent-shell-mention)

(defun agent-shell-input ()
  "Return the current input text."
  (buffer-substring-no-properties (agent-shell-session-input-marker agent-shell--session)
                                  (point-max)))

(defun agent-shell-set-input (text)
  "Replace the current input with TEXT."
  (delete-region (agent-shell-session-input-marker agent-shell--session) (point-max))
  (goto-char (point-max))
  (insert text))

(defun agent-shell-newline ()
  "Insert a newline in the input without sending it."
  (interactive)
  (when (< (point) (agent-shell-session-input-marker agent-shell--session))
    (goto-char (point-max)))
  (insert "\n"))

(defun agent-shell-previous-input (n)
  "Replace the input with the Nth previous one from the history."
  (interactive "p")
  (unless (and agent-shell--session (agent-shell-session-history agent-shell--session))
    (user-error "No input history"))
  (when (= (agent-shell-session-history-index agent-shell--session) -1)
    (setf (agent-shell-session-history-draft agent-shell--session) (agent-shell-input)))
  (let ((index (+ (agent-shell-session-history-index agent-shell--session) n)))
    (cond ((>= index (length (agent-shell-session-history agent-shell--session)))
           (user-error "Beginning of history"))
          ((< index -1) (user-error "End of history"))
          (t (setf (agent-shell-session-history-index agent-shell--session) index)
             (agent-shell-set-input
              (if (= index -1)
                  (or (agent-shell-session-history-draft agent-shell--session) "")
                (nth index (agent-shell-session-history agent-shell--session))))))))

(defun agent-shell-next-input (n)
  "Replace the input with the Nth next one from the history."
  (interactive "p")
  (agent-shell-previous-input (- n)))

(defun agent-shell-toggle-entry ()
  "Show or hide the body of the thought, tool or plan entry at point.
Anywhere on an entry's line counts, its end too.  On a /command
name at the prompt, complete it; elsewhere, indent as TAB would."
  (interactive)
  (let ((id (agent-shell-transcript-entry-at (point))))
    (if (not id)
        (if (or (agent-shell-commands-completion-at-point)
                (agent-shell-mention-completion-at-point))
            (completion-at-point)
          (indent-for-tab-command))
      (let ((plist (agent-shell-transcript-entry id)))
        (agent-shell-transcript-set-folded id (not (plist-get plist :folded)))))))

(provide 'agent-shell-input)
;;; agent-shell-input.el ends here
