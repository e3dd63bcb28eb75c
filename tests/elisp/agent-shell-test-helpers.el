;;; agent-shell-test-helpers.el --- Fixtures shared by agent-shell's ERT suites  -*- lexical-binding: t; -*-

;; SPDX-License-Identifier: GPL-3.0-or-later

;;; Commentary:

;; Real fixtures for the ERT suites: `agent-shell-test-with-project'
;; makes a temporary git repository with files (always including one with
;; a Chinese name) and one commit, runs the body in it, and deletes it
;; when the body succeeds.  A failing test keeps its directory and says
;; where it is.  Git runs with the user's global and system configuration
;; switched off so hooks or signing settings cannot interfere.
;;
;; `agent-shell-test-render-log' gives log notifications the org text
;; the bridge would send with them, rendered by the bridge's own writer
;; (tests/python/orglog_renderer.py in a long-lived Python process).

;;; Code:

(require 'cl-lib)
(require 'ert)
(require 'subr-x)
(require 'agent-shell-tools)
(require 'agent-shell-json)

(defvar agent-shell-test--op-counter 0
  "Counter making operation ids unique within a test run.")

(defconst agent-shell-test-default-files
  '(("中文.py" . "# 中文注释\nprint(\"你好，世界\")\n"))
  "Files every test project gets in addition to its own.")

(defun agent-shell-test-wait (what predicate &optional timeout)
  "Wait until PREDICATE returns non-nil, or fail saying WHAT after TIMEOUT s.
Process output is accepted meanwhile; there is no fixed sleep."
  (let ((deadline (+ (float-time) (or timeout 10)))
        value)
    (while (and (not (setq value (funcall predicate)))
                (< (float-time) deadline))
      (accept-process-output nil 0.02))
    (or value (ert-fail (format "Timed out waiting for %s" what)))))

(defun agent-shell-test-git-environment ()
  "Return `process-environment' for running git in test fixtures."
  (append '("GIT_CONFIG_GLOBAL=/dev/null" "GIT_CONFIG_NOSYSTEM=1"
            "GIT_AUTHOR_NAME=Test" "GIT_AUTHOR_EMAIL=test@example.invalid"
            "GIT_COMMITTER_NAME=Test" "GIT_COMMITTER_EMAIL=test@example.invalid"
            "GIT_TERMINAL_PROMPT=0")
          process-environment))

(defun agent-shell-test-git (root &rest args)
  "Run git with ARGS in ROOT and return its output; fail the test on error."
  (let ((default-directory (file-name-as-directory root))
        (process-environment (agent-shell-test-git-environment))
        (coding-system-for-read 'utf-8-unix)
        (coding-system-for-write 'utf-8-unix))
    (with-temp-buffer
      (let ((status (apply #'call-process "git" nil (list t nil) nil
                           "-c" "core.quotepath=off" args)))
        (unless (eql status 0)
          (error "Git %S failed in %s: %s" args root (buffer-string)))
        (buffer-string)))))

(defun agent-shell-test-write-bytes (file bytes)
  "Write the unibyte string BYTES to FILE exactly, creating directories."
  (make-directory (file-name-directory file) t)
  (let ((coding-system-for-write 'no-conversion))
    (write-region bytes nil file nil 'silent)))

(defun agent-shell-test-write (root path content)
  "Write CONTENT as UTF-8 to PATH under ROOT; a unibyte CONTENT is raw bytes."
  (agent-shell-test-write-bytes
   (expand-file-name path root)
   (if (multibyte-string-p content) (encode-coding-string content 'utf-8-unix) content)))

(defun agent-shell-test-read-bytes (file)
  "Return the bytes of FILE as a unibyte string."
  (with-temp-buffer
    (set-buffer-multibyte nil)
    (insert-file-contents-literally file)
    (buffer-string)))

(defun agent-shell-test-read (root path)
  "Return the content of PATH under ROOT decoded as UTF-8."
  (decode-coding-string (agent-shell-test-read-bytes (expand-file-name path root))
                        'utf-8-unix))

(defun agent-shell-test-sha256 (content)
  "Return the SHA-256 of CONTENT encoded as UTF-8 (raw when unibyte)."
  (secure-hash 'sha256 (if (multibyte-string-p content)
                           (encode-coding-string content 'utf-8-unix)
                         content)))

(defun agent-shell-test-make-project (files)
  "Create a temporary git project holding FILES and return its root.
FILES is an alist of (PATH . CONTENT)."
  (let ((root (file-name-as-directory
               (file-truename (make-temp-file "agent-shell-test-" t)))))
    (dolist (file (append agent-shell-test-default-files files))
      (agent-shell-test-write root (car file) (cdr file)))
    (agent-shell-test-git root "init" "-q" "-b" "main")
    (agent-shell-test-git root "add" "-A")
    (agent-shell-test-git root "commit" "-q" "-m" "初始提交 initial commit")
    root))

(defun agent-shell-test-cleanup-buffers (root)
  "Kill every buffer visiting a file under ROOT, discarding changes."
  (dolist (buffer (buffer-list))
    (let ((file (buffer-file-name buffer)))
      (when (and file (string-prefix-p root (file-truename file)))
        (with-current-buffer buffer (set-buffer-modified-p nil))
        (kill-buffer buffer)))))

(defmacro agent-shell-test-with-project (spec &rest body)
  "Run BODY in a fresh git project; SPEC is (ROOT-VAR FILES).
ROOT-VAR is bound to the project root (a truename ending in a
slash); FILES evaluates to an alist of (PATH . CONTENT).  The project
is deleted when BODY returns normally and kept when it fails."
  (declare (indent 1) (debug ((symbolp form) body)))
  (let ((ok (make-symbol "ok")))
    `(let ((,(car spec) (agent-shell-test-make-project ,(cadr spec)))
           (,ok nil))
       (unwind-protect
           (prog1 (let ((default-directory ,(car spec))) ,@body)
             (setq ,ok t))
         (agent-shell-test-cleanup-buffers ,(car spec))
         (if ,ok
             (agent-shell-test-delete-project ,(car spec))
           (message "Kept failing test project: %s" ,(car spec)))))))

(defun agent-shell-test-delete-project (root)
  "Delete the test project ROOT.
A bridge may still be writing a session's last log lines there when a
test ends (a cancel sent as its shell buffer was killed): a removal
that meets a file created meanwhile is tried again, a few times."
  (let ((tries 0))
    (while (condition-case err
               (progn (delete-directory root t) nil)
             (file-error
              (if (and (< (cl-incf tries) 20) (file-exists-p root))
                  (progn (accept-process-output nil 0.1) t)
                (signal (car err) (cdr err))))))))

(defun agent-shell-test-context (root &rest overrides)
  "Return a tool context for ROOT with a fresh op_id, changed by OVERRIDES.
OVERRIDES is a plist of context keys and values."
  (let ((context (copy-tree
                  `((root . ,root)
                   (op_id . ,(format "op-%d-%d" (emacs-pid)
                                     (cl-incf agent-shell-test--op-counter)))
                   (turn_id . "turn-1")
                   (session_id . "session-1")
                   (expected_sha256 . nil)
                   (extra_roots . nil)))))
    (while overrides
      (setf (alist-get (pop overrides) context) (pop overrides)))
    context))

(defun agent-shell-test-wire-args (args)
  "Return ARGS as the bridge would deliver them: through JSON and back."
  (json-parse-string (json-serialize args :false-object :json-false)
                     :object-type 'alist :array-type 'list
                     :null-object nil :false-object :json-false))

(defun agent-shell-test-call (name args context)
  "Call tool NAME with ARGS in CONTEXT the way the RPC layer does.
The result must survive `json-serialize'; it is returned decoded from
JSON so tests see exactly what the bridge gets."
  (let ((result (agent-shell-tools-call name (agent-shell-test-wire-args args) context)))
    (json-parse-string (json-serialize result :false-object :json-false)
                       :object-type 'alist :array-type 'list
                       :null-object nil :false-object nil)))

(defmacro agent-shell-test-tool-error (&rest body)
  "Run BODY, require an `agent-shell-tool-error', and return its message."
  (declare (indent 0) (debug t))
  (let ((err (make-symbol "err")))
    `(let ((,err (should-error (progn ,@body) :type 'agent-shell-tool-error)))
       (cadr ,err))))

(defun agent-shell-test-add-elpa-to-load-path ()
  "Put the system's elpa package directories (magit and friends) on `load-path'."
  (dolist (dir (file-expand-wildcards "/usr/share/emacs/site-lisp/elpa/*"))
    (when (file-directory-p dir)
      (add-to-list 'load-path dir))))

;;; The bridge's log rendering

(defconst agent-shell-test--root
  (expand-file-name "../../" (file-name-directory
                              (or load-file-name buffer-file-name)))
  "The checkout these helpers belong to.")

(defvar agent-shell-test--renderer nil
  "The Python process rendering log notifications, or nil.")

(defun agent-shell-test--python ()
  "Return the Python of the bridge under test."
  (let* ((bridge (getenv "AGENT_SHELL_TEST_BRIDGE"))
         (python (if (and bridge (not (string-empty-p bridge)))
                     (expand-file-name "python" (file-name-directory bridge))
                   (expand-file-name ".venv/bin/python" agent-shell-test--root))))
    (unless (file-executable-p python)
      (error "No bridge Python at %s (set AGENT_SHELL_TEST_BRIDGE)" python))
    python))

(defun agent-shell-test--renderer ()
  "Return the live renderer process, starting it when needed."
  (unless (process-live-p agent-shell-test--renderer)
    (let ((process-connection-type nil)
          (coding-system-for-read 'utf-8)
          (coding-system-for-write 'utf-8))
      (setq agent-shell-test--renderer
            (make-process
             :name "orglog-renderer" :buffer (generate-new-buffer " *orglog-renderer*")
             :command (list (agent-shell-test--python)
                            (expand-file-name "tests/python/orglog_renderer.py"
                                              agent-shell-test--root))
             :connection-type 'pipe :noquery t
             :stderr (get-buffer-create " *orglog-renderer-stderr*")))))
  agent-shell-test--renderer)

(defun agent-shell-test-render-log (stream method params)
  "Return PARAMS of METHOD as the bridge notifies them, parsed as by agent-shell.
STREAM names one log (one writer on the Python side); PARAMS is a JSON
string or a plist for `json-serialize'.  The result carries `org' (for
`log/entry') or `org_head' and `org_body_append' (for `log/update')."
  (let* ((proc (agent-shell-test--renderer))
         (buffer (process-buffer proc))
         ;; One line per request: re-serialise, which drops layout newlines.
         (json (agent-shell-json-text
                (if (stringp params)
                    (json-parse-string params :null-object :null :false-object :false)
                  params)
                :false-object :false)))
    (with-current-buffer buffer (erase-buffer))
    (process-send-string
     proc (concat "{\"stream\":" (agent-shell-json-text stream)
                  ",\"method\":" (agent-shell-json-text method)
                  ",\"params\":" json "}\n"))
    (agent-shell-test-wait
     "the log renderer"
     (lambda ()
       (unless (process-live-p proc)
         (ert-fail (with-current-buffer " *orglog-renderer-stderr*" (buffer-string))))
       (with-current-buffer buffer
         (string-suffix-p "\n" (buffer-string))))
     30)
    (with-current-buffer buffer
      (json-parse-string (buffer-string) :object-type 'alist :array-type 'list
                         :null-object nil :false-object :json-false))))

(provide 'agent-shell-test-helpers)
;;; agent-shell-test-helpers.el ends here
