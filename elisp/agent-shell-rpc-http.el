;;; agent-shell-rpc-http.el --- HTTP/1.1 and Server-Sent Events for agent-shell  -*- lexical-binding: t; -*-

;; SPDX-License-Identifier: GPL-3.0-or-later

;;; Commentary:

;; The transport to the bridge: a small HTTP/1.1 client over
;; `make-network-process' and a Server-Sent Events parser.  It knows
;; ports, bytes and JSON texts, nothing of JSON-RPC (ids, requests,
;; errors: agent-shell-rpc-protocol.el) nor of the UI.
;;
;; An endpoint (`agent-shell-rpc-http-create': port and bearer token)
;; offers two things.  `agent-shell-rpc-http-post' sends one JSON text
;; as "POST /rpc" and gives back the status and the JSON of the answer.
;; `agent-shell-rpc-http-open-events' keeps a "GET /events" stream
;; open: its events' JSON goes to the endpoint's `on-events' function,
;; and when the stream drops it is reopened with Last-Event-ID after a
;; short delay (`agent-shell-rpc-reconnect-delays'), events already
;; seen being dropped, so none is lost or doubled.  url.el is avoided on
;; purpose: it routes loopback traffic through proxy settings, and curl
;; would be one more dependency.
;;
;; Both parsers work in hidden unibyte buffers and allocate per frame,
;; not per byte: received bytes are inserted at the end of the
;; connection's buffer, lines are found with `search-forward', the
;; data of a chunked body is copied from buffer to buffer with
;; `insert-buffer-substring', and an SSE event's JSON is parsed in
;; place with `json-parse-buffer' (one parse per event, no string of
;; the event is made).  What has been parsed is deleted once per read,
;; so the cost of a read does not grow with the length of the stream.
;; Bytes are decoded as UTF-8 only by the JSON parser, once an event is
;; complete, so a multi-byte character split across reads or chunks
;; survives.
;;
;; JSON texts are parsed into alists, arrays into lists, null into nil
;; and false into `:json-false'.

;;; Code:

(require 'cl-lib)
(require 'subr-x)
(require 'agent-shell-custom)

;;; Options

(defcustom agent-shell-rpc-reconnect-delays '(0.1 0.5 1 2 5)
  "Seconds to wait before successive attempts to reopen the event stream.
The last value repeats.  A stream that delivers data resets the
sequence."
  :type '(repeat number)
  :group 'agent-shell-rpc
  :package-version '(agent-shell . "0.1.0"))

;;; Errors

(define-error 'agent-shell-rpc-http-error "Malformed HTTP response" 'agent-shell-error)

(defconst agent-shell-rpc-http--max-line-bytes 65536
  "Longest status line, header block or chunk-size line accepted.")

(defun agent-shell-rpc-http--new-buffer (name)
  "Return a new hidden unibyte buffer called NAME without undo."
  (let ((buf (generate-new-buffer name t)))
    (with-current-buffer buf
      (set-buffer-multibyte nil)
      (setq buffer-undo-list t))
    buf))

;;; HTTP/1.1 response parser

(cl-defstruct (agent-shell-rpc-http--response
               (:constructor agent-shell-rpc-http--response-make)
               (:copier nil))
  "Incremental parser of one HTTP/1.1 response.
BUFFER holds received bytes not yet consumed.  STATE is one of
`head', `body', `chunk-size', `chunk-data', `chunk-end',
`trailers', `until-close' and `done'.  SINK, when a buffer, receives
the body bytes (copied buffer to buffer) instead of the parse events
carrying them as strings."
  buffer (state 'head) status headers (remaining 0) sink)

(defun agent-shell-rpc-http--response-new (&optional sink)
  "Return a fresh response parser with its own hidden unibyte buffer.
SINK is a buffer that receives the body, or nil (see
`agent-shell-rpc-http--response-feed'); it is killed with the parser."
  (agent-shell-rpc-http--response-make :buffer (agent-shell-rpc-http--new-buffer " *agent-shell-rpc http*")
                              :sink sink))

(defun agent-shell-rpc-http--response-discard (http)
  "Free the buffers of the parser HTTP, its sink included."
  (dolist (buf (list (agent-shell-rpc-http--response-buffer http) (agent-shell-rpc-http--response-sink http)))
    (when (buffer-live-p buf)
      (kill-buffer buf))))

(defun agent-shell-rpc-http--response-header (http name)
  "Return the value of header NAME (lower case) in the response HTTP."
  (cdr (assoc name (agent-shell-rpc-http--response-headers http))))

(defun agent-shell-rpc-http--response-feed (http bytes)
  "Add the unibyte string BYTES to the parser HTTP.
Return the parse events, oldest first: (headers), (body . BYTES) and
\(done).  With a sink, body bytes go to the sink buffer and the event
is (body) once per call.  Signal `agent-shell-rpc-http-error' on a
malformed response."
  (with-current-buffer (agent-shell-rpc-http--response-buffer http)
    (goto-char (point-max))
    (insert bytes)
    (agent-shell-rpc-http--parse http)))

(defun agent-shell-rpc-http--response-eof (http)
  "Tell the parser HTTP that the connection closed; return final events."
  (when (eq (agent-shell-rpc-http--response-state http) 'until-close)
    (setf (agent-shell-rpc-http--response-state http) 'done)
    (list '(done))))

(defun agent-shell-rpc-http--malformed (what)
  "Signal that the response is malformed, describing WHAT was wrong."
  (signal 'agent-shell-rpc-http-error
          (list (concat "Malformed HTTP response from the bridge: " what))))

(defun agent-shell-rpc-http--line (pos)
  "Return (LINE . NEXT) for the line starting at POS, or nil when incomplete.
LINE lacks its end (LF or CRLF); NEXT is where the following line starts."
  (goto-char pos)
  (when (search-forward "\n" nil t)
    (let ((end (if (eq (char-before (1- (point))) ?\r) (- (point) 2) (1- (point)))))
      (cons (buffer-substring-no-properties pos end) (point)))))

(defun agent-shell-rpc-http--parse-head (http head)
  "Record the status line and headers in HEAD for the parser HTTP."
  (let* ((lines (split-string head "\r?\n" t))
         (status-line (car lines)))
    (unless (and status-line
                 (string-match "\\`HTTP/1\\.[01] \\([0-9][0-9][0-9]\\)" status-line))
      (agent-shell-rpc-http--malformed (format "bad status line %S" status-line)))
    (setf (agent-shell-rpc-http--response-status http)
          (string-to-number (match-string 1 status-line)))
    (setf (agent-shell-rpc-http--response-headers http)
          (mapcar (lambda (line)
                    (unless (string-match "\\`\\([^:[:space:]]+\\):[ \t]*\\(.*?\\)[ \t]*\\'" line)
                      (agent-shell-rpc-http--malformed (format "bad header %S" line)))
                    (cons (downcase (match-string 1 line)) (match-string 2 line)))
                  (cdr lines)))
    (let ((te (agent-shell-rpc-http--response-header http "transfer-encoding"))
          (cl (agent-shell-rpc-http--response-header http "content-length"))
          (status (agent-shell-rpc-http--response-status http)))
      (cond
       ((or (< status 200) (memq status '(204 304)))
        (setf (agent-shell-rpc-http--response-state http) 'done))
       ((and te (string-match-p "chunked" (downcase te)))
        (setf (agent-shell-rpc-http--response-state http) 'chunk-size))
       (cl
        (unless (string-match-p "\\`[0-9]+\\'" cl)
          (agent-shell-rpc-http--malformed (format "bad Content-Length %S" cl)))
        (setf (agent-shell-rpc-http--response-remaining http) (string-to-number cl))
        (setf (agent-shell-rpc-http--response-state http)
              (if (zerop (agent-shell-rpc-http--response-remaining http)) 'done 'body)))
       (t (setf (agent-shell-rpc-http--response-state http) 'until-close))))))

(defun agent-shell-rpc-http--take (http from to events)
  "Hand the body bytes FROM..TO of HTTP's buffer on; return EVENTS updated.
With a sink the bytes are copied there and one (body) event stands
for all of a call; else a (body . BYTES) event is pushed."
  (let ((sink (agent-shell-rpc-http--response-sink http)))
    (if (not sink)
        (cons (cons 'body (buffer-substring-no-properties from to)) events)
      (let ((raw (current-buffer)))
        (with-current-buffer sink
          (goto-char (point-max))
          (insert-buffer-substring raw from to)))
      (if (equal (car events) '(body)) events (cons (list 'body) events)))))

(defun agent-shell-rpc-http--parse (http)
  "Parse the bytes in the current buffer for HTTP; return the events.
Parsed bytes are deleted once, at the end."
  (let ((events nil) (more t) (pos (point-min)))
    (unwind-protect
        (while more
          (setq more nil)
          (pcase (agent-shell-rpc-http--response-state http)
            ('head
             (goto-char pos)
             (if (not (re-search-forward "\r?\n\r?\n" nil t))
                 (when (> (- (point-max) pos) agent-shell-rpc-http--max-line-bytes)
                   (agent-shell-rpc-http--malformed "header block too long"))
               (let ((head (buffer-substring-no-properties pos (point))))
                 (setq pos (point))
                 (agent-shell-rpc-http--parse-head http head)
                 (push '(headers) events)
                 (when (eq (agent-shell-rpc-http--response-state http) 'done)
                   (push '(done) events))
                 (setq more t))))
            ((or 'body 'chunk-data)
             (let ((n (min (agent-shell-rpc-http--response-remaining http) (- (point-max) pos))))
               (when (> n 0)
                 (setq events (agent-shell-rpc-http--take http pos (+ pos n) events))
                 (setq pos (+ pos n))
                 (cl-decf (agent-shell-rpc-http--response-remaining http) n))
               (when (zerop (agent-shell-rpc-http--response-remaining http))
                 (if (eq (agent-shell-rpc-http--response-state http) 'body)
                     (progn (setf (agent-shell-rpc-http--response-state http) 'done)
                            (push '(done) events))
                   (setf (agent-shell-rpc-http--response-state http) 'chunk-end)
                   (setq more t)))))
            ('chunk-size
             (let ((line (agent-shell-rpc-http--line pos)))
               (when (and (null line) (> (- (point-max) pos) agent-shell-rpc-http--max-line-bytes))
                 (agent-shell-rpc-http--malformed "chunk-size line too long"))
               (when line
                 (unless (string-match "\\`[ \t]*\\([0-9a-fA-F]+\\)[ \t]*\\(?:;.*\\)?\\'"
                                       (car line))
                   (agent-shell-rpc-http--malformed (format "bad chunk size %S" (car line))))
                 (let ((size (string-to-number (match-string 1 (car line)) 16)))
                   (setf (agent-shell-rpc-http--response-remaining http) size)
                   (setf (agent-shell-rpc-http--response-state http)
                         (if (zerop size) 'trailers 'chunk-data)))
                 (setq pos (cdr line) more t))))
            ('chunk-end
             (let ((line (agent-shell-rpc-http--line pos)))
               (when line
                 (unless (string-empty-p (car line))
                   (agent-shell-rpc-http--malformed "chunk longer than its size"))
                 (setf (agent-shell-rpc-http--response-state http) 'chunk-size)
                 (setq pos (cdr line) more t))))
            ('trailers
             (let ((line (agent-shell-rpc-http--line pos)))
               (when line
                 (when (string-empty-p (car line))
                   (setf (agent-shell-rpc-http--response-state http) 'done)
                   (push '(done) events))
                 (setq pos (cdr line) more t))))
            ('until-close
             (when (> (point-max) pos)
               (setq events (agent-shell-rpc-http--take http pos (point-max) events))
               (setq pos (point-max))))
            ('done
             ;; Bytes after the end of the response are ignored.
             (setq pos (point-max)))))
      (delete-region (point-min) pos))
    (nreverse events)))

;;; Server-Sent Events parser

(cl-defstruct (agent-shell-rpc-http--sse
               (:constructor agent-shell-rpc-http--sse-make)
               (:copier nil))
  "Incremental parser of a text/event-stream body held in BUFFER.
SCAN is where the next unread line starts, SEEN how far it is known
to have no line end (so a long line arriving in many reads is
searched once); START is the first line of the event being read.  DATA is (BEG . END) of the event's only data
line, or a list of decoded data lines, newest first, when it has
several.  EVENT is its type, ID the last id seen (ids persist across
events, as the SSE grammar says)."
  buffer (scan 1) (seen 1) (start 1) data event id)

(defun agent-shell-rpc-http--sse-new ()
  "Return a fresh SSE parser with its own hidden unibyte buffer."
  (agent-shell-rpc-http--sse-make :buffer (agent-shell-rpc-http--new-buffer " *agent-shell-rpc sse*")))

(defun agent-shell-rpc-http--sse-discard (sse)
  "Free the buffer of the SSE parser SSE."
  (let ((buf (agent-shell-rpc-http--sse-buffer sse)))
    (when (buffer-live-p buf)
      (kill-buffer buf))))

(defun agent-shell-rpc-http--sse-feed (sse bytes)
  "Add the unibyte string BYTES to the SSE parser SSE; return its events.
See `agent-shell-rpc-http--sse-parse'."
  (with-current-buffer (agent-shell-rpc-http--sse-buffer sse)
    (goto-char (point-max))
    (insert bytes))
  (agent-shell-rpc-http--sse-parse sse))

(defun agent-shell-rpc-http--sse-multi-p (data)
  "Return non-nil if DATA is a list of decoded lines, not one line's bounds."
  (stringp (car-safe data)))

(defun agent-shell-rpc-http--sse-pending-data (sse)
  "Return the decoded data lines of the event SSE has not finished, oldest first."
  (let ((data (agent-shell-rpc-http--sse-data sse)))
    (cond ((null data) nil)
          ((agent-shell-rpc-http--sse-multi-p data) (reverse data))
          (t (with-current-buffer (agent-shell-rpc-http--sse-buffer sse)
               (list (decode-coding-string
                      (buffer-substring-no-properties (car data) (cdr data)) 'utf-8 t)))))))

(defun agent-shell-rpc-http--json-read (beg end)
  "Parse the JSON text between BEG and END of the current buffer.
Signal `json-error' unless it is exactly one JSON value."
  (save-restriction
    (narrow-to-region beg end)
    (goto-char beg)
    (prog1 (json-parse-buffer :object-type 'alist :array-type 'list
                              :null-object nil :false-object :json-false)
      (skip-chars-forward " \t")
      (unless (eobp)
        (signal 'json-trailing-content (list (point)))))))

(defun agent-shell-rpc-http--sse-dispatch (sse)
  "Return the event SSE has read (a plist), or nil when it had no data.
The plist has :id, :event and either :data, the parsed JSON, or
:error, a message saying why the data is not JSON, with :text."
  (let ((data (agent-shell-rpc-http--sse-data sse))
        (event (or (agent-shell-rpc-http--sse-event sse) "message"))
        (id (agent-shell-rpc-http--sse-id sse)))
    (setf (agent-shell-rpc-http--sse-data sse) nil
          (agent-shell-rpc-http--sse-event sse) nil)
    (when data
      (condition-case err
          (list :id id :event event
                :data (if (agent-shell-rpc-http--sse-multi-p data)
                          (json-parse-string (mapconcat #'identity (reverse data) "\n")
                                             :object-type 'alist :array-type 'list
                                             :null-object nil :false-object :json-false)
                        (agent-shell-rpc-http--json-read (car data) (cdr data))))
        (json-error
         (list :id id :event event :error (error-message-string err)
               :text (if (agent-shell-rpc-http--sse-multi-p data)
                         (mapconcat #'identity (reverse data) "\n")
                       (decode-coding-string
                        (buffer-substring-no-properties (car data) (cdr data)) 'utf-8 t))))))))

(defun agent-shell-rpc-http--sse-field (sse beg end)
  "Process the field line BEG..END (no line end) for SSE."
  (let* ((colon (progn (goto-char beg) (search-forward ":" end t)))
         (name-end (if colon (1- colon) end))
         (value (if colon (if (eq (char-after colon) ?\s) (1+ colon) colon) end)))
    (pcase (buffer-substring-no-properties beg name-end)
      ("data"
       (let ((data (agent-shell-rpc-http--sse-data sse)))
         (cond
          ((null data) (setf (agent-shell-rpc-http--sse-data sse) (cons value end)))
          (t
           (let ((line (decode-coding-string (buffer-substring-no-properties value end)
                                             'utf-8 t)))
             (unless (agent-shell-rpc-http--sse-multi-p data)
               (setq data (list (decode-coding-string
                                 (buffer-substring-no-properties (car data) (cdr data))
                                 'utf-8 t))))
             (setf (agent-shell-rpc-http--sse-data sse) (cons line data)))))))
      ("event" (setf (agent-shell-rpc-http--sse-event sse)
                     (decode-coding-string (buffer-substring-no-properties value end) 'utf-8 t)))
      ("id" (let ((id (buffer-substring-no-properties value end)))
              (unless (string-search "\0" id)
                (setf (agent-shell-rpc-http--sse-id sse) (decode-coding-string id 'utf-8 t))))))))

(defun agent-shell-rpc-http--sse-parse (sse)
  "Read the complete events in SSE's buffer; return them, oldest first.
Each is a plist, see `agent-shell-rpc-http--sse-dispatch'.  Lines end at
CRLF, LF or CR.  What belongs to finished events is deleted."
  (with-current-buffer (agent-shell-rpc-http--sse-buffer sse)
    (let ((pos (agent-shell-rpc-http--sse-scan sse))
          (events nil))
      (goto-char (max pos (agent-shell-rpc-http--sse-seen sse)))
      (while (if (re-search-forward "[\r\n]" nil 'move)
                 ;; A CR last in the buffer may be the first half of a CRLF.
                 (or (not (and (eq (char-before) ?\r) (eobp)))
                     (progn (backward-char) nil))
               nil)
        (let* ((end (1- (point)))
               (next (if (and (eq (char-before) ?\r) (eq (char-after) ?\n))
                         (1+ (point))
                       (point))))
          (cond
           ((= end pos)
            (let ((event (agent-shell-rpc-http--sse-dispatch sse)))
              (when event (push event events)))
            (setf (agent-shell-rpc-http--sse-start sse) next))
           ((eq (char-after pos) ?:))
           (t (agent-shell-rpc-http--sse-field sse pos end)))
          (setq pos next)
          (goto-char next)))
      (setf (agent-shell-rpc-http--sse-scan sse) pos
            (agent-shell-rpc-http--sse-seen sse) (point))
      ;; Keep only the unfinished event; positions move down with it.
      (let ((drop (- (agent-shell-rpc-http--sse-start sse) (point-min))))
        (when (> drop 0)
          (delete-region (point-min) (agent-shell-rpc-http--sse-start sse))
          (setf (agent-shell-rpc-http--sse-scan sse) (- (agent-shell-rpc-http--sse-scan sse) drop)
                (agent-shell-rpc-http--sse-seen sse) (- (agent-shell-rpc-http--sse-seen sse) drop)
                (agent-shell-rpc-http--sse-start sse) (point-min))
          (let ((data (agent-shell-rpc-http--sse-data sse)))
            (when (and data (not (agent-shell-rpc-http--sse-multi-p data)))
              (setf (agent-shell-rpc-http--sse-data sse)
                    (cons (- (car data) drop) (- (cdr data) drop)))))))
      (nreverse events))))

;;; Connections

(defun agent-shell-rpc-http--connect (port purpose request handler &optional sink)
  "Open an HTTP connection to 127.0.0.1:PORT and send REQUEST (bytes).
PURPOSE names the process.  HANDLER is called as (HANDLER PROC KIND
ARG), outside any process buffer, for each parse event (KIND
`headers', `body' with the bytes, `done'), and once with KIND
`closed' and a reason when the connection ends before `done'.  With
SINK, a buffer, body bytes go there and `body' comes with nil.
Return the process; signal `file-error' when connecting fails."
  (let* ((http (agent-shell-rpc-http--response-new sink))
         (proc (condition-case err
                   (make-network-process
                    :name purpose
                    :host "127.0.0.1"
                    :service port
                    :coding 'binary
                    :noquery t
                    :filter #'agent-shell-rpc-http--filter
                    :sentinel #'agent-shell-rpc-http--sentinel)
                 (error (agent-shell-rpc-http--response-discard http)
                        (signal (car err) (cdr err))))))
    (process-put proc 'agent-shell-rpc-http-response http)
    (process-put proc 'agent-shell-rpc-http-handler handler)
    (process-send-string proc request)
    proc))

(defun agent-shell-rpc-http-cancel (proc)
  "Close the HTTP connection PROC without reporting it as `closed'."
  (process-put proc 'agent-shell-rpc-http-closed t)
  (when (process-live-p proc)
    (delete-process proc))
  (let ((http (process-get proc 'agent-shell-rpc-http-response)))
    (when http (agent-shell-rpc-http--response-discard http))))

(defun agent-shell-rpc-http--coalesce (events)
  "Join consecutive `body' entries of the parse EVENTS into one."
  (let ((out nil))
    (dolist (ev events (nreverse out))
      (if (and (eq (car ev) 'body) (eq (caar out) 'body))
          (when (cdr ev)
            (setcdr (car out) (concat (cdar out) (cdr ev))))
        (push (cons (car ev) (cdr ev)) out)))))

(defun agent-shell-rpc-http--run (proc events)
  "Give the parse EVENTS of PROC to its handler; close PROC when done.
Consecutive body pieces go to the handler in one call, so a handler
that dispatches messages has them all parsed before the first runs."
  (let ((handler (process-get proc 'agent-shell-rpc-http-handler)))
    (dolist (ev (agent-shell-rpc-http--coalesce events))
      (unless (process-get proc 'agent-shell-rpc-http-closed)
        (when (eq (car ev) 'done)
          (agent-shell-rpc-http-cancel proc))
        (funcall handler proc (car ev) (cdr ev))))))

(defun agent-shell-rpc-http--filter (proc bytes)
  "Process filter of HTTP connections: parse BYTES received on PROC."
  (let ((http (process-get proc 'agent-shell-rpc-http-response)))
    (when (and http (not (process-get proc 'agent-shell-rpc-http-closed)))
      (let ((events (condition-case err
                        (agent-shell-rpc-http--response-feed http bytes)
                      (agent-shell-rpc-http-error
                       (agent-shell-rpc-http-cancel proc)
                       (funcall (process-get proc 'agent-shell-rpc-http-handler)
                                proc 'closed (error-message-string err))
                       nil))))
        (agent-shell-rpc-http--run proc events)))))

(defun agent-shell-rpc-http--sentinel (proc event)
  "Sentinel of HTTP connections: report the end of PROC described by EVENT."
  (unless (or (process-live-p proc) (process-get proc 'agent-shell-rpc-http-closed))
    (let ((http (process-get proc 'agent-shell-rpc-http-response)))
      (when http
        (agent-shell-rpc-http--run proc (agent-shell-rpc-http--response-eof http)))
      (unless (process-get proc 'agent-shell-rpc-http-closed)
        (agent-shell-rpc-http-cancel proc)
        (funcall (process-get proc 'agent-shell-rpc-http-handler)
                 proc 'closed (string-trim event))))))

;;; Endpoints

(cl-defstruct (agent-shell-rpc-http
               (:constructor agent-shell-rpc-http-create)
               (:copier nil))
  "An HTTP endpoint on 127.0.0.1: \"POST /rpc\" and the \"GET /events\" stream."
  (port nil :documentation "The TCP port.")
  (token nil :documentation "The bearer token every request carries.")
  (name "agent-shell-rpc" :documentation "What its network processes are named after.")
  (on-events nil :documentation "Function called with the stream's new events.
Its argument is a list of (ID . JSON), oldest first: the event's id
\(a string, or nil) and its data, parsed.")
  (log nil :documentation "Function called as (LOG DIRECTION TEXT) on what happens, or nil.")
  (events-process nil :documentation "The connection of the event stream, or nil.")
  (last-event-id nil :documentation "The id of the last event received.")
  (reconnect-timer nil :documentation "Timer reopening the stream, or nil.")
  (reconnect-attempt 0 :documentation "Attempts since the stream last delivered data.")
  (duplicates 0 :documentation "Events dropped because they were already received.")
  (closed nil :documentation "Non-nil once closed: the stream is not reopened."))

(defun agent-shell-rpc-http--log (http direction text)
  "Log TEXT under DIRECTION through the log function of HTTP, if any."
  (when-let ((log (agent-shell-rpc-http-log http)))
    (funcall log direction text)))

(defun agent-shell-rpc-http--decode (bytes)
  "Parse the complete UTF-8 JSON text BYTES (a unibyte string)."
  (json-parse-string (decode-coding-string bytes 'utf-8 t)
                     :object-type 'alist :array-type 'list
                     :null-object nil :false-object :json-false))

(defun agent-shell-rpc-http--request-head (http verb path headers)
  "Return the head of an HTTP request VERB PATH to the endpoint HTTP.
HEADERS is an alist of extra header names and values."
  (concat verb " " path " HTTP/1.1\r\n"
          (format "Host: 127.0.0.1:%d\r\n" (agent-shell-rpc-http-port http))
          "Authorization: Bearer " (agent-shell-rpc-http-token http) "\r\n"
          (mapconcat (lambda (h) (concat (car h) ": " (cdr h) "\r\n")) headers "")
          "Connection: close\r\n\r\n"))

(defun agent-shell-rpc-http-post (http body callback)
  "POST BODY, a JSON text as a unibyte string, to the endpoint HTTP's /rpc.
CALLBACK is called once, as (CALLBACK STATUS ANSWER) with the HTTP
status and the JSON of the answer (nil when it is empty or not
JSON), or as (CALLBACK nil REASON) when no complete response
arrived.  Return the connection's process, for
`agent-shell-rpc-http-cancel', or nil when it could not be opened
\(CALLBACK has then been called already)."
  (let ((request (concat (agent-shell-rpc-http--request-head
                          http "POST" "/rpc"
                          `(("Content-Type" . "application/json")
                            ("Accept" . "application/json")
                            ("Content-Length" . ,(number-to-string (length body)))))
                         body))
        (status nil)
        (chunks nil))
    (condition-case err
        (agent-shell-rpc-http--connect
         (agent-shell-rpc-http-port http)
         (format "%s rpc" (agent-shell-rpc-http-name http)) request
         (lambda (proc kind arg)
           (pcase kind
             ('headers (setq status (agent-shell-rpc-http--response-status
                                     (process-get proc 'agent-shell-rpc-http-response))))
             ('body (push arg chunks))
             ('done
              (let* ((bytes (apply #'concat (nreverse chunks)))
                     (answer (and (> (length bytes) 0)
                                  (condition-case nil
                                      (agent-shell-rpc-http--decode bytes)
                                    (error nil)))))
                (agent-shell-rpc-http--log http (format "<-- %s" status)
                                           (decode-coding-string bytes 'utf-8 t))
                (funcall callback status answer)))
             ('closed (funcall callback nil arg)))))
      (file-error
       (funcall callback nil (error-message-string err))
       nil))))

(defun agent-shell-rpc-http--event-id-number (id)
  "Return the event ID string as a number, or nil when it is not one."
  (and (stringp id) (string-match-p "\\`[0-9]+\\'" id) (string-to-number id)))

(defun agent-shell-rpc-http--accept-events (http events)
  "Return the new events among the parsed SSE EVENTS of HTTP's stream.
EVENTS are plists from `agent-shell-rpc-http--sse-parse'; the result
is a list of (ID . JSON), oldest first.  An event whose id is not
above the last one received is a repeat and dropped, so is one whose
data is not JSON (with a log line)."
  (let ((accepted nil)
        (last (agent-shell-rpc-http--event-id-number
               (agent-shell-rpc-http-last-event-id http))))
    (dolist (ev events)
      (let* ((id (plist-get ev :id))
             (n (agent-shell-rpc-http--event-id-number id)))
        (if (and n last (<= n last))
            (progn
              (cl-incf (agent-shell-rpc-http-duplicates http))
              (agent-shell-rpc-http--log http "!!" (format "dropped repeated event %s" id)))
          (when id
            (setf (agent-shell-rpc-http-last-event-id http) id)
            (setq last (or n last)))
          (if (plist-member ev :error)
              (agent-shell-rpc-http--log http "!!" (format "bad event data: %s: %s"
                                                           (plist-get ev :error)
                                                           (plist-get ev :text)))
            (push (cons id (plist-get ev :data)) accepted)))))
    (nreverse accepted)))

(defun agent-shell-rpc-http-open-events (http)
  "Open the event stream of the endpoint HTTP, resuming after the last event.
Its events go to HTTP's `on-events' function.  The stream is
reopened whenever it ends, until `agent-shell-rpc-http-close'."
  (let* ((sse (agent-shell-rpc-http--sse-new))
         (last (agent-shell-rpc-http-last-event-id http))
         (ok nil)
         (request (agent-shell-rpc-http--request-head
                   http "GET" "/events"
                   `(("Accept" . "text/event-stream")
                     ("Cache-Control" . "no-cache")
                     ,@(and last (not (string-match-p "[\r\n]" last))
                            `(("Last-Event-ID" . ,last)))))))
    (agent-shell-rpc-http--log http "==>" (format "GET /events%s"
                                                  (if last (format " after %s" last) "")))
    (condition-case err
        (setf (agent-shell-rpc-http-events-process http)
              (agent-shell-rpc-http--connect
               (agent-shell-rpc-http-port http)
               (format "%s events" (agent-shell-rpc-http-name http)) request
               (lambda (proc kind arg)
                 (pcase kind
                   ('headers
                    (let ((status (agent-shell-rpc-http--response-status
                                   (process-get proc 'agent-shell-rpc-http-response))))
                      (if (eql status 200)
                          (setq ok t)
                        (agent-shell-rpc-http--log http "!!"
                                                   (format "GET /events: HTTP %s" status)))))
                   ('body
                    (when ok
                      (setf (agent-shell-rpc-http-reconnect-attempt http) 0)
                      (let ((events (agent-shell-rpc-http--accept-events
                                     http (agent-shell-rpc-http--sse-parse sse))))
                        (when events
                          (funcall (agent-shell-rpc-http-on-events http) events)))))
                   (_ (agent-shell-rpc-http--events-closed http proc
                                                           (or arg "stream ended")))))
               (agent-shell-rpc-http--sse-buffer sse)))
      (file-error
       (agent-shell-rpc-http--events-closed http nil (error-message-string err))))))

(defun agent-shell-rpc-http--events-closed (http proc reason)
  "Reopen later the event stream PROC of HTTP, which ended for REASON."
  (when (or (null proc) (eq proc (agent-shell-rpc-http-events-process http)))
    (setf (agent-shell-rpc-http-events-process http) nil)
    (agent-shell-rpc-http--log http "!!" (format "event stream closed: %s" reason))
    (when (and (not (agent-shell-rpc-http-closed http))
               (null (agent-shell-rpc-http-reconnect-timer http)))
      (let* ((n (agent-shell-rpc-http-reconnect-attempt http))
             (delays (or agent-shell-rpc-reconnect-delays '(1)))
             (delay (nth (min n (1- (length delays))) delays)))
        (setf (agent-shell-rpc-http-reconnect-attempt http) (1+ n))
        (setf (agent-shell-rpc-http-reconnect-timer http)
              (run-at-time delay nil #'agent-shell-rpc-http--reconnect http))))))

(defun agent-shell-rpc-http--reconnect (http)
  "Reopen the event stream of HTTP unless it was closed meanwhile."
  (setf (agent-shell-rpc-http-reconnect-timer http) nil)
  (when (and (not (agent-shell-rpc-http-closed http))
             (null (agent-shell-rpc-http-events-process http)))
    (agent-shell-rpc-http-open-events http)))

(defun agent-shell-rpc-http-close (http)
  "Close the event stream of the endpoint HTTP for good.
Requests already posted go on; the stream is not reopened."
  (setf (agent-shell-rpc-http-closed http) t)
  (let ((timer (agent-shell-rpc-http-reconnect-timer http)))
    (when timer (cancel-timer timer))
    (setf (agent-shell-rpc-http-reconnect-timer http) nil))
  (let ((events (agent-shell-rpc-http-events-process http)))
    (setf (agent-shell-rpc-http-events-process http) nil)
    (when (processp events) (agent-shell-rpc-http-cancel events))))

(provide 'agent-shell-rpc-http)
;;; agent-shell-rpc-http.el ends here
