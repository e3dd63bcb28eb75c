;;; agent-shell-rpc-protocol.el --- JSON-RPC between Emacs and the agent-shell bridge  -*- lexical-binding: t; -*-

;; SPDX-License-Identifier: GPL-3.0-or-later

;;; Commentary:

;; JSON-RPC 2.0 with the agent-shell bridge (see doc/protocol.org),
;; over the transport of agent-shell-rpc-http.el.  This file knows
;; nothing of the UI, nor of how the bridge process is run (that is
;; agent-shell-rpc.el).
;;
;; - Requests, notifications and responses go out as "POST /rpc".
;;   url.el is avoided on purpose: it routes loopback traffic through
;;   proxy settings, and curl would be one more dependency.
;; - Messages from the bridge arrive on a persistent "GET /events"
;;   Server-Sent Events stream (chunked transfer coding).  When that
;;   stream drops, it is reopened with Last-Event-ID after a short delay,
;;   and events already seen are dropped, so none is lost or doubled.
;;   Each event's JSON is parsed once, in the stream's buffer.
;; - Every incoming message runs `agent-shell-rpc-message-functions' and
;;   is then dispatched, from a timer and never inside the process
;;   filter, to the generic function `agent-shell-rpc-handle', on which
;;   UI files define methods such as
;;
;;     (cl-defmethod agent-shell-rpc-handle
;;         (conn (_method (eql \\='session/update)) params _id) ...)
;;
;;   A handler for a request (ID non-nil) answers it, now or later, with
;;   `agent-shell-rpc-respond' or `agent-shell-rpc-respond-error'.
;;
;; JSON: incoming objects are alists, arrays lists, null nil and false
;; `:json-false'.  Outgoing values go through `json-serialize' (by way
;; of agent-shell-json.el, which gives bytes on every Emacs): objects
;; are alists, plists or hash tables, arrays MUST be vectors, null is
;; `:null', false is `:json-false', and nil is the empty object.
;;
;; Client-side failures use codes of the JSON-RPC server range:
;; `agent-shell-rpc-code-timeout' (no answer in time),
;; `agent-shell-rpc-code-disconnected' (the bridge exited or the
;; connection failed) and `agent-shell-rpc-code-transport' (the transport refused a
;; message without a JSON-RPC answer).

;;; Code:

(require 'cl-lib)
(require 'subr-x)
(require 'agent-shell-json)
(require 'agent-shell-rpc-http)

;;; Error codes

;; The codes of JSON-RPC errors, named once.  Those the bridge sends and
;; Emacs sends back carry the bridge's meaning (its errors.py and the
;; table in doc/protocol.org); the last three are given by Emacs alone,
;; from the server range, to requests that never got the bridge's answer.

(defconst agent-shell-rpc-code-parse-error -32700
  "Error code of a message that is not JSON.")

(defconst agent-shell-rpc-code-invalid-request -32600
  "Error code of a message that is not a JSON-RPC 2.0 request.")

(defconst agent-shell-rpc-code-method-not-found -32601
  "Error code of a request for a method the receiver does not have.")

(defconst agent-shell-rpc-code-invalid-params -32602
  "Error code of a request whose params the receiver refuses.")

(defconst agent-shell-rpc-code-internal-error -32603
  "Error code of a request whose handler failed.")

(defconst agent-shell-rpc-code-tool-failed -32005
  "Error code of a tool that ran and failed, such as an Emacs-side tool.")

(defconst agent-shell-rpc-code-unauthorized -32040
  "Error code the bridge gives a message without its bearer token.")

(define-obsolete-variable-alias 'agent-shell-rpc-code-http
  'agent-shell-rpc-code-transport "0.2")

(defconst agent-shell-rpc-code-transport -32097
  "Error code given to a request its transport refused without a JSON-RPC answer.")

(defconst agent-shell-rpc-code-timeout -32098
  "Error code given to a request the bridge did not answer in time.")

(defconst agent-shell-rpc-code-disconnected -32099
  "Error code given to a request lost because the bridge went away.")

;;; Options

(defgroup agent-shell-rpc nil
  "Connection between Emacs and the agent-shell bridge."
  :group 'agent-shell
  :prefix "agent-shell-rpc-")

(defcustom agent-shell-rpc-request-timeout 30
  "Seconds to wait for the answer to a request before giving up."
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
  "Non-nil means log bridge traffic to the buffer *agent-shell events*.
What Emacs sends is shown with its secrets masked: MCP servers' header
and environment values, keys named like apiKey or token, and the user
info and query of URLs."
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

(defconst agent-shell-rpc--secret-key-re
  "\\`\\(?:api[-_]?key\\|apiKey\\|token\\|password\\|secret\\|authorization\\)\\'"
  "Keys whose values never reach the events log.")

(defun agent-shell-rpc--redact-url (url)
  "Return URL without its user info and with its query and fragment masked."
  (if (string-match "\\`\\([A-Za-z][A-Za-z0-9+.-]*://\\)\\(?:[^@/?#]*@\\)?\\([^?#]*\\)\\([?#]\\)?"
                    url)
      (concat (match-string 1 url) (match-string 2 url)
              (if (match-beginning 3) "?***" ""))
    url))

(defun agent-shell-rpc--redact (object &optional under)
  "Return a copy of OBJECT, a message about to be sent, fit for the events log.
The values of MCP servers' `headers' and `env' entries, of keys that
name secrets, and the user info and query of URLs become \"***\".
UNDER is the key OBJECT was found under."
  (cond
   ((vectorp object)
    (vconcat (mapcar (lambda (item) (agent-shell-rpc--redact item under)) object)))
   ((and (consp object) (consp (car object)) (symbolp (caar object)))
    (mapcar
     (lambda (cell)
       (let ((key (car cell)) (value (cdr cell)))
         (cons key
               (cond
                ((and (eq key 'value) (memq under '(headers env))) "***")
                ((and (symbolp key) (stringp value)
                      (let ((case-fold-search t))
                        (string-match-p agent-shell-rpc--secret-key-re (symbol-name key))))
                 "***")
                ((and (eq key 'url) (stringp value)) (agent-shell-rpc--redact-url value))
                (t (agent-shell-rpc--redact value key))))))
     object))
   (t object)))

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
  (agent-shell-json-bytes object))

(defun agent-shell-rpc--decode (bytes)
  "Parse the complete UTF-8 JSON text BYTES (a unibyte string)."
  (json-parse-string (decode-coding-string bytes 'utf-8 t)
                     :object-type 'alist :array-type 'list
                     :null-object nil :false-object :json-false))

;;; HTTP connections

(defun agent-shell-rpc--request-head (conn verb path headers)
  "Return the head of an HTTP request VERB PATH to CONN with HEADERS.
HEADERS is an alist of extra header names and values."
  (concat verb " " path " HTTP/1.1\r\n"
          (format "Host: 127.0.0.1:%d\r\n" (agent-shell-rpc-conn-port conn))
          "Authorization: Bearer " (agent-shell-rpc-conn-token conn) "\r\n"
          (mapconcat (lambda (h) (concat (car h) ": " (cdr h) "\r\n")) headers "")
          "Connection: close\r\n\r\n"))

;;; Posting messages

(defun agent-shell-rpc--post (conn message callback &optional shown)
  "POST the JSON-RPC MESSAGE to CONN's bridge.
MESSAGE is a Lisp object, or a unibyte string already encoded; SHOWN,
when given, is what the events log shows instead (secrets masked).
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
    (when agent-shell-log-events
      (agent-shell-rpc--log
       conn "-->" (or shown
                      (decode-coding-string
                       (if (stringp message)
                           json
                         (agent-shell-rpc--encode (agent-shell-rpc--redact message)))
                       'utf-8 t))))
    (condition-case err
        (agent-shell-rpc--connect
         (agent-shell-rpc-conn-port conn)
         (format "%s rpc" (agent-shell-rpc-conn-name conn)) request
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
             (agent-shell-rpc--request-answered conn id status body))
           (when agent-shell-log-events
             (decode-coding-string
              (agent-shell-rpc--encode
               `(:jsonrpc "2.0" :id ,id :method ,method
                          :params ,(if params (agent-shell-rpc--redact params)
                                     (make-hash-table))))
              'utf-8 t))))
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
         `((code . ,agent-shell-rpc-code-transport)
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
warns once per unknown method and answers requests with
`agent-shell-rpc-code-method-not-found'."
  (:method (conn method _params id)
           (unless (memq method (agent-shell-rpc-conn-warned conn))
             (push method (agent-shell-rpc-conn-warned conn))
             (display-warning 'agent-shell
                              (format "No handler for bridge message %s" method)))
           (when id
             (agent-shell-rpc-respond-error
              conn id agent-shell-rpc-code-method-not-found (format "Method not found in Emacs: %s" method)))))

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
             (agent-shell-rpc-respond-error conn id agent-shell-rpc-code-internal-error text))))))))

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
         (agent-shell-rpc-respond-error conn id agent-shell-rpc-code-internal-error text))))))

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
  "Return the messages of the parsed SSE EVENTS of CONN, dropping repeats.
