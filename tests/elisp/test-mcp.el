;;; test-mcp.el --- Tests of the MCP server options and their path to the bridge  -*- lexical-binding: t; -*-

;; SPDX-License-Identifier: GPL-3.0-or-later

;;; Commentary:

;; `agent-shell-mcp-servers' (an alist or a JSON file) becomes the
;; Agent Client Protocol `mcpServers' list of `session/new'; sent to the
;; REAL bridge (its own process, AGENT_SHELL_TEST_BRIDGE), the servers
;; start: `mcp-server-time' from the test venv, and one whose command
;; does not exist.  The session's status reaches the header line.

;;; Code:

(require 'ert)
(require 'cl-lib)
(require 'agent-shell)
(require 'agent-shell-test-helpers)

(defconst test-mcp--bridge
  (or (getenv "AGENT_SHELL_TEST_BRIDGE")
      (expand-file-name "../../.venv/bin/agent-shell-bridge"
                        (file-name-directory (or load-file-name buffer-file-name))))
  "The bridge program the tests run.")

(defconst test-mcp--time-server
  (expand-file-name "mcp-server-time" (file-name-directory test-mcp--bridge))
  "The third-party `mcp-server-time' installed with the test dependencies.")

(defun test-mcp--servers-param (params)
  "Return the `mcpServers' of session PARAMS as a list."
  (append (alist-get 'mcpServers params) nil))

(ert-deftest test-mcp/alist-becomes-acp-servers ()
  "An alist option becomes ACP servers: env as name/value objects, args a vector."
  (let ((agent-shell-mcp-servers
         '(("time" . ((command . "uvx") (args . ("mcp-server-time" "--local-timezone" "Asia/Shanghai"))
                      (env . (("GREETING" . "你好")))))))
        (agent-shell-mcp-server-policy '(("time" . trusted)))
        (agent-shell-mcp-start-timeout 12))
    (agent-shell-test-with-project (root nil)
      (let* ((params (agent-shell--session-new-params root))
             (server (car (test-mcp--servers-param params))))
        (should (equal (alist-get 'name server) "time"))
        (should (equal (alist-get 'command server) "uvx"))
        (should (equal (alist-get 'args server)
                       ["mcp-server-time" "--local-timezone" "Asia/Shanghai"]))
        (should (equal (alist-get 'env server) [((name . "GREETING") (value . "你好"))]))
        (should (equal (alist-get 'mcpServerPolicy params) '((time . "trusted"))))
        (should (equal (alist-get 'mcpStartTimeoutS params) 12))
        ;; It serialises as the bridge expects.
        (should (string-search
                 "\"env\":[{\"name\":\"GREETING\",\"value\":\"你好\"}]"
                 (decode-coding-string (json-serialize params) 'utf-8)))))))

(ert-deftest test-mcp/json-file-option ()
  "A `.mcp.json'-shaped file named by the option gives the same servers."
  (let ((file (make-temp-file "agent-shell-mcp-" nil ".json"
                              "{\"mcpServers\": {\"git\": {\"command\": \"uvx\", \
\"args\": [\"mcp-server-git\"], \"env\": {\"GIT_PAGER\": \"cat\"}}}}")))
    (unwind-protect
        (let* ((agent-shell-mcp-servers file)
               (server (car (test-mcp--servers-param (agent-shell-mcp-session-params)))))
          (should (equal (alist-get 'name server) "git"))
          (should (equal (alist-get 'args server) ["mcp-server-git"]))
          (should (equal (alist-get 'env server) [((name . "GIT_PAGER") (value . "cat"))])))
      (delete-file file))))

(ert-deftest test-mcp/bad-option-is-a-user-error ()
  "A server without a command, or a file that is not JSON, is the user's error."
  (let ((agent-shell-mcp-servers '(("broken" . ((args . ("x")))))))
    (should-error (agent-shell-mcp-session-params) :type 'user-error))
  (let ((file (make-temp-file "agent-shell-mcp-" nil ".json" "{not json")))
    (unwind-protect
        (let ((agent-shell-mcp-servers file))
          (should-error (agent-shell-mcp-session-params) :type 'user-error))
      (delete-file file))))

(ert-deftest test-mcp/session-new-starts-the-configured-servers ()
  "The option's servers start in the real bridge; a missing one is named.
The status the bridge answers with gives the header line's MCP count."
  (should (file-executable-p test-mcp--time-server))
  (let* ((memory (make-temp-file "agent-shell-mcp-memory-" t))
         (agent-shell-mcp-servers
          `(("time" . ((command . ,test-mcp--time-server)))
            ("ghost" . ((command . "agent-shell-no-such-mcp-server")))))
         (agent-shell-rpc-message-functions nil)
         (conn (agent-shell-rpc-start
                :command (list test-mcp--bridge)
                :directory temporary-file-directory
                :environment (list (concat "AGENT_SHELL_MEMORY_DIR=" memory))
                :name "test-mcp-bridge"
                :ready-timeout 30)))
    (unwind-protect
        (agent-shell-test-with-project (root nil)
          (agent-shell-rpc-request-sync conn "initialize" nil 20)
          (let* ((result (agent-shell-rpc-request-sync
                          conn "session/new" (agent-shell--session-new-params root) 60))
                 (status (alist-get 'mcp result))
                 (servers (append (alist-get 'servers status) nil))
                 (time (seq-find (lambda (s) (equal (alist-get 'name s) "time")) servers))
                 (ghost (seq-find (lambda (s) (equal (alist-get 'name s) "ghost")) servers)))
            (should (equal (alist-get 'connected status) 1))
            (should (equal (alist-get 'configured status) 2))
            (should (equal (alist-get 'status time) "connected"))
            (should (equal (alist-get 'tools time) 2))
            (should (equal (alist-get 'status ghost) "failed"))
            (should (string-search "agent-shell-no-such-mcp-server"
                                   (alist-get 'error ghost)))
            (with-temp-buffer
              (agent-shell-mcp-on-status status)
              (should (equal (agent-shell-mcp-header) " │ MCP 1/2")))
            (agent-shell-rpc-request-sync
             conn "session/cancel" `((sessionId . ,(alist-get 'sessionId result))) 10)))
      (agent-shell-rpc-stop conn)
      (delete-directory memory t))))

(ert-deftest test-mcp/status-update-shows-notice-and-count ()
  "An `mcp_servers' update puts its notice in the transcript and the count in the header."
  (with-temp-buffer
    (agent-shell--setup "mcp-test" temporary-file-directory nil)
    (agent-shell-transcript--apply-update
     '((sessionUpdate . "mcp_servers") (connected . 1) (configured . 2)
       (servers . [((name . "git") (status . "failed"))])
       (notice . "MCP server git stopped again after a restart; not restarted")))
    (should (string-search "MCP server git stopped again after a restart"
                           (buffer-substring-no-properties
                            (point-min) (agent-shell-session-output-marker agent-shell--session))))
    (should (string-search "│ MCP 1/2" (agent-shell-header--line)))
    (agent-shell-mcp-on-status '((servers . []) (connected . 0) (configured . 0)))
    (should-not (string-search "MCP" (agent-shell-header--line)))))

(provide 'test-mcp)
;;; test-mcp.el ends here
