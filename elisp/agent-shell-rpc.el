;;; agent-shell-rpc.el --- Bridge process, HTTP/1.1 client, SSE and JSON-RPC  -*- lexical-binding: t; -*-

;; SPDX-License-Identifier: GPL-3.0-or-later

;;; Commentary:

;; The connection between Emacs and the agent-shell bridge (a Python
;; program, see doc/protocol.org).  This file knows nothing of the UI.
;;
;; - `agent-shell-rpc-start' runs "agent-shell-bridge serve --port 0",
;;   reads its one-line JSON ready message (port, token) and opens the
;;   event stream.
;; - Requests, notifications and responses go out as "POST /rpc" over a
;;   small HTTP/1.1 client of our own, built on `make-network-process'.
;;   url.el is avoided on purpose: it routes loopback traffic through
;;   proxy settings, and curl would be one more dependency.
;; - Messages from the bridge arrive on a persistent "GET /events"
;;   Server-Sent Events stream (chunked transfer coding).  When that
;;   stream drops, it is reopened with Last-Event-ID after a short delay,
;;   and events already seen are dropped, so none is lost or doubled.
;; - Every incoming message runs `agent-shell-rpc-message-functions' and
;;   is then dispatched to the generic function `agent-shell-rpc-handle',
;;   on which UI files define methods such as
;;
;;     (cl-defmethod agent-shell-rpc-handle
;;         (conn (_method (eql \\='session/update)) params _id) ...)
;;
;;   A handler for a request (ID non-nil) answers it, now or later, with
;;   `agent-shell-rpc-respond' or `agent-shell-rpc-respond-error'.
;;
;; Bytes are decoded as UTF-8 only once a body or an SSE line is
;; complete, so a multi-byte character split across reads or chunks
;; survives.  Parsers consume what they have parsed, so the cost of a
;; chunk does not grow with the length of the session.
;;
;; JSON: incoming objects are alists, arrays lists, null nil and false
;; `:json-false'.  Outgoing values go through `json-serialize': objects
;; are alists, plists or hash tables, arrays MUST be vectors, null is
;; `:null', false is `:json-false', and nil is the empty object.
;;
;; Client-side failures use codes of the JSON-RPC server range:
;; `agent-shell-rpc-code-timeout' (no answer in time),
;; `agent-shell-rpc-code-disconnected' (the bridge exited or the
;; connection failed) and `agent-shell-rpc-code-http' (an HTTP error
;; without a JSON-RPC body).

;;; Code:

(require 'cl-lib)
(require 'subr-x)

;;; Errors

(unless (get 'agent-shell-error 'error-conditions)
  (define-error 'agent-shell-error "agent-shell error"))

(define-error 'agent-shell-rpc-error "agent-shell bridge error" 'agent-shell-error)

(defconst agent-shell-rpc-code-timeout -32098
  "Error code given to a request the bridge did not answer in time.")

(defconst agent-shell-rpc-code-disconnected -32099
  "Error code given to a request lost because the bridge went away.")

(defconst agent-shell-rpc-code-http -32097
  "Error code for an HTTP error status without a JSON-RPC error body.")

;;; Options

(defgroup agent-shell-rpc nil
  "Connection between Emacs and the agent-shell bridge."
  :group 'agent-shell
  :prefix "agent-shell-rpc-")

(defcustom agent-shell-bridge-command nil
  "Program (and leading arguments) that runs the agent-shell bridge.
The arguments \"serve --port 0\" are appended.  nil means: the
program named by the environment variable AGENT_SHELL_TEST_BRIDGE
when set, else .venv/bin/agent-shell-bridge of the source checkout
this file was loaded from when it exists, else
\"agent-shell-bridge\" found on the variable `exec-path'."
  :type '(choice (const :tag "Automatic (checkout venv, then exec-path)" nil)
                 (repeat :tag "Program and arguments" string))
  :group 'agent-shell-rpc
  :package-version '(agent-shell . "0.1.0"))

(defcustom agent-shell-rpc-request-timeout 30
  "Seconds to wait for the answer to a request before giving up."
  :type 'number
  :group 'agent-shell-rpc
  :package-version '(agent-shell . "0.1.0"))

(defcustom agent-shell-rpc-ready-timeout 30
  "Seconds the bridge may take to print its ready line."
  :type 'number
  :group 'agent-shell-rpc
  :package-version '(agent-shell . "0.1.0"))

(defcustom agent-shell-rpc-reconnect-delays '(0.1 0.5 1 2 5)
  "Seconds to wait before successive attempts to reopen the event stream.
The last value repeats.  A stream that delivers data resets the
sequence."
  :type '(repeat number)
  :group 'agent-shell-rpc
  :package-version '(agent-shell . "0.1.0"))

(defcustom agent-shell-log-events nil
  "Non-nil means log bridge traffic to the buffer *agent-shell events*."
  :type 'boolean
  :group 'agent-shell-rpc
  :package-version '(agent-shell . "0.1.0"))

(defcustom agent-shell-rpc-log-max-chars 500000
  "Size beyond which the oldest text of *agent-shell events* is deleted."
  :type 'integer
  :group 'agent-shell-rpc
  :package-version '(agent-shell . "0.1.0"))

(defvar agent-shell-rpc-message-functions nil
  "Abnormal hook run for every message that arrives on the event stream.
Each function gets the connection and the decoded message alist,
before the message is dispatched to `agent-shell-rpc-handle'.")

(defconst agent-shell-rpc--checkout-bridge
  (let ((dir (file-name-directory (or load-file-name buffer-file-name ""))))
    (and dir (expand-file-name "../.venv/bin/agent-shell-bridge" dir)))
  "The bridge program of the source checkout holding this file.")

(defconst agent-shell-rpc--stderr-max-chars 100000
  "Size beyond which the oldest text of a bridge stderr buffer is deleted.")

;;; Connection object

(cl-defstruct (agent-shell-rpc-conn
               (:constructor agent-shell-rpc--make-conn)
               (:copier nil))
  "A running bridge and the state of the connection to it."
  process stderr-process port token pid name
  (next-id 0)
  (pending (make-hash-table :test #'eql))
  events-process
  last-event-id
  reconnect-timer
  (reconnect-attempt 0)
  on-exit on-ready
  ready stopping dead exit-reason
  inbox draining drain-timer
  (warned nil)
  (duplicates 0)
  stdout-acc)

(cl-defstruct (agent-shell-rpc--pending
               (:constructor agent-shell-rpc--make-pending)
               (:copier nil))
  "A request waiting for its answer."
  id method on-success on-error timer lost-timer process)

;;; Logging

(defun agent-shell-rpc--log (conn direction text)
  "Log TEXT under DIRECTION for CONN when `agent-shell-log-events' is set."
  (when agent-shell-log-events
    (with-current-buffer (get-buffer-create "*agent-shell events*")
      (unless (eq buffer-undo-list t)
        (setq buffer-undo-list t)
        (setq buffer-read-only t))
      (let ((inhibit-read-only t))
        (save-excursion
          (goto-char (point-max))
          (insert (format-time-string "[%H:%M:%S.%3N] ")
                  (if conn (or (agent-shell-rpc-conn-name conn) "") "")
                  " " direction " " text "\n"))
        (when (> (buffer-size) agent-shell-rpc-log-max-chars)
          (save-excursion
            (goto-char (- (point-max) (/ agent-shell-rpc-log-max-chars 2)))
            (forward-line 1)
            (delete-region (point-min) (point))))))))

;;; JSON

(defun agent-shell-rpc--check-json ()
  "Signal an error unless this Emacs has native JSON support."
  (unless (and (fboundp 'json-serialize) (fboundp 'json-parse-string))
    (signal 'agent-shell-rpc-error
            (list "This Emacs lacks native JSON (json-serialize); build it with libjansson"))))

(defun agent-shell-rpc--encode (object)
  "Return OBJECT serialised as JSON, as a unibyte UTF-8 string."
  (encode-coding-string
   (json-serialize object :null-object :null :false-object :json-false)
   'utf-8 t))

(defun agent-shell-rpc--decode (bytes)
  "Parse the complete UTF-8 JSON text BYTES (a unibyte string)."
  (json-parse-string (decode-coding-string bytes 'utf-8 t)
                     :object-type 'alist :array-type 'list
                     :null-object nil :false-object :json-false))

;;; HTTP/1.1 response parser

(cl-defstruct (agent-shell-rpc--http
               (:constructor agent-shell-rpc--http-make)
               (:copier nil))
  "Incremental parser of one HTTP/1.1 response.
BUFFER holds received bytes not yet consumed.  STATE is one of
`head', `body', `chunk-size', `chunk-data', `chunk-end',
`trailers', `until-close' and `done'."
  buffer (state 'head) status headers (remaining 0))

(defun agent-shell-rpc--http-new ()
  "Return a fresh response parser with its own hidden unibyte buffer."
  (let ((buf (generate-new-buffer " *agent-shell-rpc http*" t)))
    (with-current-buffer buf
      (set-buffer-multibyte nil)
      (setq buffer-undo-list t))
    (agent-shell-rpc--http-make :buffer buf)))

(defun agent-shell-rpc--http-discard (http)
  "Free the buffer of the parser HTTP."
  (let ((buf (agent-shell-rpc--http-buffer http)))
    (when (buffer-live-p buf)
      (kill-buffer buf))))

(defun agent-shell-rpc--http-header (http name)
  "Return the value of header NAME (lower case) in the response HTTP."
  (cdr (assoc name (agent-shell-rpc--http-headers http))))

(defun agent-shell-rpc--http-feed (http bytes)
  "Add the unibyte string BYTES to the parser HTTP.
Return the parse events, oldest first: (headers), (body . BYTES)
and (done).  Signal `agent-shell-rpc-error' on a malformed response."
  (let ((buf (agent-shell-rpc--http-buffer http)))
    (with-current-buffer buf
      (goto-char (point-max))
      (insert bytes)
      (agent-shell-rpc--http-parse http))))

(defun agent-shell-rpc--http-eof (http)
  "Tell the parser HTTP that the connection closed; return final events."
  (when (eq (agent-shell-rpc--http-state http) 'until-close)
    (setf (agent-shell-rpc--http-state http) 'done)
    (list '(done))))

(defconst agent-shell-rpc--max-line-bytes 65536
  "Longest status line, header block or chunk-size line accepted.")

(defun agent-shell-rpc--http-malformed (what)
  "Signal that the response is malformed, describing WHAT was wrong."
  (signal 'agent-shell-rpc-error (list (concat "Malformed HTTP response from the bridge: " what))))

(defun agent-shell-rpc--http-take (n)
  "Delete and return the first N bytes of the current buffer."
  (let* ((end (+ (point-min) n))
         (s (buffer-substring-no-properties (point-min) end)))
    (delete-region (point-min) end)
    s))

(defun agent-shell-rpc--http-line ()
  "Consume and return the first line of the buffer without its end.
Return nil when no complete line has arrived yet."
  (goto-char (point-min))
  (when (search-forward "\n" nil t)
    (let ((line (agent-shell-rpc--http-take (- (point) (point-min)))))
      (string-trim-right line "\r?\n"))))

(defun agent-shell-rpc--http-parse-head (http head)
  "Record the status line and headers in HEAD for the parser HTTP."
  (let* ((lines (split-string head "\r?\n" t))
         (status-line (car lines)))
    (unless (and status-line
                 (string-match "\\`HTTP/1\\.[01] \\([0-9][0-9][0-9]\\)" status-line))
      (agent-shell-rpc--http-malformed (format "bad status line %S" status-line)))
    (setf (agent-shell-rpc--http-status http)
          (string-to-number (match-string 1 status-line)))
    (setf (agent-shell-rpc--http-headers http)
          (mapcar (lambda (line)
                    (unless (string-match "\\`\\([^:[:space:]]+\\):[ \t]*\\(.*?\\)[ \t]*\\'" line)
                      (agent-shell-rpc--http-malformed (format "bad header %S" line)))
                    (cons (downcase (match-string 1 line)) (match-string 2 line)))
                  (cdr lines)))
    (let ((te (agent-shell-rpc--http-header http "transfer-encoding"))
          (cl (agent-shell-rpc--http-header http "content-length"))
          (status (agent-shell-rpc--http-status http)))
      (cond
       ((or (< status 200) (memq status '(204 304)))
        (setf (agent-shell-rpc--http-state http) 'done))
       ((and te (string-match-p "chunked" (downcase te)))
        (setf (agent-shell-rpc--http-state http) 'chunk-size))
       (cl
        (unless (string-match-p "\\`[0-9]+\\'" cl)
          (agent-shell-rpc--http-malformed (format "bad Content-Length %S" cl)))
        (setf (agent-shell-rpc--http-remaining http) (string-to-number cl))
        (setf (agent-shell-rpc--http-state http)
              (if (zerop (agent-shell-rpc--http-remaining http)) 'done 'body)))
       (t (setf (agent-shell-rpc--http-state http) 'until-close))))))

(defun agent-shell-rpc--http-parse (http)
  "Parse the bytes in the current buffer for HTTP; return the events."
  (let ((events nil) (more t))
    (while more
      (setq more nil)
      (pcase (agent-shell-rpc--http-state http)
        ('head
         (goto-char (point-min))
         (if (not (re-search-forward "\r?\n\r?\n" nil t))
             (when (> (buffer-size) agent-shell-rpc--max-line-bytes)
               (agent-shell-rpc--http-malformed "header block too long"))
           (let ((head (agent-shell-rpc--http-take (- (point) (point-min)))))
             (agent-shell-rpc--http-parse-head http head)
             (push '(headers) events)
             (when (eq (agent-shell-rpc--http-state http) 'done)
               (push '(done) events))
             (setq more t))))
        ((or 'body 'chunk-data)
         (let ((n (min (agent-shell-rpc--http-remaining http) (buffer-size))))
           (when (> n 0)
             (push (cons 'body (agent-shell-rpc--http-take n)) events)
             (cl-decf (agent-shell-rpc--http-remaining http) n))
           (when (zerop (agent-shell-rpc--http-remaining http))
             (if (eq (agent-shell-rpc--http-state http) 'body)
                 (progn (setf (agent-shell-rpc--http-state http) 'done)
                        (push '(done) events))
               (setf (agent-shell-rpc--http-state http) 'chunk-end)
               (setq more t)))))
        ('chunk-size
         (let ((line (agent-shell-rpc--http-line)))
           (when (and (null line) (> (buffer-size) agent-shell-rpc--max-line-bytes))
             (agent-shell-rpc--http-malformed "chunk-size line too long"))
           (when line
             (unless (string-match "\\`[ \t]*\\([0-9a-fA-F]+\\)[ \t]*\\(?:;.*\\)?\\'" line)
               (agent-shell-rpc--http-malformed (format "bad chunk size %S" line)))
             (let ((size (string-to-number (match-string 1 line) 16)))
               (setf (agent-shell-rpc--http-remaining http) size)
               (setf (agent-shell-rpc--http-state http)
                     (if (zerop size) 'trailers 'chunk-data)))
             (setq more t))))
        ('chunk-end
         (let ((line (agent-shell-rpc--http-line)))
           (when line
             (unless (string-empty-p line)
               (agent-shell-rpc--http-malformed "chunk longer than its size"))
             (setf (agent-shell-rpc--http-state http) 'chunk-size)
             (setq more t))))
        ('trailers
         (let ((line (agent-shell-rpc--http-line)))
           (when line
             (when (string-empty-p line)
               (setf (agent-shell-rpc--http-state http) 'done)
               (push '(done) events))
             (setq more t))))
        ('until-close
         (when (> (buffer-size) 0)
           (push (cons 'body (agent-shell-rpc--http-take (buffer-size))) events)))
        ('done
         ;; Bytes after the end of the response are ignored.
         (erase-buffer))))
    (nreverse events)))

;;; Server-Sent Events parser

(cl-defstruct (agent-shell-rpc--sse
               (:constructor agent-shell-rpc--sse-make)
               (:copier nil))
  "Incremental parser of a text/event-stream body.
FRAGMENTS holds, newest first, the bytes of the incomplete current
line; SKIP-LF is non-nil when the last byte seen was a CR (so an LF
starting the next input belongs to the same line end)."
  fragments skip-lf data event id)

(defun agent-shell-rpc--sse-feed (sse bytes)
  "Add the unibyte string BYTES to the SSE parser SSE.
Return the completed events, oldest first, each a plist with
:id, :event and :data (decoded strings)."
  (let ((start 0) (len (length bytes)) (events nil))
    (when (and (agent-shell-rpc--sse-skip-lf sse) (> len 0))
      (setf (agent-shell-rpc--sse-skip-lf sse) nil)
      (when (eq (aref bytes 0) ?\n)
        (setq start 1)))
    (while (and (< start len) (string-match "[\r\n]" bytes start))
      (let* ((end (match-beginning 0))
             (line (apply #'concat
                          (nreverse (cons (substring bytes start end)
                                          (agent-shell-rpc--sse-fragments sse))))))
        (setf (agent-shell-rpc--sse-fragments sse) nil)
        (setq start (1+ end))
        (when (eq (aref bytes end) ?\r)
          (if (< start len)
              (when (eq (aref bytes start) ?\n) (setq start (1+ start)))
            (setf (agent-shell-rpc--sse-skip-lf sse) t)))
        (let ((event (agent-shell-rpc--sse-line sse (decode-coding-string line 'utf-8 t))))
          (when event (push event events)))))
    (when (< start len)
      (push (substring bytes start) (agent-shell-rpc--sse-fragments sse)))
    (nreverse events)))

(defun agent-shell-rpc--sse-line (sse line)
  "Process one complete decoded LINE for SSE; return an event or nil."
  (cond
   ((string-empty-p line)
    (let ((data (agent-shell-rpc--sse-data sse))
          (event (agent-shell-rpc--sse-event sse)))
      (setf (agent-shell-rpc--sse-data sse) nil
            (agent-shell-rpc--sse-event sse) nil)
      (when data
        (list :id (agent-shell-rpc--sse-id sse)
              :event (or event "message")
              :data (mapconcat #'identity (nreverse data) "\n")))))
   ((eq (aref line 0) ?:) nil)
   (t
    (let* ((colon (string-match ":" line))
           (field (if colon (substring line 0 colon) line))
           (value (if colon (substring line (1+ colon)) "")))
      (when (string-prefix-p " " value)
        (setq value (substring value 1)))
      (pcase field
        ("data" (push value (agent-shell-rpc--sse-data sse)))
        ("event" (setf (agent-shell-rpc--sse-event sse) value))
        ("id" (unless (string-match-p "\0" value)
                (setf (agent-shell-rpc--sse-id sse) value))))
      nil))))

;;; HTTP connections

(defun agent-shell-rpc--request-head (conn verb path headers)
  "Return the head of an HTTP request VERB PATH to CONN with HEADERS.
HEADERS is an alist of extra header names and values."
  (concat verb " " path " HTTP/1.1\r\n"
          (format "Host: 127.0.0.1:%d\r\n" (agent-shell-rpc-conn-port conn))
          "Authorization: Bearer " (agent-shell-rpc-conn-token conn) "\r\n"
          (mapconcat (lambda (h) (concat (car h) ": " (cdr h) "\r\n")) headers "")
          "Connection: close\r\n\r\n"))

(defun agent-shell-rpc--connect (conn purpose request handler)
  "Open an HTTP connection to CONN's bridge and send REQUEST (bytes).
PURPOSE names the process.  HANDLER is called as (HANDLER PROC
KIND ARG), outside any process buffer, for each parse event (KIND
`headers', `body' with the bytes, `done'), and once with KIND
`closed' and a reason when the connection ends before `done'.
Return the process; signal `file-error' when connecting fails."
  (let* ((http (agent-shell-rpc--http-new))
         (proc (condition-case err
                   (make-network-process
                    :name (format "%s %s" (agent-shell-rpc-conn-name conn) purpose)
                    :host "127.0.0.1"
                    :service (agent-shell-rpc-conn-port conn)
                    :coding 'binary
                    :noquery t
                    :filter #'agent-shell-rpc--http-filter
                    :sentinel #'agent-shell-rpc--http-sentinel)
                 (error (agent-shell-rpc--http-discard http)
                        (signal (car err) (cdr err))))))
    (process-put proc 'agent-shell-rpc-http http)
    (process-put proc 'agent-shell-rpc-handler handler)
    (process-send-string proc request)
    proc))

(defun agent-shell-rpc--http-close (proc)
  "Close the HTTP connection PROC without reporting it as `closed'."
  (process-put proc 'agent-shell-rpc-closed t)
  (when (process-live-p proc)
    (delete-process proc))
  (let ((http (process-get proc 'agent-shell-rpc-http)))
    (when http (agent-shell-rpc--http-discard http))))

(defun agent-shell-rpc--coalesce (events)
  "Join consecutive `body' entries of the parse EVENTS into one."
  (let ((out nil))
    (dolist (ev events (nreverse out))
      (if (and (eq (car ev) 'body) (eq (caar out) 'body))
          (setcdr (car out) (concat (cdar out) (cdr ev)))
        (push (cons (car ev) (cdr ev)) out)))))

(defun agent-shell-rpc--http-run (proc events)
  "Give the parse EVENTS of PROC to its handler; close PROC when done.
Consecutive body pieces go to the handler in one call, so a handler
that dispatches messages has them all parsed before the first runs."
  (let ((handler (process-get proc 'agent-shell-rpc-handler)))
    (dolist (ev (agent-shell-rpc--coalesce events))
      (unless (process-get proc 'agent-shell-rpc-closed)
        (when (eq (car ev) 'done)
          (agent-shell-rpc--http-close proc))
        (funcall handler proc (car ev) (cdr ev))))))

(defun agent-shell-rpc--http-filter (proc bytes)
  "Process filter of HTTP connections: parse BYTES received on PROC."
  (let ((http (process-get proc 'agent-shell-rpc-http)))
    (when (and http (not (process-get proc 'agent-shell-rpc-closed)))
      (let ((events (condition-case err
                        (agent-shell-rpc--http-feed http bytes)
                      (agent-shell-rpc-error
                       (agent-shell-rpc--http-close proc)
                       (funcall (process-get proc 'agent-shell-rpc-handler)
                                proc 'closed (error-message-string err))
                       nil))))
        (agent-shell-rpc--http-run proc events)))))

(defun agent-shell-rpc--http-sentinel (proc event)
  "Sentinel of HTTP connections: report the end of PROC described by EVENT."
  (unless (or (process-live-p proc) (process-get proc 'agent-shell-rpc-closed))
    (let ((http (process-get proc 'agent-shell-rpc-http)))
      (when http
        (agent-shell-rpc--http-run proc (agent-shell-rpc--http-eof http)))
      (unless (process-get proc 'agent-shell-rpc-closed)
        (agent-shell-rpc--http-close proc)
        (funcall (process-get proc 'agent-shell-rpc-handler)
                 proc 'closed (string-trim event))))))

;;; Posting messages

(defun agent-shell-rpc--post (conn message callback)
  "POST the JSON-RPC MESSAGE to CONN's bridge.
MESSAGE is a Lisp object, or a unibyte string already encoded.
CALLBACK is called once as (CALLBACK STATUS BODY) with the HTTP
status and the decoded JSON body (nil when empty), or as (CALLBACK
nil REASON) when no complete response arrived.  Return the process,
or nil when the connection could not be opened (CALLBACK has then
been called already)."
  (let* ((json (if (stringp message) message (agent-shell-rpc--encode message)))
         (request (concat (agent-shell-rpc--request-head
                           conn "POST" "/rpc"
                           `(("Content-Type" . "application/json")
                             ("Accept" . "application/json")
                             ("Content-Length" . ,(number-to-string (length json)))))
                          json))
         (status nil)
         (chunks nil))
    (agent-shell-rpc--log conn "-->" (decode-coding-string json 'utf-8 t))
    (condition-case err
        (agent-shell-rpc--connect
         conn "rpc" request
         (lambda (proc kind arg)
           (pcase kind
             ('headers (setq status (agent-shell-rpc--http-status
                                     (process-get proc 'agent-shell-rpc-http))))
             ('body (push arg chunks))
             ('done
              (let* ((bytes (apply #'concat (nreverse chunks)))
                     (body (and (> (length bytes) 0)
                                (condition-case nil
                                    (agent-shell-rpc--decode bytes)
                                  (error nil)))))
                (agent-shell-rpc--log conn (format "<-- %s" status)
                                      (decode-coding-string bytes 'utf-8 t))
                (funcall callback status body)))
             ('closed (funcall callback nil arg)))))
      (file-error
       (funcall callback nil (error-message-string err))
       nil))))

(defun agent-shell-rpc--post-quietly (conn message what &optional on-done)
  "POST MESSAGE to CONN expecting no answer; warn about failures of WHAT.
ON-DONE, when given, is called with t when the bridge accepted the
message and with nil when it did not (after the warning)."
  (agent-shell-rpc--post
   conn message
   (lambda (status body)
     (let ((ok (and status (< status 300))))
       (unless ok
         ;; BODY is the reason string when the connection itself failed.
         (display-warning
          'agent-shell
          (format "Sending %s to the bridge failed: %s" what
                  (or (and (consp body) (alist-get 'message (alist-get 'error body)))
                      (and status (format "HTTP %s" status))
                      body))))
       (when on-done
         (funcall on-done (and ok t)))))))

;;; Public API

(defun agent-shell-rpc-live-p (conn)
  "Return non-nil when the bridge of CONN is running."
  (and conn
       (not (agent-shell-rpc-conn-dead conn))
       (process-live-p (agent-shell-rpc-conn-process conn))
       t))

(defun agent-shell-rpc-pending-count (conn)
  "Return the number of requests of CONN waiting for an answer."
  (hash-table-count (agent-shell-rpc-conn-pending conn)))

(defun agent-shell-rpc--ensure-live (conn)
  "Signal `agent-shell-rpc-error' unless CONN is live."
  (unless (agent-shell-rpc-live-p conn)
    (signal 'agent-shell-rpc-error
            (list (if conn
                      (format "The bridge is not running (%s); M-x agent-shell-start restarts it"
                              (or (agent-shell-rpc-conn-exit-reason conn) "stopped"))
                    "No bridge connection; M-x agent-shell-start starts one")))))

(cl-defun agent-shell-rpc-request (conn method params &key on-success on-error timeout)
  "Send the request METHOD with PARAMS to CONN's bridge; return its id.
Asynchronous: ON-SUCCESS is called with the result, or ON-ERROR
with the error alist (code, message, data) -- on a JSON-RPC error,
when no answer arrives within TIMEOUT seconds (default
`agent-shell-rpc-request-timeout'), or when the bridge goes away.
PARAMS is serialised by `json-serialize' (arrays must be vectors)."
  (agent-shell-rpc--ensure-live conn)
  (let* ((id (cl-incf (agent-shell-rpc-conn-next-id conn)))
         (timeout (or timeout agent-shell-rpc-request-timeout))
         (pending (agent-shell-rpc--make-pending
                   :id id :method method
                   :on-success (or on-success #'ignore)
                   :on-error (or on-error
                                 (lambda (err)
                                   (message "agent-shell: %s failed: %s"
                                            method (alist-get 'message err))))))
         ;; Encoded first: unserialisable PARAMS signal before anything
         ;; (a pending entry, a timer) is registered.
         (json (agent-shell-rpc--encode
                `(:jsonrpc "2.0" :id ,id :method ,method
                           :params ,(or params (make-hash-table))))))
    (puthash id pending (agent-shell-rpc-conn-pending conn))
    (setf (agent-shell-rpc--pending-timer pending)
          (run-at-time timeout nil #'agent-shell-rpc--request-timeout conn id timeout))
    (setf (agent-shell-rpc--pending-process pending)
          (agent-shell-rpc--post
           conn json
           (lambda (status body)
             (agent-shell-rpc--request-answered conn id status body))))
    id))

(defun agent-shell-rpc--request-answered (conn id status body)
  "Complete request ID of CONN from the HTTP STATUS and decoded BODY.
STATUS nil means the connection failed; BODY is then the reason."
  (let ((pending (gethash id (agent-shell-rpc-conn-pending conn))))
    (when pending
      (cond
       ((null status)
        ;; The bridge may be dying: give its sentinel a moment to report
        ;; the real cause before blaming the connection.
        (unless (agent-shell-rpc--pending-lost-timer pending)
          (setf (agent-shell-rpc--pending-lost-timer pending)
                (run-at-time 0.5 nil #'agent-shell-rpc--request-lost conn id body))))
       ((and (consp body) (alist-get 'error body))
        (agent-shell-rpc--finish conn id :error (alist-get 'error body)))
       ((and (consp body) (assq 'result body))
        (agent-shell-rpc--finish conn id :result (alist-get 'result body)))
       (t
        (agent-shell-rpc--finish
         conn id :error
         `((code . ,agent-shell-rpc-code-http)
           (message . ,(format "The bridge answered %s with HTTP %s and no JSON-RPC response"
                               (agent-shell-rpc--pending-method pending) status)))))))))

(defun agent-shell-rpc--request-lost (conn id reason)
  "Fail request ID of CONN whose connection closed early for REASON."
  (let ((pending (gethash id (agent-shell-rpc-conn-pending conn))))
    (when pending
      (agent-shell-rpc--finish
       conn id :error
       `((code . ,agent-shell-rpc-code-disconnected)
         (message . ,(format "The connection to the bridge closed before %s was answered (%s)"
                             (agent-shell-rpc--pending-method pending) reason)))))))

(defun agent-shell-rpc--request-timeout (conn id timeout)
  "Fail request ID of CONN that got no answer within TIMEOUT seconds."
  (let ((pending (gethash id (agent-shell-rpc-conn-pending conn))))
    (when pending
      (setf (agent-shell-rpc--pending-timer pending) nil)
      (agent-shell-rpc--finish
       conn id :error
       `((code . ,agent-shell-rpc-code-timeout)
         (message . ,(format "The bridge did not answer %s within %s s"
                             (agent-shell-rpc--pending-method pending) timeout)))))))

(defun agent-shell-rpc--finish (conn id kind value)
  "Remove request ID from CONN and call its callback for KIND with VALUE.
KIND is :result or :error."
  (let ((pending (gethash id (agent-shell-rpc-conn-pending conn))))
    (when pending
      (remhash id (agent-shell-rpc-conn-pending conn))
      (agent-shell-rpc--pending-cancel pending)
      (let ((fn (if (eq kind :result)
                    (agent-shell-rpc--pending-on-success pending)
                  (agent-shell-rpc--pending-on-error pending))))
        (condition-case-unless-debug err
            (funcall fn value)
          (error
           (agent-shell-rpc--log conn "!!" (format "callback of %s failed: %s"
                                                   (agent-shell-rpc--pending-method pending)
                                                   (error-message-string err)))
           (message "agent-shell: callback of %s failed: %s"
                    (agent-shell-rpc--pending-method pending)
                    (error-message-string err))))))))

(defun agent-shell-rpc--pending-cancel (pending)
  "Cancel the timers and the connection of PENDING."
  (dolist (timer (list (agent-shell-rpc--pending-timer pending)
                       (agent-shell-rpc--pending-lost-timer pending)))
    (when timer (cancel-timer timer)))
  (setf (agent-shell-rpc--pending-timer pending) nil
        (agent-shell-rpc--pending-lost-timer pending) nil)
  (let ((proc (agent-shell-rpc--pending-process pending)))
    (when (processp proc)
      (agent-shell-rpc--http-close proc))))

(defun agent-shell-rpc-request-sync (conn method params &optional timeout)
  "Send METHOD with PARAMS to CONN and wait for the result.
Signal `agent-shell-rpc-error' with the message and the error alist
on failure, or when no answer comes within TIMEOUT seconds."
  (let* ((done nil) (result nil) (failure nil)
         (id (agent-shell-rpc-request
              conn method params
              :timeout timeout
              :on-success (lambda (r) (setq done t result r))
              :on-error (lambda (e) (setq done t failure e)))))
    (unwind-protect
        (while (not done)
          (accept-process-output nil 0.05))
      (unless done
        ;; Quit while waiting: forget the request quietly.
        (let ((pending (gethash id (agent-shell-rpc-conn-pending conn))))
          (when pending
            (remhash id (agent-shell-rpc-conn-pending conn))
            (agent-shell-rpc--pending-cancel pending)))))
    (when failure
      (signal 'agent-shell-rpc-error
              (list (format "%s: %s" method (alist-get 'message failure)) failure)))
    result))

(defun agent-shell-rpc-notify (conn method params)
  "Send the notification METHOD with PARAMS to CONN's bridge."
  (agent-shell-rpc--ensure-live conn)
  (agent-shell-rpc--post-quietly
   conn `(:jsonrpc "2.0" :method ,method :params ,(or params (make-hash-table)))
   method))

(defun agent-shell-rpc-respond (conn id result &optional on-done)
  "Answer the bridge's request ID on CONN with RESULT.
RESULT is serialised by `json-serialize'; nil is the empty object,
`:null' is null.  ON-DONE, when given, is called with t once the
bridge accepted the answer, or with nil when it could not be sent."
  (agent-shell-rpc--ensure-live conn)
  (agent-shell-rpc--post-quietly
   conn `(:jsonrpc "2.0" :id ,id :result ,result)
   (format "the answer to request %s" id)
   on-done))

(defun agent-shell-rpc-respond-error (conn id code message)
  "Answer the bridge's request ID on CONN with error CODE and MESSAGE."
  (agent-shell-rpc--ensure-live conn)
  (agent-shell-rpc--post-quietly
   conn `(:jsonrpc "2.0" :id ,id :error (:code ,code :message ,message))
   (format "the error answer to request %s" id)))

;;; Dispatch of incoming messages

(cl-defgeneric agent-shell-rpc-handle (conn method params id)
  "Handle the message METHOD (a symbol) with PARAMS from CONN's bridge.
ID is nil for a notification; for a request the method answers with
`agent-shell-rpc-respond' or `agent-shell-rpc-respond-error'.
Define methods with (eql \\='METHOD) specialisers.  The default
warns once per unknown method and answers requests with -32601."
  (:method (conn method _params id)
           (unless (memq method (agent-shell-rpc-conn-warned conn))
             (push method (agent-shell-rpc-conn-warned conn))
             (display-warning 'agent-shell
                              (format "No handler for bridge message %s" method)))
           (when id
             (agent-shell-rpc-respond-error
              conn id -32601 (format "Method not found in Emacs: %s" method)))))

(defun agent-shell-rpc--dispatch (conn message)
  "Run the hook for MESSAGE from CONN, then hand it to its handler."
  (condition-case-unless-debug err
      (run-hook-with-args 'agent-shell-rpc-message-functions conn message)
    (error (message "agent-shell: a message hook failed: %s" (error-message-string err))))
  (let ((method (alist-get 'method message))
        (id (alist-get 'id message)))
    (if (not (and (stringp method) (not (string-empty-p method))))
        (agent-shell-rpc--log conn "!!" "ignored an event that is not a request or notification")
      (condition-case-unless-debug err
          (agent-shell-rpc-handle conn (intern method) (alist-get 'params message) id)
        (error
         (let ((text (format "Emacs failed to handle %s: %s" method (error-message-string err))))
           (agent-shell-rpc--log conn "!!" text)
           (message "agent-shell: %s" text)
           (when (and id (agent-shell-rpc-live-p conn))
             (agent-shell-rpc-respond-error conn id -32603 text))))))))

(defun agent-shell-rpc--dispatch-quittably (conn message)
  "Dispatch MESSAGE from CONN with quitting allowed.
A \[keyboard-quit] ends only this message's handler; a request is then
answered with an error, so the bridge does not wait for it."
  (condition-case nil
      (let ((inhibit-quit nil))
        (agent-shell-rpc--dispatch conn message))
    (quit
     (let ((id (alist-get 'id message))
           (text (format "Cancelled by the user (C-g) while handling %s"
                         (alist-get 'method message))))
       (agent-shell-rpc--log conn "!!" text)
       (message "agent-shell: %s" text)
       (when (and id (agent-shell-rpc-live-p conn))
         (agent-shell-rpc-respond-error conn id -32603 text))))))

(defun agent-shell-rpc--enqueue (conn messages)
  "Queue MESSAGES from CONN; a timer dispatches them, in order.
Handlers never run inside the process filter: there a long handler
\(an Emacs-side tool) would block reading and could not be quit."
  (setf (agent-shell-rpc-conn-inbox conn)
        (nconc (agent-shell-rpc-conn-inbox conn) messages))
  (unless (or (agent-shell-rpc-conn-draining conn)
              (agent-shell-rpc-conn-drain-timer conn))
    (setf (agent-shell-rpc-conn-drain-timer conn)
          (run-at-time 0 nil #'agent-shell-rpc--drain conn))))

(defun agent-shell-rpc--drain (conn &optional notifications-only)
  "Dispatch the queued messages of CONN, oldest first.
A handler that waits (for example in `agent-shell-rpc-request-sync')
lets new messages arrive; they are queued and dispatched after it,
keeping the order.  With NOTIFICATIONS-ONLY, requests are dropped
\(used once the bridge is gone and nobody could get their answers)."
  (setf (agent-shell-rpc-conn-drain-timer conn) nil)
  (unless (agent-shell-rpc-conn-draining conn)
    (setf (agent-shell-rpc-conn-draining conn) t)
    (unwind-protect
        (while (agent-shell-rpc-conn-inbox conn)
          (let ((message (pop (agent-shell-rpc-conn-inbox conn))))
            (unless (and notifications-only (alist-get 'id message))
              (agent-shell-rpc--dispatch-quittably conn message))))
      (setf (agent-shell-rpc-conn-draining conn) nil))))

(defun agent-shell-rpc--event-id-number (id)
  "Return the event ID string as a number, or nil when it is not one."
  (and (stringp id) (string-match-p "\\`[0-9]+\\'" id) (string-to-number id)))

(defun agent-shell-rpc--accept-events (conn events)
  "Turn parsed SSE EVENTS of CONN into messages, dropping repeats.
Return the decoded messages, oldest first."
  (let ((messages nil))
    (dolist (ev events)
      (let* ((id (plist-get ev :id))
             (n (agent-shell-rpc--event-id-number id))
             (last (agent-shell-rpc--event-id-number (agent-shell-rpc-conn-last-event-id conn))))
        (if (and n last (<= n last))
            (progn
              (cl-incf (agent-shell-rpc-conn-duplicates conn))
              (agent-shell-rpc--log conn "!!" (format "dropped repeated event %s" id)))
          (when id (setf (agent-shell-rpc-conn-last-event-id conn) id))
          (agent-shell-rpc--log conn (format "<== %s" (or id "")) (plist-get ev :data))
          (condition-case err
              (push (json-parse-string (plist-get ev :data)
                                       :object-type 'alist :array-type 'list
                                       :null-object nil :false-object :json-false)
                    messages)
            (json-error
             (agent-shell-rpc--log conn "!!" (format "bad event data: %s"
                                                     (error-message-string err))))))))
    (nreverse messages)))

;;; Event stream

(defun agent-shell-rpc--open-events (conn)
  "Open the SSE event stream of CONN, resuming after the last event seen."
  (let* ((sse (agent-shell-rpc--sse-make))
         (last (agent-shell-rpc-conn-last-event-id conn))
         (ok nil)
         (request (agent-shell-rpc--request-head
                   conn "GET" "/events"
                   `(("Accept" . "text/event-stream")
                     ("Cache-Control" . "no-cache")
                     ,@(and last (not (string-match-p "[\r\n]" last))
                            `(("Last-Event-ID" . ,last)))))))
    (agent-shell-rpc--log conn "==>" (format "GET /events%s"
                                             (if last (format " after %s" last) "")))
    (condition-case err
        (setf (agent-shell-rpc-conn-events-process conn)
              (agent-shell-rpc--connect
               conn "events" request
               (lambda (proc kind arg)
                 (pcase kind
                   ('headers
                    (let ((status (agent-shell-rpc--http-status
                                   (process-get proc 'agent-shell-rpc-http))))
                      (if (eql status 200)
                          (setq ok t)
                        (agent-shell-rpc--log conn "!!" (format "GET /events: HTTP %s" status)))))
                   ('body
                    (when ok
                      (setf (agent-shell-rpc-conn-reconnect-attempt conn) 0)
                      (let ((messages (agent-shell-rpc--accept-events
                                       conn (agent-shell-rpc--sse-feed sse arg))))
                        (when messages
                          (agent-shell-rpc--enqueue conn messages)))))
                   (_ (agent-shell-rpc--events-closed conn proc (or arg "stream ended")))))))
      (file-error
       (agent-shell-rpc--events-closed conn nil (error-message-string err))))))

(defun agent-shell-rpc--events-closed (conn proc reason)
  "Reconnect the event stream PROC of CONN that ended for REASON."
  (when (or (null proc) (eq proc (agent-shell-rpc-conn-events-process conn)))
    (setf (agent-shell-rpc-conn-events-process conn) nil)
    (agent-shell-rpc--log conn "!!" (format "event stream closed: %s" reason))
    (when (and (not (agent-shell-rpc-conn-stopping conn))
               (agent-shell-rpc-live-p conn)
               (null (agent-shell-rpc-conn-reconnect-timer conn)))
      (let* ((n (agent-shell-rpc-conn-reconnect-attempt conn))
             (delays (or agent-shell-rpc-reconnect-delays '(1)))
             (delay (nth (min n (1- (length delays))) delays)))
        (setf (agent-shell-rpc-conn-reconnect-attempt conn) (1+ n))
        (setf (agent-shell-rpc-conn-reconnect-timer conn)
              (run-at-time delay nil #'agent-shell-rpc--reconnect conn))))))

(defun agent-shell-rpc--reconnect (conn)
  "Reopen the event stream of CONN when it is still wanted."
  (setf (agent-shell-rpc-conn-reconnect-timer conn) nil)
  (when (and (not (agent-shell-rpc-conn-stopping conn))
             (agent-shell-rpc-live-p conn)
             (null (agent-shell-rpc-conn-events-process conn)))
    (agent-shell-rpc--open-events conn)))

;;; The bridge process

(defun agent-shell-rpc--default-command ()
  "Return the bridge program and leading arguments to run."
  (let ((env (getenv "AGENT_SHELL_TEST_BRIDGE")))
    (cond
     (agent-shell-bridge-command agent-shell-bridge-command)
     ((and env (not (string-empty-p env))) (list env))
     ((and agent-shell-rpc--checkout-bridge
           (file-executable-p agent-shell-rpc--checkout-bridge))
      (list agent-shell-rpc--checkout-bridge))
     ((executable-find "agent-shell-bridge") (list "agent-shell-bridge"))
     (t (signal 'agent-shell-rpc-error
                (list "Cannot find the agent-shell-bridge program; install the bridge \
or set `agent-shell-bridge-command'"))))))

(defun agent-shell-rpc--stderr-buffer (name)
  "Return a buffer for the stderr of the bridge called NAME."
  (let* ((bufname (format " *%s stderr*" name))
         (buf (get-buffer bufname)))
    (if (and buf (not (get-buffer-process buf)))
        (with-current-buffer buf (erase-buffer) buf)
      (with-current-buffer (generate-new-buffer bufname t)
        (setq buffer-undo-list t)
        (current-buffer)))))

(defun agent-shell-rpc--stderr-filter (proc text)
  "Append TEXT from the stderr pipe PROC to its buffer, keeping it bounded."
  (let ((buf (process-buffer proc)))
    (when (buffer-live-p buf)
      (with-current-buffer buf
        (save-excursion
          (goto-char (point-max))
          (insert text)
          (when (> (buffer-size) agent-shell-rpc--stderr-max-chars)
            (delete-region (point-min)
                           (- (point-max) (/ agent-shell-rpc--stderr-max-chars 2)))))))))

(defun agent-shell-rpc--stderr-tail (conn)
  "Return the last lines the bridge of CONN wrote to stderr."
  (let* ((proc (agent-shell-rpc-conn-stderr-process conn))
         (buf (and proc (process-buffer proc))))
    (when (process-live-p proc)
      ;; Collect what is still in the pipe.
      (let ((n 0))
        (while (and (< n 20) (accept-process-output proc 0.02))
          (cl-incf n))))
    (if (buffer-live-p buf)
        (with-current-buffer buf
          (save-excursion
            (goto-char (point-max))
            (forward-line -12)
            (string-trim (buffer-substring-no-properties
                          (max (point) (- (point-max) 2000)) (point-max)))))
      "")))

(defun agent-shell-rpc--stdout-filter (proc text)
  "Read the ready line the bridge PROC prints on stdout (TEXT)."
  (let ((conn (process-get proc 'agent-shell-rpc-conn)))
    (when conn
      (if (agent-shell-rpc-conn-ready conn)
          (agent-shell-rpc--log conn "stdout" text)
        (let ((acc (concat (agent-shell-rpc-conn-stdout-acc conn) text)))
          (setf (agent-shell-rpc-conn-stdout-acc conn) acc)
          (when (string-match "\n" acc)
            (let ((line (substring acc 0 (match-beginning 0))))
              (setf (agent-shell-rpc-conn-stdout-acc conn) nil)
              (agent-shell-rpc--read-ready conn line))))))))

(defun agent-shell-rpc--read-ready (conn line)
  "Take port, token and pid for CONN from the ready LINE."
  (let* ((obj (condition-case nil
                  (json-parse-string line :object-type 'alist :null-object nil
                                     :false-object :json-false)
                (error nil)))
         (port (and (consp obj) (alist-get 'port obj)))
         (token (and (consp obj) (alist-get 'token obj))))
    (if (and (eq (alist-get 'ready obj) t)
             (natnump port) (< 0 port 65536)
             (stringp token) (string-match-p "\\`[A-Za-z0-9_.~+/=-]+\\'" token))
        (setf (agent-shell-rpc-conn-port conn) port
              (agent-shell-rpc-conn-token conn) token
              (agent-shell-rpc-conn-pid conn) (alist-get 'pid obj)
              (agent-shell-rpc-conn-ready conn) t)
      (setf (agent-shell-rpc-conn-exit-reason conn)
            (format "unexpected first line on stdout: %S"
                    (truncate-string-to-width line 200))))))

(defun agent-shell-rpc--bridge-sentinel (proc event)
  "Tear the connection down when the bridge PROC ends (EVENT)."
  (let ((conn (process-get proc 'agent-shell-rpc-conn)))
    (when (and conn (not (process-live-p proc)) (not (agent-shell-rpc-conn-dead conn)))
      (agent-shell-rpc--teardown conn (string-trim event)))))

(defun agent-shell-rpc--teardown (conn reason)
  "Mark CONN dead for REASON: fail pending requests, stop timers, run :on-exit."
  (unless (agent-shell-rpc-conn-dead conn)
    (setf (agent-shell-rpc-conn-dead conn) t)
    (setf (agent-shell-rpc-conn-exit-reason conn) reason)
    (let ((timer (agent-shell-rpc-conn-reconnect-timer conn)))
      (when timer (cancel-timer timer))
      (setf (agent-shell-rpc-conn-reconnect-timer conn) nil))
    (let ((events (agent-shell-rpc-conn-events-process conn)))
      (setf (agent-shell-rpc-conn-events-process conn) nil)
      (when (processp events) (agent-shell-rpc--http-close events)))
    (let ((timer (agent-shell-rpc-conn-drain-timer conn)))
      (when timer
        (cancel-timer timer)
        ;; What arrived before the end is still shown; requests are moot.
        (agent-shell-rpc--drain conn t)))
    (let* ((tail (agent-shell-rpc--stderr-tail conn))
           (text (if (agent-shell-rpc-conn-stopping conn)
                     "The bridge connection was stopped"
                   (format "The bridge exited (%s); M-x agent-shell-start restarts it%s"
                           reason
                           (if (string-empty-p tail) ""
                             (concat "\nLast lines of its stderr:\n" tail)))))
           (err `((code . ,agent-shell-rpc-code-disconnected) (message . ,text)))
           (ids nil))
      (agent-shell-rpc--log conn "!!" text)
      (maphash (lambda (id _) (push id ids)) (agent-shell-rpc-conn-pending conn))
      (dolist (id (sort ids #'<))
        (agent-shell-rpc--finish conn id :error err)))
    (let ((stderr (agent-shell-rpc-conn-stderr-process conn)))
      (when (process-live-p stderr) (delete-process stderr)))
    (let ((proc (agent-shell-rpc-conn-process conn)))
      (when (process-live-p proc) (delete-process proc)))
    (let ((on-exit (agent-shell-rpc-conn-on-exit conn)))
      (when (and on-exit (agent-shell-rpc-conn-ready conn))
        (condition-case-unless-debug err
            (funcall on-exit conn reason)
          (error (message "agent-shell: :on-exit failed: %s" (error-message-string err))))))))

(cl-defun agent-shell-rpc-start (&key command directory environment name
                                      on-exit on-ready ready-timeout)
  "Start a bridge and return the connection once it is ready.
COMMAND is the program and leading arguments (default from
`agent-shell-bridge-command'); \"serve --port 0\" is appended.
DIRECTORY is its working directory, ENVIRONMENT a list of extra
\"VAR=value\" strings, NAME names its processes and buffers.
ON-READY is called with the connection once it is up, ON-EXIT with
the connection and a reason when a bridge that was ready ends.  Wait up to
READY-TIMEOUT seconds (default `agent-shell-rpc-ready-timeout') for
the ready line; signal `agent-shell-rpc-error' with the tail of the
bridge's stderr when it does not come."
  (agent-shell-rpc--check-json)
  (let* ((name (or name "agent-shell-bridge"))
         (cmd (append (or command (agent-shell-rpc--default-command))
                      '("serve" "--port" "0")))
         (default-directory (if directory
                                (file-name-as-directory (expand-file-name directory))
                              default-directory))
         (process-environment (append environment process-environment))
         (conn (agent-shell-rpc--make-conn :name name :on-exit on-exit :on-ready on-ready))
         (stderr (make-pipe-process
                  :name (format "%s stderr" name)
                  :buffer (agent-shell-rpc--stderr-buffer name)
                  :coding 'utf-8
                  :noquery t
                  :filter #'agent-shell-rpc--stderr-filter
                  :sentinel #'ignore))
         (deadline (+ (float-time) (or ready-timeout agent-shell-rpc-ready-timeout)))
         proc)
    (setf (agent-shell-rpc-conn-stderr-process conn) stderr)
    (condition-case err
        (setq proc (make-process :name name
                                 :command cmd
                                 :connection-type 'pipe
                                 :coding 'utf-8
                                 :noquery t
                                 :stderr stderr
                                 :filter #'agent-shell-rpc--stdout-filter
                                 :sentinel #'agent-shell-rpc--bridge-sentinel))
      (error
       (delete-process stderr)
       (signal 'agent-shell-rpc-error
               (list (format "Cannot run the bridge %S: %s"
                             (car cmd) (error-message-string err))))))
    (setf (agent-shell-rpc-conn-process conn) proc)
    (process-put proc 'agent-shell-rpc-conn conn)
    (while (and (not (agent-shell-rpc-conn-ready conn))
                (not (agent-shell-rpc-conn-exit-reason conn))
                (process-live-p proc)
                (< (float-time) deadline))
      (accept-process-output proc 0.05))
    (unless (agent-shell-rpc-conn-ready conn)
      (let ((why (cond ((agent-shell-rpc-conn-exit-reason conn))
                       ((process-live-p proc)
                        (format "no ready line within %s s"
                                (or ready-timeout agent-shell-rpc-ready-timeout)))
                       (t (format "it exited with status %s" (process-exit-status proc))))))
        (when (process-live-p proc) (delete-process proc))
        (let ((tail (agent-shell-rpc--stderr-tail conn)))
          (agent-shell-rpc--teardown conn why)
          (signal 'agent-shell-rpc-error
                  (list (format "The bridge %S did not start: %s%s" (car cmd) why
                                (if (string-empty-p tail) ""
                                  (concat "\nLast lines of its stderr:\n" tail))))))))
    (agent-shell-rpc--log conn "==" (format "bridge ready on port %d (pid %s)"
                                            (agent-shell-rpc-conn-port conn)
                                            (agent-shell-rpc-conn-pid conn)))
    (agent-shell-rpc--open-events conn)
    (when on-ready
      (let ((done nil))
        (unwind-protect
            (progn
              (condition-case-unless-debug err
                  (funcall on-ready conn)
                (error (message "agent-shell: :on-ready failed: %s"
                                (error-message-string err))))
              (setq done t))
          ;; A quit (say, in a passphrase prompt) must not leave behind a
          ;; bridge process that nobody holds.
          (unless done
            (agent-shell-rpc-kill conn "interrupted while starting")))))
    conn))

(defun agent-shell-rpc-kill (conn &optional reason)
  "End CONN's bridge at once, without asking it to shut down.
For a bridge that never became usable.  Pending requests fail with
REASON; the event stream is not reopened."
  (when (and conn (not (agent-shell-rpc-conn-dead conn)))
    (setf (agent-shell-rpc-conn-stopping conn) t)
    (agent-shell-rpc--teardown conn (or reason "killed"))))

(defun agent-shell-rpc-stop (conn)
  "Stop CONN's bridge: ask it to shut down, then kill it.
Pending requests fail; the event stream is not reopened."
  (when (and conn (not (agent-shell-rpc-conn-dead conn)))
    (setf (agent-shell-rpc-conn-stopping conn) t)
    (let ((timer (agent-shell-rpc-conn-reconnect-timer conn)))
      (when timer (cancel-timer timer))
      (setf (agent-shell-rpc-conn-reconnect-timer conn) nil))
    (let ((events (agent-shell-rpc-conn-events-process conn)))
      (setf (agent-shell-rpc-conn-events-process conn) nil)
      (when (processp events) (agent-shell-rpc--http-close events)))
    (let ((proc (agent-shell-rpc-conn-process conn)))
      (when (process-live-p proc)
        (condition-case nil
            (agent-shell-rpc-request-sync conn "shutdown" nil 2)
          (agent-shell-rpc-error nil))
        (let ((deadline (+ (float-time) 3)))
          (while (and (process-live-p proc) (< (float-time) deadline))
            (accept-process-output proc 0.05)))
        (when (process-live-p proc)
          (delete-process proc))))
    (agent-shell-rpc--teardown conn "stopped")))

(provide 'agent-shell-rpc)
;;; agent-shell-rpc.el ends here
