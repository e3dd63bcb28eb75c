;;; agent-shell-log-keys.el --- Decisions on waiting steps from the action log  -*- lexical-binding: t; -*-

;; SPDX-License-Identifier: GPL-3.0-or-later

;;; Commentary:

;; The decision keys of the live action log (agent-shell-log.el):
;;
;;   y, C-c C-c   approve          n, C-c C-k   reject (asks for a reason)
;;   a            approve this kind of write for the rest of the session
;;   d            show the full diff
;;
;; A decision acts on the waiting step at point; elsewhere the user is
;; asked which waiting step.  It goes to the bridge through
;; `agent-shell-log-decision-function'; the step's keyword changes only
;; when the bridge answers with a `log/update'.  Loading this file binds
;; the keys in `agent-shell-log-mode-map'.

;;; Code:

(require 'cl-lib)
(require 'subr-x)
(require 'agent-shell-log)

(declare-function diff-mode "diff-mode" ())

(defun agent-shell-log--waiting-nodes ()
  "Return the waiting nodes that can be answered and are not yet, oldest first."
  (cl-loop for id in agent-shell-log--pending
           for node = (gethash id agent-shell-log--nodes)
           when (and (not (agent-shell-log-node-sent node))
                     (agent-shell-log-answerable-p node))
           collect node))

(defun agent-shell-log--no-waiting-error ()
  "Signal the `user-error' for a decision key with nothing to decide."
  (user-error (if (cl-some (lambda (id)
                             (agent-shell-log-node-sent
                              (gethash id agent-shell-log--nodes)))
                           agent-shell-log--pending)
                  "Decisions sent; waiting for the bridge to answer"
                "No step is waiting for a decision")))

