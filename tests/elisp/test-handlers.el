;;; test-handlers.el --- Tests of what Emacs does with the bridge's messages  -*- lexical-binding: t; -*-

;; SPDX-License-Identifier: GPL-3.0-or-later

;;; Commentary:

;; agent-shell-handlers.el: bridge-to-Emacs requests are provoked with
;; `debug/client_request' and answered by the real handlers (a tool's
;; result, a failed tool's error code); `log/entry' and `log/update'
;; notifications reach the session's action log.
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

(ert-deftest test-handlers/tool-call-answered-with-result ()
  "A `tool/call' for project_status runs the real tool and returns its result."
  (agent-shell-test-with-project (root '(("a.txt" . "一\n")))
    (agent-shell-test-write root "a.txt" "一\n二\n")
    (let* ((answer (test-shell--sync
                    "debug/client_request"
                    `((method . "tool/call")
                      (params . ((sessionId . "s-tool") (toolCallId . "c1")
                                 (name . "project_status") (arguments . ,(make-hash-table))
                                 (context . ((root . ,root) (op_id . "op1")
                                             (turn_id . "t1") (session_id . "s-tool"))))))))
           (result (alist-get 'result answer)))
      (should (equal (alist-get 'branch result) "main"))
      (should (string-search "a.txt" (format "%S" result))))))

(ert-deftest test-handlers/tool-error-is-tool-failed ()
  "A tool that fails answers `tool/call' with the error code of a failed tool.
The bridge reports the client's failure to the debug caller; the code
Emacs put on the wire is checked in the events log."
  (agent-shell-test-with-project (root nil)
    (when (get-buffer "*agent-shell events*") (kill-buffer "*agent-shell events*"))
    (let* ((agent-shell-log-events t)
           (err (should-error
                 (test-shell--sync
                  "debug/client_request"
                  `((method . "tool/call")
                    (params . ((sessionId . "s-tool") (toolCallId . "c2")
                               (name . "open_file")
                               (arguments . ((path . "../../etc/passwd")))
                               (context . ((root . ,root) (op_id . "op2")
                                           (turn_id . "t1") (session_id . "s-tool")))))))
                 :type 'agent-shell-rpc-error)))
      (should (string-search "outside the project root" (cadr err)))
      (with-current-buffer "*agent-shell events*"
        (goto-char (point-min))
        (should (re-search-forward
                 (format "--> .*\"error\":{\"code\":%d,\"message\":\"Path `../../etc/passwd' is outside"
                         agent-shell-rpc-code-tool-failed)
                 nil t))))))

(ert-deftest test-handlers/log-notifications-feed-log-buffer ()
  "`log/entry' and `log/update' over SSE build the session's log buffer."
  (test-shell--with-shell (sid)
    (test-shell--emit
     `((method . "log/entry")
       (params . ,(agent-shell-test-render-log
                   sid "log/entry"
                   `((id . ,(concat sid "-L1")) (session_id . ,sid)
                     (title . "run_command make test") (timestamp . "2025-01-02T03:04:05+08:00")
                     (source . "tool")))))
     `((method . "log/update")
       (params . ,(agent-shell-test-render-log
                   sid "log/update"
                   `((id . ,(concat sid "-L1")) (session_id . ,sid) (todo . "DONE")
                     (properties . ((EXIT_CODE . 0))))))))
    (let ((log (agent-shell-log-buffer sid)))
      (unwind-protect
          (with-current-buffer log
            (test-shell--wait "the DONE entry"
                              (lambda () (save-excursion
                                           (goto-char (point-min))
                                           (re-search-forward "^\\* DONE .*run_command" nil t))))
            (should (string-search ":EXIT_CODE: 0" (buffer-string))))
        (kill-buffer log)))))

(ert-deftest test-handlers/log-events-for-unknown-sessions-are-dropped ()
  "Regression: log events for a killed shell created stray log buffers.
A `log/entry' for a session without a shell buffer is now dropped."
  (test-shell--with-shell (sid)
    (let ((ghost (format "ghost-%s" sid)))
      (test-shell--emit
       `((method . "log/entry")
         (params . ((id . "g1") (session_id . ,ghost) (title . "stray")
                    (timestamp . "2025-01-02T03:04:05+00:00") (source . "tool"))))
       (test-shell--chunk sid "marker"))
      (test-shell--wait "the marker" (lambda () (string-search "marker" (test-shell--transcript))))
      (should-not (get-buffer (format "*agent-shell-log: %s*" ghost))))))

(ert-deftest test-handlers/log-file-follows-rotation-without-reset ()
  "`log/file' makes the new part the log's file; the live buffer keeps its entries."
  (test-shell--with-shell (sid)
    (let ((part (expand-file-name (format "2026-12-02-010203-%s-2.org" sid)
                                  temporary-file-directory)))
      (test-shell--emit
       `((method . "log/entry")
         (params . ,(agent-shell-test-render-log
                     sid "log/entry"
                     `((id . ,(concat sid "-L1")) (session_id . ,sid)
                       (title . "读 README 第一部分") (timestamp . "2025-01-02T03:04:05+08:00")
                       (source . "tool")))))
       `((method . "log/file")
         (params . ((sessionId . ,sid) (logPath . ,part) (previous . "old.org")))))
      (let ((log (agent-shell-log-buffer sid)))
        (unwind-protect
            (progn
              (test-shell--wait "the new log path"
                                (lambda () (equal (agent-shell-session-log-path
                                                   agent-shell--session)
                                                  part)))
              (with-current-buffer log
                (should (equal agent-shell-log--file part))
                (should (string-search "读 README 第一部分" (buffer-string)))))
          (kill-buffer log))))))

(ert-deftest test-handlers/log-files-keep-a-session-s-parts-together ()
  "The picker lists sessions newest first, each one's parts newest first."
  (let* ((root (make-temp-file "agent-shell-parts" t))
         (dir (expand-file-name ".agent-shell/logs/" root))
         (old "2026-12-01-090000-20261201090000-a1b2c3")
         (new "2026-12-02-090000-20261202090000-123456"))
    (unwind-protect
        (progn
          (make-directory dir t)
          (dolist (name (list (concat old ".org") (concat new ".org")
                              (concat new "-2.org") (concat new "-9.org")
                              (concat new "-10.org") (concat old "-2.org")))
            (write-region "* x\n" nil (expand-file-name name dir) nil 'silent))
          (should (equal (mapcar #'file-name-nondirectory
                                 (agent-shell-log--log-files root))
                         (list (concat new "-10.org") (concat new "-9.org")
                               (concat new "-2.org") (concat new ".org")
                               (concat old "-2.org") (concat old ".org")))))
      (delete-directory root t))))

(provide 'test-handlers)
;;; test-handlers.el ends here
