;;; agent-shell-tools-process.el --- Helper processes of the Emacs-side tools  -*- lexical-binding: t; -*-

;; SPDX-License-Identifier: GPL-3.0-or-later

;;; Commentary:

;; The Emacs-side tools run a few programs of their own: diff, ripgrep,
;; git.  They run here with a scrubbed environment (no repository
;; overrides, pagers or prompts), a time limit
;; (`agent-shell-tools-process-timeout') and a cap on their output
;; (`agent-shell-tools-max-output-bytes'); git gets a configuration that
;; runs none of the repository's own programs.

;;; Code:

(require 'cl-lib)
(require 'subr-x)
(require 'agent-shell-tools)

(defconst agent-shell-tools--scrubbed-env-prefixes
  '("GIT_" "PAGER=" "LESS" "LC_ALL=" "LANGUAGE=")
  "Environment entries dropped before running a helper process.")

(defun agent-shell-tools-clean-environment ()
  "Return `process-environment' without repository overrides or pagers."
  (append '("GIT_TERMINAL_PROMPT=0" "GIT_OPTIONAL_LOCKS=0" "GIT_PAGER=cat"
            "PAGER=cat" "LC_ALL=C.UTF-8")
          (cl-remove-if (lambda (entry)
                          (cl-some (lambda (prefix) (string-prefix-p prefix entry))
                                   agent-shell-tools--scrubbed-env-prefixes))
                        process-environment)))

(defvar agent-shell-tools-process-coding 'utf-8-unix
  "Coding system decoding the output of `agent-shell-tools-run'.")

(defun agent-shell-tools-json-safe (string)
  "Return STRING with raw bytes shown as \\xNN, so JSON can carry it."
  (if (not (cl-some (lambda (char) (> char #x3fff7f)) string))
      string
    (mapconcat (lambda (char)
                 (if (> char #x3fff7f)
                     (format "\\x%02x" (- char #x3fff00))
                   (string char)))
               string "")))

(defun agent-shell-tools-run (dir program &rest args)
  "Run PROGRAM with ARGS in DIR and return (EXIT-CODE . OUTPUT).
Standard output is decoded with `agent-shell-tools-process-coding';
standard error is discarded.
The process is killed after `agent-shell-tools-process-timeout'
seconds or when it produced more than
`agent-shell-tools-max-output-bytes'; EXIT-CODE is then the symbol
`timeout' or `overflow'.  A missing program gives (nil . \"\")."
  (if (not (executable-find program))
      (cons nil "")
    (let* ((default-directory (file-name-as-directory dir))
           (process-environment (agent-shell-tools-clean-environment))
           (buffer (generate-new-buffer " *agent-shell-tools-process*" t))
           (deadline (+ (float-time) agent-shell-tools-process-timeout))
           (stderr (make-pipe-process :name "agent-shell-tools-stderr"
                                      :buffer nil :noquery t
                                      :filter #'ignore :sentinel #'ignore))
           (proc nil)
           (status nil))
      (unwind-protect
          (progn
            (setq proc (make-process :name "agent-shell-tools" :buffer buffer
                                     :command (cons program args)
                                     :coding (cons agent-shell-tools-process-coding 'utf-8-unix)
                                     :connection-type 'pipe
                                     :stderr stderr
                                     :noquery t :sentinel #'ignore))
            (ignore-errors (process-send-eof proc))
            (while (and (process-live-p proc) (not status))
              ;; Only these two processes are read here, so the bridge's own
              ;; connection cannot re-enter a tool while one is running.
              (accept-process-output proc 0.05 nil t)
              (accept-process-output stderr 0 nil t)
              (cond ((> (float-time) deadline) (setq status 'timeout))
                    ((> (buffer-size buffer) agent-shell-tools-max-output-bytes)
                     (setq status 'overflow))))
            (if status
                (delete-process proc)
              ;; Drain what the process wrote before it exited.
              (while (accept-process-output proc 0 nil t))
              (setq status (process-exit-status proc)))
            (cons status (with-current-buffer buffer (buffer-string))))
        (when (and proc (process-live-p proc)) (delete-process proc))
        (delete-process stderr)
        (kill-buffer buffer)))))

;; A search that wants the first N results of a long listing reads the
;; program's output as it comes and kills it once it has them, instead
;; of waiting for all of it and then parsing every line.

(defun agent-shell-tools-run-lines (dir program args on-line)
  "Run PROGRAM with ARGS in DIR, handing its output to ON-LINE line by line.
ON-LINE gets each line of standard output (decoded with
`agent-shell-tools-process-coding', without its newline) and returns
non-nil to stop: PROGRAM is then killed and nothing after that line
is handed on.  An error ON-LINE signals kills PROGRAM too and reaches
the caller.  Standard error is discarded.
Return PROGRAM's exit code, `stopped' when ON-LINE stopped it,
`timeout' after `agent-shell-tools-process-timeout' seconds, or nil
when PROGRAM is missing."
  (when (executable-find program)
    (let* ((default-directory (file-name-as-directory dir))
           (process-environment (agent-shell-tools-clean-environment))
           (read-process-output-max (max read-process-output-max 65536))
           (deadline (+ (float-time) agent-shell-tools-process-timeout))
           (pending "")
           (stop nil)
           (failure nil)
           (stderr (make-pipe-process :name "agent-shell-tools-stderr"
                                      :buffer nil :noquery t
                                      :filter #'ignore :sentinel #'ignore))
           (proc nil)
           (status nil))
      (cl-flet ((feed (chunk final)
                  ;; Lines go to ON-LINE as they arrive, in the filter: the
                  ;; program is killed at the line that stops it, so one
                  ;; that floods its output (under load Emacs may read
                  ;; megabytes in one wait) costs no more than what is kept.
                  (unless (or stop failure)
                    (condition-case err
                        (let ((text (concat pending chunk)) (start 0) end)
                          (while (and (not stop)
                                      (setq end (string-search "\n" text start)))
                            (setq stop (funcall on-line (substring text start end))
                                  start (1+ end)))
                          (setq pending (if stop "" (substring text start)))
                          (when (and final (not stop) (not (string-empty-p pending)))
                            (setq stop (funcall on-line pending)
                                  pending "")))
                      (error (setq failure err))))))
        (unwind-protect
            (progn
              (setq proc (make-process :name "agent-shell-tools" :buffer nil
                                       :command (cons program args)
                                       :coding (cons agent-shell-tools-process-coding
                                                     'utf-8-unix)
                                       :connection-type 'pipe
                                       :stderr stderr
                                       ;; Stopped, the program gets SIGKILL from
                                       ;; the filter (a signal only: deleting the
                                       ;; process there is left to the loop).
                                       :filter (lambda (process chunk)
                                                 (feed chunk nil)
                                                 (when (and (or stop failure)
                                                            (process-live-p process))
                                                   (ignore-errors
                                                     (signal-process process 'SIGKILL))))
                                       :noquery t :sentinel #'ignore))
              (ignore-errors (process-send-eof proc))
              (while (and (not (or stop failure status)) (process-live-p proc))
                ;; As in `agent-shell-tools-run': only these two processes
                ;; are read, so nothing else re-enters meanwhile.
                (accept-process-output proc 0.05 nil t)
                (accept-process-output stderr 0 nil t)
                (when (> (float-time) deadline) (setq status 'timeout)))
              (unless (or stop failure status)
                ;; Drain what the process wrote before it exited.
                (while (accept-process-output proc 0 nil t))
                (feed "" t))
              (when failure (signal (car failure) (cdr failure)))
              (cond (stop 'stopped)
                    (status)
                    (t (process-exit-status proc))))
          (when (and proc (process-live-p proc)) (delete-process proc))
          (delete-process stderr))))))

(defconst agent-shell-tools-safe-git-config
  '("core.fsmonitor=false" "safe.bareRepository=explicit" "submodule.recurse=false"
    "diff.ignoreSubmodules=all" "status.submoduleSummary=false")
  "Settings every git run for the agent gets, outranking the repository's.
A repository's configuration can name a program git runs by itself
\(`core.fsmonitor' runs at every status), a bare repository planted in
a subdirectory is a repository to git, and status and diff read every
submodule's configuration; the bridge's own git calls use the same
settings.")

(defun agent-shell-tools-safe-git-args ()
  "Return the global git arguments of `agent-shell-tools-safe-git-config'."
  (cons "--no-optional-locks"
        (mapcan (lambda (setting) (list "-c" setting))
                agent-shell-tools-safe-git-config)))

(defun agent-shell-tools-git (root &rest args)
  "Run git with ARGS in ROOT; return (EXIT-CODE . OUTPUT).
File names come through unquoted so non-ASCII names stay readable.
Nothing the repository configures runs: see
`agent-shell-tools-safe-git-config'."
  (apply #'agent-shell-tools-run root "git" "--no-pager"
         (append (agent-shell-tools-safe-git-args)
                 (list "-c" "core.quotepath=off" "-c" "color.ui=false")
                 args)))

(provide 'agent-shell-tools-process)
;;; agent-shell-tools-process.el ends here
