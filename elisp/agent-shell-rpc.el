;;; agent-shell-rpc.el --- Run the agent-shell bridge and connect to it  -*- lexical-binding: t; -*-

;; SPDX-License-Identifier: GPL-3.0-or-later

;;; Commentary:

;; The connection between Emacs and the agent-shell bridge (a Python
;; program, see doc/protocol.org), in three files, as jsonrpc.el splits
;; `jsonrpc-connection' from `jsonrpc-process-connection':
;;
;; - agent-shell-rpc-protocol.el: JSON-RPC (ids, waiting requests,
;;   dispatch of incoming messages to `agent-shell-rpc-handle'), over
;;   any transport;
;; - agent-shell-rpc-http.el: the transport, an HTTP/1.1 client and the
;;   Server-Sent Events stream, knowing nothing of JSON-RPC;
;; - this file: the bridge process, and the connection type joining the
;;   two, `agent-shell-rpc-bridge-conn'.  `agent-shell-rpc-start' runs
;;   "agent-shell-bridge serve --port 0", reads its one-line JSON ready
;;   message (port, token) and opens the event stream;
;;   `agent-shell-rpc-stop' and `agent-shell-rpc-kill' end it, and the
;;   connection is torn down (pending requests failed) when it exits.
;;
;; Requiring this file gives the whole public API.

;;; Code:

(require 'cl-lib)
(require 'subr-x)
(require 'agent-shell-rpc-http)
(require 'agent-shell-rpc-protocol)

;;; Options

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

(defcustom agent-shell-rpc-ready-timeout 30
  "Seconds the bridge may take to print its ready line."
  :type 'number
  :group 'agent-shell-rpc
  :package-version '(agent-shell . "0.1.0"))

(defconst agent-shell-rpc--checkout-bridge
  (let ((dir (file-name-directory (or load-file-name buffer-file-name ""))))
    (and dir (expand-file-name "../.venv/bin/agent-shell-bridge" dir)))
  "The bridge program of the source checkout holding this file.")

(defconst agent-shell-rpc--stderr-max-chars 100000
  "Size beyond which the oldest text of a bridge stderr buffer is deleted.")

;;; The connection to a bridge

(cl-defstruct (agent-shell-rpc-bridge-conn
               (:include agent-shell-rpc-conn)
               (:constructor agent-shell-rpc--make-bridge-conn)
               (:copier nil))
  "A JSON-RPC connection to a bridge process, over its HTTP endpoint."
  (process nil :documentation "The bridge process.")
  (stderr-process nil :documentation "The pipe collecting the bridge's stderr.")
  (pid nil :documentation "The bridge's pid, from its ready line.")
  (stdout-acc nil :documentation "Stdout received before the ready line was complete.")
  (http nil :documentation "The bridge's `agent-shell-rpc-http' endpoint, once ready.")
  (on-exit nil :documentation "Function called with the connection and a reason at the end.")
  (on-ready nil :documentation "Function called with the connection once it is up.")
  (ready nil :documentation "Non-nil once the bridge printed its ready line.")
  (stopping nil :documentation "Non-nil once Emacs asked for the end."))

(cl-defmethod agent-shell-rpc-running-p ((conn agent-shell-rpc-bridge-conn))
  "Return non-nil while the bridge process of CONN is alive."
  (process-live-p (agent-shell-rpc-bridge-conn-process conn)))

(cl-defmethod agent-shell-rpc-deliver ((conn agent-shell-rpc-bridge-conn)
                                       bytes on-answer on-lost)
  "POST BYTES to the bridge of CONN; report its answer to ON-ANSWER or ON-LOST.
A status of 300 or more is a refusal; the bridge's answer to a request
is the body of the POST's response."
  (let ((proc (agent-shell-rpc-http-post
               (agent-shell-rpc-bridge-conn-http conn) bytes
               (lambda (status answer)
                 (cond ((null status) (funcall on-lost answer))
                       ((< status 300) (funcall on-answer answer nil))
                       (t (funcall on-answer answer (format "HTTP %s" status))))))))
    (and proc (lambda () (agent-shell-rpc-http-cancel proc)))))

(defun agent-shell-rpc--on-events (conn events)
  "Hand the EVENTS of CONN's event stream, (ID . MESSAGE) pairs, to the protocol."
  (when agent-shell-log-events
    (dolist (event events)
      (agent-shell-rpc-log-message conn (format "<== %s" (or (car event) "")) (cdr event))))
  (agent-shell-rpc-receive conn (mapcar #'cdr events)))

(defun agent-shell-rpc--make-endpoint (conn port token)
  "Return the HTTP endpoint of CONN's bridge at PORT with TOKEN."
  (agent-shell-rpc-http-create
   :port port :token token :name (agent-shell-rpc-conn-name conn)
   :on-events (lambda (events) (agent-shell-rpc--on-events conn events))
   :log (lambda (direction text) (agent-shell-rpc-log conn direction text))))

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

(defun agent-shell-rpc-bridge-program ()
  "Return the bridge program and its leading arguments, as a list of strings.
See `agent-shell-bridge-command'; signal `agent-shell-rpc-error' when
there is none."
  (agent-shell-rpc--default-command))

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
  (let* ((proc (agent-shell-rpc-bridge-conn-stderr-process conn))
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
      (if (agent-shell-rpc-bridge-conn-ready conn)
          (agent-shell-rpc-log conn "stdout" text)
        (let ((acc (concat (agent-shell-rpc-bridge-conn-stdout-acc conn) text)))
          (setf (agent-shell-rpc-bridge-conn-stdout-acc conn) acc)
          (when (string-match "\n" acc)
            (let ((line (substring acc 0 (match-beginning 0))))
              (setf (agent-shell-rpc-bridge-conn-stdout-acc conn) nil)
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
        (setf (agent-shell-rpc-bridge-conn-http conn)
              (agent-shell-rpc--make-endpoint conn port token)
              (agent-shell-rpc-bridge-conn-pid conn) (alist-get 'pid obj)
              (agent-shell-rpc-bridge-conn-ready conn) t)
      (setf (agent-shell-rpc-conn-exit-reason conn)
            (format "unexpected first line on stdout: %S"
                    (truncate-string-to-width line 200))))))

(defun agent-shell-rpc--bridge-sentinel (proc event)
  "Tear the connection down when the bridge PROC ends (EVENT)."
  (let ((conn (process-get proc 'agent-shell-rpc-conn)))
    (when (and conn (not (process-live-p proc)) (not (agent-shell-rpc-conn-dead conn)))
      (agent-shell-rpc--teardown conn (string-trim event)))))

(defun agent-shell-rpc--teardown (conn reason)
  "Mark CONN dead for REASON: close its stream, fail its requests, run :on-exit."
  (unless (agent-shell-rpc-conn-dead conn)
    (setf (agent-shell-rpc-conn-dead conn) t)
    (setf (agent-shell-rpc-conn-exit-reason conn) reason)
    (when-let ((http (agent-shell-rpc-bridge-conn-http conn)))
      (agent-shell-rpc-http-close http))
    (let ((tail (agent-shell-rpc--stderr-tail conn)))
      (agent-shell-rpc-abandon
       conn
       (if (agent-shell-rpc-bridge-conn-stopping conn)
           "The bridge connection was stopped"
         (format "The bridge exited (%s); M-x agent-shell-start restarts it%s"
                 reason
                 (if (string-empty-p tail) ""
                   (concat "\nLast lines of its stderr:\n" tail))))))
    (let ((stderr (agent-shell-rpc-bridge-conn-stderr-process conn)))
      (when (process-live-p stderr) (delete-process stderr)))
    (let ((proc (agent-shell-rpc-bridge-conn-process conn)))
      (when (process-live-p proc) (delete-process proc)))
    (let ((on-exit (agent-shell-rpc-bridge-conn-on-exit conn)))
      (when (and on-exit (agent-shell-rpc-bridge-conn-ready conn))
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
  (agent-shell-rpc-check-json)
  (let* ((name (or name "agent-shell-bridge"))
         (cmd (append (or command (agent-shell-rpc--default-command))
                      '("serve" "--port" "0")))
         (default-directory (if directory
                                (file-name-as-directory (expand-file-name directory))
                              default-directory))
         (process-environment (append environment process-environment))
         (conn (agent-shell-rpc--make-bridge-conn :name name :on-exit on-exit
                                                  :on-ready on-ready))
         (stderr (make-pipe-process
                  :name (format "%s stderr" name)
                  :buffer (agent-shell-rpc--stderr-buffer name)
                  :coding 'utf-8
                  :noquery t
                  :filter #'agent-shell-rpc--stderr-filter
                  :sentinel #'ignore))
         (deadline (+ (float-time) (or ready-timeout agent-shell-rpc-ready-timeout)))
         proc)
    (setf (agent-shell-rpc-bridge-conn-stderr-process conn) stderr)
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
    (setf (agent-shell-rpc-bridge-conn-process conn) proc)
    (process-put proc 'agent-shell-rpc-conn conn)
    (while (and (not (agent-shell-rpc-bridge-conn-ready conn))
                (not (agent-shell-rpc-conn-exit-reason conn))
                (process-live-p proc)
                (< (float-time) deadline))
      (accept-process-output proc 0.05))
    (unless (agent-shell-rpc-bridge-conn-ready conn)
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
    (agent-shell-rpc-log conn "==" (format "bridge ready on port %d (pid %s)"
                                           (agent-shell-rpc-http-port
                                            (agent-shell-rpc-bridge-conn-http conn))
                                           (agent-shell-rpc-bridge-conn-pid conn)))
    (agent-shell-rpc-http-open-events (agent-shell-rpc-bridge-conn-http conn))
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
    (setf (agent-shell-rpc-bridge-conn-stopping conn) t)
    (agent-shell-rpc--teardown conn (or reason "killed"))))

(defun agent-shell-rpc-stop (conn)
  "Stop CONN's bridge: ask it to shut down, then kill it.
Pending requests fail; the event stream is not reopened."
  (when (and conn (not (agent-shell-rpc-conn-dead conn)))
    (setf (agent-shell-rpc-bridge-conn-stopping conn) t)
    (when-let ((http (agent-shell-rpc-bridge-conn-http conn)))
      (agent-shell-rpc-http-close http))
    (let ((proc (agent-shell-rpc-bridge-conn-process conn)))
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