EVENTS are plists from `agent-shell-rpc--sse-parse'; the messages
come oldest first."
  (let ((messages nil)
        (last (agent-shell-rpc--event-id-number (agent-shell-rpc-conn-last-event-id conn))))
    (dolist (ev events)
      (let* ((id (plist-get ev :id))
             (n (agent-shell-rpc--event-id-number id)))
        (if (and n last (<= n last))
            (progn
              (cl-incf (agent-shell-rpc-conn-duplicates conn))
              (agent-shell-rpc--log conn "!!" (format "dropped repeated event %s" id)))
          (when id
            (setf (agent-shell-rpc-conn-last-event-id conn) id)
            (setq last (or n last)))
          (if (plist-member ev :error)
              (agent-shell-rpc--log conn "!!" (format "bad event data: %s: %s"
                                                      (plist-get ev :error)
                                                      (plist-get ev :text)))
            (when agent-shell-log-events
              (agent-shell-rpc--log conn (format "<== %s" (or id ""))
                                    (agent-shell-rpc--compact (plist-get ev :data))))
            (push (plist-get ev :data) messages)))))
    (nreverse messages)))

(defun agent-shell-rpc--compact (value)
  "Return VALUE, a decoded message, as one line of JSON for the log."
  (condition-case nil
      (agent-shell-json-text value :null-object nil)
    (error (format "%S" value))))

;;; Event stream

(defun agent-shell-rpc--open-events (conn)
  "Open the SSE event stream of CONN, resuming after the last event seen."
  (let* ((sse (agent-shell-rpc--sse-new))
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
               (agent-shell-rpc-conn-port conn)
               (format "%s events" (agent-shell-rpc-conn-name conn)) request
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
                                       conn (agent-shell-rpc--sse-parse sse))))
                        (when messages
                          (agent-shell-rpc--enqueue conn messages)))))
                   (_ (agent-shell-rpc--events-closed conn proc (or arg "stream ended")))))
               (agent-shell-rpc--sse-buffer sse)))
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

(provide 'agent-shell-rpc-protocol)
;;; agent-shell-rpc-protocol.el ends here
