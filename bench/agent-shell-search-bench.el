;;; agent-shell-search-bench.el --- Symbol search benchmark of agent-shell  -*- lexical-binding: t; -*-

;; SPDX-License-Identifier: GPL-3.0-or-later

;;; Commentary:

;; Times the real `symbol_search' handler (`agent-shell-tools-call', as
;; the RPC layer calls it) on a repository that bench/search.py
;; generated.  No buffer visits a file there, so no xref backend is
;; used and the search goes through ripgrep.  Each figure is the median
;; of several runs after one warm-up run (which also fetches the
;; bridge's list of secrets).  `agent-shell-search-bench-batch' prints
;; one line, "BENCH-JSON " followed by a JSON object, on standard
;; output.

;;; Code:

(require 'cl-lib)
(require 'agent-shell-tools)
(require 'agent-shell-perception)
(require 'agent-shell-rpc)

(defun agent-shell-search-bench--median (numbers)
  "Return the median of NUMBERS."
  (let ((sorted (sort (copy-sequence numbers) #'<))
        (n (length numbers)))
    (if (cl-oddp n)
        (nth (/ n 2) sorted)
      (/ (+ (nth (1- (/ n 2)) sorted) (nth (/ n 2) sorted)) 2.0))))

(defun agent-shell-search-bench--search (root symbol kind)
  "Run `symbol_search' for SYMBOL of KIND in ROOT; return (SECONDS . RESULT)."
  (let ((context `((root . ,root) (op_id . "bench") (turn_id . "bench")
                   (session_id . "bench") (extra_roots . nil)))
        (args `((symbol . ,symbol) (kind . ,kind))))
    (garbage-collect)
    (let* ((start (float-time))
           (result (agent-shell-tools-call "symbol_search" args context)))
      (cons (- (float-time) start) result))))

(defun agent-shell-search-bench--scenario (root symbol kind reps)
  "Time REPS searches for SYMBOL of KIND in ROOT after a warm-up; return an alist."
  (agent-shell-search-bench--search root symbol kind)
  (let (times last)
    (dotimes (_ reps)
      (let ((run (agent-shell-search-bench--search root symbol kind)))
        (push (car run) times)
        (setq last (cdr run))))
    `((seconds . ,(agent-shell-search-bench--median times))
      (definitions . ,(length (alist-get 'definitions last)))
      (references . ,(length (alist-get 'references last)))
      (truncated . ,(alist-get 'truncated last)))))

(defun agent-shell-search-bench-batch (root symbol reps bridge)
  "Time `symbol_search' for SYMBOL in ROOT, REPS runs a kind.
BRIDGE is the bridge program, which says which files hold secrets.
Print the results as one JSON line prefixed with \"BENCH-JSON \"."
  (let ((agent-shell-bridge-command (list bridge))
        (root (file-name-as-directory (expand-file-name root))))
    (princ (concat "BENCH-JSON "
                   (json-serialize
                    `((both . ,(agent-shell-search-bench--scenario root symbol "both" reps))
                      (references . ,(agent-shell-search-bench--scenario
                                      root symbol "references" reps)))
                    :false-object :json-false)
                   "\n"))))

(provide 'agent-shell-search-bench)
;;; agent-shell-search-bench.el ends here
