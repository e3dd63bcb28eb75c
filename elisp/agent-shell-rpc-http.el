;;; agent-shell-rpc-http.el --- HTTP/1.1 and Server-Sent Events for agent-shell  -*- lexical-binding: t; -*-

;; SPDX-License-Identifier: GPL-3.0-or-later

;;; Commentary:

;; The transport under agent-shell-rpc-protocol.el: a small HTTP/1.1
;; client over `make-network-process' and a Server-Sent Events parser.
;; It knows ports and bytes, nothing of JSON-RPC or of the UI.
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
;; `agent-shell-rpc--connect' opens a connection and reports parse
;; events to a handler; agent-shell-rpc-protocol.el builds requests and
;; the event stream on it.

;;; Code:

(require 'cl-lib)
(require 'subr-x)
(require 'agent-shell-custom)

;;; Errors

(define-error 'agent-shell-rpc-error "agent-shell bridge error" 'agent-shell-error)

(defconst agent-shell-rpc--max-line-bytes 65536
  "Longest status line, header block or chunk-size line accepted.")

(defun agent-shell-rpc--new-buffer (name)
  "Return a new hidden unibyte buffer called NAME without undo."
  (let ((buf (generate-new-buffer name t)))
    (with-current-buffer buf
      (set-buffer-multibyte nil)
      (setq buffer-undo-list t))
    buf))

;;; HTTP/1.1 response parser

(cl-defstruct (agent-shell-rpc--http
               (:constructor agent-shell-rpc--http-make)
               (:copier nil))
  "Incremental parser of one HTTP/1.1 response.
BUFFER holds received bytes not yet consumed.  STATE is one of
`head', `body', `chunk-size', `chunk-data', `chunk-end',
`trailers', `until-close' and `done'.  SINK, when a buffer, receives
the body bytes (copied buffer to buffer) instead of the parse events
carrying them as strings."
  buffer (state 'head) status headers (remaining 0) sink)

(defun agent-shell-rpc--http-new (&optional sink)
  "Return a fresh response parser with its own hidden unibyte buffer.
SINK is a buffer that receives the body, or nil (see
`agent-shell-rpc--http-feed'); it is killed with the parser."
  (agent-shell-rpc--http-make :buffer (agent-shell-rpc--new-buffer " *agent-shell-rpc http*")
                              :sink sink))

(defun agent-shell-rpc--http-discard (http)
  "Free the buffers of the parser HTTP, its sink included."
  (dolist (buf (list (agent-shell-rpc--http-buffer http) (agent-shell-rpc--http-sink http)))
    (when (buffer-live-p buf)
      (kill-buffer buf))))

(defun agent-shell-rpc--http-header (http name)
  "Return the value of header NAME (lower case) in the response HTTP."
  (cdr (assoc name (agent-shell-rpc--http-headers http))))

(defun agent-shell-rpc--http-feed (http bytes)
  "Add the unibyte string BYTES to the parser HTTP.
Return the parse events, oldest first: (headers), (body . BYTES) and
\(done).  With a sink, body bytes go to the sink buffer and the event
is (body) once per call.  Signal `agent-shell-rpc-error' on a
malformed response."
  (with-current-buffer (agent-shell-rpc--http-buffer http)
    (goto-char (point-max))
    (insert bytes)
    (agent-shell-rpc--http-parse http)))

(defun agent-shell-rpc--http-eof (http)
  "Tell the parser HTTP that the connection closed; return final events."
  (when (eq (agent-shell-rpc--http-state http) 'until-close)
    (setf (agent-shell-rpc--http-state http) 'done)
    (list '(done))))

(defun agent-shell-rpc--http-malformed (what)
  "Signal that the response is malformed, describing WHAT was wrong."
  (signal 'agent-shell-rpc-error (list (concat "Malformed HTTP response from the bridge: " what))))

(defun agent-shell-rpc--http-line (pos)
  "Return (LINE . NEXT) for the line starting at POS, or nil when incomplete.
LINE lacks its end (LF or CRLF); NEXT is where the following line starts."
  (goto-char pos)
  (when (search-forward "\n" nil t)
    (let ((end (if (eq (char-before (1- (point))) ?\r) (- (point) 2) (1- (point)))))
      (cons (buffer-substring-no-properties pos end) (point)))))

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

(defun agent-shell-rpc--http-take (http from to events)
  "Hand the body bytes FROM..TO of HTTP's buffer on; return EVENTS updated.
With a sink the bytes are copied there and one (body) event stands
for all of a call; else a (body . BYTES) event is pushed."
  (let ((sink (agent-shell-rpc--http-sink http)))
    (if (not sink)
        (cons (cons 'body (buffer-substring-no-properties from to)) events)
      (let ((raw (current-buffer)))
        (with-current-buffer sink
          (goto-char (point-max))
          (insert-buffer-substring raw from to)))
      (if (equal (car events) '(body)) events (cons (list 'body) events)))))

(defun agent-shell-rpc--http-parse (http)
  "Parse the bytes in the current buffer for HTTP; return the events.
Parsed bytes are deleted once, at the end."
  (let ((events nil) (more t) (pos (point-min)))
    (unwind-protect
        (while more
          (setq more nil)
          (pcase (agent-shell-rpc--http-state http)
            ('head
             (goto-char pos)
             (if (not (re-search-forward "\r?\n\r?\n" nil t))
                 (when (> (- (point-max) pos) agent-shell-rpc--max-line-bytes)
                   (agent-shell-rpc--http-malformed "header block too long"))
               (let ((head (buffer-substring-no-properties pos (point))))
                 (setq pos (point))
                 (agent-shell-rpc--http-parse-head http head)
                 (push '(headers) events)
                 (when (eq (agent-shell-rpc--http-state http) 'done)
                   (push '(done) events))
                 (setq more t))))
            ((or 'body 'chunk-data)
             (let ((n (min (agent-shell-rpc--http-remaining http) (- (point-max) pos))))
               (when (> n 0)
                 (setq events (agent-shell-rpc--http-take http pos (+ pos n) events))
                 (setq pos (+ pos n))
                 (cl-decf (agent-shell-rpc--http-remaining http) n))
               (when (zerop (agent-shell-rpc--http-remaining http))
                 (if (eq (agent-shell-rpc--http-state http) 'body)
                     (progn (setf (agent-shell-rpc--http-state http) 'done)
                            (push '(done) events))
                   (setf (agent-shell-rpc--http-state http) 'chunk-end)
                   (setq more t)))))
            ('chunk-size
             (let ((line (agent-shell-rpc--http-line pos)))
               (when (and (null line) (> (- (point-max) pos) agent-shell-rpc--max-line-bytes))
                 (agent-shell-rpc--http-malformed "chunk-size line too long"))
               (when line
                 (unless (string-match "\\`[ \t]*\\([0-9a-fA-F]+\\)[ \t]*\\(?:;.*\\)?\\'"
                                       (car line))
                   (agent-shell-rpc--http-malformed (format "bad chunk size %S" (car line))))
                 (let ((size (string-to-number (match-string 1 (car line)) 16)))
                   (setf (agent-shell-rpc--http-remaining http) size)
                   (setf (agent-shell-rpc--http-state http)
                         (if (zerop size) 'trailers 'chunk-data)))
                 (setq pos (cdr line) more t))))
            ('chunk-end
             (let ((line (agent-shell-rpc--http-line pos)))
               (when line
                 (unless (string-empty-p (car line))
                   (agent-shell-rpc--http-malformed "chunk longer than its size"))
                 (setf (agent-shell-rpc--http-state http) 'chunk-size)
                 (setq pos (cdr line) more t))))
            ('trailers
             (let ((line (agent-shell-rpc--http-line pos)))
               (when line
                 (when (string-empty-p (car line))
                   (setf (agent-shell-rpc--http-state http) 'done)
                   (push '(done) events))
                 (setq pos (cdr line) more t))))
            ('until-close
             (when (> (point-max) pos)
               (setq events (agent-shell-rpc--http-take http pos (point-max) events))
               (setq pos (point-max))))
            ('done
             ;; Bytes after the end of the response are ignored.
             (setq pos (point-max)))))
      (delete-region (point-min) pos))
    (nreverse events)))

;;; Server-Sent Events parser

(cl-defstruct (agent-shell-rpc--sse
               (:constructor agent-shell-rpc--sse-make)
               (:copier nil))
  "Incremental parser of a text/event-stream body held in BUFFER.
SCAN is where the next unread line starts, SEEN how far it is known
to have no line end (so a long line arriving in many reads is
searched once); START is the first line of the event being read.  DATA is (BEG . END) of the event's only data
line, or a list of decoded data lines, newest first, when it has
several.  EVENT is its type, ID the last id seen (ids persist across
events, as the SSE grammar says)."
  buffer (scan 1) (seen 1) (start 1) data event id)

(defun agent-shell-rpc--sse-new ()
  "Return a fresh SSE parser with its own hidden unibyte buffer."
  (agent-shell-rpc--sse-make :buffer (agent-shell-rpc--new-buffer " *agent-shell-rpc sse*")))

(defun agent-shell-rpc--sse-discard (sse)
  "Free the buffer of the SSE parser SSE."
  (let ((buf (agent-shell-rpc--sse-buffer sse)))
    (when (buffer-live-p buf)
      (kill-buffer buf))))

(defun agent-shell-rpc--sse-feed (sse bytes)
  "Add the unibyte string BYTES to the SSE parser SSE; return its events.
See `agent-shell-rpc--sse-parse'."
  (with-current-buffer (agent-shell-rpc--sse-buffer sse)
    (goto-char (point-max))
    (insert bytes))
  (agent-shell-rpc--sse-parse sse))

(defun agent-shell-rpc--sse-multi-p (data)
  "Return non-nil if DATA is a list of decoded lines, not one line's bounds."
  (stringp (car-safe data)))

(defun agent-shell-rpc--sse-pending-data (sse)
  "Return the decoded data lines of the event SSE has not finished, oldest first."
  (let ((data (agent-shell-rpc--sse-data sse)))
    (cond ((null data) nil)
          ((agent-shell-rpc--sse-multi-p data) (reverse data))
          (t (with-current-buffer (agent-shell-rpc--sse-buffer sse)
               (list (decode-coding-string
                      (buffer-substring-no-properties (car data) (cdr data)) 'utf-8 t)))))))

(defun agent-shell-rpc--json-read (beg end)
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

(defun agent-shell-rpc--sse-dispatch (sse)
  "Return the event SSE has read (a plist), or nil when it had no data.
The plist has :id, :event and either :data, the parsed JSON, or
:error, a message saying why the data is not JSON, with :text."
  (let ((data (agent-shell-rpc--sse-data sse))
        (event (or (agent-shell-rpc--sse-event sse) "message"))
        (id (agent-shell-rpc--sse-id sse)))
    (setf (agent-shell-rpc--sse-data sse) nil
          (agent-shell-rpc--sse-event sse) nil)
    (when data
      (condition-case err
          (list :id id :event event
                :data (if (agent-shell-rpc--sse-multi-p data)
                          (json-parse-string (mapconcat #'identity (reverse data) "\n")
                                             :object-type 'alist :array-type 'list
                                             :null-object nil :false-object :json-false)
                        (agent-shell-rpc--json-read (car data) (cdr data))))
        (json-error
         (list :id id :event event :error (error-message-string err)
               :text (if (agent-shell-rpc--sse-multi-p data)
                         (mapconcat #'identity (reverse data) "\n")
                       (decode-coding-string
                        (buffer-substring-no-properties (car data) (cdr data)) 'utf-8 t))))))))

(defun agent-shell-rpc--sse-field (sse beg end)
  "Process the field line BEG..END (no line end) for SSE."
  (let* ((colon (progn (goto-char beg) (search-forward ":" end t)))
         (name-end (if colon (1- colon) end))
         (value (if colon (if (eq (char-after colon) ?\s) (1+ colon) colon) end)))
    (pcase (buffer-substring-no-properties beg name-end)
      ("data"
       (let ((data (agent-shell-rpc--sse-data sse)))
         (cond
          ((null data) (setf (agent-shell-rpc--sse-data sse) (cons value end)))
          (t
           (let ((line (decode-coding-string (buffer-substring-no-properties value end)
                                             'utf-8 t)))
             (unless (agent-shell-rpc--sse-multi-p data)
               (setq data (list (decode-coding-string
                                 (buffer-substring-no-properties (car data) (cdr data))
                                 'utf-8 t))))
             (setf (agent-shell-rpc--sse-data sse) (cons line data)))))))
      ("event" (setf (agent-shell-rpc--sse-event sse)
                     (decode-coding-string (buffer-substring-no-properties value end) 'utf-8 t)))
      ("id" (let ((id (buffer-substring-no-properties value end)))
              (unless (string-search "\0" id)
                (setf (agent-shell-rpc--sse-id sse) (decode-coding-string id 'utf-8 t))))))))

(defun agent-shell-rpc--sse-parse (sse)
  "Read the complete events in SSE's buffer; return them, oldest first.
Each is a plist, see `agent-shell-rpc--sse-dispatch'.  Lines end at
CRLF, LF or CR.  What belongs to finished events is deleted."
  (with-current-buffer (agent-shell-rpc--sse-buffer sse)
    (let ((pos (agent-shell-rpc--sse-scan sse))
          (events nil))
      (goto-char (max pos (agent-shell-rpc--sse-seen sse)))
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
            (let ((event (agent-shell-rpc--sse-dispatch sse)))
              (when event (push event events)))
            (setf (agent-shell-rpc--sse-start sse) next))
           ((eq (char-after pos) ?:))
           (t (agent-shell-rpc--sse-field sse pos end)))
          (setq pos next)
          (goto-char next)))
      (setf (agent-shell-rpc--sse-scan sse) pos
            (agent-shell-rpc--sse-seen sse) (point))
      ;; Keep only the unfinished event; positions move down with it.
      (let ((drop (- (agent-shell-rpc--sse-start sse) (point-min))))
        (when (> drop 0)
          (delete-region (point-min) (agent-shell-rpc--sse-start sse))
          (setf (agent-shell-rpc--sse-scan sse) (- (agent-shell-rpc--sse-scan sse) drop)
                (agent-shell-rpc--sse-seen sse) (- (agent-shell-rpc--sse-seen sse) drop)
                (agent-shell-rpc--sse-start sse) (point-min))
          (let ((data (agent-shell-rpc--sse-data sse)))
            (when (and data (not (agent-shell-rpc--sse-multi-p data)))
              (setf (agent-shell-rpc--sse-data sse)
                    (cons (- (car data) drop) (- (cdr data) drop)))))))
      (nreverse events))))

;;; Connections

(defun agent-shell-rpc--connect (port purpose request handler &optional sink)
  "Open an HTTP connection to 127.0.0.1:PORT and send REQUEST (bytes).
PURPOSE names the process.  HANDLER is called as (HANDLER PROC KIND
ARG), outside any process buffer, for each parse event (KIND
`headers', `body' with the bytes, `done'), and once with KIND
`closed' and a reason when the connection ends before `done'.  With
SINK, a buffer, body bytes go there and `body' comes with nil.
Return the process; signal `file-error' when connecting fails."
  (let* ((http (agent-shell-rpc--http-new sink))
         (proc (condition-case err
                   (make-network-process
                    :name purpose
                    :host "127.0.0.1"
                    :service port
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
          (when (cdr ev)
            (setcdr (car out) (concat (cdar out) (cdr ev))))
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

(provide 'agent-shell-rpc-http)
;;; agent-shell-rpc-http.el ends here
