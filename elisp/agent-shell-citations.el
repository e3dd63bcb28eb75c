;;; agent-shell-citations.el --- Clickable path:START-END citations in answers  -*- lexical-binding: t; -*-

;; SPDX-License-Identifier: GPL-3.0-or-later

;;; Commentary:

;; Ask-mode answers cite code as `path:START-END'.  The shell buffer
;; (agent-shell.el) marks where a turn's output begins with
;; `agent-shell-citations-mark' and, at the turn's end, turns the
;; citations in the new assistant text into buttons with
;; `agent-shell-citations-link' -- only that text is scanned, never the
;; whole transcript.  A citation becomes a button only when it names a
;; regular file inside the project root.

;;; Code:

(require 'cl-lib)
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

(provide 'agent-shell-citations)
;;; agent-shell-citations.el ends here
