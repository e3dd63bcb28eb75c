;;; test-queue.el --- Tests for agent-shell-queue.el  -*- lexical-binding: t; -*-

;; SPDX-License-Identifier: GPL-3.0-or-later

;;; Commentary:

;; Prompts queued and steers sent while a turn runs, against the real
;; bridge and the scripted model (agent-shell-test-session.el): a prompt
;; typed during a turn is queued and sent after it; a steer typed
;; mid-answer reaches the model (its scripted step answers only a request
;; whose last user message is the steer) and the log; a cancel puts the
;; queue back into the input; the queue edit buffer.

;;; Code:

(require 'ert)
(require 'cl-lib)
(require 'agent-shell)
(require 'agent-shell-queue)
(require 'agent-shell-test-helpers)
(require 'agent-shell-test-session)

(defun test-queue--type-and (text command)
  "Type TEXT after the prompt and run COMMAND."
  (goto-char (point-max))
  (insert text)
  (call-interactively command))

(defun test-queue--shown-above-prompt ()
  "Return the display-only text shown before the prompt."
  (or (cl-some (lambda (o) (overlay-get o 'before-string))
               (overlays-in (point-min) (point-max)))
      ""))

(defun test-queue--running-p ()
  "Return non-nil once this buffer's turn has its id from the bridge."
  (stringp (agent-shell-session-turn-id agent-shell--session)))

(ert-deftest test-queue/a-prompt-during-a-turn-is-queued-and-sent-after-it ()
  "RET while the model answers queues the input; it goes out when the turn ends."
  (test-shell--with-session (root)
    (ignore root)
    (test-queue--type-and "queue-first please" #'agent-shell-send-input)
    (test-shell--wait "the first answer to stream"
                      (lambda () (string-search "第" (test-shell--transcript))) 20)
    (should (test-queue--running-p))
    (test-queue--type-and "queue-second please" #'agent-shell-send-input)
    (should (equal (agent-shell-session-prompt-queue agent-shell--session)
                   '("queue-second please")))
    (should (equal (agent-shell-input) ""))
    (let ((shown (test-queue--shown-above-prompt)))
      (should (string-search "queued 1: queue-second please" shown))
      (should (eq (get-text-property (string-search "queued" shown) 'face shown)
                  'agent-shell-queued-face)))
    (should (string-search "│ 1 queued" (agent-shell-header-line)))
    (should-not (string-search "> queue-second" (test-shell--transcript)))
    (test-shell--wait "the queued prompt's answer"
                      (lambda () (string-search "第二 second done." (test-shell--transcript)))
                      20)
    (let ((text (test-shell--transcript)))
      (should (< (string-search "第一 first done." text)
                 (string-search "> queue-second please" text)
                 (string-search "第二 second done." text))))
    (test-shell--wait "the second turn's end"
                      (lambda () (eq (agent-shell-session-state agent-shell--session) 'idle))
                      20)
    (should-not (agent-shell-session-prompt-queue agent-shell--session))
    (should-not (string-search "queued" (test-queue--shown-above-prompt)))
    (should-not (string-search "queued" (agent-shell-header-line)))))

(ert-deftest test-queue/a-steer-mid-answer-reaches-the-model-and-the-log ()
  "M-RET while the model answers: one more request, whose last user message is it."
  (test-shell--with-session (root)
    (ignore root)
    (test-queue--type-and "steer-first please" #'agent-shell-send-input)
    (test-shell--wait "the answer to stream"
                      (lambda () (and (test-queue--running-p)
                                      (string-search "先" (test-shell--transcript))))
                      20)
    (test-queue--type-and "转向 steer-words" #'agent-shell-steer)
    (should (equal (agent-shell-input) ""))
    (should (string-search "> (steer) 转向 steer-words" (test-shell--transcript)))
    (test-shell--wait "the steered answer"
                      (lambda () (string-search "转向 steered." (test-shell--transcript)))
                      20)
    (test-shell--wait "the turn's end"
                      (lambda () (eq (agent-shell-session-state agent-shell--session) 'idle))
                      20)
    (let ((log (agent-shell-session-log-path agent-shell--session)))
      (should (string-search "STEER: 转向 steer-words"
                             (with-temp-buffer
                               (let ((coding-system-for-read 'utf-8))
                                 (insert-file-contents log))
                               (buffer-string)))))))

(ert-deftest test-queue/cancel-puts-the-queue-back-into-the-input ()
  "C-c C-k cancels the turn; every queued prompt is back in the input, in order."
  (test-shell--with-session (root)
    (ignore root)
    (test-queue--type-and "queue-hold please" #'agent-shell-send-input)
    (test-shell--wait "the turn id" #'test-queue--running-p 20)
    (test-queue--type-and "队列 a" #'agent-shell-send-input)
    (test-queue--type-and "queue b" #'agent-shell-send-input)
    (should (string-search "│ 2 queued" (agent-shell-header-line)))
    (goto-char (point-max))
    (insert "typed")
    (agent-shell-cancel)
    (should (equal (agent-shell-input) "队列 a\n\nqueue b\n\ntyped"))
    (should-not (agent-shell-session-prompt-queue agent-shell--session))
    (test-shell--wait "the cancelled turn's end"
                      (lambda () (string-search "[turn ended: cancelled]"
                                                (test-shell--transcript)))
                      20)
    (should-not (string-search "> 队列 a" (test-shell--transcript)))
    (should (equal (agent-shell-input) "队列 a\n\nqueue b\n\ntyped"))))

(ert-deftest test-queue/a-cancel-before-the-bridge-answered-the-prompt-still-cancels ()
  "C-c C-k right after RET, before the bridge has the turn: it is cancelled once it has.
The scripted answer waits 20 s; the turn ends cancelled well before."
  (test-shell--with-session (root)
    (ignore root)
    (test-queue--type-and "cancel-before-start 立刻" #'agent-shell-send-input)
    (should (eq (agent-shell-session-turn-id agent-shell--session) 'pending))
    (agent-shell-cancel)
    (test-shell--wait "the cancelled turn's end"
                      (lambda () (string-search "[turn ended: cancelled]"
                                                (test-shell--transcript)))
                      10)
    (should-not (string-search "never shown" (test-shell--transcript)))
    (should-not agent-shell--cancel-on-start)))

(ert-deftest test-queue/steers-a-cancel-left-come-back-into-the-input ()
  "A `turn_end' after a cancel carries steers no model call took: they are kept."
  (test-shell--with-shell (sid)
    (setf (agent-shell-session-turn-id agent-shell--session) "t-steer")
    (test-shell--emit
     (test-shell--update sid '((sessionUpdate . "turn_end") (turnId . "t-steer")
                               (stopReason . "cancelled") (steers . ["留下 kept"]))))
    (test-shell--wait "the turn's end"
                      (lambda () (null (agent-shell-session-turn-id agent-shell--session))))
    (should (equal (agent-shell-input) "留下 kept"))))

(ert-deftest test-queue/a-lost-bridge-puts-the-queue-back-into-the-input ()
  "The bridge stopped mid-turn: the queued prompts are in the input, not lost."
  (test-shell--with-shell (sid)
    (ignore sid)
    (setf (agent-shell-session-turn-id agent-shell--session) "t-lost")
    (test-queue--type-and "丢不了 kept" #'agent-shell-send-input)
    (agent-shell-lifecycle-connection-lost "The bridge stopped")
    (should (equal (agent-shell-input) "丢不了 kept"))
    (should-not (agent-shell-session-prompt-queue agent-shell--session))))

(ert-deftest test-queue/the-edit-buffer-rewrites-the-queue ()
  "C-c C-e: parts between --- lines are the queue; an empty part is dropped."
  (test-shell--with-shell (sid)
    (ignore sid)
    (setf (agent-shell-session-turn-id agent-shell--session) "t-edit")
    (test-queue--type-and "第一 one" #'agent-shell-send-input)
    (test-queue--type-and "two" #'agent-shell-send-input)
    (let ((shell (current-buffer))
          (edit (agent-shell-queue-edit)))
      (with-current-buffer edit
        (should (equal (buffer-string) "第一 one\n---\ntwo"))
        (goto-char (point-max))
        (insert "\nline two\n---\n   \n---\nthree 三")
        (agent-shell-queue-edit-finish))
      (should-not (buffer-live-p edit))
      (with-current-buffer shell
        (should (equal (agent-shell-session-prompt-queue agent-shell--session)
                       '("第一 one" "two\nline two" "three 三")))
        (should (string-search "queued 3: three 三" (test-queue--shown-above-prompt)))
        (setf (agent-shell-session-turn-id agent-shell--session) nil)))))

(provide 'test-queue)
;;; test-queue.el ends here
