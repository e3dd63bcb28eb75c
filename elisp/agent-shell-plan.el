;;; agent-shell-plan.el --- Plans the user edits in org  -*- lexical-binding: t; -*-

;; SPDX-License-Identifier: GPL-3.0-or-later

;;; Commentary:

;; Before multi-step work the agent proposes a plan; the bridge sends it
;; with the request `session/request_plan' and waits (agent-shell-handlers.el
;; hands it to `agent-shell-plan-review').  This file shows
;; the plan as an org checklist in a `*agent-shell-plan: NAME*' buffer
;; (`agent-shell-plan-mode', derived from `org-mode'): one `- [ ]' item
;; per step, with its files, expected result and verification command as
;; sub-items.  The user edits it with ordinary org editing -- kill lines,
;; M-up / M-down to reorder items, rewrite text -- and answers with
;; C-c C-c (approve) or C-c C-k (reject, reason optional).  The plan
;; parsed back from the buffer is the answer, so the agent follows the
;; plan as edited.  Later `plan' session updates
;; (agent-shell-transcript.el calls `agent-shell-plan-on-update') tick
;; the checkboxes.
;;
;; Works with agent-shell-rpc.el (answers to the bridge) and, when they
;; are loaded, agent-shell.el (the session's name) and
;; agent-shell-transcript.el (a notice and the state in its shell).

;;; Code:

(require 'cl-lib)
(require 'agent-shell-session)
(require 'subr-x)
(require 'org)
(require 'agent-shell-rpc)

(declare-function agent-shell-bridge-session-buffer "agent-shell-bridge" (session-id))
(declare-function agent-shell-transcript-notice "agent-shell-transcript" (text))
(declare-function agent-shell-header-set-state "agent-shell-header"
                  (state &optional detail))
(declare-function agent-shell-lifecycle-resolve-plan-notice "agent-shell-lifecycle" (text))

;;; Options

(defgroup agent-shell-plan nil
  "Plans proposed by agent-shell, reviewed in org."
  :group 'agent-shell
  :prefix "agent-shell-plan-")

(defcustom agent-shell-plan-select-window t
  "Whether a plan waiting for review is shown in a selected window.
When nil, the plan buffer is only displayed."
  :type '(choice (const :tag "Select the plan's window" t)
                 (const :tag "Only display it" nil))
  :group 'agent-shell-plan
  :package-version '(agent-shell . "0.1.0"))

(defface agent-shell-plan-failed-face '((t :inherit error))
  "Face of the result line of a step whose verification failed."
  :group 'agent-shell-plan)

;;; Variables

(defvar-local agent-shell-plan--request nil
  "The `session/request_plan' this buffer answers, a plist, or nil.
Keys: :conn, :id, :session and :plan-id.")

(defvar-local agent-shell-plan--session nil
  "The session id of this plan buffer.")

(defvar-local agent-shell-plan--plan-id nil
  "The id of the plan shown in this buffer.")

;;; Rendering

(defun agent-shell-plan-buffer-name (name)
  "Return the name of the plan buffer of session NAME."
  (format "*agent-shell-plan: %s*" name))

(defun agent-shell-plan--one-line (text)
  "Return TEXT (a string or nil) on one line."
  (string-trim (replace-regexp-in-string "[ \t\n\r\f\v]+" " " (or text ""))))

(defun agent-shell-plan--safe (text)
  "Return TEXT on one line, unable to start an org heading or keyword."
  (let ((line (agent-shell-plan--one-line text)))
    (if (string-match-p "\\`[*#]" line) (concat "\u200b" line) line)))

(defun agent-shell-plan--list (value)
  "Return VALUE, a list or vector from JSON, as a list."
  (if (vectorp value) (append value nil) value))

(defun agent-shell-plan--box (status)
  "Return the org checkbox of a step STATUS string."
  (pcase status
    ("completed" "[X]")
    ("in_progress" "[-]")
    (_ "[ ]")))

(defun agent-shell-plan--insert-header (plan reviewing)
  "Insert the title and the instructions for PLAN.
REVIEWING is non-nil while the plan waits for the user's answer."
  (insert "#+TITLE: Plan: " (agent-shell-plan--safe (alist-get 'goal plan)) "\n")
  (insert (if reviewing
              "# Edit the plan, then C-c C-c approves it and C-c C-k rejects it.\n\
# M-up / M-down reorder steps; C-c C-d deletes the step at point;\n\
# sub-items `files:', `expected:' and `verify:' belong to the step above.\n"
            (format "# %s\n"
                    (pcase (alist-get 'outcome plan)
                      ("rejected" "Rejected.")
                      ("done" "Done: every step was verified.")
                      (_ "Approved: the agent follows this plan."))))
          "\n"))

(defun agent-shell-plan--insert-goal (plan)
  "Insert the Goal section of PLAN."
  (insert "* Goal\n" (agent-shell-plan--safe (alist-get 'goal plan)) "\n\n"))

(defun agent-shell-plan--insert-step (step)
  "Insert STEP as a checklist item with its details as sub-items."
  (let ((files (agent-shell-plan--list (alist-get 'files step)))
        (expected (agent-shell-plan--one-line (alist-get 'expected step)))
        (verify (agent-shell-plan--one-line (alist-get 'verify step)))
        (status (alist-get 'status step))
        (note (agent-shell-plan--one-line (alist-get 'note step))))
    (insert "- " (agent-shell-plan--box status) " "
            (agent-shell-plan--one-line (alist-get 'title step)) "\n")
    (when files
      (insert "  - files: " (mapconcat #'agent-shell-plan--one-line files ", ") "\n"))
    (unless (string-empty-p expected)
      (insert "  - expected: " expected "\n"))
    (unless (string-empty-p verify)
      (insert "  - verify: " verify "\n"))
    (when (member status '("completed" "failed"))
      (insert (propertize
               (format "  - result: %s%s\n"
                       (if (equal status "failed") "FAILED" "done")
                       (if (string-empty-p note) "" (concat " — " note)))
               'face (and (equal status "failed") 'agent-shell-plan-failed-face))))))

(defun agent-shell-plan--insert-steps (plan)
  "Insert the checklist of PLAN under a heading with a progress cookie."
  (let ((steps (agent-shell-plan--list (alist-get 'steps plan))))
    (insert (format "* Steps [%d/%d]\n"
                    (cl-count "completed" steps
                              :key (lambda (s) (alist-get 'status s)) :test #'equal)
                    (length steps)))
    (mapc #'agent-shell-plan--insert-step steps)
    (insert "\n")))

(defun agent-shell-plan--insert-risks (plan)
  "Insert the Risks section of PLAN."
  (insert "* Risks\n")
  (dolist (risk (agent-shell-plan--list (alist-get 'risks plan)))
    (insert "- " (agent-shell-plan--one-line risk) "\n")))

(defvar agent-shell-plan-inserters
  '(agent-shell-plan--insert-goal
    agent-shell-plan--insert-steps
    agent-shell-plan--insert-risks)
  "Functions inserting the sections of a plan buffer, each called with the plan.")

(defun agent-shell-plan--render (plan reviewing)
  "Fill the current buffer with PLAN, editable when REVIEWING."
  (let ((inhibit-read-only t))
    (erase-buffer)
    (agent-shell-plan--insert-header plan reviewing)
    (dolist (inserter agent-shell-plan-inserters)
      (funcall inserter plan)))
  (set-buffer-modified-p nil)
  (setq buffer-undo-list nil
        buffer-read-only (not reviewing))
  (goto-char (point-min))
  (when (re-search-forward "^\\* Steps" nil t)
    (forward-line 1)))

(defun agent-shell-plan--buffer (name session)
  "Return the plan buffer of session NAME (id SESSION), in its mode."
  (let ((buffer (get-buffer-create (agent-shell-plan-buffer-name name))))
    (with-current-buffer buffer
      (unless (derived-mode-p 'agent-shell-plan-mode)
        (agent-shell-plan-mode))
      (setq agent-shell-plan--session session))
    buffer))

;;; Parsing

(defun agent-shell-plan--section (title)
  "Return the text of the top-level section TITLE, or nil."
  (save-excursion
    (goto-char (point-min))
    (when (re-search-forward (format "^\\*+[ \t]+%s\\b.*$" (regexp-quote title)) nil t)
      (let ((start (min (point-max) (1+ (point)))))
        (buffer-substring-no-properties
         start (if (re-search-forward "^\\*+[ \t]" nil t) (match-beginning 0)
                 (point-max)))))))

(defun agent-shell-plan--parse-steps (text)
  "Return the checklist items in TEXT as a list of alists.
TEXT is the body of the plan's Steps section."
  (let (steps step details)
    (dolist (line (split-string (or text "") "\n"))
      (cond
       ((string-match "\\`[-+][ \t]+\\(?:\\[[ xX-]\\][ \t]*\\)?\\(.*\\)\\'" line)
        (when step (push (nreverse step) steps))
        (setq step (list (cons 'title (string-trim (match-string 1 line))))
              details nil))
       ((and step (string-match
                   "\\`[ \t]+[-+][ \t]+\\(files\\|expected\\|verify\\|result\\)[ \t]*:[ \t]*\\(.*\\)\\'" line))
        (let ((key (intern (match-string 1 line)))
              (value (string-trim (match-string 2 line))))
          (setq details t)
          (pcase key
            ('files (push (cons 'files (split-string value "[ \t]*,[ \t]*" t)) step))
            ('result nil)
            (_ (push (cons key value) step)))))
       ;; A wrapped title line continues the title.
       ((and step (not details) (string-match "\\`[ \t]+\\([^ \t].*\\)\\'" line))
        (setf (alist-get 'title step)
              (concat (alist-get 'title step) " " (string-trim (match-string 1 line)))))))
    (when step (push (nreverse step) steps))
    (mapcar (lambda (s)
              (let ((verify (alist-get 'verify s)))
                `((title . ,(alist-get 'title s))
                  (files . ,(vconcat (alist-get 'files s)))
                  (expected . ,(or (alist-get 'expected s) ""))
                  (verify . ,(if (or (null verify) (string-empty-p verify)) :null
                               verify)))))
            (nreverse steps))))

(defun agent-shell-plan-parse ()
  "Return the plan in the current buffer as the bridge expects it.
The value is an alist of `goal', `steps' (a vector of alists with
`title', `files', `expected' and `verify') and `risks', ready for
`json-serialize'.  Empty steps are dropped."
  (let* ((goal (string-trim (or (agent-shell-plan--section "Goal") "")))
         (steps (cl-remove-if (lambda (s) (string-empty-p (alist-get 'title s)))
                              (agent-shell-plan--parse-steps
                               (agent-shell-plan--section "Steps"))))
         (risks (cl-loop for line in (split-string
                                      (or (agent-shell-plan--section "Risks") "") "\n")
                         when (string-match "\\`[-+][ \t]+\\(.+\\)\\'" line)
                         collect (string-trim (match-string 1 line)))))
    `((goal . ,(string-trim (replace-regexp-in-string "\u200b" "" goal)))
      (steps . ,(vconcat steps))
      (risks . ,(vconcat risks)))))

;;; Answering the bridge

(defun agent-shell-plan--session-name (session)
  "Return the name of SESSION's shell, or SESSION when it has none."
  (let ((shell (and (fboundp 'agent-shell-bridge-session-buffer)
                    (agent-shell-bridge-session-buffer session))))
    (if shell (agent-shell-session-name (buffer-local-value 'agent-shell--session shell))
      session)))

(defun agent-shell-plan--in-shell (session fn)
  "Call FN in the shell buffer of SESSION, when there is one."
  (when-let ((shell (and (fboundp 'agent-shell-bridge-session-buffer)
                         (agent-shell-bridge-session-buffer session))))
    (with-current-buffer shell (funcall fn))))

(defun agent-shell-plan--answer (result)
  "Send RESULT as the answer to this buffer's plan request."
  (let ((request agent-shell-plan--request))
    (unless request
      (user-error "No plan is waiting for your answer here"))
    (setq agent-shell-plan--request nil)
    (agent-shell-rpc-respond (plist-get request :conn) (plist-get request :id) result)
    (setq buffer-read-only t)
    (set-buffer-modified-p nil)
    (agent-shell-plan--in-shell
     (plist-get request :session)
     (lambda ()
       (when (fboundp 'agent-shell-lifecycle-resolve-plan-notice)
         (agent-shell-lifecycle-resolve-plan-notice
          (if (equal (alist-get 'outcome result) "approved")
              "Plan approved"
            (concat "Plan rejected"
                    (if-let ((reason (alist-get 'reason result)))
                        (concat ": " reason)
                      "")))))
       (when (fboundp 'agent-shell-header-set-state)
         (agent-shell-header-set-state
          (if (agent-shell-session-turn-id agent-shell--session) 'thinking 'idle)))))))

(defun agent-shell-plan-review (conn params id)
  "Show the plan of the `session/request_plan' ID (PARAMS from CONN) for review.
The answer goes out once the user approves or rejects it."
  (let* ((session (alist-get 'sessionId params))
         (name (agent-shell-plan--session-name session))
         (buffer (agent-shell-plan--buffer name session)))
    (with-current-buffer buffer
      (when agent-shell-plan--request
        ;; A newer plan replaces one still waiting; the old request is answered.
        (agent-shell-plan--answer '((outcome . "rejected")
                                    (reason . "superseded by a newer plan"))))
      (setq agent-shell-plan--plan-id (alist-get 'planId params))
      (agent-shell-plan--render params t)
      (setq agent-shell-plan--request
            (list :conn conn :id id :session session
                  :plan-id agent-shell-plan--plan-id)))
    (agent-shell-plan--in-shell
     session
     (lambda ()
       (when (fboundp 'agent-shell-transcript-notice)
         (let ((range (agent-shell-transcript-notice
                       (format "Plan waiting for you in %s: C-c C-c approves, C-c C-k rejects"
                               (buffer-name buffer)))))
           (when agent-shell--session
             (setf (agent-shell-session-plan-notice agent-shell--session) range)))
         (agent-shell-header-set-state 'waiting))))
    (if agent-shell-plan-select-window
        (pop-to-buffer buffer)
      (display-buffer buffer))))

(defun agent-shell-plan-on-update (name update)
  "Show the `plan' UPDATE of session NAME in its plan buffer.
A plan still under review is left alone: the user's edits win."
  (let ((buffer (agent-shell-plan--buffer name nil)))
    (with-current-buffer buffer
      (unless agent-shell-plan--request
        (setq agent-shell-plan--plan-id (alist-get 'planId update))
        (agent-shell-plan--render update nil)))
    buffer))

;;; Commands

(defun agent-shell-plan-approve ()
  "Approve the plan as it now stands in this buffer."
  (interactive)
  (unless agent-shell-plan--request
    (user-error "No plan is waiting for your answer here"))
  (let ((plan (agent-shell-plan-parse)))
    (when (string-empty-p (alist-get 'goal plan))
      (user-error "The plan has no goal; write one under * Goal"))
    (when (zerop (length (alist-get 'steps plan)))
      (user-error "The plan has no steps left; C-c C-k rejects it"))
    (agent-shell-plan--answer `((outcome . "approved") (plan . ,plan)))
    (message "Plan approved (%d steps)" (length (alist-get 'steps plan)))))

(defun agent-shell-plan-reject (reason)
  "Reject the plan in this buffer, telling the agent REASON (may be empty)."
  (interactive
   (progn (unless agent-shell-plan--request
            (user-error "No plan is waiting for your answer here"))
          (list (read-string "Reason (optional): "))))
  (let ((reason (string-trim (or reason ""))))
    (agent-shell-plan--answer `((outcome . "rejected")
                                ,@(unless (string-empty-p reason)
                                    `((reason . ,reason)))))
    (message "Plan rejected")))

(defun agent-shell-plan-delete-step ()
  "Delete the step at point together with its sub-items.
The progress cookie of the Steps heading is updated."
  (interactive)
  (let ((start (save-excursion
                 (forward-line 0)
                 (while (and (looking-at-p "[ \t]+[-+]") (not (bobp)))
                   (forward-line -1))
                 (unless (looking-at-p "[-+][ \t]")
                   (user-error "Point is not on a step"))
                 (point))))
    (delete-region start (save-excursion
                           (goto-char start)
                           (forward-line 1)
                           (while (looking-at-p "[ \t]+[^ \t\n]")
                             (forward-line 1))
                           (point)))
    ;; The Steps heading's [n/m] counts what is left.
    (save-excursion
      (goto-char (min start (point-max)))
      (unless (org-before-first-heading-p)
        (org-update-statistics-cookies nil)))))

(defun agent-shell-plan-abandon (conn)
  "Forget the plan requests of CONN, a bridge connection that has ended.
Their buffers become read-only and say why; nobody waits for them."
  (dolist (buffer (buffer-list))
    (with-current-buffer buffer
      (when (and (derived-mode-p 'agent-shell-plan-mode)
                 agent-shell-plan--request
                 (eq (plist-get agent-shell-plan--request :conn) conn))
        (setq agent-shell-plan--request nil
              buffer-read-only t)
        (setq header-line-format
              " The bridge stopped: this plan can no longer be approved or rejected")
        (set-buffer-modified-p nil)))))

(defun agent-shell-plan--kill-buffer ()
  "Reject a plan still waiting when its buffer is killed."
  (when agent-shell-plan--request
    (ignore-errors
      (agent-shell-plan--answer '((outcome . "rejected")
                                  (reason . "the plan buffer was closed"))))))

;;; Mode

(defvar agent-shell-plan-mode-map
  (let ((map (make-sparse-keymap)))
    (define-key map (kbd "C-c C-c") #'agent-shell-plan-approve)
    (define-key map (kbd "C-c C-k") #'agent-shell-plan-reject)
    (define-key map (kbd "C-c C-d") #'agent-shell-plan-delete-step)
    map)
  "Keymap of `agent-shell-plan-mode'.")

(define-derived-mode agent-shell-plan-mode org-mode "Agent-Plan"
  "Major mode of a plan proposed by agent-shell.
Each step is a checklist item under * Steps with `files:',
`expected:' and `verify:' sub-items.  Edit with ordinary org editing
\(M-up and M-down move a step with its sub-items), then approve the
plan as it stands with \\[agent-shell-plan-approve] or reject it with
\\[agent-shell-plan-reject].  The agent follows the plan you approved.

\\{agent-shell-plan-mode-map}"
  (setq-local org-startup-folded nil)
  (add-hook 'kill-buffer-hook #'agent-shell-plan--kill-buffer nil t))

(provide 'agent-shell-plan)
;;; agent-shell-plan.el ends here
