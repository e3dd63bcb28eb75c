;;; agent-shell-ask.el --- Questions the model asks the user  -*- lexical-binding: t; -*-

;; SPDX-License-Identifier: GPL-3.0-or-later

;;; Commentary:

;; The model's tool `ask_user' reaches Emacs as the bridge's request
;; `session/ask_user' (agent-shell-handlers.el hands it to
;; `agent-shell-ask-wait'): a question with 2 to 4 options, and whether
;; the user may answer in their own words.  The shell buffer shows it
;; with the options numbered; while it waits, RET in the shell answers
;; with the input (a number 1-4 picks that option, other text is the
;; answer itself).  In the action log the question is a WAIT step, and
;; 1-4 there pick an option, t reads a typed answer.  The answer is
;; the tool's result; the question goes away when its turn ends.

;;; Code:

(require 'cl-lib)
(require 'subr-x)
(require 'agent-shell-session)
(require 'agent-shell-rpc)
(require 'agent-shell-log)
(require 'agent-shell-transcript)
(require 'agent-shell-header)
(require 'agent-shell-bridge)

(declare-function agent-shell-input "agent-shell-input" ())
(declare-function agent-shell-set-input "agent-shell-input" (text))

;;; Waiting

(defun agent-shell-ask--text (params)
  "Return the question of PARAMS as displayed in the shell."
  (let ((n 0))
    (concat (format "Question: %s\n" (alist-get 'question params))
            (mapconcat (lambda (option) (format "  %d. %s" (cl-incf n) option))
                       (alist-get 'options params) "\n")
            (format "\nAnswer: type 1–%d%s and RET (or 1–%d in the log, C-c C-l)"
                    n (if (eq (alist-get 'allowFreeText params) :json-false)
                          "" " or your own words")
                    n))))

(defun agent-shell-ask-wait (conn id params)
  "Keep the question ID with PARAMS from CONN until the user answers it."
  (let ((buffer (agent-shell-bridge-session-buffer (alist-get 'sessionId params))))
    (if (not buffer)
        (agent-shell-rpc-respond-error conn id -32001 "no shell shows this session")
      (with-current-buffer buffer
        (setf (agent-shell-session-question agent-shell--session)
              (list :conn conn :id id :params params
                    :notice (agent-shell-transcript-notice (agent-shell-ask--text params))))
        (agent-shell-header-set-state 'waiting)))))

(defun agent-shell-ask-pending-p ()
  "Return non-nil when this shell buffer's session waits for an answer."
  (and agent-shell--session (agent-shell-session-question agent-shell--session) t))

(defun agent-shell-ask--reply (words)
  "Return the reply to the bridge for the user's WORDS, or signal a `user-error'."
  (let* ((question (agent-shell-session-question agent-shell--session))
         (params (plist-get question :params))
         (options (alist-get 'options params))
         (text (string-trim words)))
    (cond
     ((string-empty-p text) (user-error "Type an option's number or an answer"))
     ((string-match-p "\\`[0-9]+\\'" text)
      (let ((n (string-to-number text)))
        (unless (<= 1 n (length options))
          (user-error "Choose an option from 1 to %d" (length options)))
        `((option . ,n))))
     ((member text options) `((option . ,(1+ (cl-position text options :test #'equal)))))
     ((eq (alist-get 'allowFreeText params) :json-false)
      (user-error "Answer with an option's number, 1 to %d" (length options)))
     (t `((text . ,words))))))

(defun agent-shell-ask-answer (words)
  "Answer this shell buffer's waiting question with WORDS."
  (let* ((question (or (agent-shell-session-question agent-shell--session)
                       (user-error "No question is waiting")))
         (reply (agent-shell-ask--reply words))
         (options (alist-get 'options (plist-get question :params)))
         (shown (if-let ((n (alist-get 'option reply)))
                    (format "%d. %s" n (nth (1- n) options))
                  words)))
    (setf (agent-shell-session-question agent-shell--session) nil)
    (agent-shell-rpc-respond (plist-get question :conn) (plist-get question :id) reply)
    (agent-shell-transcript-replace-notice
     (plist-get question :notice)
     (format "Question: %s — answered: %s"
             (alist-get 'question (plist-get question :params)) shown))
    (agent-shell-header-set-state 'thinking)
    shown))

(defun agent-shell-ask-answer-input ()
  "Answer the waiting question with the shell's input."
  (let ((words (agent-shell-input)))
    (agent-shell-ask-answer words)
    (agent-shell-set-input "")))

(defun agent-shell-ask--forget (_update)
  "Forget this shell buffer's question: its turn ended."
  (when-let ((question (and agent-shell--session
                            (agent-shell-session-question agent-shell--session))))
    (setf (agent-shell-session-question agent-shell--session) nil)
    (agent-shell-transcript-replace-notice
     (plist-get question :notice)
     (format "Question not answered: %s (the turn ended)"
             (alist-get 'question (plist-get question :params))))))

(add-hook 'agent-shell-transcript-turn-end-functions #'agent-shell-ask--forget)

;;; From the action log

(defun agent-shell-ask--shell-of-log ()
  "Return the shell buffer of the question in the current log buffer."
  (let ((log (current-buffer)))
    (or (cl-find-if
         (lambda (buffer)
           (with-current-buffer buffer
             (and (derived-mode-p 'agent-shell-mode)
                  (agent-shell-session-question agent-shell--session)
                  (eq (get-buffer (format "*agent-shell-log: %s*"
                                          (agent-shell-session-name agent-shell--session)))
                      log))))
         (buffer-list))
        (user-error "No question of this session is waiting"))))

(defun agent-shell-ask-log-answer (words)
  "Answer the question shown in this action log with WORDS."
  (interactive (list (read-string "Answer: ")))
  (let ((shell (agent-shell-ask--shell-of-log)))
    (with-current-buffer shell
      (message "agent-shell: answered %s" (agent-shell-ask-answer words)))))

(defun agent-shell-ask-log-option ()
  "Answer the question shown in this action log with the option of the key pressed."
  (interactive)
  (agent-shell-ask-log-answer (string last-command-event)))

(dolist (key '("1" "2" "3" "4"))
  (define-key agent-shell-log-mode-map (kbd key) #'agent-shell-ask-log-option))
(define-key agent-shell-log-mode-map (kbd "t") #'agent-shell-ask-log-answer)

(provide 'agent-shell-ask)
;;; agent-shell-ask.el ends here
