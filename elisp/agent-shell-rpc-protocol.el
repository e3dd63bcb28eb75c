;;; agent-shell-rpc-protocol.el --- JSON-RPC between Emacs and the agent-shell bridge  -*- lexical-binding: t; -*-

;; SPDX-License-Identifier: GPL-3.0-or-later

;;; Commentary:

;; JSON-RPC 2.0 with the agent-shell bridge (see doc/protocol.org), in
;; the way of jsonrpc.el's `jsonrpc-connection': ids, the requests
;; waiting for their answers (each with success, error and timeout
;; callbacks), and the dispatch of incoming messages.  It knows nothing
;; of the transport carrying the messages, nor of the UI.
;;
;; An `agent-shell-rpc-conn' is abstract: a connection type that
;; includes it implements `agent-shell-rpc-deliver' (send one encoded
;; message, report the peer's immediate answer) and
;; `agent-shell-rpc-running-p', and hands what arrives to
;; `agent-shell-rpc-receive'.  agent-shell-rpc.el makes such a type for
;; the bridge process and its HTTP endpoint (agent-shell-rpc-http.el).
;;
;; - `agent-shell-rpc-request' (and `agent-shell-rpc-request-sync'),
;;   `agent-shell-rpc-notify', `agent-shell-rpc-respond' and
;;   `agent-shell-rpc-respond-error' send.  A request's answer may come
;;   back from the delivery itself or among the received messages.
;; - Every received message runs `agent-shell-rpc-message-functions' and
;;   is then dispatched, from a timer and never inside a process
;;   filter, to the generic function `agent-shell-rpc-handle', on which
;;   agent-shell-handlers.el defines one method per message:
;;
;;     (cl-defmethod agent-shell-rpc-handle
;;         (conn (_method (eql \\='session/update)) params _id) ...)
;;
;;   A handler for a request (ID non-nil) answers it, now or later, with
;;   `agent-shell-rpc-respond' or `agent-shell-rpc-respond-error'.
;; - With `agent-shell-log-events', what is sent and received is logged
;;   to *agent-shell events*, secrets masked (`agent-shell-rpc-log').
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
;; connection failed) and `agent-shell-rpc-code-transport' (the
;; transport refused a message without a JSON-RPC answer).

;;; Code:

(require 'cl-lib)
(require 'subr-x)
(require 'agent-shell-custom)
(require 'agent-shell-json)

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

;;; Errors

(define-error 'agent-shell-rpc-error "agent-shell bridge error" 'agent-shell-error)

;;; Options

(defcustom agent-shell-rpc-request-timeout 30
  "Seconds to wait for the answer to a request before giving up."
  :type 'number
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
  "Abnormal hook run for every message that arrives from the bridge.
Each function gets the connection and the decoded message alist,
before the message is dispatched to `agent-shell-rpc-handle'.")

;;; Connections

