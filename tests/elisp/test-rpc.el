;;; test-rpc.el --- Tests of the connection to the bridge  -*- lexical-binding: t; -*-

;; SPDX-License-Identifier: GPL-3.0-or-later

;;; Commentary:

;; agent-shell-rpc.el and the two files it joins, the JSON-RPC protocol
;; and the HTTP transport.  The parser tests replay bytes recorded from
;; the real bridge (tests/fixtures/sse, written by record.py there)
;; through the HTTP and SSE parsers in random pieces of 1 to 7 bytes.
;; The protocol runs over a transport made in the test, with no HTTP at
;; all.  The connection tests run the real bridge
;; (AGENT_SHELL_TEST_BRIDGE, else the checkout's .venv) with its debug
;; methods switched on, and talk to it over real loopback HTTP.  Waiting
;; is always on a condition, bounded by a timeout.

;;; Code:

(require 'ert)
(require 'cl-lib)
(require 'subr-x)
(require 'agent-shell-rpc)

(defconst test-rpc--dir
  (file-name-directory (or load-file-name buffer-file-name))
  "Directory of this file.")

(defconst test-rpc--fixtures
  (expand-file-name "../fixtures/sse/" test-rpc--dir)
  "Recorded bridge streams.")

(defconst test-rpc--bridge
  (let ((env (getenv "AGENT_SHELL_TEST_BRIDGE")))
    (if (and env (not (string-empty-p env)))
        env
      (expand-file-name "../../.venv/bin/agent-shell-bridge" test-rpc--dir)))
  "The bridge program the tests run.")

(defconst test-rpc--chinese "中文测试 🚀 e\u0301"
  "Text that must survive every trip byte for byte.")

;;; Helpers

(defun test-rpc--bytes (name)
  "Return the bytes of fixture NAME as a unibyte string."
  (with-temp-buffer
    (set-buffer-multibyte nil)
    (insert-file-contents-literally (expand-file-name name test-rpc--fixtures))
    (buffer-string)))

(defun test-rpc--json-file (name)
  "Return the fixture NAME parsed with the JSON options of the RPC layer."
  (json-parse-string (decode-coding-string (test-rpc--bytes name) 'utf-8)
                     :object-type 'alist :array-type 'list
                     :null-object nil :false-object :json-false))

(defun test-rpc--pieces (bytes seed)
  "Split BYTES into pieces of 1 to 7 bytes, reproducibly from SEED."
  (random (format "test-rpc-%s" seed))
  (let ((pieces nil) (i 0) (n (length bytes)))
    (while (< i n)
      (let ((j (min n (+ i 1 (random 7)))))
        (push (substring bytes i j) pieces)
        (setq i j)))
    (nreverse pieces)))

(defun test-rpc--parse-response (bytes seed)
  "Feed BYTES in pieces (SEED) to a response parser.
Return (STATUS HEADERS BODY DONE-COUNT MAX-BUFFERED), BODY unibyte."
  (let ((http (agent-shell-rpc-http--response-new)) (body nil) (done 0) (max-buffered 0))
    (unwind-protect
        (progn
          (dolist (piece (test-rpc--pieces bytes seed))
            (dolist (ev (agent-shell-rpc-http--response-feed http piece))
              (pcase (car ev)
                ('body (push (cdr ev) body))
                ('done (cl-incf done))))
            (setq max-buffered (max max-buffered
                                    (buffer-size (agent-shell-rpc-http--response-buffer http)))))
          (list (agent-shell-rpc-http--response-status http)
                (agent-shell-rpc-http--response-headers http)
                (apply #'concat (nreverse body))
                done
                max-buffered))
      (agent-shell-rpc-http--response-discard http))))

(defun test-rpc--stream-events (bytes seed)
  "Parse the HTTP SSE response BYTES in pieces (SEED); return the events.
The body goes from the HTTP parser's buffer to the SSE parser's, as
on a real event stream."
  (let* ((sse (agent-shell-rpc-http--sse-new))
         (http (agent-shell-rpc-http--response-new (agent-shell-rpc-http--sse-buffer sse)))
         (events nil))
    (unwind-protect
        (dolist (piece (test-rpc--pieces bytes seed) (nreverse events))
          (dolist (ev (agent-shell-rpc-http--response-feed http piece))
            (when (eq (car ev) 'body)
              (should-not (cdr ev))
              (dolist (e (agent-shell-rpc-http--sse-parse sse))
                (push e events)))))
      (agent-shell-rpc-http--response-discard http))))

(defun test-rpc--event-alist (event)
  "Turn a parsed SSE EVENT plist into the shape of the .json fixtures."
  `((id . ,(plist-get event :id))
    (event . ,(plist-get event :event))
    (data . ,(plist-get event :data))))

(defun test-rpc--wait (predicate &optional timeout)
  "Wait until PREDICATE gives non-nil, at most TIMEOUT seconds (default 10).
Return its value, or nil on timeout."
  (let ((deadline (+ (float-time) (or timeout 10))) (value nil))
    (while (and (not (setq value (funcall predicate)))
                (< (float-time) deadline))
      (accept-process-output nil 0.02))
    value))

(defun test-rpc--start (&rest args)
  "Start the real bridge with its debug methods, passing ARGS on."
  (apply #'agent-shell-rpc-start
         :command (list test-rpc--bridge)
         :directory temporary-file-directory
         :environment '("AGENT_SHELL_BRIDGE_DEBUG=1")
         :name "test-rpc-bridge"
         :ready-timeout 30
         args))

(defmacro test-rpc--with-bridge (spec &rest body)
  "Run BODY with (VAR START-ARGS...) in SPEC bound to a started bridge.
The bridge and the message hook are cleaned up afterwards."
  (declare (indent 1))
  `(let* ((agent-shell-rpc-message-functions nil)
          (,(car spec) (test-rpc--start ,@(cdr spec))))
     (unwind-protect (progn ,@body)
       (agent-shell-rpc-stop ,(car spec)))))

(defun test-rpc--timers-of (conn)
  "Return the timers that still refer to CONN."
  (cl-remove-if-not (lambda (timer) (memq conn (timer--args timer)))
                    (append timer-list timer-idle-list)))

(defun test-rpc--collector ()
  "Return (HOOK-FN . GETTER) collecting messages the hook sees."
  (let ((seen nil))
    (cons (lambda (_conn message) (push message seen))
          (lambda () (reverse seen)))))

(defun test-rpc--emit (conn messages &optional count)
  "Publish MESSAGES (a list) COUNT times on CONN's event stream."
  (agent-shell-rpc-request-sync
   conn "debug/emit"
   `((messages . ,(vconcat messages)) ,@(and count `((count . ,count))))))

(defun test-rpc--note (n)
  "Return a notification numbered N."
  `((jsonrpc . "2.0") (method . "test/note") (params (n . ,n))))

;;; Parsers fed recorded bytes

(ert-deftest test-rpc/http-content-length-responses ()
  "Recorded POST /rpc responses parse the same whatever the read sizes."
  (dolist (case '(("rpc-ping" 200) ("rpc-unknown" 200) ("rpc-unauthorized" 401)))
    (let ((bytes (test-rpc--bytes (concat (car case) ".http")))
          (expected (test-rpc--json-file (concat (car case) ".json"))))
      (dotimes (seed 20)
        (pcase-let ((`(,status ,headers ,body ,done ,_) (test-rpc--parse-response bytes seed)))
          (should (equal status (cadr case)))
          (should (equal (cdr (assoc "content-type" headers)) "application/json"))
          (should (= done 1))
          (should (equal (agent-shell-rpc-http--decode body) expected)))))
    (let ((unknown (test-rpc--json-file "rpc-unknown.json")))
      (should (string= (alist-get 'message (alist-get 'error unknown))
                       "Method not found: no/such/方法")))))

(ert-deftest test-rpc/http-chunked-event-stream ()
  "The recorded GET /events stream decodes to the recorded messages."
  (let ((bytes (test-rpc--bytes "events-bridge.http"))
        (expected (test-rpc--json-file "events-bridge.json")))
    (should (= (length expected) 5))
    (dotimes (seed 4)
      (let ((events (mapcar #'test-rpc--event-alist (test-rpc--stream-events bytes seed))))
        (should (equal events expected))
        (should (string= (alist-get 'text (alist-get 'content (alist-get 'update
                                                                         (alist-get 'params (alist-get 'data (car events))))))
                         test-rpc--chinese))
        (should (string= (alist-get 'text (alist-get 'params (alist-get 'data (nth 3 events))))
                         (make-string 3000 ?长)))))))

(ert-deftest test-rpc/http-chunks-split-characters ()
  "Chunk boundaries inside multi-byte characters do not corrupt text."
  (let* ((bytes (test-rpc--bytes "events-rechunked.http"))
         (expected (test-rpc--json-file "events-bridge.json"))
         (http (agent-shell-rpc-http--response-new))
         (split-char nil))
    ;; The fixture really splits characters: some chunk alone is not UTF-8.
    (unwind-protect
        (dolist (ev (agent-shell-rpc-http--response-feed http bytes))
          (when (and (eq (car ev) 'body)
                     (cl-some (lambda (c) (eq (char-charset c) 'eight-bit))
                              (decode-coding-string (cdr ev) 'utf-8)))
            (setq split-char t)))
      (agent-shell-rpc-http--response-discard http))
    (should split-char)
    (dotimes (seed 3)
      (should (equal (mapcar #'test-rpc--event-alist (test-rpc--stream-events bytes seed))
                     expected)))))

(ert-deftest test-rpc/sse-syntax-edge-cases ()
  "Comments, CR/LF/CRLF ends, multi-line data, event, id and retry fields."
  (let ((bytes (test-rpc--bytes "events-edge.sse"))
        (expected (test-rpc--json-file "events-edge.json")))
    (dotimes (seed 30)
      (let ((sse (agent-shell-rpc-http--sse-new)) (events nil))
        (unwind-protect
            (progn
              (dolist (piece (test-rpc--pieces bytes seed))
                (setq events (append events (agent-shell-rpc-http--sse-feed sse piece))))
              (should (equal (mapcar #'test-rpc--event-alist events) expected))
              ;; The last event is still waiting for its blank line.
              (should (equal (agent-shell-rpc-http--sse-pending-data sse)
                             '("{\"never\":\"dispatched without a blank line\"}"))))
          (agent-shell-rpc-http--sse-discard sse))))))

(ert-deftest test-rpc/http-malformed-responses ()
  "Garbage from the network is an `agent-shell-rpc-http-error', not a crash."
  (dolist (bytes `("SMTP ready\r\n\r\n"
                   "HTTP/1.1 200 OK\r\nContent-Length: nine\r\n\r\n"
                   "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n"
                   "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nabc\r\n"
                   ,(concat "HTTP/1.1 200 OK\r\nX: " (make-string 70000 ?a))))
    (let ((http (agent-shell-rpc-http--response-new)))
      (unwind-protect
          (should-error (agent-shell-rpc-http--response-feed http bytes) :type 'agent-shell-rpc-http-error)
        (agent-shell-rpc-http--response-discard http)))))

(ert-deftest test-rpc/parser-state-stays-small ()
  "Parsed bytes are consumed, so a long stream keeps the buffers small."
  (let* ((event (encode-coding-string
                 (format "id: 1\r\ndata: {\"t\":\"%s\"}\r\n\r\n" test-rpc--chinese) 'utf-8))
         (chunk (concat (format "%x\r\n" (length event)) event "\r\n"))
         (stream (concat "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
                         (apply #'concat (make-list 400 chunk))))
         (sse (agent-shell-rpc-http--sse-new))
         (http (agent-shell-rpc-http--response-new (agent-shell-rpc-http--sse-buffer sse)))
         (count 0) (max-buffered 0) (max-pending 0))
    (unwind-protect
        (dolist (piece (test-rpc--pieces stream 1))
          (dolist (ev (agent-shell-rpc-http--response-feed http piece))
            (when (eq (car ev) 'body)
              (cl-incf count (length (agent-shell-rpc-http--sse-parse sse)))))
          (setq max-buffered (max max-buffered (buffer-size (agent-shell-rpc-http--response-buffer http)))
                max-pending (max max-pending
                                 (buffer-size (agent-shell-rpc-http--sse-buffer sse)))))
      (agent-shell-rpc-http--response-discard http))
    (should (= count 400))
    (should (< max-buffered 64))
    (should (< max-pending (length event)))
    (should-not (buffer-live-p (agent-shell-rpc-http--sse-buffer sse)))))

(ert-deftest test-rpc/long-event-in-many-reads ()
  "A 600 KB event arriving in 4 KB reads parses once, with its line searched once.
Regression guard: each read rescanned the unfinished line from its start."
  (let* ((text (apply #'concat (make-list 50000 "长文本🚀ab")))
         (bytes (concat "id: 9\r\ndata: " (agent-shell-json-bytes `((t . ,text))) "\r\n\r\n"))
         (sse (agent-shell-rpc-http--sse-new))
         (events nil))
    (should (> (length bytes) 600000))
    (unwind-protect
        (let ((i 0) (n (length bytes)))
          (while (< i n)
            (let ((j (min n (+ i 4096))))
              (setq events (append events (agent-shell-rpc-http--sse-feed sse (substring bytes i j))))
              (when (< j (- n 4))
                ;; Everything received is known to hold no line end yet.
                (with-current-buffer (agent-shell-rpc-http--sse-buffer sse)
                  (should (= (agent-shell-rpc-http--sse-seen sse) (point-max)))))
              (setq i j))))
      (agent-shell-rpc-http--sse-discard sse))
    (should (= (length events) 1))
    (should (equal (plist-get (car events) :id) "9"))
    (should (string= (alist-get 't (plist-get (car events) :data)) text))))

(ert-deftest test-rpc/repeated-event-ids-dropped ()
  "An event whose id is not above the last one seen is dropped."
  (let ((http (agent-shell-rpc-http-create :name "t" :last-event-id "5")))
    (should (equal (agent-shell-rpc-http--accept-events
                    http (list '(:id "4" :event "message" :data ((n . 4)))
                               '(:id "5" :event "message" :data ((n . 5)))
                               '(:id "6" :event "message" :data ((n . 6)))
                               '(:id "6" :event "message" :data ((n . 66)))
                               '(:id "7" :event "message" :error "bad" :text "not json")
                               '(:id "8" :event "message" :data ((n . 8)))))
                   '(("6" . ((n . 6))) ("8" . ((n . 8))))))
    (should (equal (agent-shell-rpc-http-last-event-id http) "8"))
    (should (= (agent-shell-rpc-http-duplicates http) 3))))

(ert-deftest test-rpc/default-command ()
  "The configured command wins, then AGENT_SHELL_TEST_BRIDGE, then the checkout."
  (let ((process-environment (cons "AGENT_SHELL_TEST_BRIDGE=/opt/bridge" process-environment))
        (agent-shell-bridge-command nil))
    (should (equal (agent-shell-rpc--default-command) '("/opt/bridge")))
    (let ((agent-shell-bridge-command '("uvx" "agent-shell-bridge")))
      (should (equal (agent-shell-rpc--default-command) '("uvx" "agent-shell-bridge")))))
  (let ((process-environment (cons "AGENT_SHELL_TEST_BRIDGE" process-environment))
        (agent-shell-bridge-command nil))
    (should (equal (agent-shell-rpc--default-command)
                   (list (expand-file-name "../../.venv/bin/agent-shell-bridge"
                                           test-rpc--dir))))))

(ert-deftest test-rpc/events-log-is-bounded ()
  "The *agent-shell events* buffer drops its oldest lines past the limit."
  (let ((agent-shell-log-events t) (agent-shell-rpc-log-max-chars 2000))
    (when (get-buffer "*agent-shell events*") (kill-buffer "*agent-shell events*"))
    (dotimes (i 300)
      (agent-shell-rpc-log nil "-->" (format "message %d 中文" i)))
    (with-current-buffer "*agent-shell events*"
      (should (<= (buffer-size) 2100))
      (should (string-match-p "message 299 中文\n\\'" (buffer-string)))
      (should-not (string-match-p "message 0 " (buffer-string))))
    (let ((agent-shell-log-events nil))
      (agent-shell-rpc-log nil "-->" "not logged")
      (with-current-buffer "*agent-shell events*"
        (should-not (string-match-p "not logged" (buffer-string)))))))

;;; The protocol over another transport

;; A connection type whose peer is a function in this Emacs: like a peer
;; on stdio, it takes each message and answers later through
;; `agent-shell-rpc-receive', never in the delivery itself.

(cl-defstruct (test-rpc--loop-conn
               (:include agent-shell-rpc-conn)
               (:constructor test-rpc--loop-make)
               (:copier nil))
  "A JSON-RPC connection to PEER, a function called with each message sent.
SENT holds the messages sent, newest first."
  peer (running t) sent)

(cl-defmethod agent-shell-rpc-running-p ((conn test-rpc--loop-conn))
  "Return whether the loop connection CONN runs."
  (test-rpc--loop-conn-running conn))

(cl-defmethod agent-shell-rpc-deliver ((conn test-rpc--loop-conn) bytes on-answer _on-lost)
  "Give the message BYTES to CONN's peer soon; tell ON-ANSWER it was taken."
  (let ((message (json-parse-string (decode-coding-string bytes 'utf-8)
                                    :object-type 'alist :array-type 'list
                                    :null-object nil :false-object :json-false)))
    (push message (test-rpc--loop-conn-sent conn))
    (funcall on-answer nil nil)
    (run-at-time 0 nil (test-rpc--loop-conn-peer conn) conn message)
    nil))

(defun test-rpc--loop-peer (conn message)
  "Answer MESSAGE sent on CONN as a small JSON-RPC peer would."
  (let ((id (alist-get 'id message))
        (params (alist-get 'params message)))
    (pcase (alist-get 'method message)
      ("echo" (agent-shell-rpc-receive
               conn `(((jsonrpc . "2.0") (id . ,id)
                       (result (echo . ,(alist-get 'text params)))))))
      ("refuse" (agent-shell-rpc-receive
                 conn `(((jsonrpc . "2.0") (id . ,id)
                         (error (code . ,agent-shell-rpc-code-invalid-params)
                                (message . "不行"))))))
      ("call-me-back" (agent-shell-rpc-receive
                       conn `(((jsonrpc . "2.0") (id . "peer-1") (method . "test-rpc/echo")
                               (params (text . ,(alist-get 'text params))))))))))

(ert-deftest test-rpc/protocol-runs-over-any-transport ()
  "Requests, answers, errors, the peer's requests and the end work without HTTP."
  (let* ((agent-shell-rpc-message-functions nil)
         (processes (process-list))
         (seen nil)
         (conn (test-rpc--loop-make :name "loop" :peer #'test-rpc--loop-peer)))
    (add-hook 'agent-shell-rpc-message-functions (lambda (_c m) (push m seen)))
    (should (agent-shell-rpc-live-p conn))
    (should (equal (agent-shell-rpc-request-sync conn "echo" `((text . ,test-rpc--chinese)))
                   `((echo . ,test-rpc--chinese))))
    (let ((err (should-error (agent-shell-rpc-request-sync conn "refuse" nil)
                             :type 'agent-shell-rpc-error)))
      (should (equal (alist-get 'message (nth 2 err)) "不行"))
      (should (= (alist-get 'code (nth 2 err)) agent-shell-rpc-code-invalid-params)))
    ;; The peer's own request reaches its handler, whose answer goes back.
    (agent-shell-rpc-notify conn "call-me-back" '((text . "回电")))
    (should (test-rpc--wait
             (lambda () (cl-find "peer-1" (test-rpc--loop-conn-sent conn)
                                 :key (lambda (m) (alist-get 'id m)) :test #'equal))))
    (should (equal (alist-get 'result (car (test-rpc--loop-conn-sent conn)))
                   '((echo . "回电"))))
    (should (= (length seen) 3))
    ;; The end fails what still waits, and nothing more is sent.
    (let ((err nil))
      (agent-shell-rpc-request conn "silence" nil :on-error (lambda (e) (setq err e)))
      (should (= (agent-shell-rpc-pending-count conn) 1))
      (setf (test-rpc--loop-conn-running conn) nil)
      (agent-shell-rpc-abandon conn "对端走了")
      (should (equal err `((code . ,agent-shell-rpc-code-disconnected) (message . "对端走了"))))
      (should-not (agent-shell-rpc-live-p conn))
      (should (= (agent-shell-rpc-pending-count conn) 0))
      ;; No timer of the protocol is left; the peer's own may be.
      (should-not (cl-remove #'test-rpc--loop-peer (test-rpc--timers-of conn)
                             :key #'timer--function))
      (should-error (agent-shell-rpc-notify conn "echo" nil) :type 'agent-shell-rpc-error))
    ;; No process was started (one an earlier test left may have ended meanwhile).
    (should-not (cl-set-difference (process-list) processes))))

;; The seam, as jsonrpc.el draws it: JSON-RPC apart from the transport.

(defun test-rpc--symbols-of (library)
  "Return the symbols the forms of LIBRARY's source mention."
  (let ((symbols nil))
    (with-temp-buffer
      (insert-file-contents (locate-library (concat library ".el") t))
      (condition-case nil
          (while t
            (let ((todo (list (read (current-buffer)))))
              (while todo
                (let ((form (pop todo)))
                  (cond ((symbolp form) (push form symbols))
                        ((consp form) (push (car form) todo) (push (cdr form) todo))
                        ((vectorp form) (setq todo (append form todo))))))))
        (end-of-file nil)))
    (delete-dups symbols)))

(defun test-rpc--defined-in (symbol)
  "Return the library defining SYMBOL as a function or variable, or nil."
  (let ((file (or (symbol-file symbol 'defun) (symbol-file symbol 'defvar))))
    (and file (file-name-base file))))

(ert-deftest test-rpc/protocol-and-transport-know-nothing-of-each-other ()
  "agent-shell-rpc-protocol.el uses nothing of agent-shell-rpc-http.el, nor the reverse.
agent-shell-rpc.el, which joins them, uses both."
  (pcase-dolist (`(,library . ,other) '(("agent-shell-rpc-protocol" . "agent-shell-rpc-http")
                                        ("agent-shell-rpc-http" . "agent-shell-rpc-protocol")))
    (let ((symbols (test-rpc--symbols-of library)))
      (should (equal (list library other
                           (cl-remove-if-not (lambda (s) (equal (test-rpc--defined-in s) other))
                                             symbols))
                     (list library other nil)))
      (should-not (memq (intern other) symbols))))
  (let ((joined (mapcar #'test-rpc--defined-in (test-rpc--symbols-of "agent-shell-rpc"))))
    (should (member "agent-shell-rpc-protocol" joined))
    (should (member "agent-shell-rpc-http" joined))))

;;; Error codes

(defconst test-rpc--bridge-errors
  (expand-file-name "../../bridge/agent_shell_bridge/errors.py" test-rpc--dir)
  "The module of the bridge that gives each error its code.")

(defun test-rpc--bridge-codes ()
  "Return the bridge's error classes and codes, an alist (CLASS . CODE)."
  (with-temp-buffer
    (insert-file-contents test-rpc--bridge-errors)
    (let ((codes nil))
      (while (re-search-forward "^class \\([A-Za-z_]+\\)(" nil t)
        (let ((class (match-string 1))
              (end (save-excursion
                     (if (re-search-forward "^class " nil t) (match-beginning 0)
                       (point-max)))))
          (when (re-search-forward "^    code\\(?:: ClassVar\\[int\\]\\)? = \\(-[0-9]+\\)$"
                                   end t)
            (push (cons class (string-to-number (match-string 1))) codes))
          (goto-char end)))
      (nreverse codes))))

(ert-deftest test-rpc/error-codes-are-the-bridges ()
  "Each named error code is the code of the bridge's error of that meaning.
The codes Emacs alone gives are none of the bridge's."
  (let ((bridge (test-rpc--bridge-codes)))
    (should (> (length bridge) 20))
    (pcase-dolist (`(,name . ,class)
                   '((agent-shell-rpc-code-parse-error . "RpcParseError")
                     (agent-shell-rpc-code-invalid-request . "InvalidRequest")
                     (agent-shell-rpc-code-method-not-found . "MethodNotFound")
                     (agent-shell-rpc-code-invalid-params . "InvalidParams")
                     (agent-shell-rpc-code-internal-error . "BridgeError")
                     (agent-shell-rpc-code-tool-failed . "ToolFailed")
                     (agent-shell-rpc-code-unauthorized . "Unauthorized")))
      (should (equal (list name (symbol-value name))
                     (list name (cdr (assoc class bridge))))))
    (dolist (name '(agent-shell-rpc-code-transport agent-shell-rpc-code-timeout
                    agent-shell-rpc-code-disconnected))
      (should (<= -32099 (symbol-value name) -32000))
      (should-not (rassq (symbol-value name) bridge)))))

;;; The real bridge

(ert-deftest test-rpc/start-initialize-ping ()
  "A started bridge answers initialize and ping, sync and async."
  (let ((ready nil) (agent-shell-log-events t))
    (when (get-buffer "*agent-shell events*") (kill-buffer "*agent-shell events*"))
    (test-rpc--with-bridge (conn :on-ready (lambda (c) (setq ready c)))
      (should (eq ready conn))
      (should (agent-shell-rpc-live-p conn))
      (should (integerp (agent-shell-rpc-http-port (agent-shell-rpc-bridge-conn-http conn))))
      (let ((init (agent-shell-rpc-request-sync
                   conn "initialize"
                   `((protocolVersion . 1)
                     (clientInfo (name . "emacs-test") (title . ,test-rpc--chinese))
                     (clientCapabilities (tools . ["open_file"]))))))
        (should (equal (alist-get 'protocolVersion init) 1))
        (should (member "ping" (alist-get 'methods init)))
        (should (member "debug/emit" (alist-get 'methods init))))
      (let ((got nil))
        (agent-shell-rpc-request conn "ping" nil :on-success (lambda (r) (setq got r)))
        (should (= (agent-shell-rpc-pending-count conn) 1))
        (should (test-rpc--wait (lambda () got)))
        (should (eq (alist-get 'pong got) t))
        (should (= (agent-shell-rpc-pending-count conn) 0)))
      (with-current-buffer "*agent-shell events*"
        (should (string-match-p "\"method\":\"ping\"" (buffer-string)))
        (should (string-match-p (regexp-quote test-rpc--chinese) (buffer-string)))))))

(ert-deftest test-rpc/errors-reach-on-error ()
  "Unknown methods and a wrong token give JSON-RPC errors to :on-error."
  (test-rpc--with-bridge (conn)
    (let ((err nil))
      (agent-shell-rpc-request conn "no/such/method" nil :on-error (lambda (e) (setq err e)))
      (should (test-rpc--wait (lambda () err)))
      (should (= (alist-get 'code err) agent-shell-rpc-code-method-not-found)))
    (let ((sig (should-error (agent-shell-rpc-request-sync conn "no/such/method" nil)
                             :type 'agent-shell-rpc-error)))
      (should (string-match-p "no/such/method" (cadr sig)))
      (should (= (alist-get 'code (nth 2 sig)) agent-shell-rpc-code-method-not-found)))
    ;; Same bridge, wrong token: the bridge refuses with 401 and -32040.
    (let ((impostor (agent-shell-rpc--make-bridge-conn
                     :name "impostor"
                     :process (agent-shell-rpc-bridge-conn-process conn)
                     :http (agent-shell-rpc-http-create
                            :port (agent-shell-rpc-http-port
                                   (agent-shell-rpc-bridge-conn-http conn))
                            :token "wrong")))
          (err nil))
      (agent-shell-rpc-request impostor "ping" nil :on-error (lambda (e) (setq err e)))
      (should (test-rpc--wait (lambda () err)))
      (should (= (alist-get 'code err) agent-shell-rpc-code-unauthorized)))))

(ert-deftest test-rpc/chinese-round-trip ()
  "Chinese, emoji and combining marks come back over SSE unchanged."
  (test-rpc--with-bridge (conn)
    (let* ((collector (test-rpc--collector))
           (long (apply #'concat (make-list 20000 "中文🚀")))
           (messages `(((jsonrpc . "2.0") (method . "test/text")
                        (params (text . ,test-rpc--chinese)))
                       ((jsonrpc . "2.0") (method . "test/text")
                        (params (text . ,long))))))
      (add-hook 'agent-shell-rpc-message-functions (car collector))
      (test-rpc--emit conn messages)
      (should (test-rpc--wait (lambda () (= (length (funcall (cdr collector))) 2))))
      (let ((seen (funcall (cdr collector))))
        (should (string= (alist-get 'text (alist-get 'params (car seen))) test-rpc--chinese))
        (should (string= (alist-get 'text (alist-get 'params (cadr seen))) long))))))

(ert-deftest test-rpc/notifications-in-order ()
  "Many notifications arrive through the hook once each, in order."
  (test-rpc--with-bridge (conn)
    (let ((collector (test-rpc--collector)))
      (add-hook 'agent-shell-rpc-message-functions (car collector))
      (test-rpc--emit conn (mapcar #'test-rpc--note (number-sequence 1 200)))
      (should (test-rpc--wait (lambda () (>= (length (funcall (cdr collector))) 200))))
      (should (equal (mapcar (lambda (m) (alist-get 'n (alist-get 'params m)))
                             (funcall (cdr collector)))
                     (number-sequence 1 200))))))

(ert-deftest test-rpc/survives-dropped-stream ()
  "After the bridge drops the stream, events are neither lost nor doubled."
  (test-rpc--with-bridge (conn)
    (let ((collector (test-rpc--collector))
          (numbers (lambda (seen) (mapcar (lambda (m) (alist-get 'n (alist-get 'params m))) seen))))
      (add-hook 'agent-shell-rpc-message-functions (car collector))
      (test-rpc--emit conn (mapcar #'test-rpc--note (number-sequence 1 5)))
      (should (test-rpc--wait (lambda () (= (length (funcall (cdr collector))) 5))))
      (let ((first-stream (agent-shell-rpc-http-events-process (agent-shell-rpc-bridge-conn-http conn))))
        (agent-shell-rpc-request-sync conn "debug/drop_streams" nil)
        ;; Emitted while the client is (most likely) between streams.
        (test-rpc--emit conn (mapcar #'test-rpc--note (number-sequence 6 10)))
        (test-rpc--emit conn (mapcar #'test-rpc--note (number-sequence 11 12)))
        (should (test-rpc--wait (lambda () (>= (length (funcall (cdr collector))) 12))))
        (should-not (eq first-stream (agent-shell-rpc-http-events-process (agent-shell-rpc-bridge-conn-http conn)))))
      ;; A marker emitted last proves nothing else is still on its way.
      (test-rpc--emit conn (list (test-rpc--note 13)))
      (should (test-rpc--wait (lambda () (>= (length (funcall (cdr collector))) 13))))
      (should (equal (funcall numbers (funcall (cdr collector))) (number-sequence 1 13)))
      (should (equal (agent-shell-rpc-http-last-event-id (agent-shell-rpc-bridge-conn-http conn)) "13"))
      ;; Resuming with Last-Event-ID replayed only what was missed.
      (should (= (agent-shell-rpc-http-duplicates (agent-shell-rpc-bridge-conn-http conn)) 0)))))

(ert-deftest test-rpc/notification-reaches-bridge ()
  "`agent-shell-rpc-notify' delivers a notification the bridge acts on."
  (test-rpc--with-bridge (conn)
    (let ((collector (test-rpc--collector)))
      (add-hook 'agent-shell-rpc-message-functions (car collector))
      ;; debug/emit sent as a notification still publishes its messages.
      (agent-shell-rpc-notify conn "debug/emit"
                              `((messages . ,(vector (test-rpc--note test-rpc--chinese)))))
      (should (test-rpc--wait (lambda () (funcall (cdr collector)))))
      (should (string= (alist-get 'n (alist-get 'params (car (funcall (cdr collector)))))
                       test-rpc--chinese))
      (should (= (agent-shell-rpc-pending-count conn) 0)))))

(cl-defmethod agent-shell-rpc-handle (_conn (_method (eql 'test/note)) _params _id)
  "Ignore test notifications, which are observed through the hook.")

(cl-defmethod agent-shell-rpc-handle (_conn (_method (eql 'test/text)) _params _id)
  "Ignore test notifications, which are observed through the hook.")

(cl-defmethod agent-shell-rpc-handle (conn (_method (eql 'test-rpc/echo)) params id)
  "Answer the test request ID on CONN with the text in PARAMS."
  (agent-shell-rpc-respond conn id `((echo . ,(alist-get 'text params)))))

(cl-defmethod agent-shell-rpc-handle (_conn (_method (eql 'test-rpc/broken)) _params _id)
  "A handler that fails."
  (error "Deliberate failure in a handler"))

(ert-deftest test-rpc/bridge-requests-answered ()
  "A bridge request reaches its handler and the answer reaches the bridge."
  (test-rpc--with-bridge (conn)
    (let ((reply (agent-shell-rpc-request-sync
                  conn "debug/client_request"
                  `((method . "test-rpc/echo") (params (text . ,test-rpc--chinese))))))
      (should (string= (alist-get 'echo (alist-get 'result reply)) test-rpc--chinese)))
    ;; No handler: the default method answers "method not found" so the bridge
    ;; does not hang.
    (let ((sig (should-error (agent-shell-rpc-request-sync
                              conn "debug/client_request" '((method . "test-rpc/nobody")))
                             :type 'agent-shell-rpc-error)))
      (should (string-match-p "Method not found in Emacs: test-rpc/nobody" (cadr sig))))
    ;; A failing handler is caught and answered with an error.
    (let ((sig (should-error (let ((debug-on-error nil))
                               (agent-shell-rpc-request-sync
                                conn "debug/client_request" '((method . "test-rpc/broken"))))
                             :type 'agent-shell-rpc-error)))
      (should (string-match-p "Deliberate failure" (cadr sig))))
    (should (agent-shell-rpc-live-p conn))))

(defvar test-rpc--quit-probe nil
  "The value of `inhibit-quit' seen by the quitting handler.")

(cl-defmethod agent-shell-rpc-handle (_conn (_method (eql 'test-rpc/quit)) _params _id)
  "Record whether quitting is allowed here, then quit as C-g would."
  (setq test-rpc--quit-probe (list :inhibit-quit inhibit-quit))
  (signal 'quit nil))

(ert-deftest test-rpc/handlers-can-be-quit ()
  "Regression: handlers (Emacs-side tools) ran in the process filter, where C-g is off.
They now run from a timer with quitting allowed; a quit ends only that
handler, the bridge's request is answered with an error, and later
messages are still handled."
  (test-rpc--with-bridge (conn)
    (setq test-rpc--quit-probe nil)
    (let ((sig (should-error (agent-shell-rpc-request-sync
                              conn "debug/client_request" '((method . "test-rpc/quit")))
                             :type 'agent-shell-rpc-error)))
      (should (string-match-p "Cancelled by the user" (cadr sig))))
    (should (equal test-rpc--quit-probe '(:inhibit-quit nil)))
    (should-not quit-flag)
    (let ((reply (agent-shell-rpc-request-sync
                  conn "debug/client_request"
                  `((method . "test-rpc/echo") (params (text . ,test-rpc--chinese))))))
      (should (string= (alist-get 'echo (alist-get 'result reply)) test-rpc--chinese)))))

(ert-deftest test-rpc/unserialisable-params-leave-nothing-pending ()
  "Regression: a request whose params cannot be encoded stayed pending with a timer.
The JSON is now made before the request is registered."
  (test-rpc--with-bridge (conn)
    (should-error (agent-shell-rpc-request conn "ping" `((bad . ,(make-marker)))))
    (should (= (agent-shell-rpc-pending-count conn) 0))
    (should-not (test-rpc--timers-of conn))))

(ert-deftest test-rpc/failed-post-warns-instead-of-crashing ()
  "Regression: a notification whose connection failed crashed its callback.
The body is then a reason string, not a JSON object."
  (let* ((server (make-network-process :name "test-rpc-closed" :server t
                                       :host "127.0.0.1" :service t :noquery t))
         (port (process-contact server :service))
         (conn (agent-shell-rpc--make-bridge-conn
                :name "test-rpc-dead-port"
                :http (agent-shell-rpc-http-create :port port :token "t")))
         (done 'unset)
         (warned nil))
    (delete-process server)
    (cl-letf (((symbol-function 'display-warning)
               (lambda (_type text &rest _) (setq warned text))))
      (agent-shell-rpc--send-quietly conn '(:jsonrpc "2.0" :method "x") "a test"
                                     (lambda (ok) (setq done ok)))
      (should (test-rpc--wait (lambda () warned) 5)))
    (should (string-match-p "Sending a test to the bridge failed" warned))
    (should (null done))))

(ert-deftest test-rpc/request-timeout ()
  "A request the bridge does not answer in time fails with a clear message."
  (test-rpc--with-bridge (conn)
    (let ((pid (process-id (agent-shell-rpc-bridge-conn-process conn))) (err nil))
      (signal-process pid 'SIGSTOP)
      (unwind-protect
          (progn
            (agent-shell-rpc-request conn "ping" nil :timeout 0.3
                                     :on-error (lambda (e) (setq err e)))
            (should (test-rpc--wait (lambda () err)))
            (should (string-match-p "did not answer ping within 0.3 s" (alist-get 'message err)))
            (should (= (agent-shell-rpc-pending-count conn) 0)))
        (signal-process pid 'SIGCONT))
      (should (eq (alist-get 'pong (agent-shell-rpc-request-sync conn "ping" nil)) t)))))

(defun test-rpc--check-death (kill)
  "Start a bridge, leave a request pending, end it with KILL; check the fallout."
  (let* ((agent-shell-rpc-message-functions nil)
         (exit nil)
         (conn (test-rpc--start :on-exit (lambda (c reason) (setq exit (list c reason)))))
         (pid (process-id (agent-shell-rpc-bridge-conn-process conn)))
         (err nil))
    (unwind-protect
        (progn
          ;; A stopped bridge accepts the connection but never answers.
          (signal-process pid 'SIGSTOP)
          (agent-shell-rpc-request conn "ping" nil :timeout 20
                                   :on-error (lambda (e) (setq err e)))
          (should (= (agent-shell-rpc-pending-count conn) 1))
          (funcall kill conn pid)
          (should (test-rpc--wait (lambda () err)))
          (should (string-match-p "The bridge exited (.*); M-x agent-shell-start restarts it"
                                  (alist-get 'message err)))
          (should (= (alist-get 'code err) agent-shell-rpc-code-disconnected))
          (should-not (agent-shell-rpc-live-p conn))
          (should (= (agent-shell-rpc-pending-count conn) 0))
          (should (eq (car exit) conn))
          (should (stringp (cadr exit)))
          (should-not (test-rpc--timers-of conn))
          (should-error (agent-shell-rpc-request conn "ping" nil) :type 'agent-shell-rpc-error))
      (ignore-errors (signal-process pid 'SIGKILL))
      (agent-shell-rpc-stop conn))))

(ert-deftest test-rpc/killed-bridge-fails-pending ()
  "SIGKILL of the bridge fails pending requests and runs :on-exit."
  (test-rpc--check-death (lambda (_conn pid) (signal-process pid 'SIGKILL))))

(ert-deftest test-rpc/deleted-process-fails-pending ()
  "`delete-process' on the bridge fails pending requests and runs :on-exit."
  (test-rpc--check-death (lambda (conn _pid) (delete-process (agent-shell-rpc-bridge-conn-process conn)))))

(ert-deftest test-rpc/stop-ends-process ()
  "`agent-shell-rpc-stop' shuts the bridge down and leaves nothing behind."
  (let* ((http-buffers
          (lambda ()
            (cl-remove-if-not
             (lambda (b) (string-prefix-p " *agent-shell-rpc http" (buffer-name b)))
             (buffer-list))))
         ;; Other suites in the same Emacs may hold connections of their own.
         (before (funcall http-buffers))
         (exit nil)
         (conn (test-rpc--start :on-exit (lambda (_c reason) (setq exit reason))))
         (proc (agent-shell-rpc-bridge-conn-process conn)))
    (agent-shell-rpc-request-sync conn "ping" nil)
    (agent-shell-rpc-stop conn)
    (should-not (process-live-p proc))
    (should-not (agent-shell-rpc-live-p conn))
    (should-not (process-live-p (agent-shell-rpc-bridge-conn-stderr-process conn)))
    (should-not (agent-shell-rpc-http-events-process (agent-shell-rpc-bridge-conn-http conn)))
    (should (stringp exit))
    (should-not (test-rpc--timers-of conn))
    ;; The bridge left by itself: the polite shutdown worked.
    (should (memq (process-status proc) '(exit)))
    (should-not (cl-set-difference (funcall http-buffers) before))
    (should-error (agent-shell-rpc-request-sync conn "ping" nil) :type 'agent-shell-rpc-error)))

(ert-deftest test-rpc/start-failure-shows-stderr ()
  "A bridge that dies before its ready line is reported with its stderr."
  (let ((sig (should-error
              (agent-shell-rpc-start
               :command '("sh" "-c" "echo 'cannot bind: 端口 busy' >&2; exit 3" "sh")
               :name "test-rpc-broken" :ready-timeout 10)
              :type 'agent-shell-rpc-error)))
    (should (string-match-p "did not start" (cadr sig)))
    (should (string-match-p "cannot bind: 端口 busy" (cadr sig))))
  (let ((sig (should-error
              (agent-shell-rpc-start :command '("sh" "-c" "echo not-json; sleep 5" "sh")
                                     :name "test-rpc-chatty" :ready-timeout 10)
              :type 'agent-shell-rpc-error)))
    (should (string-match-p "unexpected first line" (cadr sig)))))

(ert-deftest test-rpc/events-log-masks-what-a-request-carries-in-secret ()
  "Header and env values, secret-named keys and URL user info never reach the log."
  (let* ((params `((cwd . "/tmp/项目")
                   (mcpServers . [((type . "http") (name . "web")
                                   (url . "https://alice:PW1@mcp.example.com/mcp?key=Q1")
                                   (headers . [((name . "Authorization") (value . "Bearer H1"))]))
                                  ((name . "db") (command . "uvx")
                                   (env . [((name . "DATABASE_URL") (value . "postgres://u:P2@h/db"))]))])
                   (model . ((model . "deepseek-chat") (apiKey . "sk-K1")))))
         (shown (decode-coding-string
                 (agent-shell-rpc--encode (agent-shell-rpc--redact params)) 'utf-8)))
    (dolist (secret '("PW1" "Q1" "H1" "P2" "sk-K1"))
      (should-not (string-search secret shown)))
    (should (string-search "\"url\":\"https://mcp.example.com/mcp?***\"" shown))
    (should (string-search "{\"name\":\"Authorization\",\"value\":\"***\"}" shown))
    (should (string-search "{\"name\":\"DATABASE_URL\",\"value\":\"***\"}" shown))
    (should (string-search "\"cwd\":\"/tmp/项目\"" shown))
    ;; What is sent is untouched.
    (should (string-search "Bearer H1" (decode-coding-string
                                        (agent-shell-rpc--encode params) 'utf-8)))))

(provide 'test-rpc)
;;; test-rpc.el ends here
