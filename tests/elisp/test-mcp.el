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
      (let* ((params (agent-shell-new-session-params root))
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
                 (agent-shell-json-text params)))))))

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

(ert-deftest test-mcp/remote-servers-become-acp-http-entries ()
  "A server with a `url' becomes an ACP http or sse entry with name/value headers.
The bridge fills in ${VAR}: the option's text is sent as written."
  (let ((agent-shell-mcp-servers
         '(("docs" . ((url . "https://mcp.example.com/mcp?v=1")
                      (headers . (("Authorization" . "Bearer ${DOCS_TOKEN}")
                                  ("X-租户" . "甲")))))
           ("old" . ((type . sse) (url . "http://127.0.0.1:9000/sse")))
           ("time" . ((command . "uvx") (args . ("mcp-server-time")))))))
    (let* ((params (agent-shell-mcp-session-params))
           (servers (test-mcp--servers-param params)))
      (should (equal (nth 0 servers)
                     '((type . "http") (name . "docs")
                       (url . "https://mcp.example.com/mcp?v=1")
                       (headers . [((name . "Authorization") (value . "Bearer ${DOCS_TOKEN}"))
                                   ((name . "X-租户") (value . "甲"))]))))
      (should (equal (nth 1 servers)
                     '((type . "sse") (name . "old") (url . "http://127.0.0.1:9000/sse")
                       (headers . []))))
      (should (equal (alist-get 'command (nth 2 servers)) "uvx"))
      (should-not (assq 'type (nth 2 servers)))
      (should (string-search
               "{\"type\":\"sse\",\"name\":\"old\",\"url\":\"http://127.0.0.1:9000/sse\",\"headers\":[]}"
               (agent-shell-json-text params)))))
  (let ((agent-shell-mcp-servers '(("ws" . ((type . "websocket") (url . "wss://x/"))))))
    (should-error (agent-shell-mcp-session-params) :type 'user-error))
  (let ((agent-shell-mcp-servers '(("nourl" . ((type . "http") (url . 7))))))
    (should-error (agent-shell-mcp-session-params) :type 'user-error)))

(ert-deftest test-mcp/json-file-with-remote-servers ()
  "A `.mcp.json' with http entries (type optional) gives the same ACP entries."
  (let ((file (make-temp-file "agent-shell-mcp-" nil ".json"
                              "{\"mcpServers\": {\"api\": {\"type\": \"http\", \
\"url\": \"https://api.example.com/mcp\", \"headers\": {\"Authorization\": \"Bearer t\"}}, \
\"plain\": {\"url\": \"http://127.0.0.1:8931/mcp\"}}}")))
    (unwind-protect
        (let* ((agent-shell-mcp-servers file)
               (servers (test-mcp--servers-param (agent-shell-mcp-session-params))))
          (should (equal (car servers)
                         '((type . "http") (name . "api") (url . "https://api.example.com/mcp")
                           (headers . [((name . "Authorization") (value . "Bearer t"))]))))
          (should (equal (alist-get 'type (cadr servers)) "http"))
          (should (equal (alist-get 'url (cadr servers)) "http://127.0.0.1:8931/mcp")))
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

(defun test-mcp--start-bridge (memory)
  "Start a real bridge keeping its memory in MEMORY; return the connection."
  (agent-shell-rpc-start
   :command (list test-mcp--bridge)
   :directory temporary-file-directory
   :environment (list (concat "AGENT_SHELL_MEMORY_DIR=" memory))
   :name "test-mcp-bridge"
   :ready-timeout 30))

(ert-deftest test-mcp/session-new-starts-the-configured-servers ()
  "The option's servers start in the real bridge; a missing one is named.
The status the bridge answers with gives the header line's MCP count."
  (should (file-executable-p test-mcp--time-server))
  (let* ((memory (make-temp-file "agent-shell-mcp-memory-" t))
         (agent-shell-mcp-servers
          `(("time" . ((command . ,test-mcp--time-server)))
            ("ghost" . ((command . "agent-shell-no-such-mcp-server")))))
         (agent-shell-rpc-message-functions nil)
         (conn (test-mcp--start-bridge memory)))
    (unwind-protect
        (agent-shell-test-with-project (root nil)
          (agent-shell-rpc-request-sync conn "initialize" nil 20)
          (let* ((result (agent-shell-rpc-request-sync
                          conn "session/new" (agent-shell-new-session-params root) 60))
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

(defconst test-mcp--fixture-server
  (expand-file-name "../python/mcp_fixture_server.py"
                    (file-name-directory (or load-file-name buffer-file-name)))
  "The repository's MCP fixture server (official SDK), run here over HTTP.")

(defun test-mcp--start-http-fixture (record)
  "Start the fixture serving streamable HTTP, recording into RECORD.
Return (PROCESS . PORT); the fixture prints the port it bound as its
first line."
  (let* ((output "")
         (python (expand-file-name "python" (file-name-directory test-mcp--bridge)))
         (process (make-process
                   :name "test-mcp-http-fixture"
                   :command (list python test-mcp--fixture-server record "--http")
                   :connection-type 'pipe
                   :noquery t
                   :stderr (get-buffer-create " *test-mcp-fixture-stderr*")
                   :filter (lambda (_process text) (setq output (concat output text))))))
    (while (and (process-live-p process) (not (string-search "\n" output)))
      (accept-process-output process 30))
    (unless (string-match "\\`\\([0-9]+\\)\n" output)
      (error "The fixture printed no port: %S" output))
    (cons process (string-to-number (match-string 1 output)))))

(ert-deftest test-mcp/remote-server-connects-through-the-real-bridge ()
  "An option entry with a `url' reaches a real HTTP MCP server through the bridge.
The server receives the header; the status the bridge answers with
names the server's URL without its query and never the header."
  (let* ((memory (make-temp-file "agent-shell-mcp-memory-" t))
         (record (make-temp-file "agent-shell-mcp-record-"))
         (fixture (test-mcp--start-http-fixture record))
         (url (format "http://127.0.0.1:%d/mcp" (cdr fixture)))
         (agent-shell-mcp-servers
          `(("web" . ((url . ,(concat url "?key=QSECRET"))
                      (headers . (("Authorization" . "Bearer 令牌-HSECRET")))))))
         (agent-shell-rpc-message-functions nil)
         (agent-shell-log-events t)
         (conn (test-mcp--start-bridge memory)))
    (unwind-protect
        (agent-shell-test-with-project (root nil)
          (agent-shell-rpc-request-sync conn "initialize" nil 20)
          (let* ((result (agent-shell-rpc-request-sync
                          conn "session/new" (agent-shell-new-session-params root) 60))
                 (status (alist-get 'mcp result))
                 (web (car (append (alist-get 'servers status) nil)))
                 (shown (format "%S" result)))
            (should (equal (alist-get 'connected status) 1))
            (should (equal (alist-get 'status web) "connected"))
            (should (equal (alist-get 'transport web) "http"))
            (should (equal (alist-get 'url web) url))
            (should (> (alist-get 'tools web) 5))
            (should-not (string-search "SECRET" shown))
            ;; The events log shows what was sent, with the secrets masked.
            (with-current-buffer "*agent-shell events*"
              (should (string-search "\"session/new\"" (buffer-string)))
              (should (string-search "{\"name\":\"Authorization\",\"value\":\"***\"}"
                                     (buffer-string)))
              (should (string-search (concat url "?***") (buffer-string)))
              (should-not (string-search "SECRET" (buffer-string))))
            (should (string-search "header authorization: Bearer 令牌-HSECRET"
                                   (with-temp-buffer
                                     (insert-file-contents record)
                                     (buffer-string))))
            (agent-shell-rpc-request-sync
             conn "session/cancel" `((sessionId . ,(alist-get 'sessionId result))) 10)))
      (agent-shell-rpc-stop conn)
      ;; The fixture serves from a child in its process group: end them both.
      (signal-process (- (process-id (car fixture))) 'kill)
      (delete-process (car fixture))
      (delete-file record)
      (delete-directory memory t))))

(ert-deftest test-mcp/status-update-shows-notice-and-count ()
  "An `mcp_servers' update puts its notice in the transcript and the count in the header."
  (with-temp-buffer
    (agent-shell--setup "mcp-test" temporary-file-directory nil)
    (agent-shell-transcript-apply-update
     '((sessionUpdate . "mcp_servers") (connected . 1) (configured . 2)
       (servers . [((name . "git") (status . "failed"))])
       (notice . "MCP server git stopped again after a restart; not restarted")))
    (should (string-search "MCP server git stopped again after a restart"
                           (buffer-substring-no-properties
                            (point-min) (agent-shell-session-output-marker agent-shell--session))))
    (should (string-search "│ MCP 1/2" (agent-shell-header-line)))
    (agent-shell-mcp-on-status '((servers . []) (connected . 0) (configured . 0)))
    (should-not (string-search "MCP" (agent-shell-header-line)))))

(provide 'test-mcp)
;;; test-mcp.el ends here
