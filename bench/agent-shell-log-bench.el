;;; agent-shell-log-bench.el --- Growth benchmark of the live action log  -*- lexical-binding: t; -*-

;; SPDX-License-Identifier: GPL-3.0-or-later

;;; Commentary:

;; Feeds a long session's `log/entry' and `log/update' notifications,
;; read from a JSON-lines file written by bench/log_buffer_growth.py,
;; through the real handlers (`agent-shell-rpc-handle') into the live
;; log buffer of a shell bound to the session, and times the turns
;; around an early and a late turn.  Parsing a turn's lines is done
;; before its clock starts.  It then times `agent-shell-log-open-file'
;; on a large log file against `find-file' of a plain org file holding
;; the same text.  `agent-shell-log-bench-batch' prints one line,
;; "BENCH-JSON " followed by a JSON object, on standard output.
;;
;; Steps waiting for approval do not display the log here
;; (`agent-shell-log-notify-on-wait' is nil): the figure is the buffer's.

;;; Code:

(require 'agent-shell)

(defconst agent-shell-log-bench--session "bench-log-session"
  "Session id of the notifications (bench/log_buffer_growth.py).")

(defvar agent-shell-log-bench--ahead nil
  "The line read past the end of the last turn, as (TURN METHOD . PARAMS).")

(defun agent-shell-log-bench--read (events)
  "Return the next line of the EVENTS buffer as (TURN METHOD . PARAMS), or nil."
  (or (prog1 agent-shell-log-bench--ahead (setq agent-shell-log-bench--ahead nil))
      (with-current-buffer events
        (skip-chars-forward "\n")
        (unless (eobp)
          (let ((line (json-parse-buffer :object-type 'alist :array-type 'list
                                         :null-object nil :false-object :json-false)))
            (cons (alist-get 'turn line)
                  (cons (intern (alist-get 'method line)) (alist-get 'params line))))))))

(defun agent-shell-log-bench--turn (events)
  "Return the notifications of the next turn in EVENTS as (METHOD . PARAMS)."
  (let* ((first (agent-shell-log-bench--read events))
         (turn (car first))
         (out (and first (list (cdr first))))
         next)
    (while (and first
                (setq next (agent-shell-log-bench--read events))
                (or (equal (car next) turn)
                    (progn (setq agent-shell-log-bench--ahead next) nil)))
      (push (cdr next) out))
    (nreverse out)))

(defun agent-shell-log-bench--feed (events)
  "Hand the next turn of EVENTS to the real handlers; return its seconds."
  (let ((notes (or (agent-shell-log-bench--turn events)
                   (error "The notifications ran out")))
        (start (float-time)))
    (dolist (note notes)
      (agent-shell-rpc-handle nil (car note) (cdr note) nil))
    (- (float-time) start)))

(defun agent-shell-log-bench--median (numbers)
  "Return the median of NUMBERS."
  (let ((sorted (sort (copy-sequence numbers) #'<))
        (n (length numbers)))
    (if (cl-oddp n)
        (nth (/ n 2) sorted)
      (/ (+ (nth (1- (/ n 2)) sorted) (nth (/ n 2) sorted)) 2.0))))

(defun agent-shell-log-bench--window (events turns)
  "Feed TURNS turns of EVENTS; return (MEAN-MS . MEDIAN-MS) per turn."
  (garbage-collect)
  (let (times)
    (dotimes (_ turns)
      (push (* 1000 (agent-shell-log-bench--feed events)) times))
    (cons (/ (apply #'+ times) turns) (agent-shell-log-bench--median times))))

(defun agent-shell-log-bench--shell ()
  "Return a shell buffer bound to the benchmark's session."
  (with-current-buffer (generate-new-buffer "*agent-shell: bench-log*")
    (agent-shell--setup "bench-log" default-directory agent-shell-log-bench--session)
    (current-buffer)))

(defun agent-shell-log-bench--open-seconds (open file)
  "Return the seconds OPEN takes to visit FILE; the buffer is killed after."
  (garbage-collect)
  (let ((start (float-time)))
    (funcall open file)
    (prog1 (- (float-time) start)
      (kill-buffer (get-file-buffer file)))))

(defun agent-shell-log-bench--open-plain (file)
  "Visit FILE as any org file is visited, without the large-file question."
  (let ((large-file-warning-threshold nil))
    (find-file file)))

(defun agent-shell-log-bench--warm-up (log-file)
  "Visit a small log and a small org file cut from LOG-FILE, both deleted after."
  (let* ((dir (make-temp-file "agent-shell-log-bench-" t))
         (logs (expand-file-name ".agent-shell/logs/" dir))
         (small-log (expand-file-name "warm-up.org" logs))
         (small-plain (expand-file-name "warm-up.org" dir)))
    (unwind-protect
        (progn
          (make-directory logs t)
          (with-temp-buffer
            (let ((coding-system-for-read 'utf-8)
                  (coding-system-for-write 'utf-8))
              (insert-file-contents log-file nil 0 200000)
              (goto-char (point-max))
              (when (re-search-backward "^\\* " nil t)
                (delete-region (point) (point-max)))
              (write-region nil nil small-log nil 'silent)
              (write-region nil nil small-plain nil 'silent)))
          (agent-shell-log-bench--open-seconds #'agent-shell-log-open-file small-log)
          (agent-shell-log-bench--open-seconds #'agent-shell-log-bench--open-plain
                                               small-plain))
      (delete-directory dir t))))

(defun agent-shell-log-bench-batch (events-file early late measured log-file plain-file reps)
  "Time turns of EVENTS-FILE at turns EARLY and LATE, then open LOG-FILE.
MEASURED turns are timed at each; LOG-FILE and PLAIN-FILE are opened
REPS times each, alternately, and the median is reported."
  (let* ((agent-shell-log-notify-on-wait nil)
         (events (generate-new-buffer " *bench-log-events*"))
         (shell (agent-shell-log-bench--shell))
         (log (agent-shell-bridge-log-buffer-for agent-shell-log-bench--session))
         early-times late-times fill opens plains)
    (with-current-buffer events
      (let ((coding-system-for-read 'utf-8))
        (insert-file-contents events-file))
      (goto-char (point-min)))
    (dotimes (_ early) (agent-shell-log-bench--feed events))
    (setq early-times (agent-shell-log-bench--window events measured))
    (let ((start (float-time)))
      (dotimes (_ (- late early measured)) (agent-shell-log-bench--feed events))
      (setq fill (- (float-time) start)))
    (setq late-times (agent-shell-log-bench--window events measured))
    (let ((chars (buffer-size log))
          (overlays (with-current-buffer log
                      (length (overlays-in (point-min) (point-max)))))
          (entries (hash-table-count (buffer-local-value 'agent-shell-log--nodes log))))
      (with-current-buffer shell
        (remhash agent-shell-log-bench--session
                 (agent-shell-bridge-sessions agent-shell-bridge--current))
        (set-buffer-modified-p nil))
      (let ((kill-buffer-hook nil))
        (kill-buffer shell)
        (kill-buffer log)
        (kill-buffer events))
      ;; The first visit of an org file loads libraries the others do not.
      (agent-shell-log-bench--warm-up log-file)
      (dotimes (_ reps)
        (push (agent-shell-log-bench--open-seconds #'agent-shell-log-open-file log-file)
              opens)
        (push (agent-shell-log-bench--open-seconds #'agent-shell-log-bench--open-plain
                                                   plain-file)
              plains))
      (princ (concat "BENCH-JSON "
                     (json-serialize
                      `((early_ms . ,(car early-times))
                        (early_median_ms . ,(cdr early-times))
                        (late_ms . ,(car late-times))
                        (late_median_ms . ,(cdr late-times))
                        (fill_seconds . ,fill)
                        (buffer_chars . ,chars)
                        (overlays . ,overlays)
                        (entries . ,entries)
                        (open_log_s . ,(agent-shell-log-bench--median opens))
                        (open_plain_s . ,(agent-shell-log-bench--median plains))))
                     "\n")))))

(provide 'agent-shell-log-bench)
;;; agent-shell-log-bench.el ends here
