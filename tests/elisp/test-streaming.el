;;; test-streaming.el --- Long streams into the shell buffer  -*- lexical-binding: t; -*-

;; SPDX-License-Identifier: GPL-3.0-or-later

;;; Commentary:

;; Long answers of the scripted mock model through the real bridge,
;; its frames and the real event stream into a real shell buffer (the
;; fixtures of agent-shell-test-session.el): the text arrives byte for
;; byte and once, in far fewer events than the model sent deltas; a
;; dropped event stream mid-answer loses and doubles nothing; a cancel
;; leaves no text after the turn's end; a huge single-line tool output
;; stays folded and capped.  Waiting is on conditions with deadlines.

;;; Code:

(require 'ert)
(require 'cl-lib)
(require 'agent-shell)
(require 'agent-shell-test-helpers)
(require 'agent-shell-test-session)

(defun test-streaming--recorder (session)
  "Return (HOOK . GETTER) recording SESSION's updates as (KIND . TEXT)."
  (let ((seen nil))
    (cons (lambda (_conn message)
            (let ((params (alist-get 'params message)))
              (when (and (equal (alist-get 'method message) "session/update")
                         (equal (alist-get 'sessionId params) session))
                (let ((update (alist-get 'update params)))
                  (push (cons (alist-get 'sessionUpdate update)
                              (alist-get 'text (alist-get 'content update)))
                        seen)))))
          (lambda () (reverse seen)))))

(defun test-streaming--count (needle haystack)
  "Return how often NEEDLE occurs in HAYSTACK."
  (let ((n 0) (start 0))
    (while (setq start (string-search needle haystack start))
      (cl-incf n)
      (cl-incf start (length needle)))
    n))

(defun test-streaming--idle-p ()
  "Return non-nil when the current shell's turn is over."
  (and (null (agent-shell-session-turn-id agent-shell--session)) (eq (agent-shell-session-state agent-shell--session) 'idle)))

(defmacro test-streaming--recording (var &rest body)
  "Run BODY with VAR bound to a recorder of the current shell's updates."
  (declare (indent 1) (debug (symbolp body)))
  `(let* ((,var (test-streaming--recorder (agent-shell-session-id agent-shell--session)))
          (agent-shell-rpc-message-functions
           (cons (car ,var) agent-shell-rpc-message-functions)))
     ,@body))

(ert-deftest test-streaming/long-answer-arrives-whole-in-frames ()
  "A long Chinese and ASCII answer streamed 3 characters a delta arrives byte for byte.
The bridge joins the deltas into frames: the first delta comes alone
and at once, and the shell sees far fewer events than the model sent."
  (test-shell--with-session (root)
    (should (file-directory-p root))
    (test-streaming--recording rec
      (agent-shell-send "stream-exact please")
      (test-shell--wait "the end of the turn" #'test-streaming--idle-p 60)
      (let* ((text (test-shell--transcript))
             (chunks (cl-remove-if-not (lambda (u) (equal (car u) "agent_message_chunk"))
                                       (funcall (cdr rec))))
             (deltas (/ (length test-shell-long-answer) 3)))
        (should (= (test-streaming--count test-shell-long-answer text) 1))
        (should (equal (apply #'concat (mapcar #'cdr chunks)) test-shell-long-answer))
        (should (equal (cdar chunks) (substring test-shell-long-answer 0 3)))
        (should (< (length chunks) (/ deltas 4)))))))

(ert-deftest test-streaming/dropped-stream-mid-answer-loses-nothing ()
  "The event stream dropped twice mid-answer: reconnecting with Last-Event-ID
loses no text and shows none twice."
  (test-shell--with-session (root)
    (should (file-directory-p root))
    (test-streaming--recording rec
      (let ((conn (agent-shell-bridge-connection agent-shell-bridge--current)) (drops 0) (streams nil))
        (agent-shell-send "stream-drop please")
        (test-shell--wait
         "the end of the turn"
         (lambda ()
           (let ((n (length (funcall (cdr rec)))))
             (when (and (< drops 2) (>= n (* 3 (1+ drops))))
               (cl-incf drops)
               (push (agent-shell-rpc-http-events-process (agent-shell-rpc-bridge-conn-http conn)) streams)
               (agent-shell-rpc-request conn "debug/drop_streams" nil)))
           (and (= drops 2) (test-streaming--idle-p)))
         60)
        (should (= drops 2))
        (should-not (memq (agent-shell-rpc-http-events-process (agent-shell-rpc-bridge-conn-http conn)) streams))
        (should (= (test-streaming--count test-shell-long-answer (test-shell--transcript)) 1))
        (should (equal (apply #'concat
                              (mapcar #'cdr (cl-remove-if-not
                                             (lambda (u) (equal (car u) "agent_message_chunk"))
                                             (funcall (cdr rec)))))
                       test-shell-long-answer))))))

(ert-deftest test-streaming/cancel-leaves-no-text-after-turn-end ()
  "C-c C-k during a long answer: once the turn has ended, no text of it follows.
The next turn's answer is the only text after the cancelled turn's end."
  (test-shell--with-session (root)
    (should (file-directory-p root))
    (test-streaming--recording rec
      (agent-shell-send "stream-cancel please")
      (test-shell--wait "the first text" (lambda () (assoc "agent_message_chunk"
                                                           (funcall (cdr rec))))
                        30)
      (let ((acked nil))
        (cl-letf (((symbol-function 'message)
                   (lambda (&rest args)
                     (let ((text (apply #'format args)))
                       (when (string-prefix-p "agent-shell: " text)
                         (push text acked))))))
          (agent-shell-cancel)
          (test-shell--wait "the cancel" (lambda () (and acked (test-streaming--idle-p))) 30))
        (should (member "agent-shell: turn cancelled" acked)))
      (agent-shell-send "stream-after the cancel")
      (test-shell--wait "the second turn" (lambda () (and (test-streaming--idle-p)
                                                          (= 2 (cl-count "turn_end"
                                                                         (funcall (cdr rec))
                                                                         :key #'car
                                                                         :test #'equal))))
                        30)
      (let* ((seen (funcall (cdr rec)))
             (after (cdr (member (assoc "turn_end" seen) seen)))
             (texts (delq nil (mapcar (lambda (u) (and (equal (car u) "agent_message_chunk")
                                                       (cdr u)))
                                      after))))
        (should (equal (apply #'concat texts) "取消之后：after the cancel."))
        (should (< (length (apply #'concat (mapcar #'cdr (cl-remove-if-not
                                                          (lambda (u) (equal (car u) "agent_message_chunk"))
                                                          (butlast seen (length after))))))
                   (length test-shell-long-answer)))))))

(ert-deftest test-streaming/huge-single-line-output-is-folded-and-capped ()
  "A 570 KB single-line tool output shows as a folded body cut to the cap."
  (test-shell--with-shell (sid)
    (let ((line (apply #'concat (make-list 57000 "长行输出abc12"))))
      (should (>= (string-bytes line) (* 570 1000)))
      (test-shell--emit
       (test-shell--tool sid "big-1" "run_command cat big.log" '((command . "cat big.log")))
       (test-shell--tool-done sid "big-1" "completed"
                              `(content . [((type . "content")
                                            (content . ((type . "text") (text . ,line))))])))
      (test-shell--wait "the output" (lambda () (string-search "more characters"
                                                               (test-shell--transcript))))
      (let* ((id (cdr (assoc "big-1" (agent-shell-session-tools agent-shell--session))))
             (bounds (agent-shell-transcript--entry-body-bounds id))
             (longest 0))
        (should bounds)
        (should (eq (get-text-property (car bounds) 'invisible) t))
        (should (< (- (cdr bounds) (car bounds)) (+ agent-shell-tool-output-max-chars 300)))
        (should (< (buffer-size) (* 2 agent-shell-tool-output-max-chars)))
        (goto-char (point-min))
        (while (not (eobp))
          (setq longest (max longest (- (line-end-position) (point))))
          (forward-line 1))
        (should (< longest (+ agent-shell-tool-output-max-chars 300)))))))

(ert-deftest test-streaming/citations-scan-a-long-answer-once ()
  "Citations in a long answer: each path is checked once, the forms are kept.
Regression guard: a scan tried the path pattern at every character and
checked the disk for every repeated citation, a stall at the end of a
long answer."
  (agent-shell-test-with-project (root '(("src/a.py" . "one\ntwo\nthree\n")))
    (with-temp-buffer
      (let ((checks 0))
        (insert (propertize (concat (apply #'concat (make-list 300 "see src/a.py:2-3, "))
                                    "/src/a.py:1 src//a.py:1 x:src/a.py:3 nope.py:1\n")
                            'agent-shell-role 'assistant))
        (agent-shell-citations-mark (point-min))
        (cl-letf* ((real (symbol-function 'file-regular-p))
                   ((symbol-function 'file-regular-p)
                    (lambda (file) (cl-incf checks) (funcall real file))))
          (should (= (agent-shell-citations-link (point-max) root) 301)))
        (should (<= checks 2))
        (goto-char (point-min))
        (search-forward "see ")
        (should (equal (button-get (button-at (point)) 'agent-shell-lines) '(2 . 3)))
        (dolist (miss '("/src/a.py:1" "src//a.py:1" "nope.py:1"))
          (goto-char (point-min))
          (search-forward miss)
          (should-not (button-at (1- (point)))))
        (goto-char (point-min))
        (search-forward "x:")
        (should (equal (button-get (button-at (point)) 'agent-shell-lines) '(3 . 3)))))))

(provide 'test-streaming)
;;; test-streaming.el ends here
