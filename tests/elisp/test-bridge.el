;;; test-bridge.el --- Tests of starting the bridge and of its end  -*- lexical-binding: t; -*-

;; SPDX-License-Identifier: GPL-3.0-or-later

;;; Commentary:

;; agent-shell-bridge.el: what `initialize' sends (the model settings,
;; the key, which never reaches the events log), a refused or quit start
;; leaving no bridge behind, and the shell told when the bridge dies.
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

(ert-deftest test-bridge/echo-reasoning-setting-reaches-the-bridge ()
  "The defcustom goes into the model settings of `initialize' only when not `auto'."
  (let ((agent-shell-api-key "k"))
    (let ((agent-shell-echo-reasoning 'auto))
      (should-not (assq 'echo_reasoning (agent-shell-bridge--model-params))))
    (let ((agent-shell-echo-reasoning 'always))
      (should (eq (alist-get 'echo_reasoning (agent-shell-bridge--model-params)) t)))
    (let ((agent-shell-echo-reasoning 'never))
      (should (eq (alist-get 'echo_reasoning (agent-shell-bridge--model-params)) :json-false)))))

(ert-deftest test-bridge/api-key-reaches-bridge-not-events-buffer ()
  "`initialize' gives the bridge the key, but the events buffer never shows it."
  (when (agent-shell-bridge-live-connection)
    (agent-shell-rpc-stop (agent-shell-bridge-connection agent-shell-bridge--current)))
  (when (get-buffer "*agent-shell events*") (kill-buffer "*agent-shell events*"))
  (let ((agent-shell-log-events t))
    (test-shell--bridge)
    (should (eq (alist-get 'has_key (alist-get 'model (agent-shell-bridge-info agent-shell-bridge--current))) t))
    (should (equal (alist-get 'key_source (alist-get 'model (agent-shell-bridge-info agent-shell-bridge--current)))
                   "option"))
    (test-shell--sync "ping" nil)
    (with-current-buffer "*agent-shell events*"
      (should (string-search "ping" (buffer-string)))
      (should-not (string-search "sk-test-shell-secret" (buffer-string))))))

(defun test-bridge--live-bridges ()
  "Return the live bridge server processes of this Emacs."
  (cl-remove-if-not (lambda (p)
                      (and (process-live-p p)
                           (equal (last (process-command p) 3) '("serve" "--port" "0"))))
                    (process-list)))

(ert-deftest test-bridge/failed-initialize-does-not-block-later-starts ()
  "Regression: one refused `initialize' made every later start hang.
The connection stayed live but uninitialised, so later callers queued
forever in \"starting\".  Now the failed bridge is ended and the next
start runs a fresh one."
  (test-shell--bridge)
  (agent-shell-rpc-stop (agent-shell-bridge-connection agent-shell-bridge--current))
  (let ((failed nil) (called nil))
    (let ((agent-shell-notify-webhook "http://"))
      (agent-shell-bridge-with-connection (lambda (_) (setq failed 'called)))
      (let ((conn (agent-shell-bridge-connection agent-shell-bridge--current)))
        (should conn)
        (test-shell--wait "the refused bridge to end"
                          (lambda () (not (agent-shell-rpc-live-p conn))))))
    (should-not failed)
    (should-not (agent-shell-bridge-ready-queue agent-shell-bridge--current))
    (agent-shell-bridge-with-connection (lambda (conn) (setq called conn)))
    (test-shell--wait "a fresh, initialised bridge" (lambda () called) 30)
    (should (eq called (agent-shell-bridge-initialized agent-shell-bridge--current)))
    (should (= (length (test-bridge--live-bridges)) 1))))

(ert-deftest test-bridge/quit-while-starting-leaves-no-bridge ()
  "Regression: C-g in the key lookup (auth-source) orphaned the bridge process.
The quit escaped `agent-shell-bridge--initialize' before the connection was
recorded, leaving a running bridge nobody could reach or stop."
  (test-shell--bridge)
  (agent-shell-rpc-stop (agent-shell-bridge-connection agent-shell-bridge--current))
  (should-not (test-bridge--live-bridges))
  (let ((agent-shell-api-key (lambda () (signal 'quit nil))))
    (should (condition-case nil
                (progn (agent-shell-bridge-with-connection #'ignore) nil)
              (quit t))))
  (should-not (test-bridge--live-bridges))
  (should-not (agent-shell-bridge-ready-queue agent-shell-bridge--current))
  (should-not (agent-shell-bridge-live-connection)))

(ert-deftest test-bridge/bridge-death-is-reported ()
  "When the bridge dies the shell buffer says so and how to restart."
  (test-shell--with-shell (sid)
    (let ((proc (agent-shell-rpc-bridge-conn-process (agent-shell-bridge-connection agent-shell-bridge--current))))
      (signal-process proc 'SIGKILL)
      (test-shell--wait "the notice" (lambda () (eq (agent-shell-session-state agent-shell--session) 'dead)))
      (should (string-search "C-c C-r restarts it" (test-shell--transcript)))
      (should (string-search "bridge stopped" (agent-shell-header-line)))
      (should-not (agent-shell-bridge-live-connection)))))

(provide 'test-bridge)
;;; test-bridge.el ends here
