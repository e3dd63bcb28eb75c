;;; test-extend-hooks.el --- Tests of the session hooks of agent-shell-hooks.el  -*- lexical-binding: t; -*-

;; SPDX-License-Identifier: GPL-3.0-or-later

;;; Commentary:

;; `agent-shell-compaction-functions' through the real bridge and the
;; scripted model (agent-shell-test-session.el): a session with a small
;; window reads a file in pieces until the bridge compacts its history;
;; the hook gets the shell buffer and a plist with the summary and the
;; counts, and a hook that signals leaves the others and the turn alone.

;;; Code:

(require 'ert)
(require 'cl-lib)
(require 'agent-shell)
(require 'agent-shell-extend)
(require 'agent-shell-hooks)
(require 'agent-shell-test-helpers)
(require 'agent-shell-test-session)

(defconst test-extend-hooks--big
  (mapconcat (lambda (i) (format "line %03d: filler text so each line has weight 文字" i))
             (number-sequence 1 300) "\n")
  "A file read in pieces until the history passes the window's threshold.")

(ert-deftest test-extend-hooks/compaction-functions-get-the-summary ()
  "Each function of `agent-shell-compaction-functions' is called once per
compaction, in the shell buffer, with it and a plist of what happened."
  (let* ((seen nil)
         (agent-shell-context-window 8000)
         (agent-shell-compaction-functions
          (list (lambda (_buffer _info) (error "Broken on purpose 故意"))
                (lambda (buffer info)
                  (push (list buffer (current-buffer) info) seen)))))
    (test-shell--with-session (root)
      (agent-shell-test-write root "big.txt" test-extend-hooks--big)
      (goto-char (point-max))
      (insert "ext-compact-go please")
      (agent-shell-send-input)
      (test-shell--wait "the model's answer"
                        (lambda () (string-search "ext-compact 读完 done." (test-shell--transcript)))
                        30)
      ;; The turn's end is still being logged: wait for it, or the project's
      ;; removal races the bridge's last writes.
      (test-shell--wait "the turn's end"
                        (lambda () (and (eq (agent-shell-session-state agent-shell--session) 'idle)
                                        (not (agent-shell-session-turn-id agent-shell--session))))
                        20)
      (should (= (length seen) 1))
      (pcase-let ((`(,buffer ,current ,info) (car seen)))
        (should (eq buffer (current-buffer)))
        (should (eq current (current-buffer)))
        (should (equal (plist-get info :summary) "摘要 summary: read big.txt in pieces."))
        (should (equal (plist-get info :reason) "threshold"))
        (should (= (plist-get info :context-window) 8000))
        (should (< (plist-get info :tokens-after) (plist-get info :tokens-before)))
        (should (> (plist-get info :messages-summarised) 0))
        (should (> (plist-get info :messages-kept) 0))
        (should (integerp (plist-get info :results-stubbed)))
        (should (stringp (plist-get info :turn-id)))))))

(ert-deftest test-extend-hooks/compaction-info-names-every-field ()
  "The plist has one key per field of the bridge's `compaction' update."
  (let ((info (agent-shell-hooks-compaction-info
               '((sessionUpdate . "compaction") (turnId . "t1") (reason . "window")
                 (summary . "概要") (messagesSummarised . 4) (messagesKept . 2)
                 (resultsStubbed . 1) (failuresKept . 0) (tokensBefore . 900)
                 (tokensAfter . 300) (contextWindow . 1000)))))
    (should (equal info '(:reason "window" :summary "概要" :messages-summarised 4
                                  :messages-kept 2 :results-stubbed 1 :failures-kept 0
                                  :tokens-before 900 :tokens-after 300
                                  :context-window 1000 :turn-id "t1")))))

(provide 'test-extend-hooks)
;;; test-extend-hooks.el ends here
