;;; agent-shell-diagnostics.el --- Flymake and Flycheck diagnostics for the agent  -*- lexical-binding: t; -*-

;; SPDX-License-Identifier: GPL-3.0-or-later

;;; Commentary:

;; What the checkers of the user's buffers say, in one shape for both
;; Flymake (Eglot included) and Flycheck: the diagnostic at point (for
;; `agent-shell-send-dwim', agent-shell-context.el), the project's
;; diagnostics (the `@diagnostics' mention and the `project_diagnostics'
;; tool), and the diagnostics near an edit once the checker has settled
;; (`agent-shell-diagnostics-after-edit', which agent-shell-actions.el
;; calls after an edit tool changed a visited file).  Waiting is bounded
;; by `agent-shell-diagnostics-wait' and driven by Flymake's report
;; callbacks and a timer, never by a sleep.

;;; Code:

(require 'cl-lib)
(require 'subr-x)
(require 'agent-shell-custom)

(declare-function flymake-diagnostics "flymake" (&optional beg end))
(declare-function flymake-diagnostic-beg "flymake" (diag) t)
(declare-function flymake-diagnostic-type "flymake" (diag) t)
(declare-function flymake-diagnostic-text "flymake" (diag) t)
(declare-function flymake-diagnostic-backend "flymake" (diag) t)
(declare-function flymake-running-backends "flymake" ())
(declare-function flymake-reporting-backends "flymake" ())
(declare-function flymake-disabled-backends "flymake" ())
(declare-function flymake-start "flymake" (&optional deferred force))
(declare-function flycheck-overlay-errors-at "ext:flycheck" (pos))
(declare-function flycheck-error-line "ext:flycheck" (err) t)
(declare-function flycheck-error-level "ext:flycheck" (err) t)
(declare-function flycheck-error-message "ext:flycheck" (err) t)
(declare-function flycheck-error-checker "ext:flycheck" (err) t)
(declare-function flycheck-running-p "ext:flycheck" ())
(declare-function flycheck-stop "ext:flycheck" ())
(declare-function flycheck-buffer "ext:flycheck" ())

(defvar flymake-mode)
(defvar flycheck-mode)
(defvar flycheck-current-errors)

;;; Options

(defcustom agent-shell-diagnostics-wait 1.5
  "Seconds to wait after an edit for the buffer's checker to report.
When it has not settled by then, the edit's result says so and gives
what the checker had."
  :type 'number
  :group 'agent-shell
  :package-version '(agent-shell . "0.2"))

(defcustom agent-shell-diagnostics-max 50
  "Most diagnostics a tool result or an attachment lists."
  :type 'integer
  :group 'agent-shell
  :package-version '(agent-shell . "0.2"))

(defcustom agent-shell-diagnostics-near-lines 5
  "Diagnostics this many lines around an edit count as near it."
  :type 'integer
  :group 'agent-shell
  :package-version '(agent-shell . "0.2"))

;;; One shape for both checkers

(defun agent-shell-diagnostics-checker (&optional buffer)
  "Return `flymake' or `flycheck' when BUFFER (default current) has one on."
  (with-current-buffer (or buffer (current-buffer))
    (cond ((and (bound-and-true-p flymake-mode)) 'flymake)
          ((and (bound-and-true-p flycheck-mode)) 'flycheck))))

(defun agent-shell-diagnostics--type-name (type)
  "Return Flymake's or Flycheck's diagnostic TYPE as a word."
  (let ((name (if (symbolp type) (symbol-name type) (format "%s" type))))
    (cond ((string-match-p "error" name) "error")
          ((string-match-p "warn" name) "warning")
          ((string-match-p "note\\|info" name) "note")
          (t (string-remove-prefix ":" name)))))

(defun agent-shell-diagnostics--flymake (diag)
  "Return Flymake's DIAG as a plist."
  (let ((beg (flymake-diagnostic-beg diag)))
    (list :line (line-number-at-pos beg t)
          :column (save-excursion (goto-char beg) (1+ (current-column)))
          :type (agent-shell-diagnostics--type-name (flymake-diagnostic-type diag))
          :text (flymake-diagnostic-text diag)
          :backend (format "%s" (flymake-diagnostic-backend diag)))))

(defun agent-shell-diagnostics--flycheck (err)
  "Return Flycheck's ERR as a plist."
  (list :line (flycheck-error-line err)
        :column nil
        :type (agent-shell-diagnostics--type-name (flycheck-error-level err))
        :text (flycheck-error-message err)
        :backend (format "%s" (flycheck-error-checker err))))

(defun agent-shell-diagnostics-of-buffer (&optional buffer)
  "Return BUFFER's diagnostics as plists sorted by line, or nil."
  (with-current-buffer (or buffer (current-buffer))
    (save-restriction
      (widen)
      (sort (pcase (agent-shell-diagnostics-checker)
              ('flymake (mapcar #'agent-shell-diagnostics--flymake (flymake-diagnostics)))
              ('flycheck (mapcar #'agent-shell-diagnostics--flycheck flycheck-current-errors)))
            (lambda (a b) (< (plist-get a :line) (plist-get b :line)))))))

(defun agent-shell-diagnostics-at-point ()
  "Return the diagnostic at point (else on this line) as a plist, or nil."
  (pcase (agent-shell-diagnostics-checker)
    ('flymake
     (when-let ((diag (car (or (flymake-diagnostics (point))
                               (flymake-diagnostics (line-beginning-position)
                                                    (line-end-position))))))
       (agent-shell-diagnostics--flymake diag)))
    ('flycheck
     (when-let ((err (car (flycheck-overlay-errors-at (point)))))
       (agent-shell-diagnostics--flycheck err)))))

(defun agent-shell-diagnostics-format (diag &optional file)
  "Return DIAG as one line, FILE:LINE first when FILE is given."
  (format "%s%d%s: %s: %s [%s]"
          (if file (concat file ":") "line ")
          (plist-get diag :line)
          (if (plist-get diag :column) (format ":%d" (plist-get diag :column)) "")
          (plist-get diag :type)
          (replace-regexp-in-string "[\n\r]+" " " (or (plist-get diag :text) ""))
          (plist-get diag :backend)))

;;; The project's diagnostics

(defun agent-shell-diagnostics--project-buffers (root)
  "Return the live buffers visiting files under ROOT with a checker on."
  (let ((root (file-name-as-directory (expand-file-name root))))
    (cl-remove-if-not
     (lambda (b)
       (let ((file (buffer-file-name b)))
         (and file (string-prefix-p root (expand-file-name file))
              (agent-shell-diagnostics-checker b))))
     (buffer-list))))

(defun agent-shell-diagnostics-of-buffers (buffers name)
  "Return (CHECKED . ITEMS) for BUFFERS: ITEMS are (FILE . DIAG), errors first.
FILE is what NAME, called with a buffer, returns.  CHECKED is the
number of BUFFERS; zero means none has a checker."
  (let ((items nil))
    (dolist (b buffers)
      (let ((file (funcall name b)))
        (dolist (d (agent-shell-diagnostics-of-buffer b))
          (push (cons file d) items))))
    (cons (length buffers)
          (sort (nreverse items)
                (lambda (a b) (and (equal (plist-get (cdr a) :type) "error")
                                   (not (equal (plist-get (cdr b) :type) "error"))))))))

(defun agent-shell-diagnostics-project (root)
  "Return (CHECKED . ITEMS) for ROOT: ITEMS are (FILE . DIAG), errors first.
CHECKED is the number of buffers with a checker; zero means none."
  (agent-shell-diagnostics-of-buffers
   (agent-shell-diagnostics--project-buffers root)
   (lambda (b) (file-relative-name (buffer-file-name b) root))))

(defun agent-shell-diagnostics-project-text (root)
  "Return the diagnostics of ROOT's visited buffers as lines of text, capped."
  (let* ((found (agent-shell-diagnostics-project root))
         (items (cdr found))
         (shown (cl-subseq items 0 (min (length items) agent-shell-diagnostics-max))))
    (cond
     ((zerop (car found))
      "No checker: no buffer of this project has Flymake or Flycheck on.\n")
     ((null items) (format "No diagnostics in %d checked buffer%s.\n" (car found)
                           (if (= (car found) 1) "" "s")))
     (t (concat (mapconcat (lambda (it) (agent-shell-diagnostics-format (cdr it) (car it)))
                           shown "\n")
                "\n"
                (if (> (length items) (length shown))
                    (format "%d more not shown.\n" (- (length items) (length shown)))
                  ""))))))

;;; The `project_diagnostics' tool

(defun agent-shell-diagnostics-project-tool (args context)
  "Handle `project_diagnostics' with ARGS in CONTEXT.
The diagnostics of the project's visited buffers that have Flymake or
Flycheck on, errors first, at most ARGS' `limit'."
  (let ((root (file-name-as-directory (expand-file-name (alist-get 'root context)))))
    (agent-shell-diagnostics-tool-result (agent-shell-diagnostics-project root) args)))

(defun agent-shell-diagnostics-tool-result (found args)
  "Return `project_diagnostics'' answer for FOUND, at most ARGS' `limit' of them.
FOUND is (CHECKED . ITEMS) as `agent-shell-diagnostics-of-buffers' returns."
  (let* ((limit (min (or (alist-get 'limit args) agent-shell-diagnostics-max) 500))
         (items (cdr found))
         (shown (cl-subseq items 0 (min limit (length items)))))
    (if (zerop (car found))
        '((checked_buffers . 0)
          (note . "No checker: no buffer of this project has Flymake or Flycheck on."))
      `((checked_buffers . ,(car found))
        (total . ,(length items))
        (diagnostics
         . ,(vconcat
             (mapcar (lambda (it)
                       (let ((d (cdr it)))
                         `((file . ,(car it)) (line . ,(plist-get d :line))
                           (column . ,(or (plist-get d :column) :null))
                           (type . ,(plist-get d :type)) (text . ,(plist-get d :text))
                           (backend . ,(plist-get d :backend)))))
                     shown)))
        ,@(and (> (length items) (length shown))
               `((more . ,(- (length items) (length shown)))))))))

;;; After an edit

(defvar-local agent-shell-diagnostics--report-functions nil
  "Functions called with no argument after Flymake took a report in this buffer.")

(defun agent-shell-diagnostics--after-report (&rest _)
  "Run the current buffer's `agent-shell-diagnostics--report-functions'.
Flymake before 1.3.5 has no hook of its own after a report."
  (run-hooks 'agent-shell-diagnostics--report-functions))

(defun agent-shell-diagnostics--flycheck-status (status)
  "Take Flycheck's STATUS as a report unless a check is only starting.
Flycheck says `not-checked' when it clears the errors before a check,
and `running' when the check starts; the others end one."
  (unless (memq status '(not-checked running))
    (agent-shell-diagnostics--after-report)))

(defun agent-shell-diagnostics--settled-p (buffer)
  "Return non-nil when BUFFER's checker is not running."
  (with-current-buffer buffer
    (pcase (agent-shell-diagnostics-checker)
      ('flymake (null (cl-set-difference (flymake-running-backends)
                                         (append (flymake-reporting-backends)
                                                 (flymake-disabled-backends)))))
      ('flycheck (not (flycheck-running-p)))
      (_ t))))

(defun agent-shell-diagnostics-near-text (buffer start-line end-line)
  "Return the text listing BUFFER's diagnostics near START-LINE..END-LINE.
Those within `agent-shell-diagnostics-near-lines' lines, then how
many more the file has."
  (let* ((all (agent-shell-diagnostics-of-buffer buffer))
         (lo (- start-line agent-shell-diagnostics-near-lines))
         (hi (+ end-line agent-shell-diagnostics-near-lines))
         (near (cl-remove-if-not (lambda (d) (<= lo (plist-get d :line) hi)) all))
         (shown (cl-subseq near 0 (min (length near) agent-shell-diagnostics-max)))
         (more (- (length all) (length shown))))
    (concat (if near
                (mapconcat #'agent-shell-diagnostics-format shown "\n")
              (format "No diagnostics near lines %d-%d." start-line end-line))
            (if (> more 0) (format "\n%d more in the file." more) ""))))

(defun agent-shell-diagnostics-after-edit (buffer start-line end-line callback)
  "Call CALLBACK with diagnostics text of BUFFER near the edited lines.
START-LINE and END-LINE are the edited lines.  Without a checker,
CALLBACK gets nil at once.  Otherwise the checker is restarted and
CALLBACK runs once it reported, or after `agent-shell-diagnostics-wait'
seconds with what it had then, saying it had not settled."
  (let ((checker (and (buffer-live-p buffer) (agent-shell-diagnostics-checker buffer))))
    (if (not checker)
        (funcall callback nil)
      (let* ((done nil) (timer nil) (hook nil)
             (finish (lambda (settled)
                       (unless done
                         (setq done t)
                         (when timer (cancel-timer timer))
                         (when (buffer-live-p buffer)
                           (with-current-buffer buffer
                             (remove-hook 'agent-shell-diagnostics--report-functions hook t)))
                         (funcall callback
                                  (and (buffer-live-p buffer)
                                       (concat
                                        (unless settled
                                          (format "(The checker had not finished after %ss.)\n"
                                                  agent-shell-diagnostics-wait))
                                        (agent-shell-diagnostics-near-text
                                         buffer start-line end-line))))))))
        (setq hook (lambda ()
                     (when (agent-shell-diagnostics--settled-p buffer)
                       (funcall finish t))))
        (setq timer (run-at-time agent-shell-diagnostics-wait nil finish nil))
        (with-current-buffer buffer
          (pcase checker
            ('flymake
             (unless (advice-member-p #'agent-shell-diagnostics--after-report
                                      'flymake--handle-report)
               (advice-add 'flymake--handle-report :after
                           #'agent-shell-diagnostics--after-report))
             (add-hook 'agent-shell-diagnostics--report-functions hook nil t)
             (flymake-start nil t))
            ('flycheck
             ;; A check still running saw the text before the edit: stop it
             ;; before listening, so that its end is not taken for the report.
             (flycheck-stop)
             (add-hook 'flycheck-status-changed-functions
                       #'agent-shell-diagnostics--flycheck-status nil t)
             (add-hook 'agent-shell-diagnostics--report-functions hook nil t)
             (flycheck-buffer)))
          ;; Checkers that report at once, or none running: settled already.
          (funcall hook))))))

(defconst agent-shell-diagnostics--edit-tools
  '("replace_region" "insert_text" "replace_pattern" "write_file")
  "The Emacs-side tools that change a file.")

(defun agent-shell-diagnostics-edited-lines (diff)
  "Return (START . END), the new side's lines the unified DIFF touches, or nil."
  (let (start end)
    (when (stringp diff)
      (with-temp-buffer
        (insert diff)
        (goto-char (point-min))
        (while (re-search-forward "^@@ -[0-9,]+ \\+\\([0-9]+\\)\\(?:,\\([0-9]+\\)\\)? @@" nil t)
          (let* ((from (string-to-number (match-string 1)))
                 (count (if (match-string 2) (string-to-number (match-string 2)) 1))
                 (to (max from (+ from count -1))))
            (setq start (if start (min start from) from)
                  end (if end (max end to) to))))))
    (and start (cons (max 1 start) end))))

(defun agent-shell-diagnostics-add-to-edit (name context result callback)
  "Call CALLBACK with RESULT of tool NAME, with diagnostics when it edited a file.
CONTEXT is the tool call's context.  After an edit of a buffer with
Flymake or Flycheck on, the checker's diagnostics near the edited
lines are added once it settled (see `agent-shell-diagnostics-after-edit');
without a checker one line says so.  Other results pass unchanged."
  (let* ((path (and (member name agent-shell-diagnostics--edit-tools)
                    (alist-get 'path result)))
         (file (and (stringp path) (expand-file-name path (alist-get 'root context))))
         (buffer (and file (find-buffer-visiting file)))
         (lines (and buffer (agent-shell-diagnostics-edited-lines (alist-get 'diff result)))))
    (cond
     ((not buffer) (funcall callback result))
     ((not (agent-shell-diagnostics-checker buffer))
      (funcall callback
               (append result '((diagnostics . "No checker (Flymake or Flycheck) is on for this file.")))))
     (t
      (agent-shell-diagnostics-after-edit
       buffer (or (car lines) 1) (or (cdr lines) 1)
       (lambda (text)
         (funcall callback (if text (append result `((diagnostics . ,text))) result))))))))

(provide 'agent-shell-diagnostics)
;;; agent-shell-diagnostics.el ends here
