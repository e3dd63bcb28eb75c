;;; agent-shell-jobs.el --- A shell buffer's background jobs  -*- lexical-binding: t; -*-

;; SPDX-License-Identifier: GPL-3.0-or-later

;;; Commentary:

;; The agent can start a command as a background job (`run_command' with
;; `background': a dev server, a watcher).  The bridge tells of each
;; start and end with a `session/job' notification; this file keeps the
;; jobs of each shell buffer, prints a line in its transcript on each
;; start and end, and lists them with `agent-shell-jobs' (`k' kills the
;; job at point through `session/kill_job', `g' asks the bridge again).
;;
;; Killing a shell buffer while a job runs ends its session
;; (`session/close'), and so its jobs.  Other parts (a dashboard) read
;; `agent-shell-jobs-running' and hear of every change on
;; `agent-shell-jobs-changed-functions'.

;;; Code:

(require 'cl-lib)
(require 'subr-x)
(require 'tabulated-list)
(require 'agent-shell-session)
(require 'agent-shell-rpc-protocol)
(require 'agent-shell-bridge)
(require 'agent-shell-transcript)

(defvar agent-shell-jobs-changed-functions nil
  "Functions called with a shell buffer after its jobs changed.
A job started, ended or was listed anew; see `agent-shell-jobs-running'.")

(defvar-local agent-shell-jobs--table nil
  "This shell buffer's jobs, oldest first.
Each is a plist (:id :command :state :exit-code :started-at :sandbox).")

(defvar-local agent-shell-jobs--shell nil
  "In a jobs list buffer: the shell buffer whose jobs it lists.")

;;; The table

(defun agent-shell-jobs--plist (job)
  "Return the plist of JOB, an alist from the bridge."
  (list :id (alist-get 'id job)
        :command (or (alist-get 'command job) "")
        :state (or (alist-get 'state job) "running")
        :exit-code (alist-get 'exitCode job)
        :started-at (alist-get 'startedAt job)
        :sandbox (alist-get 'sandbox job)))

(defun agent-shell-jobs--put (buffer job)
  "Record JOB (a plist) in BUFFER's table; return the plist it replaced."
  (with-current-buffer buffer
    (let* ((id (plist-get job :id))
           (old (cl-find id agent-shell-jobs--table
                         :key (lambda (j) (plist-get j :id)) :test #'equal)))
      (setq agent-shell-jobs--table
            (if old
                (mapcar (lambda (j) (if (eq j old) job j)) agent-shell-jobs--table)
              (append agent-shell-jobs--table (list job))))
      (add-hook 'kill-buffer-hook #'agent-shell-jobs--kill-buffer nil t)
      old)))

(defun agent-shell-jobs--kill-buffer ()
  "End the session of this shell buffer, and so its jobs, as it is killed.
Only when a job still runs: the jobs belong to the session, which
nothing shows any longer."
  (when-let ((session (and (agent-shell-jobs-running (current-buffer))
                           (agent-shell-session-id agent-shell--session)))
             (conn (agent-shell-bridge-live-connection)))
    (ignore-errors
      (agent-shell-rpc-notify conn "session/close" `((sessionId . ,session))))))

(defun agent-shell-jobs--line (job)
  "Return the transcript line telling of JOB's state."
  (let ((id (plist-get job :id)) (command (plist-get job :command)))
    (pcase (plist-get job :state)
      ("running" (format "Job %s started in the background: %s" id command))
      ("exited" (format "Job %s exited (%s): %s" id (plist-get job :exit-code) command))
      (_ (format "Job %s killed: %s" id command)))))

(defun agent-shell-jobs--changed (buffer)
  "Run `agent-shell-jobs-changed-functions' for BUFFER and refresh its list."
  (run-hook-with-args 'agent-shell-jobs-changed-functions buffer)
  (dolist (list (buffer-list))
    (when (eq (buffer-local-value 'agent-shell-jobs--shell list) buffer)
      (with-current-buffer list (agent-shell-jobs--print)))))

(defun agent-shell-jobs-update (buffer job)
  "Take JOB (an alist of `session/job') into shell BUFFER's jobs.
A new state gets a line in the transcript."
  (let* ((new (agent-shell-jobs--plist job))
         (old (agent-shell-jobs--put buffer new)))
    (unless (and old (equal (plist-get old :state) (plist-get new :state)))
      (with-current-buffer buffer
        (agent-shell-transcript-notice (agent-shell-jobs--line new))))
    (agent-shell-jobs--changed buffer)))

(defun agent-shell-jobs-running (buffer)
  "Return the running jobs of shell BUFFER: plists (:id :command :state)."
  (when (buffer-live-p buffer)
    (cl-loop for job in (buffer-local-value 'agent-shell-jobs--table buffer)
             when (equal (plist-get job :state) "running")
             collect (list :id (plist-get job :id)
                           :command (plist-get job :command)
                           :state (plist-get job :state)))))

(cl-defmethod agent-shell-rpc-handle (_conn (_m (eql session/job)) params _id)
  "Take the `session/job' PARAMS into the jobs of its shell buffer."
  (when-let ((buffer (agent-shell-bridge-session-buffer (alist-get 'sessionId params))))
    (agent-shell-jobs-update buffer (alist-get 'job params)))
  nil)

;;; The list

(defun agent-shell-jobs--print ()
  "Show the jobs of this list's shell buffer."
  (let ((jobs (and (buffer-live-p agent-shell-jobs--shell)
                   (buffer-local-value 'agent-shell-jobs--table agent-shell-jobs--shell))))
    (setq tabulated-list-entries
          (mapcar (lambda (job)
                    (list (plist-get job :id)
                          (vector (plist-get job :id)
                                  (plist-get job :state)
                                  (let ((code (plist-get job :exit-code)))
                                    (if code (format "%s" code) ""))
                                  (or (plist-get job :started-at) "")
                                  (or (plist-get job :sandbox) "")
                                  (plist-get job :command))))
                  jobs))
    (tabulated-list-print t)))

(defun agent-shell-jobs--session (shell)
  "Return the session id of SHELL, or signal a `user-error'."
  (or (and (buffer-live-p shell)
           (agent-shell-session-id (buffer-local-value 'agent-shell--session shell)))
      (user-error "This shell has no session")))

;;;###autoload
(defun agent-shell-jobs ()
  "List the background jobs of the current shell buffer.
\\<agent-shell-jobs-mode-map>\\[agent-shell-jobs-kill] kills the job at point, \
\\[agent-shell-jobs-refresh] asks the bridge again."
  (interactive)
  (let ((shell (cond ((derived-mode-p 'agent-shell-jobs-mode) agent-shell-jobs--shell)
                     ((bound-and-true-p agent-shell--session) (current-buffer))
                     (t (user-error "Not in an agent-shell buffer")))))
    (let ((buffer (get-buffer-create (format "*agent-shell jobs: %s*" (buffer-name shell)))))
      (with-current-buffer buffer
        (agent-shell-jobs-mode)
        (setq agent-shell-jobs--shell shell)
        (agent-shell-jobs--print))
      (pop-to-buffer buffer)
      buffer)))

(defun agent-shell-jobs-refresh ()
  "Ask the bridge for the jobs of this list's session and show them."
  (interactive)
  (let ((shell agent-shell-jobs--shell))
    (agent-shell-bridge-request
     "session/jobs" `((sessionId . ,(agent-shell-jobs--session shell)))
     :on-success (lambda (result)
                   (when (buffer-live-p shell)
                     (dolist (job (append (alist-get 'jobs result) nil))
                       (agent-shell-jobs--put shell (agent-shell-jobs--plist job)))
                     (agent-shell-jobs--changed shell)))
     :on-error (lambda (err)
                 (message "agent-shell: listing jobs failed: %s" (alist-get 'message err))))))

(defun agent-shell-jobs-kill ()
  "Kill the job at point, and every process it started."
  (interactive)
  (let ((id (or (tabulated-list-get-id) (user-error "No job on this line")))
        (shell agent-shell-jobs--shell))
    (agent-shell-bridge-request
     "session/kill_job" `((sessionId . ,(agent-shell-jobs--session shell)) (jobId . ,id))
     :on-success (lambda (result)
                   (when (buffer-live-p shell)
                     (agent-shell-jobs-update shell (alist-get 'job result))))
     :on-error (lambda (err)
                 (message "agent-shell: killing %s failed: %s" id (alist-get 'message err))))))

(defvar agent-shell-jobs-mode-map
  (let ((map (make-sparse-keymap)))
    (define-key map (kbd "k") #'agent-shell-jobs-kill)
    (define-key map (kbd "g") #'agent-shell-jobs-refresh)
    map)
  "Keys of the jobs list.")

(define-derived-mode agent-shell-jobs-mode tabulated-list-mode "Agent-Jobs"
  "The background jobs of one agent-shell buffer."
  (setq tabulated-list-format [("Job" 7 t) ("State" 8 t) ("Exit" 5 t)
                               ("Started" 26 t) ("Sandbox" 15 t) ("Command" 0 nil)]
        tabulated-list-padding 1)
  (tabulated-list-init-header))

(provide 'agent-shell-jobs)
;;; agent-shell-jobs.el ends here