(cl-defstruct (agent-shell-rpc-conn
               (:constructor nil)
               (:copier nil))
  "A JSON-RPC connection, whatever carries its messages.
A connection type includes this one and implements
`agent-shell-rpc-deliver' and `agent-shell-rpc-running-p'."
  (name nil :documentation "What the connection is called in the events log.")
  (next-id 0 :documentation "The id of the last request sent.")
  (pending (make-hash-table :test #'eql)
           :documentation "Request id to its `agent-shell-rpc--pending'.")
  (inbox nil :documentation "Received messages not dispatched yet, oldest first.")
  (draining nil :documentation "Non-nil while the inbox is being dispatched.")
  (drain-timer nil :documentation "Timer that will dispatch the inbox, or nil.")
  (warned nil :documentation "Methods without a handler, warned about once.")
  (dead nil :documentation "Non-nil once the connection ended.")
  (exit-reason nil :documentation "Why it ended, or why it could not start."))

(cl-defstruct (agent-shell-rpc--pending
               (:constructor agent-shell-rpc--make-pending)
               (:copier nil))
  "A request waiting for its answer.
ABORT is a function abandoning its delivery, or nil."
  id method on-success on-error timer lost-timer abort)

(cl-defgeneric agent-shell-rpc-deliver (conn bytes on-answer on-lost)
  "Send BYTES, one encoded JSON-RPC message, over CONN's transport.
Call ON-ANSWER once the peer took the message, as (ON-ANSWER ANSWER
REFUSAL): ANSWER is the message the peer answered with at once (a
response), or nil when its answer, if any, will reach
`agent-shell-rpc-receive'; REFUSAL is nil, or a text saying how the
peer refused the message.  Call ON-LOST with a reason instead when
the message may not have arrived.  Return a function that abandons
the delivery, or nil.")

(cl-defgeneric agent-shell-rpc-running-p (conn)
  "Return non-nil while the transport of CONN can carry messages.")

(defun agent-shell-rpc-live-p (conn)
  "Return non-nil when CONN can carry messages."
  (and conn
       (not (agent-shell-rpc-conn-dead conn))
       (agent-shell-rpc-running-p conn)
       t))

(defun agent-shell-rpc-pending-count (conn)
  "Return the number of requests of CONN waiting for an answer."
  (hash-table-count (agent-shell-rpc-conn-pending conn)))

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

(defun agent-shell-rpc-log (conn direction text)
  "Log TEXT under DIRECTION for CONN when `agent-shell-log-events' is set.
CONN may be nil."
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

(defun agent-shell-rpc-log-message (conn direction message)
  "Log MESSAGE, a received JSON value, on one line under DIRECTION for CONN.
Nothing is formatted when `agent-shell-log-events' is nil."
  (when agent-shell-log-events
    (agent-shell-rpc-log conn direction
                         (condition-case nil
                             (agent-shell-json-text message :null-object nil)
                           (error (format "%S" message))))))

;;; JSON

(defun agent-shell-rpc-check-json ()
  "Signal an error unless this Emacs has native JSON support."
  (unless (and (fboundp 'json-serialize) (fboundp 'json-parse-string))
    (signal 'agent-shell-rpc-error
            (list "This Emacs lacks native JSON (json-serialize); build it with libjansson"))))

(defun agent-shell-rpc--encode (object)
  "Return OBJECT serialised as JSON, as a unibyte UTF-8 string."
  (agent-shell-json-bytes object))

;;; Sending

(defun agent-shell-rpc--send (conn message on-answer on-lost &optional shown)
  "Deliver the JSON-RPC MESSAGE over CONN; see `agent-shell-rpc-deliver'.
MESSAGE is a Lisp object, or a unibyte string already encoded; SHOWN,
when given, is what the events log shows instead (secrets masked).
Return the function abandoning the delivery, or nil."
  (let ((bytes (if (stringp message) message (agent-shell-rpc--encode message))))
    (when agent-shell-log-events
      (agent-shell-rpc-log
       conn "-->" (or shown
                      (decode-coding-string
                       (if (stringp message)
                           bytes
                         (agent-shell-rpc--encode (agent-shell-rpc--redact message)))
                       'utf-8 t))))
    (agent-shell-rpc-deliver conn bytes on-answer on-lost)))

(defun agent-shell-rpc--send-quietly (conn message what &optional on-done)
  "Send MESSAGE over CONN expecting no answer; warn about failures of WHAT.
ON-DONE, when given, is called with t when the peer accepted the
message and with nil when it did not (after the warning)."
  (let ((failed (lambda (reason)
                  (display-warning
                   'agent-shell (format "Sending %s to the bridge failed: %s" what reason))
                  (when on-done (funcall on-done nil)))))
    (agent-shell-rpc--send
     conn message
     (lambda (answer refusal)
       (if refusal
           (funcall failed (or (and (consp answer)
                                    (alist-get 'message (alist-get 'error answer)))
                               refusal))
         (when on-done (funcall on-done t))))
     failed)))

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
    (setf (agent-shell-rpc--pending-abort pending)
          (agent-shell-rpc--send
           conn json
           (lambda (answer refusal)
             (agent-shell-rpc--request-answered conn id answer refusal))
           (lambda (reason) (agent-shell-rpc--request-lost conn id reason))
           (when agent-shell-log-events
             (decode-coding-string
              (agent-shell-rpc--encode
               `(:jsonrpc "2.0" :id ,id :method ,method
                          :params ,(if params (agent-shell-rpc--redact params)
                                     (make-hash-table))))
              'utf-8 t))))
    id))

(defun agent-shell-rpc--response-p (message)
  "Return non-nil when MESSAGE is a JSON-RPC response (a result or an error)."
  (and (consp message) (or (assq 'result message) (assq 'error message))))

(defun agent-shell-rpc--request-answered (conn id answer refusal)
  "Complete request ID of CONN with the peer's immediate ANSWER or REFUSAL.
With neither, the answer is still to come."
  (let ((pending (gethash id (agent-shell-rpc-conn-pending conn))))
    (cond
     ((null pending))
     ((agent-shell-rpc--response-p answer)
      (agent-shell-rpc--complete conn id answer))
     (refusal
      (agent-shell-rpc--finish
       conn id :error
       `((code . ,agent-shell-rpc-code-transport)
         (message . ,(format "The bridge answered %s with %s and no JSON-RPC response"
                             (agent-shell-rpc--pending-method pending) refusal))))))))

(defun agent-shell-rpc--complete (conn id response)
  "Complete request ID of CONN with RESPONSE, its result or its error."
  (if (alist-get 'error response)
      (agent-shell-rpc--finish conn id :error (alist-get 'error response))
    (agent-shell-rpc--finish conn id :result (alist-get 'result response))))

(defun agent-shell-rpc--request-lost (conn id reason)
  "Fail request ID of CONN, whose delivery was lost for REASON, in a moment.
The connection may be ending: its teardown gets the chance to report
the real cause first."
  (let ((pending (gethash id (agent-shell-rpc-conn-pending conn))))
    (when (and pending (not (agent-shell-rpc--pending-lost-timer pending)))
      (setf (agent-shell-rpc--pending-lost-timer pending)
            (run-at-time 0.5 nil #'agent-shell-rpc--request-gone conn id reason)))))

(defun agent-shell-rpc--request-gone (conn id reason)
  "Fail request ID of CONN whose delivery was lost for REASON."
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
           (agent-shell-rpc-log conn "!!" (format "callback of %s failed: %s"
                                                  (agent-shell-rpc--pending-method pending)
                                                  (error-message-string err)))
           (message "agent-shell: callback of %s failed: %s"
                    (agent-shell-rpc--pending-method pending)
                    (error-message-string err))))))))

(defun agent-shell-rpc--pending-cancel (pending)
  "Cancel the timers and the delivery of PENDING."
  (dolist (timer (list (agent-shell-rpc--pending-timer pending)
                       (agent-shell-rpc--pending-lost-timer pending)))
    (when timer (cancel-timer timer)))
  (setf (agent-shell-rpc--pending-timer pending) nil
        (agent-shell-rpc--pending-lost-timer pending) nil)
  (let ((abort (agent-shell-rpc--pending-abort pending)))
    (setf (agent-shell-rpc--pending-abort pending) nil)
    (when abort (funcall abort))))

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
  (agent-shell-rpc--send-quietly
   conn `(:jsonrpc "2.0" :method ,method :params ,(or params (make-hash-table)))
   method))

(defun agent-shell-rpc-respond (conn id result &optional on-done)
  "Answer the bridge's request ID on CONN with RESULT.
RESULT is serialised by `json-serialize'; nil is the empty object,
`:null' is null.  ON-DONE, when given, is called with t once the
bridge accepted the answer, or with nil when it could not be sent."
  (agent-shell-rpc--ensure-live conn)
  (agent-shell-rpc--send-quietly
   conn `(:jsonrpc "2.0" :id ,id :result ,result)
   (format "the answer to request %s" id)
   on-done))

(defun agent-shell-rpc-respond-error (conn id code message)
  "Answer the bridge's request ID on CONN with error CODE and MESSAGE."
  (agent-shell-rpc--ensure-live conn)
  (agent-shell-rpc--send-quietly
   conn `(:jsonrpc "2.0" :id ,id :error (:code ,code :message ,message))
   (format "the error answer to request %s" id)))

;;; Receiving

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
              conn id agent-shell-rpc-code-method-not-found
              (format "Method not found in Emacs: %s" method)))))

(defun agent-shell-rpc-receive (conn messages)
  "Take MESSAGES that arrived on CONN, oldest first; a timer dispatches them.
Handlers never run inside a process filter: there a long handler
\(an Emacs-side tool) would block reading and could not be quit."
  (setf (agent-shell-rpc-conn-inbox conn)
        (nconc (agent-shell-rpc-conn-inbox conn) messages))
  (unless (or (agent-shell-rpc-conn-draining conn)
              (agent-shell-rpc-conn-drain-timer conn))
    (setf (agent-shell-rpc-conn-drain-timer conn)
          (run-at-time 0 nil #'agent-shell-rpc--drain conn))))

(defun agent-shell-rpc--dispatch (conn message)
  "Run the hook for MESSAGE from CONN, then hand it to its handler.
A response completes the request it answers."
  (condition-case-unless-debug err
      (run-hook-with-args 'agent-shell-rpc-message-functions conn message)
    (error (message "agent-shell: a message hook failed: %s" (error-message-string err))))
  (let ((method (alist-get 'method message))
        (id (alist-get 'id message)))
    (cond
     ((and (stringp method) (not (string-empty-p method)))
      (condition-case-unless-debug err
          (agent-shell-rpc-handle conn (intern method) (alist-get 'params message) id)
        (error
         (let ((text (format "Emacs failed to handle %s: %s" method
                             (error-message-string err))))
           (agent-shell-rpc-log conn "!!" text)
           (message "agent-shell: %s" text)
           (when (and id (agent-shell-rpc-live-p conn))
             (agent-shell-rpc-respond-error conn id agent-shell-rpc-code-internal-error
                                            text))))))
     ((and (integerp id) (agent-shell-rpc--response-p message)
           (gethash id (agent-shell-rpc-conn-pending conn)))
      (agent-shell-rpc--complete conn id message))
     (t (agent-shell-rpc-log conn "!!" "ignored a message that is neither a request, \
a notification nor the answer to a waiting request")))))

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
       (agent-shell-rpc-log conn "!!" text)
       (message "agent-shell: %s" text)
       (when (and id (agent-shell-rpc-live-p conn))
         (agent-shell-rpc-respond-error conn id agent-shell-rpc-code-internal-error
                                        text))))))

(defun agent-shell-rpc--drain (conn)
  "Dispatch the queued messages of CONN, oldest first.
A handler that waits (for example in `agent-shell-rpc-request-sync')
lets new messages arrive; they are queued and dispatched after it,
keeping the order.  Once CONN is dead, requests are dropped: nobody
could get their answers."
  (setf (agent-shell-rpc-conn-drain-timer conn) nil)
  (unless (agent-shell-rpc-conn-draining conn)
    (setf (agent-shell-rpc-conn-draining conn) t)
    (unwind-protect
        (while (agent-shell-rpc-conn-inbox conn)
          (let ((message (pop (agent-shell-rpc-conn-inbox conn))))
            (unless (and (agent-shell-rpc-conn-dead conn)
                         (alist-get 'method message) (alist-get 'id message))
              (agent-shell-rpc--dispatch-quittably conn message))))
      (setf (agent-shell-rpc-conn-draining conn) nil))))

;;; Ending

(defun agent-shell-rpc-abandon (conn text)
  "End the conversation on CONN, which its transport can no longer carry.
CONN is marked dead.  What was received before is still dispatched,
requests from the peer excepted (nobody could get their answers);
every request waiting for its answer fails with
`agent-shell-rpc-code-disconnected' and TEXT."
  (setf (agent-shell-rpc-conn-dead conn) t)
  (let ((timer (agent-shell-rpc-conn-drain-timer conn)))
    (when timer
      (cancel-timer timer)
      (agent-shell-rpc--drain conn)))
  (agent-shell-rpc-log conn "!!" text)
  (let ((err `((code . ,agent-shell-rpc-code-disconnected) (message . ,text)))
        (ids nil))
    (maphash (lambda (id _) (push id ids)) (agent-shell-rpc-conn-pending conn))
    (dolist (id (sort ids #'<))
      (agent-shell-rpc--finish conn id :error err))))

(provide 'agent-shell-rpc-protocol)
;;; agent-shell-rpc-protocol.el ends here
