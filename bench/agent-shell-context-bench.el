;;; agent-shell-context-bench.el --- Benchmark of @ completion and the automatic context  -*- lexical-binding: t; -*-

;; SPDX-License-Identifier: GPL-3.0-or-later

;;; Commentary:

;; Two measures of agent-shell-mention.el and agent-shell-context.el,
;; run by bench/mention.py in a batch Emacs:
;;
;; - `@' completion in a git repository of N files: the first listing,
;;   then the time to compute the candidates of a prefix from the cache,
;;   against `project-files' listing the repository again for the same
;;   keystroke (what completing without a cache costs);
;; - the automatic context of a prompt (visible buffers, clocked task,
;;   branch, latest compilation) against the snapshot the prompt carried
;;   before it, in milliseconds and in characters of JSON.
;;
;; The repository's index names N files that need not exist on disk
;; (one empty blob), so a 100,000-file repository is made in seconds.
;; The result is one line, "BENCH-JSON " and a JSON object.

;;; Code:

(require 'agent-shell)
(require 'project)
(require 'agent-shell-json)

(defun agent-shell-context-bench--repo (files)
  "Return a temporary git repository whose index names FILES files."
  (let* ((root (file-name-as-directory (make-temp-file "agent-shell-mention-bench-" t)))
         (default-directory root))
    (call-process "git" nil nil nil "init" "-q")
    (let ((blob (with-temp-buffer
                  (call-process "git" nil t nil "hash-object" "-w" "/dev/null")
                  (string-trim (buffer-string)))))
      (with-temp-buffer
        (dotimes (i files)
          (insert (format "100644 %s\tsrc/pkg_%03d/module_%06d.py\n" blob (% i 100) i)))
        (call-process-region (point-min) (point-max) "git" nil nil nil
                             "update-index" "--index-info")))
    (make-directory (expand-file-name "src" root) t)
    root))

(defun agent-shell-context-bench--ms (fn reps)
  "Return the median milliseconds of REPS calls of FN."
  (let (times)
    (dotimes (_ reps)
      (let ((start (float-time)))
        (funcall fn)
        (push (* 1000 (- (float-time) start)) times)))
    (setq times (sort times #'<))
    (nth (/ (length times) 2) times)))

(defun agent-shell-context-bench--completion (files reps)
  "Return the completion figures at FILES files over REPS runs, an alist."
  (let* ((root (agent-shell-context-bench--repo files))
         (prefix "src/pkg_042/module_0")
         (first (agent-shell-context-bench--ms
                 (lambda () (agent-shell-mention-project-files root)) 1))
         (found 0)
         (cached (agent-shell-context-bench--ms
                  (lambda ()
                    (setq found (length (all-completions
                                         prefix (agent-shell-mention-candidates root)))))
                  reps))
         (rescan (agent-shell-context-bench--ms
                  (lambda ()
                    (all-completions prefix (project-files (project-current nil root))))
                  (max 1 (/ reps 3)))))
    (delete-directory root t)
    `((files . ,files) (first_listing_ms . ,first) (cached_ms . ,cached)
      (rescan_ms . ,rescan) (matches . ,found))))

(defun agent-shell-context-bench--context (reps)
  "Return the automatic context figures over REPS runs, an alist."
  (let* ((root (agent-shell-context-bench--repo 50))
         (default-directory root)
         (files (mapcar (lambda (n)
                          (let ((file (expand-file-name (format "src/f%d.py" n) root)))
                            (with-temp-file file
                              (dotimes (i 3000) (insert (format "line %d = %d\n" i i))))
                            file))
                        '(1 2 3))))
    (with-temp-file (expand-file-name "Makefile" root)
      (insert "all:\n\t@echo 'src/f1.py:7: error: broken' >&2; exit 2\n"))
    (let ((done nil))
      (let ((compilation-finish-functions (list (lambda (_b _s) (setq done t)))))
        (compile "make -k")
        (while (not done) (accept-process-output nil 0.05))))
    (delete-other-windows)
    (find-file (nth 0 files))
    (goto-char (point-max))
    (set-window-buffer (split-window) (find-file-noselect (nth 1 files)))
    (set-window-buffer (split-window nil nil t) (find-file-noselect (nth 2 files)))
    (let* ((snapshot (lambda () (agent-shell-perception-context-snapshot root)))
           (full (lambda () (append (funcall snapshot) (agent-shell-ambient-context root))))
           (before-ms (agent-shell-context-bench--ms snapshot reps))
           (after-ms (agent-shell-context-bench--ms (lambda () (agent-shell-ambient-context root))
                                                    reps))
           (before-chars (length (agent-shell-json-text (funcall snapshot))))
           (after-chars (length (agent-shell-json-text (funcall full)))))
      (delete-directory root t)
      `((snapshot_ms . ,before-ms) (automatic_ms . ,after-ms)
        (snapshot_chars . ,before-chars) (total_chars . ,after-chars)))))

(defun agent-shell-context-bench-batch (files reps)
  "Print the figures at FILES files over REPS runs as one BENCH-JSON line."
  (princ (concat "BENCH-JSON "
                 (json-serialize
                  `((completion . ,(agent-shell-context-bench--completion files reps))
                    (context . ,(agent-shell-context-bench--context reps))))
                 "\n")))

(provide 'agent-shell-context-bench)
;;; agent-shell-context-bench.el ends here
