;;; agent-shell-tool-text.el --- How a tool call reads in the transcript  -*- lexical-binding: t; -*-

;; SPDX-License-Identifier: GPL-3.0-or-later

;;; Commentary:

;; The text of a tool call's entry in a shell buffer: its arguments on
;; one line, its result content (text and diffs) capped to
;; `agent-shell-tool-output-max-chars', the outcome lines of a command
;; (exit status, test summary) and the detail of a failure.  Pure
;; functions from the bridge's JSON to strings, used by
;; agent-shell-transcript.el.

;;; Code:

(require 'cl-lib)
(require 'subr-x)
(require 'agent-shell-custom)
(require 'agent-shell-json)

;;; Text of tool calls

(defun agent-shell-tool-text-content (content)
  "Return the displayable text of tool CONTENT items.
A diff item shows its unified diff, under a line naming its file."
  (mapconcat
   (lambda (item)
     (pcase (alist-get 'type item)
       ("content" (or (alist-get 'text (alist-get 'content item)) ""))
       ("diff" (let ((diff (alist-get 'diff item)))
                 (if (and (stringp diff) (not (string-empty-p diff)))
                     (concat (format "diff %s\n" (or (alist-get 'path item) ""))
                             (string-trim-right diff "[\n]+"))
                   (format "diff %s (no change)" (or (alist-get 'path item) "")))))
       (_ (or (alist-get 'text item) ""))))
   (if (vectorp content) (append content nil) content)
   "\n"))

(defun agent-shell-tool-text-cap (text)
  "Return TEXT cut to `agent-shell-tool-output-max-chars'."
  (if (> (length text) agent-shell-tool-output-max-chars)
      (concat (substring text 0 agent-shell-tool-output-max-chars)
              (format "\n[… %d more characters in the action log]"
                      (- (length text) agent-shell-tool-output-max-chars)))
    text))

(defconst agent-shell-tool-text--max-argument-chars 60
  "Longest argument value shown in a tool entry's one-line arguments.")

(defun agent-shell-tool-text--json-ready (value)
  "Return VALUE, decoded with arrays as lists, in a form `json-serialize' takes.
Alists stay objects; other lists become vectors (JSON arrays)."
  (cond ((and (consp value) (consp (car value)) (symbolp (caar value)))
         (mapcar (lambda (cell) (cons (car cell) (agent-shell-tool-text--json-ready (cdr cell))))
                 value))
        ((consp value) (vconcat (mapcar #'agent-shell-tool-text--json-ready value)))
        ((vectorp value) (vconcat (mapcar #'agent-shell-tool-text--json-ready value)))
        (t value)))

(defun agent-shell-tool-text--compact-json (value)
  "Return VALUE as one line of JSON, or its printed form."
  (condition-case nil
      (agent-shell-json-text (agent-shell-tool-text--json-ready value)
                             :null-object nil)
    (error (format "%S" value))))

(defun agent-shell-tool-text--short-value (value)
  "Return VALUE, an argument of a tool call, short and on one line."
  (let ((text (replace-regexp-in-string
               "[\n\r\t]+" "⏎"
               (cond ((stringp value) value)
                     ((eq value t) "true")
                     ((eq value :json-false) "false")
                     ((numberp value) (number-to-string value))
                     (t (agent-shell-tool-text--compact-json value))))))
    (if (> (length text) agent-shell-tool-text--max-argument-chars)
        (format "%s… (%d chars)"
                (substring text 0 agent-shell-tool-text--max-argument-chars) (length text))
      text)))

(defun agent-shell-tool-text-arguments-line (input)
  "Return the tool arguments INPUT (an alist) as one short line."
  (if (and (consp input) (consp (car input)) (symbolp (caar input)))
      (mapconcat (lambda (cell)
                   (format "%s: %s" (car cell) (agent-shell-tool-text--short-value (cdr cell))))
                 input "  ")
    (agent-shell-tool-text--short-value input)))

(defun agent-shell-tool-text-first-line (text max)
  "Return the first line of TEXT, at most MAX characters."
  (let ((line (car (split-string (format "%s" text) "\n" t "[ \t]+"))))
    (truncate-string-to-width (or line "") max nil nil "…")))

(defun agent-shell-tool-text--tests-line (summary)
  "Return the line describing a test SUMMARY (passed, failed, errors, ok).
Output in a format the bridge does not know has no counts: that reads
\"no summary\", never zeros."
  (let ((passed (alist-get 'passed summary))
        (failed (alist-get 'failed summary))
        (errors (alist-get 'errors summary))
        (failures (alist-get 'failures summary)))
    (concat
     (if (or (numberp passed) (numberp failed) (numberp errors))
         (format "tests: %s passed, %s failed" (or passed 0) (or failed 0))
       "tests: no summary")
     (if (and (numberp errors) (> errors 0)) (format ", %d errors" errors) "")
     (if (eq (alist-get 'ok summary) t) " — ok" " — not ok")
     (if failures
         (concat "\n  " (mapconcat (lambda (f) (agent-shell-tool-text-first-line f 200))
                                   (if (vectorp failures) (append failures nil) failures)
                                   "\n  "))
       ""))))

(defun agent-shell-tool-text-outcome-lines (raw)
  "Return the lines describing a tool's RAW output summary, or nil."
  (let ((exit (alist-get 'exit_code raw))
        (timed-out (eq (alist-get 'timed_out raw) t))
        (duration (alist-get 'duration_ms raw))
        (summary (alist-get 'summary raw))
        (err (alist-get 'error raw))
        (reason (alist-get 'reason raw))
        (role (alist-get 'role raw))
        (report (alist-get 'report raw)))
    (delq nil
          (list
           (and (stringp role)
                (format "Role %s, %s step%s" role (alist-get 'steps raw)
                        (if (eql (alist-get 'steps raw) 1) "" "s")))
           (and (stringp report) (not (string-empty-p report))
                (concat "Report:\n" (agent-shell-tool-text-cap report)))
           (and err (format "Error: %s" err))
           (and reason (stringp reason) (format "Reason: %s" reason))
           (and (or exit timed-out)
                (concat (if (numberp exit) (format "exit %d" exit) "no exit code")
                        (if timed-out " (timed out)" "")
                        (if (numberp duration)
                            (format " after %.1f s" (/ duration 1000.0))
                          "")))
           (and (consp summary) (agent-shell-tool-text--tests-line summary))
           (and (eq (alist-get 'truncated raw) t)
                "(output truncated; the action log has all of it)")
           (and (stringp (alist-get 'log_ref raw))
                (concat "full output: "
                        (agent-shell-citations-output-button (alist-get 'log_ref raw))))))))

(defun agent-shell-tool-text-failure-detail (status raw)
  "Return the short reason shown on a tool entry's line, or nil.
STATUS is the tool's status and RAW its output summary."
  (let ((exit (alist-get 'exit_code raw))
        (summary (alist-get 'summary raw))
        (err (alist-get 'error raw)))
    (cond ((and err (member status '("failed" "denied" "rejected")))
           (agent-shell-tool-text-first-line err 60))
          ((and (numberp exit) (/= exit 0)) (format "exit %d" exit))
          ((eq (alist-get 'timed_out raw) t) "timed out")
          ((and (consp summary) (numberp (alist-get 'failed summary))
                (> (alist-get 'failed summary) 0))
           (format "%d failed" (alist-get 'failed summary)))
          ((equal status "failed") "failed"))))

(provide 'agent-shell-tool-text)
;;; agent-shell-tool-text.el ends here
