;;; test-jobs.el --- Tests of a shell buffer's background jobs  -*- lexical-binding: t; -*-

;; SPDX-License-Identifier: GPL-3.0-or-later

;;; Commentary:

;; agent-shell-jobs.el: `session/job' notifications published by the REAL
;; bridge (its debug methods, over real HTTP and SSE) reach the shell
;; buffer of their session: a transcript line on each start and end,
;; the table `agent-shell-jobs-running' reads, the hook after each
;; change, and the `agent-shell-jobs' list, whose `k' asks the bridge
;; to kill the job.  Waiting is on conditions with deadlines.

;;; Code:

(require 'ert)
(require 'cl-lib)
(require 'agent-shell)
(require 'agent-shell-jobs)
(require 'agent-shell-test-helpers)
(require 'agent-shell-test-session)

(defun test-jobs--notify (sid id state &optional exit-code)
  "Publish a `session/job' for SID: job ID in STATE with EXIT-CODE."
  (test-shell--emit
   `((method . "session/job")
     (params . ((sessionId . ,sid)
                (job . ((id . ,id) (command . "python3 -m http.server 心跳")
                        (state . ,state) (exitCode . ,exit-code)
                        (startedAt . "2026-01-01T00:00:00+00:00")
                        (sandbox . "bubblewrap"))))))))

(ert-deftest test-jobs/start-and-end-are-shown-kept-and-announced ()
  "Each job's start and end is a transcript line, the table follows, the hook runs."
  (test-shell--with-shell (sid)
    (let* ((shell (current-buffer))
           (heard nil)
           (agent-shell-jobs-changed-functions
            (list (lambda (buffer) (push (agent-shell-jobs-running buffer) heard)))))
      (test-jobs--notify sid "job-1" "running")
      (test-jobs--notify sid "job-2" "running")
      (test-shell--wait "two jobs" (lambda () (= (length heard) 2)))
      (should (equal (agent-shell-jobs-running shell)
                     '((:id "job-1" :command "python3 -m http.server 心跳" :state "running")
                       (:id "job-2" :command "python3 -m http.server 心跳" :state "running"))))
      (should (string-search "Job job-1 started in the background: python3 -m http.server 心跳"
                             (test-shell--transcript)))
      (test-jobs--notify sid "job-1" "exited" 3)
      (test-shell--wait "job-1's end" (lambda () (= (length heard) 3)))
      (should (equal (mapcar (lambda (j) (plist-get j :id)) (agent-shell-jobs-running shell))
                     '("job-2")))
      (should (equal (car heard) (agent-shell-jobs-running shell)))
      (should (string-search "Job job-1 exited (3): python3" (test-shell--transcript)))
      ;; The list shows both, the ended one with its code.
      (let ((list (agent-shell-jobs)))
        (unwind-protect
            (with-current-buffer list
              (should (derived-mode-p 'agent-shell-jobs-mode))
              (goto-char (point-min))
              (should (equal (tabulated-list-get-id) "job-1"))
              (should (string-search "exited" (buffer-substring (point) (line-end-position))))
              (forward-line 1)
              (should (equal (tabulated-list-get-id) "job-2"))
              ;; A change seen by the shell shows in its list at once.
              (test-jobs--notify sid "job-2" "killed")
              (test-shell--wait "job-2 killed in the list"
                                (lambda ()
                                  (goto-char (point-min))
                                  (forward-line 1)
                                  (string-search "killed" (buffer-substring
                                                           (point) (line-end-position)))))
              (should (null (agent-shell-jobs-running shell))))
          (kill-buffer list))))))

(ert-deftest test-jobs/kill-asks-the-bridge ()
  "`k' asks the bridge to kill the job at point; its answer is shown."
  (test-shell--with-session (root)
    (let* ((shell (current-buffer))
           (sid (agent-shell-session-id agent-shell--session))
           (messages nil))
      (test-jobs--notify sid "job-7" "running")
      (test-shell--wait "job-7" (lambda () (agent-shell-jobs-running shell)))
      (let ((list (agent-shell-jobs)))
        (unwind-protect
            (with-current-buffer list
              (goto-char (point-min))
              (cl-letf (((symbol-function 'message)
                         (lambda (fmt &rest args) (push (apply #'format fmt args) messages))))
                (agent-shell-jobs-kill)
                ;; The bridge never started this one: it says so, naming the id.
                (test-shell--wait "the bridge's answer"
                                  (lambda () (cl-some (lambda (m) (string-search "job-7" m))
                                                      messages))))
              (should (cl-some (lambda (m) (string-search "no job 'job-7'" m)) messages)))
          (kill-buffer list))))))

(defun test-jobs--marked (marker)
  "Return the live processes whose arguments hold MARKER."
  (cl-remove-if-not
   (lambda (pid)
     (let ((attrs (process-attributes pid)))
       (and (not (equal (alist-get 'state attrs) "Z"))
            (string-search marker (or (alist-get 'args attrs) "")))))
   (list-system-processes)))

(ert-deftest test-jobs/a-real-job-ends-with-its-shell-buffer ()
  "A job the agent starts shows in its shell; killing the buffer ends it."
  (let ((marker (format "jobmark-%d-%d" (emacs-pid) (random 1000000))))
    (agent-shell-test-with-project
        (root `(("Makefile" . ,(format "test:\n\tpython3 -c 'import time; time.sleep(300)' %s\n"
                                       marker))))
      (test-shell--bridge)
      (let ((shell (test-shell--start-session root)))
        (with-current-buffer shell
          (insert "job-start-go")
          (agent-shell-send-input)
          (test-shell--wait "the job's line and the turn's answer"
                            (lambda () (let ((text (test-shell--transcript)))
                                         (and (string-search "Job job-1 started in the background"
                                                             text)
                                              (string-search "后台 job started." text))))
                            30)
          (should (equal (agent-shell-jobs-running shell)
                         '((:id "job-1" :command "make -s test" :state "running"))))
          (test-shell--wait "the job's process" (lambda () (test-jobs--marked marker)) 20))
        (kill-buffer shell)
        (test-shell--wait "no process of the job" (lambda () (null (test-jobs--marked marker)))
                          20)
        ;; The session's end is in its log (its last write, before the project goes).
        (test-shell--wait "the end in the log"
                          (lambda ()
                            (cl-some (lambda (file)
                                       (with-temp-buffer
                                         (insert-file-contents file)
                                         (search-forward "The session ended" nil t)))
                                     (directory-files (expand-file-name ".agent-shell/logs" root)
                                                      t "\\.org\\'")))
                          20)))))

(provide 'test-jobs)
;;; test-jobs.el ends here
