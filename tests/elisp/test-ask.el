;;; test-ask.el --- Tests for agent-shell-ask.el  -*- lexical-binding: t; -*-

;; SPDX-License-Identifier: GPL-3.0-or-later

;;; Commentary:

;; The model's `ask_user' against the real bridge and the scripted model
;; (agent-shell-test-session.el): the question shown with its options
;; numbered and answered with RET in the shell, and answered with the
;; key 2 on its WAIT step in the action log.  The scripted model answers
;; the next request only when the tool's result holds the chosen option.

;;; Code:

(require 'ert)
(require 'cl-lib)
(require 'agent-shell)
(require 'agent-shell-ask)
(require 'agent-shell-test-helpers)
(require 'agent-shell-test-session)

(defun test-ask--prompt (text)
  "Send TEXT and wait until its question is shown."
  (goto-char (point-max))
  (insert text)
  (agent-shell-send-input)
  (test-shell--wait "the question" #'agent-shell-ask-pending-p 20))

(ert-deftest test-ask/a-question-is-answered-in-the-shell ()
  "The options are numbered; 2 and RET answer with the second one's words."
  (test-shell--with-session (root)
    (ignore root)
    (test-ask--prompt "ask-shell please")
    (let ((text (test-shell--transcript)))
      (should (string-search "Question: 选哪个 pick?\n  1. 红 red\n  2. 蓝 blue" text))
      (should (string-search "type 1–2 or your own words" text)))
    (should (string-search "waiting for you" (agent-shell-header-line)))
    (goto-char (point-max))
    (insert "3")
    (should-error (agent-shell-send-input) :type 'user-error)
    (should (agent-shell-ask-pending-p))
    (agent-shell-set-input "2")
    (agent-shell-send-input)
    (should-not (agent-shell-ask-pending-p))
    (should (equal (agent-shell-input) ""))
    (test-shell--wait "the answer's turn"
                      (lambda () (string-search "你选了蓝 blue chosen." (test-shell--transcript)))
                      20)
    (should (string-search "answered: 2. 蓝 blue" (test-shell--transcript)))
    (test-shell--wait "the turn's end"
                      (lambda () (eq (agent-shell-session-state agent-shell--session) 'idle))
                      20)))

(ert-deftest test-ask/a-question-is-answered-with-2-in-the-log ()
  "The question is a WAIT step of the log; the key 2 there answers it."
  (test-shell--with-session (root)
    (ignore root)
    (test-ask--prompt "ask-log please")
    (let ((log (agent-shell-log-buffer (agent-shell-session-name agent-shell--session)))
          (shell (current-buffer)))
      (with-current-buffer log
        (test-shell--wait "the WAIT step in the log"
                          (lambda () (string-match-p "^\\*+ WAIT .*Question: 日志里选 log pick\\?"
                                                     (buffer-string)))
                          20)
        (should (string-search "2. 右 right" (buffer-string)))
        (let ((last-command-event ?2))
          (call-interactively #'agent-shell-ask-log-option)))
      (with-current-buffer shell
        (should-not (agent-shell-ask-pending-p))
        (test-shell--wait "the answer's turn"
                          (lambda () (string-search "右 right chosen in the log."
                                                    (test-shell--transcript)))
                          20)
        (test-shell--wait "the turn's end"
                          (lambda () (eq (agent-shell-session-state agent-shell--session) 'idle))
                          20))
      (with-current-buffer log
        (test-shell--wait "the step DONE"
                          (lambda () (string-match-p "^\\*+ DONE .*Question: 日志里选" (buffer-string)))
                          20)))))

(provide 'test-ask)
;;; test-ask.el ends here
