;;; agent-shell-citations.el --- Clickable path:START-END citations in answers  -*- lexical-binding: t; -*-

;; SPDX-License-Identifier: GPL-3.0-or-later

;;; Commentary:

;; Ask-mode answers cite code as `path:START-END'.  The shell buffer
;; (agent-shell-turn.el) marks where a turn's output begins with
;; `agent-shell-citations-mark' and, at the turn's end, turns the
;; citations in the new assistant text into buttons with
;; `agent-shell-citations-link' -- only that text is scanned, never the
;; whole transcript.  A citation becomes a button only when it names a
;; regular file inside the project root.
;;
;; A tool's full output (`log_ref' such as out-2, kept by the bridge in
;; `.agent-shell/outputs/SESSION/') shows as a button made by
;; `agent-shell-citations-output-button'; it opens the file read-only.

;;; Code:

(require 'cl-lib)
(require 'agent-shell-session)
(require 'button)

(defvar-local agent-shell-citations--start nil
  "Marker where the output of the current turn begins, or nil.")

(defconst agent-shell-citations--path-regexp
  "\\`\\(?:[[:alnum:]_.~-]+/\\)*[[:alnum:]_.~-]+\\'"
  "Regexp of the path of a citation, alone.")

(define-button-type 'agent-shell-citation
  'action #'agent-shell-citations-visit
  'follow-link t
  'help-echo "RET or mouse-2: show these lines")

(defun agent-shell-citations-mark (position)
  "Remember POSITION as where the current turn's output begins."
  (setq agent-shell-citations--start (copy-marker position)))

(defun agent-shell-citations-link (end &optional root)
  "Make `path:START-END' citations in this turn's assistant text buttons.
Only text between the position given to `agent-shell-citations-mark'
and END is scanned; a citation becomes a button when its file exists
under ROOT (default: `default-directory').  Return the number made."
  (let ((start agent-shell-citations--start)
        (root (file-name-as-directory (or root default-directory)))
        (checked (make-hash-table :test #'equal))
        (made 0))
    (setq agent-shell-citations--start nil)
    (when (and (markerp start) (eq (marker-buffer start) (current-buffer)))
      (let ((inhibit-read-only t)
            (inhibit-modification-hooks t)
            (buffer-undo-list t))
        (save-excursion
          (goto-char start)
          ;; The line range is searched first: it is rare in prose, so the
          ;; scan is fast however long the answer; the path is what precedes it.
          (while (re-search-forward ":\\([0-9]+\\)\\(?:-\\([0-9]+\\)\\)?" end t)
            (let* ((colon (match-beginning 0))
                   (to (match-end 0))
                   (first (string-to-number (match-string 1)))
                   (last (if (match-beginning 2) (string-to-number (match-string 2)) first))
                   (from (save-excursion
                           (goto-char colon)
                           (skip-chars-backward "[:alnum:]_./~-" start)
                           (point)))
                   (path (buffer-substring-no-properties from colon)))
              (when (and (string-match-p agent-shell-citations--path-regexp path)
                         (eq (get-text-property from 'agent-shell-role) 'assistant)
                         (not (button-at from)))
                (let ((file (expand-file-name path root)))
                  (when (let ((ok (gethash path checked 'unknown)))
                          ;; Each distinct path is checked on disk once.
                          (when (eq ok 'unknown)
                            (setq ok (and (file-in-directory-p file root)
                                          (file-regular-p file)))
                            (puthash path ok checked))
                          ok)
                    (make-text-button from to
                                      'type 'agent-shell-citation
                                      'agent-shell-file file
                                      'agent-shell-lines (cons first (max first last)))
                    (cl-incf made))))))))
      (set-marker start nil))
    made))

(defun agent-shell-citations-visit (button)
  "Show the file and line range cited by BUTTON in another window."
  (let ((file (button-get button 'agent-shell-file))
        (lines (button-get button 'agent-shell-lines)))
    (find-file-other-window file)
    (widen)
    (goto-char (point-min))
    (forward-line (1- (car lines)))
    (push-mark (save-excursion (forward-line (- (cdr lines) (car lines)))
                               (line-end-position))
               t)
    (recenter)))

(defun agent-shell-citations-output-button (ref)
  "Return REF, a tool's `log_ref', as a button that opens the full output."
  (make-text-button (copy-sequence ref) nil
                    'agent-shell-output ref
                    'action #'agent-shell-citations--open-output
                    'follow-link t
                    'help-echo "RET or mouse-1: open the full output"))

(defun agent-shell-citations--open-output (button)
  "Open the full output named by BUTTON."
  (agent-shell-open-output (button-get button 'agent-shell-output)))

(defun agent-shell-open-output (ref)
  "Open the full output REF (such as \"out-2\") of this buffer's session.
The bridge keeps it in the project's `.agent-shell/outputs/SESSION/'."
  (interactive (list (read-string "Output (out-N): ")))
  (unless (string-match-p "\\`out-[0-9]+\\'" ref)
    (user-error "Not an output reference: %s" ref))
  (unless (and agent-shell--session
               (stringp (agent-shell-session-id agent-shell--session))
               (stringp (agent-shell-session-root agent-shell--session)))
    (user-error "Not in an agent-shell buffer with a session"))
  (let ((file (expand-file-name
               (format ".agent-shell/outputs/%s/%s.txt"
                       (agent-shell-session-id agent-shell--session) ref)
               (agent-shell-session-root agent-shell--session))))
    (unless (file-readable-p file)
      (user-error "The full output %s is not in %s" ref (file-name-directory file)))
    (find-file-read-only-other-window file)))

(provide 'agent-shell-citations)
;;; agent-shell-citations.el ends here
