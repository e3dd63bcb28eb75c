;;; agent-shell-dashboard-bench.el --- What the sessions dashboard costs while many sessions stream  -*- lexical-binding: t; -*-

;; SPDX-License-Identifier: GPL-3.0-or-later

;;; Commentary:

;; Many real sessions on one real bridge, each given a turn at the same
;; moment: the scripted model calls a few tools (each a state change:
;; running, then thinking) and streams a reply.  A probe timer ticking
;; every 10 ms measures how late it runs meanwhile, once with the
;; sessions dashboard (and its mode line) open and once with both
;; closed, alternating.  bench/dashboard.py serves the model and runs
;; `agent-shell-dashboard-bench-batch', which prints one line,
;; "BENCH-JSON " and a JSON object, on standard output.

;;; Code:

(require 'cl-lib)
(require 'agent-shell)
(require 'agent-shell-sessions)

(defconst agent-shell-dashboard-bench--period 0.01
  "Seconds between ticks of the probe timer.")

(defvar agent-shell-dashboard-bench--lags nil
  "How late each tick ran, in seconds, newest first.")

(defvar agent-shell-dashboard-bench--tick nil
  "When the probe last ran.")

(defvar agent-shell-dashboard-bench--rows 0
  "Rows the dashboard redrew in the measured run.")

(defun agent-shell-dashboard-bench--probe-tick ()
  "Note how late this tick runs."
  (let ((now (float-time)))
    (when agent-shell-dashboard-bench--tick
      (push (max 0.0 (- now agent-shell-dashboard-bench--tick
                        agent-shell-dashboard-bench--period))
            agent-shell-dashboard-bench--lags))
    (setq agent-shell-dashboard-bench--tick now)))

(defvar agent-shell-dashboard-bench--flush-time 0.0
  "Seconds spent redrawing the dashboard in the measured run.")

(defvar agent-shell-dashboard-bench--flush-max 0.0
  "The longest single redraw of the dashboard in the measured run.")

(defun agent-shell-dashboard-bench--count-row (&rest _)
  "Count one redrawn row (advice)."
  (cl-incf agent-shell-dashboard-bench--rows))

(defun agent-shell-dashboard-bench--time-flush (fn &rest args)
  "Call FN with ARGS, timing it as one redraw of the dashboard (advice).
A garbage collection that happens to run meanwhile is not counted: it
collects what everything allocated, and the rounds count it apart."
  (let ((start (float-time))
        (gc gc-elapsed))
    (prog1 (apply fn args)
      (let ((took (- (float-time) start (- gc-elapsed gc))))
        (setq agent-shell-dashboard-bench--flush-time
              (+ agent-shell-dashboard-bench--flush-time took)
              agent-shell-dashboard-bench--flush-max
              (max agent-shell-dashboard-bench--flush-max took))))))

(defun agent-shell-dashboard-bench--wait (predicate what &optional timeout)
  "Wait until PREDICATE is non-nil, or signal an error naming WHAT."
  (let ((deadline (+ (float-time) (or timeout 300))))
    (while (not (funcall predicate))
      (when (> (float-time) deadline)
        (error "Timed out waiting for %s" what))
      (accept-process-output nil 0.005))))

(defun agent-shell-dashboard-bench--idle-p (buffer)
  "Return non-nil when the session of BUFFER has no turn."
  (with-current-buffer buffer
    (and (eq (agent-shell-session-state agent-shell--session) 'idle)
         (not (agent-shell-session-turn-id agent-shell--session)))))

(defun agent-shell-dashboard-bench--new-shell (root)
  "Start a session for ROOT; return its shell buffer once it is idle."
  (let* ((default-directory root)
         (buffer (save-window-excursion (agent-shell-start))))
    (agent-shell-dashboard-bench--wait
     (lambda () (with-current-buffer buffer
                  (and (agent-shell-session-id agent-shell--session)
                       (agent-shell-dashboard-bench--idle-p buffer))))
     "the session")
    buffer))

(defun agent-shell-dashboard-bench--percentile (sorted q)
  "Return the Q quantile of the SORTED lags, in milliseconds."
  (if (null sorted) 0
    (* 1000 (nth (min (1- (length sorted)) (floor (* q (length sorted)))) sorted))))

(defun agent-shell-dashboard-bench--run (shells label open)
  "Give every one of SHELLS a turn at once; return its figures.
LABEL names the prompts (the model's script matches it); with OPEN the
dashboard and its mode line are on."
  (let ((dashboard (and open (save-window-excursion (agent-shell-sessions)))))
    (when open (agent-shell-sessions-mode-line-mode 1))
    (garbage-collect)
    (setq agent-shell-dashboard-bench--lags nil
          agent-shell-dashboard-bench--tick nil
          agent-shell-dashboard-bench--rows 0
          agent-shell-dashboard-bench--flush-time 0.0
          agent-shell-dashboard-bench--flush-max 0.0)
    ;; The prompts go out first: what sending costs (the context of each
    ;; prompt) is the same either way, and not what is measured.
    (let ((n 0))
      (dolist (shell shells)
        (with-current-buffer shell
          (agent-shell-send (format "[%s-%d] go" label (cl-incf n))))))
    (let ((probe (run-at-time 0 agent-shell-dashboard-bench--period
                              #'agent-shell-dashboard-bench--probe-tick))
          (start (float-time))
          (gcs gcs-done)
          (gc-time gc-elapsed))
      (agent-shell-dashboard-bench--wait
       (lambda () (cl-every #'agent-shell-dashboard-bench--idle-p shells))
       "every turn's end")
      (cancel-timer probe)
      (let ((lags (sort (copy-sequence agent-shell-dashboard-bench--lags) #'<))
            (took (- (float-time) start)))
        (when open
          (agent-shell-sessions-mode-line-mode -1)
          (kill-buffer dashboard))
        `((p50_ms . ,(agent-shell-dashboard-bench--percentile lags 0.5))
          (p99_ms . ,(agent-shell-dashboard-bench--percentile lags 0.99))
          (max_ms . ,(* 1000 (or (car (last lags)) 0)))
          (ticks . ,(length lags))
          (rows . ,agent-shell-dashboard-bench--rows)
          (flush_ms . ,(* 1000 agent-shell-dashboard-bench--flush-time))
          (flush_max_ms . ,(* 1000 agent-shell-dashboard-bench--flush-max))
          (gcs . ,(- gcs-done gcs))
          (gc_ms . ,(* 1000 (- gc-elapsed gc-time)))
          (seconds . ,took))))))