(defun agent-shell-log--choice-labels (nodes)
  "Return an alist (LABEL . NODE) naming NODES uniquely, oldest first."
  (let ((seen (make-hash-table :test #'equal)))
    (mapcar (lambda (node)
              (let* ((risk (cdr (assoc "RISK" (agent-shell-log-node-props node))))
                     (base (format "%s%s" (agent-shell-log--title node)
                                   (if risk (format " [%s]" risk) "")))
                     (n (cl-incf (gethash base seen 0))))
                (cons (if (= n 1) base (format "%s <%d>" base n)) node)))
            nodes)))

(defun agent-shell-log--target (&optional verb)
  "Return the waiting node at point; elsewhere ask which waiting step.
VERB (\"Approve\", \"Reject\", ...) starts the question.  A decision
never falls on a step the user did not point at or name: with point
off the waiting steps, `completing-read' offers them (the only one as
the default), and point moves to the chosen step."
  (agent-shell-log-ensure-mode)
  (let ((here (agent-shell-log-node-at-point)))
    (if (and here (agent-shell-log-answerable-p here)
             (not (agent-shell-log-node-sent here)))
        here
      (let* ((table (or (agent-shell-log--choice-labels (agent-shell-log--waiting-nodes))
                        (agent-shell-log--no-waiting-error)))
             (choice (completing-read
                      (format "%s which waiting step? " (or verb "Decide"))
                      table nil t nil nil (and (null (cdr table)) (caar table))))
             (node (or (cdr (assoc choice table)) (user-error "No step chosen"))))
        (goto-char (or (agent-shell-log-node-start node) (point)))
        node))))

(defun agent-shell-log--oldest-waiting ()
  "Return the oldest waiting node that can be answered."
  (or (car (agent-shell-log--waiting-nodes)) (agent-shell-log--no-waiting-error)))

(defun agent-shell-log--title (node)
  "Return NODE's display title."
  (agent-shell-log-one-line
   (alist-get 'title (agent-shell-log-node-entry node))))

(defun agent-shell-log--decide (node decision reason)
  "Send DECISION with REASON about NODE through the decision function."
  (unless (functionp agent-shell-log-decision-function)
    (user-error "No bridge is connected to receive the decision"))
  ;; Marked first: a failure to deliver, even one reported at once,
  ;; clears the mark again through `agent-shell-log-unsend'.
  (setf (agent-shell-log-node-sent node) decision)
  (let ((done nil))
    (unwind-protect
        (progn (funcall agent-shell-log-decision-function
                        (agent-shell-log-node-id node) decision reason)
               (setq done t))
      (unless done (setf (agent-shell-log-node-sent node) nil))))
  (message "Sent %s for: %s" decision (agent-shell-log--title node)))

(defun agent-shell-log-approve ()
  "Approve the waiting step at point; elsewhere, ask which one."
  (interactive)
  (agent-shell-log--decide (agent-shell-log--target "Approve") 'approve nil))

(defun agent-shell-log-reject (reason &optional node)
  "Reject the waiting step at point, giving REASON; elsewhere, ask which one.
The model sees REASON; an empty one is sent as nil.  NODE, when given,
is the step to reject."
  (interactive
   (let ((node (agent-shell-log--target "Reject")))
     (list (read-string (format "Reason for rejecting \"%s\" (optional): "
                                (truncate-string-to-width
                                 (agent-shell-log--title node) 40 nil nil "…")))
           node)))
  (agent-shell-log--decide (or node (agent-shell-log--target "Reject")) 'reject
                           (and reason (not (string-empty-p reason)) reason)))

(defun agent-shell-log--grant-text (node)
  "Return what approving NODE for the session would grant, as a sentence."
  (or (and (functionp agent-shell-log-grant-function)
           (funcall agent-shell-log-grant-function (agent-shell-log-node-id node)))
      (format "approve steps like \"%s\" without asking for the rest of this session"
              (agent-shell-log--title node))))

(defun agent-shell-log-approve-session ()
  "Approve the waiting step and grant its kind for the rest of the session.
The grant is said exactly (this command in this directory, or this
kind of edit) and takes effect only after you confirm it; elsewhere
than on a waiting step, ask which one.  Refused for a dangerous step.
\[agent-shell-grants] lists the session's grants and revokes them."
  (interactive)
  (let* ((node (agent-shell-log--target "Allow for the session"))
         (risk (cdr (assoc "RISK" (agent-shell-log-node-props node)))))
    (when (and (stringp risk) (string= (downcase risk) "dangerous"))
      (user-error "A dangerous step can only be approved one at a time"))
    (if (y-or-n-p (format "Grant: %s.  Allow? " (agent-shell-log--grant-text node)))
        (agent-shell-log--decide node 'approve-session nil)
      (message "Nothing granted; the step still waits"))))

(defun agent-shell-log--diff-block (node)
  "Return the first diff src block of NODE's body, or nil."
  (cl-find-if (lambda (block)
                (and (equal (alist-get 'kind block) "src")
                     (equal (alist-get 'lang block) "diff")))
              (agent-shell-log-node-body node)))

(defun agent-shell-log-show-diff ()
  "Show the full diff of the step at point, else of the oldest waiting step."
  (interactive)
  (agent-shell-log-ensure-mode)
  (let* ((here (agent-shell-log-node-at-point))
         (node (if (and here (agent-shell-log--diff-block here))
                   here
                 (agent-shell-log--oldest-waiting)))
         (block (or (agent-shell-log--diff-block node)
                    (user-error "This step has no diff")))
         (link (alist-get 'link block))
         (file (and (stringp link) (not (string-empty-p link))
                    (expand-file-name link (and agent-shell-log--file
                                                (file-name-directory
                                                 agent-shell-log--file)))))
         (buffer (get-buffer-create
                  (format "*agent-shell-diff: %s*" (agent-shell-log-node-id node)))))
    (require 'diff-mode)
    (with-current-buffer buffer
      (let ((inhibit-read-only t))
        (erase-buffer)
        (if (and file (file-readable-p file))
            (insert-file-contents file)
          (insert (or (alist-get 'text block) ""))))
      (diff-mode)
      (setq buffer-read-only t)
      (goto-char (point-min)))
    (pop-to-buffer buffer)
    buffer))

(define-key agent-shell-log-mode-map (kbd "y") #'agent-shell-log-approve)
(define-key agent-shell-log-mode-map (kbd "C-c C-c") #'agent-shell-log-approve)
(define-key agent-shell-log-mode-map (kbd "n") #'agent-shell-log-reject)
(define-key agent-shell-log-mode-map (kbd "C-c C-k") #'agent-shell-log-reject)
(define-key agent-shell-log-mode-map (kbd "a") #'agent-shell-log-approve-session)
(define-key agent-shell-log-mode-map (kbd "d") #'agent-shell-log-show-diff)

(provide 'agent-shell-log-keys)
;;; agent-shell-log-keys.el ends here
