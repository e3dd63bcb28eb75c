;;; agent-shell-stream-bench.el --- End-to-end streaming benchmark of agent-shell  -*- lexical-binding: t; -*-

;; SPDX-License-Identifier: GPL-3.0-or-later

;;; Commentary:

;; A long reply from the scripted model, from `agent-shell-send' to its
;; last character in a real "*agent-shell: NAME*" buffer, through a
;; real bridge (model -> bridge -> HTTP/SSE -> shell buffer), against a
;; minimal direct consumer measured in the same Emacs: a curl process
;; reading the same model's SSE, one `json-parse-string' per event and
;; an insert at a marker, the way gptel streams.  bench/stream.py
;; serves the model and runs `agent-shell-stream-bench-batch', which
;; prints one line, "BENCH-JSON " followed by a JSON object of timings
;; in seconds, on standard output.

;;; Code:

(require 'agent-shell)

(defvar agent-shell-stream-bench--expected 0
  "Characters of the reply.")

(defvar agent-shell-stream-bench--seen 0
  "Characters of the reply inserted so far in the measured run.")

(defvar agent-shell-stream-bench--first nil
  "Time the first character of the measured run was inserted.")

(defvar agent-shell-stream-bench--last nil
  "Time the last character of the measured run was inserted.")

(defvar agent-shell-stream-bench--busy 0.0
  "Seconds Emacs spent reading and rendering the stream in the measured run.")

(defvar agent-shell-stream-bench--longest 0.0
  "Longest single stretch of that work: how long typed keys could wait.")

(defun agent-shell-stream-bench--reset ()
  "Start counting a new run."
  (setq agent-shell-stream-bench--seen 0
        agent-shell-stream-bench--first nil
        agent-shell-stream-bench--last nil
        agent-shell-stream-bench--busy 0.0
        agent-shell-stream-bench--longest 0.0))

(defun agent-shell-stream-bench--timed (fn &rest args)
  "Call FN with ARGS, adding its duration to the busy time (advice).
Only work until the last character of the reply counts: what comes
after it (the action log's entry of the answer, the end of the turn)
is not part of streaming."
  (let ((start (float-time))
        (counting (null agent-shell-stream-bench--last)))
    (prog1 (apply fn args)
      (when counting
        (let ((took (- (or agent-shell-stream-bench--last (float-time)) start)))
          (setq agent-shell-stream-bench--busy (+ agent-shell-stream-bench--busy took)
                agent-shell-stream-bench--longest (max agent-shell-stream-bench--longest
                                                       took)))))))

(defun agent-shell-stream-bench--count (n)
  "Note that N more characters of the reply were inserted."
  (when (> n 0)
    (let ((now (float-time)))
      (unless agent-shell-stream-bench--first
        (setq agent-shell-stream-bench--first now))
      (setq agent-shell-stream-bench--seen (+ agent-shell-stream-bench--seen n))
      (when (>= agent-shell-stream-bench--seen agent-shell-stream-bench--expected)
        (setq agent-shell-stream-bench--last now)))))

(defun agent-shell-stream-bench--on-message (text &rest _)
  "Count TEXT, just appended to the shell's message (advice)."
  (agent-shell-stream-bench--count (length text)))

(defun agent-shell-stream-bench--wait (predicate what &optional timeout)
  "Wait until PREDICATE is non-nil, or signal an error naming WHAT."
  (let ((deadline (+ (float-time) (or timeout 300))))
    (while (not (funcall predicate))
      (when (> (float-time) deadline)
        (error "Timed out waiting for %s" what))
      (accept-process-output nil 0.01))))

;;; The direct consumer

(defun agent-shell-stream-bench--direct-filter (target)
  "Return a curl process filter inserting streamed content into TARGET.
It does what gptel's curl filter does: insert the output at the end
of the process buffer, parse every complete \"data:\" line with
`json-parse-string' and insert the delta's content at TARGET's marker."
  (lambda (proc output)
    (let ((buf (process-buffer proc)))
      (with-current-buffer buf
        (goto-char (process-mark proc))
        (insert output)
        (set-marker (process-mark proc) (point))
        (goto-char (or (process-get proc 'parsed) (point-min)))
        (while (re-search-forward "^data: \\(.*\\)\n" nil t)
          (let ((json (match-string 1)))
            (process-put proc 'parsed (point))
            (unless (string= json "[DONE]")
              (let* ((chunk (json-parse-string json :object-type 'plist
                                               :null-object nil :false-object nil))
                     (choice (aref (plist-get chunk :choices) 0))
                     (text (plist-get (plist-get choice :delta) :content)))
                (when (and (stringp text) (> (length text) 0))
                  (with-current-buffer (marker-buffer target)
                    (save-excursion
                      (goto-char target)
                      (insert text)))
                  (agent-shell-stream-bench--count (length text)))))))))))

(defun agent-shell-stream-bench--direct (api-base)
  "Stream the next reply of the model at API-BASE with curl; return seconds.
The value is (TOTAL FIRST BUSY LONGEST), as for
`agent-shell-stream-bench--shell'."
  (agent-shell-stream-bench--reset)
  (let* ((target-buffer (generate-new-buffer "*bench direct*"))
         (target (with-current-buffer target-buffer (point-marker)))
         (body (json-serialize '((model . "mock-model") (stream . t)
                                 (messages . [((role . "user") (content . "stream"))]))))
         (start (float-time))
         (proc (make-process
                :name "bench-curl"
                :buffer (generate-new-buffer " *bench curl*")
                :command (list "curl" "-sN" "--no-buffer" "-X" "POST"
                               "-H" "Content-Type: application/json"
                               "--data-binary" body
                               (concat api-base "/chat/completions"))
                :coding 'utf-8-unix
                :connection-type 'pipe
                :noquery t
                :filter (let ((filter (agent-shell-stream-bench--direct-filter target)))
                          (lambda (proc output)
                            (agent-shell-stream-bench--timed filter proc output))))))
    (agent-shell-stream-bench--wait (lambda () agent-shell-stream-bench--last) "curl's reply")
    (prog1 (list (- agent-shell-stream-bench--last start)
                 (- agent-shell-stream-bench--first start)
                 agent-shell-stream-bench--busy
                 agent-shell-stream-bench--longest)
      (with-current-buffer target-buffer
        (unless (= (buffer-size) agent-shell-stream-bench--expected)
          (error "The direct consumer got %d characters, not %d"
                 (buffer-size) agent-shell-stream-bench--expected)))
      (agent-shell-stream-bench--wait (lambda () (not (process-live-p proc))) "curl to exit" 30)
      (kill-buffer (process-buffer proc))
      (kill-buffer target-buffer))))

;;; Through the bridge

(defun agent-shell-stream-bench--fill (buffer bytes)
  "Stream about BYTES of history into the shell BUFFER, 64 KiB a chunk."
  (with-current-buffer buffer
    (let* ((session (agent-shell-session-id agent-shell--session))
           (line (concat (make-string 39 ?x) (make-string 20 ?中) "\n"))
           (piece (apply #'concat (make-list 800 line)))
           (n 0))
      (cl-flet ((update (u) (agent-shell-rpc-handle
                             nil 'session/update `((sessionId . ,session) (update . ,u)) nil)))
        (while (< (buffer-size) bytes)
          (update `((sessionUpdate . "agent_message_chunk")
                    (content . ((type . "text") (text . ,piece)))))
          (when (= (% (cl-incf n) 16) 0)
            (update '((sessionUpdate . "turn_end") (stopReason . "end_turn")))))
        (update '((sessionUpdate . "turn_end") (stopReason . "end_turn")))))))

(defun agent-shell-stream-bench--shell (buffer)
  "Send a prompt in the shell BUFFER; return (TOTAL FIRST BUSY LONGEST).
All are seconds: to the last and the first character, in Emacs's
reading and rendering of the stream, and its longest single stretch."
  (agent-shell-stream-bench--reset)
  (with-current-buffer buffer
    (let ((start (float-time)))
      (agent-shell-send "stream a long answer")
      (agent-shell-stream-bench--wait (lambda () agent-shell-stream-bench--last) "the reply")
      (prog1 (list (- agent-shell-stream-bench--last start)
                   (- agent-shell-stream-bench--first start)
                   agent-shell-stream-bench--busy
                   agent-shell-stream-bench--longest)
        (agent-shell-stream-bench--wait
         (lambda () (with-current-buffer buffer (eq (agent-shell-session-state agent-shell--session) 'idle)))
         "the end of the turn")))))

(defun agent-shell-stream-bench--new-shell (root)
  "Start a session for ROOT; return its shell buffer once it is idle."
  (let* ((default-directory root)
         (buffer (save-window-excursion (agent-shell-start))))
    (agent-shell-stream-bench--wait
     (lambda () (with-current-buffer buffer
                  (and (agent-shell-session-id agent-shell--session) (eq (agent-shell-session-state agent-shell--session) 'idle))))
     "the session")
    buffer))

(defun agent-shell-stream-bench--median (numbers)
  "Return the median of NUMBERS."
  (let ((sorted (sort (copy-sequence numbers) #'<))
        (n (length numbers)))
    (if (cl-oddp n)
        (nth (/ n 2) sorted)
      (/ (+ (nth (1- (/ n 2)) sorted) (nth (/ n 2) sorted)) 2.0))))

(defvar agent-shell-stream-bench--history-chars 0
  "Size of the last measured shell buffer.")

(defun agent-shell-stream-bench--fresh (roots history)
  "Measure one reply in a new session for the next of ROOTS.
ROOTS is a cons cell whose car lists the unused project directories.
With HISTORY bytes, the new shell buffer is filled with that much
history first.  Return (TOTAL FIRST BUSY LONGEST) in seconds."
  (let ((shell (agent-shell-stream-bench--new-shell (pop (car roots)))))
    (when (> history 0)
      (agent-shell-stream-bench--fill shell history))
    (garbage-collect)
    (prog1 (agent-shell-stream-bench--shell shell)
      (setq agent-shell-stream-bench--history-chars (buffer-size shell)))))

(defun agent-shell-stream-bench-batch (api-base roots chars history reps)
  "Measure the reply of CHARS characters REPS times; print the results.
API-BASE is the scripted model.  ROOTS lists project directories, one
per session: every measured reply gets a session and a shell buffer
of its own, so the bridge's work per turn is the same in every run.
HISTORY is the bytes of history in the shell buffer of the second
scenario.  The scenarios alternate, so load on the machine spreads
over all of them."
  (setq agent-shell-stream-bench--expected chars)
  (advice-add 'agent-shell-transcript--append-message :after #'agent-shell-stream-bench--on-message)
  ;; Emacs's share of the work: the event stream's filter and the dispatch.
  (advice-add 'agent-shell-rpc-http--filter :around #'agent-shell-stream-bench--timed)
  (advice-add 'agent-shell-rpc--drain :around #'agent-shell-stream-bench--timed)
  (let ((direct nil) (empty nil) (long nil) (history-chars 0)
        (roots (list roots))
        (agent-shell-api-base api-base))
    ;; Warm up both paths: the bridge starts, caches fill.
    (agent-shell-stream-bench--direct api-base)
    (agent-shell-stream-bench--fresh roots 0)
    (dotimes (_ reps)
      (garbage-collect)
      (push (agent-shell-stream-bench--direct api-base) direct)
      (push (agent-shell-stream-bench--fresh roots 0) empty)
      (push (agent-shell-stream-bench--fresh roots history) long)
      (setq history-chars agent-shell-stream-bench--history-chars))
    (cl-flet ((med (runs f) (agent-shell-stream-bench--median (mapcar f runs)))
              (maxi (runs f) (apply #'max (mapcar f runs))))
      (princ (concat "BENCH-JSON "
                     (json-serialize
                      `((chars . ,chars)
                        (reps . ,reps)
                        (history_chars . ,history-chars)
                        (direct_total . ,(med direct #'car))
                        (direct_first . ,(med direct #'cadr))
                        (direct_busy . ,(med direct #'caddr))
                        (direct_longest . ,(maxi direct #'cadddr))
                        (empty_total . ,(med empty #'car))
                        (empty_first . ,(med empty #'cadr))
                        (empty_busy . ,(med empty #'caddr))
                        (empty_longest . ,(maxi empty #'cadddr))
                        (history_total . ,(med long #'car))
                        (history_first . ,(med long #'cadr))
                        (history_busy . ,(med long #'caddr))
                        (history_longest . ,(maxi long #'cadddr))
                        (runs . ((direct . ,(vconcat (mapcar #'car direct)))
                                 (empty . ,(vconcat (mapcar #'car empty)))
                                 (history . ,(vconcat (mapcar #'car long)))))
                        (gcs . ,gcs-done)))
                     "\n")))
    (when (agent-shell-bridge-live-connection)
      (agent-shell-rpc-stop (agent-shell-bridge-connection agent-shell-bridge--current)))))

;;; Interactive: how late a timer runs while the reply streams

(defvar agent-shell-stream-bench--lags nil
  "How late each tick of the probe timer ran, in seconds, newest first.")

(defvar agent-shell-stream-bench--probe nil
  "The probe timer, or nil.")

(defvar agent-shell-stream-bench--tick nil
  "When the probe last ran.")

(defconst agent-shell-stream-bench--period 0.01
  "Seconds between ticks of the probe timer.")

(defun agent-shell-stream-bench--probe-tick ()
  "Record how late this tick of the probe runs.
A key typed in any buffer waits about as long as a tick is late."
  (let ((now (float-time)))
    (when agent-shell-stream-bench--tick
      (push (max 0.0 (- now agent-shell-stream-bench--tick agent-shell-stream-bench--period))
            agent-shell-stream-bench--lags))
    (setq agent-shell-stream-bench--tick now)))

(defun agent-shell-stream-bench--probe-start ()
  "Start probing responsiveness."
  (setq agent-shell-stream-bench--lags nil
        agent-shell-stream-bench--tick nil
        agent-shell-stream-bench--probe
        (run-at-time 0 agent-shell-stream-bench--period
                     #'agent-shell-stream-bench--probe-tick)))

(defun agent-shell-stream-bench--probe-stop ()
  "Stop probing; return (MEDIAN P99 MAX) of the lags in milliseconds."
  (cancel-timer agent-shell-stream-bench--probe)
  (let* ((lags (sort (copy-sequence agent-shell-stream-bench--lags) #'<))
         (n (length lags))
         (at (lambda (q) (* 1000 (nth (min (1- n) (floor (* q n))) lags)))))
    (if (zerop n) (list 0 0 0)
      (list (funcall at 0.5) (funcall at 0.99) (* 1000 (car (last lags)))))))

(defun agent-shell-stream-bench--after (predicate then)
  "Call THEN once PREDICATE is non-nil, checking from timers."
  (let (timer)
    (setq timer (run-at-time 0.02 0.02
                             (lambda ()
                               (when (funcall predicate)
                                 (cancel-timer timer)
                                 (funcall then)))))))

(defun agent-shell-stream-bench-interactive (api-base roots chars out)
  "Stream the reply in a displayed shell buffer; write the timings to OUT.
Run in an interactive Emacs (a terminal in tmux), so redisplay runs as
it does for a user.  Everything happens from timers and the command
loop: first the direct consumer streams into a displayed buffer, then
a new session in ROOTS (a list of two directories) gets the prompt.  A
probe timer ticking every 10 ms measures how late it runs meanwhile.
OUT receives a JSON object; Emacs then exits."
  (setq agent-shell-stream-bench--expected chars
        agent-shell-api-base api-base)
  (advice-add 'agent-shell-transcript--append-message :after #'agent-shell-stream-bench--on-message)
  (run-at-time 300 nil (lambda ()
                         (with-temp-file out (insert "{\"error\": \"timeout\"}"))
                         (kill-emacs 3)))
  (let ((result nil))
    (cl-labels
        ((finish ()
           (with-temp-file out (insert (json-serialize result)))
           (when (agent-shell-bridge-live-connection)
             (agent-shell-rpc-stop (agent-shell-bridge-connection agent-shell-bridge--current)))
           (kill-emacs 0))
         (direct ()
           (agent-shell-stream-bench--reset)
           (let* ((target-buffer (get-buffer-create "*bench direct*"))
                  (target (with-current-buffer target-buffer (point-marker)))
                  (body (json-serialize '((model . "mock-model") (stream . t)
                                          (messages . [((role . "user")
                                                        (content . "stream"))]))))
                  (start (float-time)))
             (switch-to-buffer target-buffer)
             (agent-shell-stream-bench--probe-start)
             (make-process
              :name "bench-curl" :buffer (generate-new-buffer " *bench curl*")
              :command (list "curl" "-sN" "--no-buffer" "-X" "POST"
                             "-H" "Content-Type: application/json"
                             "--data-binary" body (concat api-base "/chat/completions"))
              :coding 'utf-8-unix :connection-type 'pipe :noquery t
              :filter (agent-shell-stream-bench--direct-filter target))
             (agent-shell-stream-bench--after
              (lambda () agent-shell-stream-bench--last)
              (lambda ()
                (let ((lag (agent-shell-stream-bench--probe-stop)))
                  (push `(direct . ((total . ,(- agent-shell-stream-bench--last start))
                                    (lag_median_ms . ,(nth 0 lag))
                                    (lag_p99_ms . ,(nth 1 lag))
                                    (lag_max_ms . ,(nth 2 lag))))
                        result))
                (shell)))))
         (shell ()
           (let* ((default-directory (car roots))
                  (buffer (agent-shell-start)))
             (delete-other-windows)
             (switch-to-buffer buffer)
             (agent-shell-stream-bench--after
              (lambda () (with-current-buffer buffer
                           (and (agent-shell-session-id agent-shell--session) (eq (agent-shell-session-state agent-shell--session) 'idle))))
              (lambda ()
                (agent-shell-stream-bench--reset)
                (agent-shell-stream-bench--probe-start)
                (let ((start (float-time)))
                  (with-current-buffer buffer
                    (goto-char (point-max))
                    (agent-shell-send "stream a long answer"))
                  (agent-shell-stream-bench--after
                   (lambda () agent-shell-stream-bench--last)
                   (lambda ()
                     (let ((lag (agent-shell-stream-bench--probe-stop)))
                       (push `(shell . ((total . ,(- agent-shell-stream-bench--last start))
                                        (lag_median_ms . ,(nth 0 lag))
                                        (lag_p99_ms . ,(nth 1 lag))
                                        (lag_max_ms . ,(nth 2 lag))))
                             result))
                     (finish)))))))))
      (direct))))

(provide 'agent-shell-stream-bench)
;;; agent-shell-stream-bench.el ends here
