;;; test-header.el --- Tests of the header line of a shell buffer  -*- lexical-binding: t; -*-

;; SPDX-License-Identifier: GPL-3.0-or-later

;;; Commentary:

;; The header line (agent-shell-header.el): model, mode, state, tokens,
;; context fill and sandbox, from the session's updates.
;;
;; Every test talks to the REAL bridge (AGENT_SHELL_TEST_BRIDGE, started
;; with its debug methods, see agent-shell-test-session.el) over real
;; HTTP and SSE; prompts go to its scripted mock model on loopback, the
;; only fake part.  Waiting is on conditions with deadlines, never on
;; sleeps.

;;; Code:

(require 'ert)
(require 'cl-lib)
(require 'agent-shell)
(require 'agent-shell-test-helpers)
(require 'agent-shell-test-session)

(ert-deftest test-header/header-line-usage-and-states ()
  "The header line shows tokens and context fill from usage, and the state."
  (test-shell--with-shell (sid)
    (should (string-search "idle" (agent-shell-header-line)))
    (test-shell--emit
     (test-shell--update sid '((sessionUpdate . "usage") (inputTokens . 1200)
                               (outputTokens . 300) (cachedTokens . 0)
                               (totalTokens . 1500) (contextWindow . 64000)
                               (contextUsed . 16000))))
    (test-shell--wait "usage" (lambda () (agent-shell-session-usage agent-shell--session)))
    (should (string-search "1.5k tokens" (agent-shell-header-line)))
    (should (string-search "context 25%" (agent-shell-header-line)))
    (should (string-search agent-shell-model (agent-shell-header-line)))
    (test-shell--emit (test-shell--chunk sid "x"))
    (test-shell--wait "thinking" (lambda () (eq (agent-shell-session-state agent-shell--session) 'thinking)))
    (should (string-search "thinking" (agent-shell-header-line)))
    (test-shell--emit
     (test-shell--update sid '((sessionUpdate . "turn_end") (turnId . "t")
                               (stopReason . "max_turn_requests"))))
    (test-shell--wait "idle" (lambda () (eq (agent-shell-session-state agent-shell--session) 'idle)))
    (should (string-search "[turn ended: max_turn_requests]" (test-shell--transcript)))))

(ert-deftest test-header/header-line-says-no-sandbox ()
  "The session reports its sandbox; the header line says when there is none."
  (test-shell--with-session (root)
    (should (file-directory-p root))
    (should (consp (agent-shell-session-sandbox agent-shell--session)))
    (let ((available (alist-get 'available (agent-shell-session-sandbox agent-shell--session))))
      (when (equal (getenv "AGENT_SHELL_SANDBOX") "off")
        (should (eq available :json-false)))
      (should (eq (eq available :json-false)
                  (and (string-search "no sandbox" (agent-shell-header-line)) t))))
    (setf (agent-shell-session-sandbox agent-shell--session)
          '((available . :json-false) (label . "no sandbox")))
    (should (string-search " │ no sandbox" (agent-shell-header-line)))
    (setf (agent-shell-session-sandbox agent-shell--session)
          '((available . :json-false) (label . "no sandbox (remote)")))
    (should (string-search " │ no sandbox (remote)" (agent-shell-header-line)))
    (setf (agent-shell-session-sandbox agent-shell--session)
          '((available . t) (label . "bubblewrap")))
    (should-not (string-search "sandbox" (agent-shell-header-line)))))

(ert-deftest test-header/header-line-keeps-percent ()
  "Regression: the header line showed \"context 12\" without its %.
The :eval result is a mode line construct; every % is now doubled."
  (test-shell--with-shell (sid)
    (setf (agent-shell-session-usage agent-shell--session) '((totalTokens . 1200) (contextUsed . 12000)
                               (contextWindow . 100000))
          (agent-shell-session-model agent-shell--session) "model-100%")
    ;; `format-mode-line' shows nothing in batch; check the construct:
    ;; every % doubled, so each pair shows as one %.
    (let ((construct (agent-shell-header-line)))
      (should-not (string-search "%" (replace-regexp-in-string "%%" "" construct)))
      (let ((shown (replace-regexp-in-string "%%" "%" construct)))
        (should (string-search "context 12%" shown))
        (should (string-search "model-100% │" shown))))))

(provide 'test-header)
;;; test-header.el ends here
