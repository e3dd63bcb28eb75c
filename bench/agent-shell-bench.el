;;; agent-shell-bench.el --- Streaming benchmark of the agent-shell buffer  -*- lexical-binding: t; -*-

;; SPDX-License-Identifier: GPL-3.0-or-later

;;; Commentary:

;; Measures how fast the shell buffer renders streamed `agent_message_chunk'
;; updates, through the real handler of the bridge's `session/update'
;; notification (`agent-shell-rpc-handle'), with synthetic parameters
;; shaped as the JSON parser of agent-shell-rpc.el returns them.
;;
;; Scenarios: an empty buffer; a buffer already holding several megabytes
;; of history with point at its end; the same with point at its start.
;; The baseline for the empty buffer is a plain `insert' of the same text
;; at the end of a `fundamental-mode' buffer.  bench/emacs.py runs
;; `agent-shell-bench-batch' in a batch Emacs, which prints one line,
;; "BENCH-JSON " followed by a JSON object of chunks per second, on
;; standard output.

;;; Code:

(require 'agent-shell)

(defconst agent-shell-bench--session "bench-session"
  "Session id of the benchmark buffer.")

(defun agent-shell-bench--chunks (n)
  "Return N chunk texts; every tenth ends a line, as streamed prose does."
  (let (out)
    (dotimes (i n)
      (push (format (if (= (% i 10) 9) "word%05d\n" "word%05d ") i) out))
    (nreverse out)))

(defun agent-shell-bench--params (text)
  "Return `session/update' params carrying TEXT as a message chunk."
  `((sessionId . ,agent-shell-bench--session)
    (update . ((sessionUpdate . "agent_message_chunk")
               (content . ((type . "text") (text . ,text)))))))

(defun agent-shell-bench--update (params)
  "Hand PARAMS to the real `session/update' handler."
  (agent-shell-rpc-handle nil 'session/update params nil))

(defun agent-shell-bench--turn-end ()
  "Finish the current turn in the benchmark buffer."
  (agent-shell-bench--update
   `((sessionId . ,agent-shell-bench--session)
     (update . ((sessionUpdate . "turn_end") (stopReason . "end_turn"))))))

(defun agent-shell-bench--fill (bytes)
  "Stream about BYTES of history into the buffer, 64 KiB a chunk."
  (let* ((line (concat (make-string 79 ?x) "\n"))
         (piece (apply #'concat (make-list 64 line)))
         (turn 0))
    (while (< (buffer-size) bytes)
      (agent-shell-bench--update (agent-shell-bench--params piece))
      (when (= (% (cl-incf turn) 16) 0)
        (agent-shell-bench--turn-end)))
    (agent-shell-bench--turn-end)))

(defun agent-shell-bench--shell (history where)
  "Return a fresh shell buffer with HISTORY bytes, point at WHERE.
WHERE is `start' or `end'."
  (let ((buffer (generate-new-buffer "*agent-shell: bench*")))
    (with-current-buffer buffer
      (agent-shell--setup "bench" temporary-file-directory agent-shell-bench--session)
      (when (> history 0)
        (agent-shell-bench--fill history))
      (goto-char (if (eq where 'start) (point-min) (point-max))))
    buffer))

(defun agent-shell-bench--rate (buffer params)
  "Stream PARAMS into BUFFER; return chunks per second."
  (garbage-collect)
  (with-current-buffer buffer
    (let ((start (float-time)))
      (dolist (p params)
        (agent-shell-bench--update p))
      (/ (length params) (max 1e-9 (- (float-time) start))))))

(defun agent-shell-bench--plain-rate (texts)
  "Insert TEXTS at the end of a plain buffer; return chunks per second."
  (garbage-collect)
  (with-temp-buffer
    (let ((start (float-time)))
      (dolist (text texts)
        (goto-char (point-max))
        (insert text))
      (/ (length texts) (max 1e-9 (- (float-time) start))))))

(defun agent-shell-bench--scenario (history where params)
  "Rate and buffer size for HISTORY bytes with point at WHERE, streaming PARAMS."
  (let* ((buffer (agent-shell-bench--shell history where))
         (before (buffer-size buffer))
         (rate (agent-shell-bench--rate buffer params))
         (moved (with-current-buffer buffer (point))))
    (prog1 `((rate . ,rate) (history_chars . ,before) (point_after . ,moved))
      (with-current-buffer buffer
        (remhash agent-shell-bench--session (agent-shell-bridge-sessions agent-shell-bridge--current))
        (set-buffer-modified-p nil))
      (let ((kill-buffer-hook nil))
        (kill-buffer buffer)))))

(defun agent-shell-bench--median (numbers)
  "Return the median of NUMBERS."
  (let ((sorted (sort (copy-sequence numbers) #'<))
        (n (length numbers)))
    (if (cl-oddp n)
        (nth (/ n 2) sorted)
      (/ (+ (nth (1- (/ n 2)) sorted) (nth (/ n 2) sorted)) 2.0))))

(defun agent-shell-bench--summary (results)
  "Combine scenario RESULTS: the first one, with the median `rate' of all."
  (cons (cons 'rate (agent-shell-bench--median
                     (mapcar (lambda (r) (alist-get 'rate r)) results)))
        (assq-delete-all 'rate (copy-alist (car results)))))

(defun agent-shell-bench-batch (chunks history &optional reps)
  "Run every scenario REPS times with CHUNKS chunks and HISTORY bytes.
REPS defaults to 3; each rate is the median of its runs.  Print the
results as one JSON line prefixed with \"BENCH-JSON \"."
  (let* ((reps (or reps 3))
         (texts (agent-shell-bench--chunks chunks))
         (params (mapcar #'agent-shell-bench--params texts))
         plain empty long-end long-start)
    ;; Warm up: the first calls fill method-dispatch caches.
    (agent-shell-bench--scenario 0 'end (seq-take params 500))
    (dotimes (_ reps)
      (push `((rate . ,(agent-shell-bench--plain-rate texts))) plain)
      (push (agent-shell-bench--scenario 0 'end params) empty)
      (push (agent-shell-bench--scenario history 'end params) long-end)
      (push (agent-shell-bench--scenario history 'start params) long-start))
    (cl-flet ((summary (results) (agent-shell-bench--summary results)))
      (princ (concat "BENCH-JSON "
                     (json-serialize
                      `((chunks . ,chunks)
                        (reps . ,reps)
                        (plain_insert . ,(alist-get 'rate (summary plain)))
                        (empty . ,(summary empty))
                        (history_end . ,(summary long-end))
                        (history_start . ,(summary long-start))))
                     "\n")))))

(provide 'agent-shell-bench)
;;; agent-shell-bench.el ends here