(defconst agent-shell-dashboard-bench--large-gc (* 16 1024 1024)
  "The `gc-cons-threshold' of the second set of rounds (bytes).
Emacs's default (800 kB) makes a streaming Emacs collect garbage
every few hundred milliseconds; many users raise it, and the second
set of rounds shows the timer with collections that rare.")

(defun agent-shell-dashboard-bench-batch (api-base roots reps)
  "Measure REPS rounds, closed then open, with one session per ROOTS; print them.
API-BASE is the scripted model; the prompts are \"[closed-R-N] go\"
and \"[open-R-N] go\" for round R and session N, then the same with
\"gc\" in the label, run with `agent-shell-dashboard-bench--large-gc'."
  (advice-add 'agent-shell-sessions--redraw-row :after
              #'agent-shell-dashboard-bench--count-row)
  (advice-add 'agent-shell-sessions--flush :around
              #'agent-shell-dashboard-bench--time-flush)
  (let* ((agent-shell-api-base api-base)
         (shells (mapcar #'agent-shell-dashboard-bench--new-shell roots))
         (closed nil) (open nil) (closed-gc nil) (open-gc nil))
    (dotimes (r reps)
      (push (agent-shell-dashboard-bench--run shells (format "closed-%d" r) nil) closed)
      (push (agent-shell-dashboard-bench--run shells (format "open-%d" r) t) open))
    (let ((gc-cons-threshold agent-shell-dashboard-bench--large-gc))
      (dotimes (r reps)
        (push (agent-shell-dashboard-bench--run shells (format "gcclosed-%d" r) nil) closed-gc)
        (push (agent-shell-dashboard-bench--run shells (format "gcopen-%d" r) t) open-gc)))
    (princ (concat "BENCH-JSON "
                   (json-serialize
                    `((sessions . ,(length shells))
                      (reps . ,reps)
                      (closed . ,(vconcat (nreverse closed)))
                      (open . ,(vconcat (nreverse open)))
                      (gc_threshold . ,agent-shell-dashboard-bench--large-gc)
                      (closed_large_gc . ,(vconcat (nreverse closed-gc)))
                      (open_large_gc . ,(vconcat (nreverse open-gc)))))
                   "\n"))
    (when (agent-shell-bridge-live-connection)
      (agent-shell-rpc-stop (agent-shell-bridge-connection agent-shell-bridge--current)))))

(provide 'agent-shell-dashboard-bench)
;;; agent-shell-dashboard-bench.el ends here
