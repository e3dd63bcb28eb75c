;;; test-remote-files.el --- Tests for agent-shell-remote-files.el  -*- lexical-binding: t; -*-

;; SPDX-License-Identifier: GPL-3.0-or-later

;;; Commentary:

;; A remote session's file through the buffer visiting it, over real
;; TRAMP: the "mock" method of Emacs's own TRAMP tests (a local shell
;; reached as if it were a host), so the buffers visit /mock: names and
;; are saved through TRAMP's shell connection.  The bridge side, over
;; ssh, is tests/python/remote/test_remote_buffers.py.

;;; Code:

(require 'ert)
(require 'tramp)
(require 'agent-shell-remote-files)
(require 'agent-shell-handlers)
(require 'flymake)

(defconst test-remote-files--chinese "中文内容：远程缓冲区"
  "Chinese text that must survive every step.")

(defmacro test-remote-files--with-project (bindings &rest body)
  "Run BODY with a /mock:: project of files; BINDINGS are (DIR ROOT).
DIR is the local directory, ROOT its TRAMP name.  Every buffer visiting
a file there and the mock connection are gone afterwards."
  (declare (indent 1))
  (let ((dir (nth 0 bindings)) (root (nth 1 bindings)))
    `(let* ((tramp-methods
             (cons `("mock"
                     (tramp-login-program ,tramp-default-remote-shell)
                     (tramp-login-args (("-i")))
                     (tramp-remote-shell ,tramp-default-remote-shell)
                     (tramp-remote-shell-args ("-c"))
                     (tramp-connection-timeout 10))
                   tramp-methods))
            (tramp-persistency-file-name nil)
            (tramp-verbose 0)
            (,dir (file-name-as-directory (make-temp-file "as-remote-files-" t)))
            ;; The host named: TRAMP's own names of the files are these.
            (,root (concat "/mock:" (system-name) ":" ,dir)))
       (unwind-protect
           (progn ,@body)
         (dolist (buffer (buffer-list))
           (when (and (buffer-file-name buffer)
                      (string-prefix-p ,root (buffer-file-name buffer)))
             (with-current-buffer buffer (set-buffer-modified-p nil))
             (kill-buffer buffer)))
         (tramp-cleanup-all-connections)
         (delete-directory ,dir t)))))

(defun test-remote-files--write-local (file text &optional coding)
  "Write TEXT to the local FILE in CODING (UTF-8 by default)."
  (let ((coding-system-for-write (or coding 'utf-8-unix)))
    (write-region text nil file nil 'silent)))

(defun test-remote-files--bytes (file)
  "Return the bytes of the local FILE as a unibyte string."
  (with-temp-buffer
    (set-buffer-multibyte nil)
    (let ((coding-system-for-read 'no-conversion))
      (insert-file-contents file))
    (buffer-string)))

(defun test-remote-files--undo-last (buffer)
  "Undo the newest change group of BUFFER (one call of `primitive-undo')."
  (with-current-buffer buffer
    (let ((list buffer-undo-list))
      (while (and list (null (car list)))
        (pop list))
      (primitive-undo 1 list))))

(ert-deftest test-remote-files/names-outside-the-root-are-refused ()
  (let ((root "/ssh:dev@build.invalid#2222:/srv/应用/"))
    (should (equal (agent-shell-remote-files-name root (concat root "src/a.py"))
                   (concat root "src/a.py")))
    (dolist (bad (list "/ssh:dev@build.invalid#2222:/srv/other/a.py"
                       "/ssh:evil.invalid:/srv/应用/a.py"
                       (concat root "../etc/passwd")
                       (concat root "src/../../x")
                       (concat root "./a.py")
                       (concat root "src//a.py")
                       root
                       (concat root "a\nb")))
      (should-error (agent-shell-remote-files-name root bad) :type 'agent-shell-tool-error))
    ;; No session root at all: refused too.
    (should-error (agent-shell-remote-files-name nil (concat root "a.py"))
                  :type 'agent-shell-tool-error)))

(ert-deftest test-remote-files/a-name-no-buffer-visits-opens-nothing ()
  (test-remote-files--with-project (dir root)
    (test-remote-files--write-local (expand-file-name "a.txt" dir) "host\n")
    (tramp-cleanup-all-connections)
    (let ((buffers (buffer-list)))
      (should (equal (agent-shell-remote-files-read root (concat root "a.txt"))
                     '((visited . :json-false))))
      (should (equal (agent-shell-remote-files-write root (concat root "a.txt") "new\n")
                     '((visited . :json-false))))
      ;; No connection was made and no buffer opened; the file is untouched.
      (should-not (tramp-list-connections))
      (should (equal (buffer-list) buffers))
      (should (equal (test-remote-files--bytes (expand-file-name "a.txt" dir)) "host\n")))))

(ert-deftest test-remote-files/write-goes-through-the-buffer-as-one-undo-unit ()
  (test-remote-files--with-project (dir root)
    (let* ((local (expand-file-name "src/app.py" dir))
           (name (concat root "src/app.py"))
           (old (concat "def add(a, b):\n    return a - b\n# " test-remote-files--chinese "\n"))
           (new (replace-regexp-in-string "a - b" "a + b  # 加法" old t t)))
      (make-directory (file-name-directory local) t)
      (test-remote-files--write-local local old)
      (let ((buffer (find-file-noselect name)))
        (with-current-buffer buffer (goto-char (point-max)))
        (let ((read (agent-shell-remote-files-read root name)))
          (should (eq (alist-get 'visited read) t))
          (should (eq (alist-get 'modified read) :json-false))
          (should (equal (alist-get 'text read) old)))
        (let ((answer (agent-shell-remote-files-write root name new)))
          (should (eq (alist-get 'written answer) t))
          (should (string-prefix-p "utf-8" (alist-get 'coding_system answer))))
        (with-current-buffer buffer
          (should (equal (buffer-string) new))
          (should-not (buffer-modified-p))
          (should (consp buffer-undo-list)))
        ;; Saved through TRAMP: the file (here, the host's) has the new text.
        (should (equal (decode-coding-string (test-remote-files--bytes local) 'utf-8) new))
        ;; One undo unit puts the old text back.
        (test-remote-files--undo-last buffer)
        (with-current-buffer buffer
          (should (equal (buffer-string) old)))))))

(ert-deftest test-remote-files/unsaved-changes-refuse-and-are-read ()
  (test-remote-files--with-project (dir root)
    (let* ((local (expand-file-name "notes.txt" dir))
           (name (concat root "notes.txt"))
           (typed (concat "用户未保存的修改 " test-remote-files--chinese "\n")))
      (test-remote-files--write-local local "saved\n")
      (let ((buffer (find-file-noselect name)))
        (with-current-buffer buffer
          (goto-char (point-max))
          (insert typed))
        ;; A read sees what the user sees, unsaved text and all.
        (let ((read (agent-shell-remote-files-read root name)))
          (should (eq (alist-get 'modified read) t))
          (should (equal (alist-get 'text read) (concat "saved\n" typed))))
        (let ((answer (agent-shell-remote-files-write root name "agent\n")))
          (should (eq (alist-get 'written answer) :json-false))
          (should (string-match-p
                   (regexp-quote (format "The user has unsaved changes in buffer `%s'"
                                         (buffer-name buffer)))
                   (alist-get 'refused answer))))
        (with-current-buffer buffer
          (should (equal (buffer-string) (concat "saved\n" typed)))
          (should (buffer-modified-p)))
        (should (equal (test-remote-files--bytes local) "saved\n"))))))

(ert-deftest test-remote-files/coding-system-and-line-ends-are-kept ()
  (test-remote-files--with-project (dir root)
    (let* ((local (expand-file-name "dos.txt" dir))
           (name (concat root "dos.txt")))
      (test-remote-files--write-local local "一\n二\n" 'utf-8-dos)
      (let ((buffer (find-file-noselect name)))
        (should (equal (alist-get 'text (agent-shell-remote-files-read root name)) "一\n二\n"))
        (agent-shell-remote-files-write root name "一\n二\n三\n")
        (should (eq (coding-system-eol-type
                     (buffer-local-value 'buffer-file-coding-system buffer))
                    1))
        (should (equal (test-remote-files--bytes local)
                       (encode-coding-string "一\r\n二\r\n三\r\n" 'utf-8)))))))

(ert-deftest test-remote-files/a-file-changed-on-the-host-is-read-again ()
  (test-remote-files--with-project (dir root)
    (let* ((local (expand-file-name "b.txt" dir))
           (name (concat root "b.txt")))
      (test-remote-files--write-local local "first\n")
      (let ((buffer (find-file-noselect name)))
        ;; Changed there, behind the unmodified buffer: a later mtime.
        (test-remote-files--write-local local "second 第二\n")
        (set-file-times local (time-add (current-time) 10))
        (should (equal (alist-get 'text (agent-shell-remote-files-read root name))
                       "second 第二\n"))
        (with-current-buffer buffer
          (should (equal (buffer-string) "second 第二\n")))
        ;; Changed again after that read: the write refuses.
        (test-remote-files--write-local local "third\n")
        (set-file-times local (time-add (current-time) 20))
        (should (string-match-p "changed on the host"
                                (alist-get 'refused (agent-shell-remote-files-write
                                                     root name "agent\n"))))
        (should (equal (test-remote-files--bytes local) "third\n"))))))

;;; What the agent sees of the project's buffers

(defconst test-remote-files--flymake-text "未定义的名字 `加法'"
  "The diagnostic the test's Flymake backend reports.")

(defun test-remote-files--flymake-backend (report &rest _)
  "Report one error on line 2 through REPORT, at once: no process runs."
  (save-excursion
    (goto-char (point-min))
    (forward-line 1)
    (funcall report (list (flymake-make-diagnostic
                           (current-buffer) (point) (line-end-position) :error
                           test-remote-files--flymake-text)))))

(defun test-remote-files--flymake-on (buffer)
  "Turn Flymake on in BUFFER with the test's backend; it has reported then."
  (with-current-buffer buffer
    (setq-local flymake-diagnostic-functions '(test-remote-files--flymake-backend))
    (flymake-mode 1)
    (flymake-start nil t)
    (should (flymake-diagnostics))))

(ert-deftest test-remote-files/overview-and-diagnostics-of-the-visiting-buffers ()
  (test-remote-files--with-project (dir root)
    (let* ((project (concat root "项目/"))
           (name (concat project "src/加法.py"))
           (outside (concat root "elsewhere.py")))
      (make-directory (expand-file-name "项目/src" dir) t)
      (test-remote-files--write-local (expand-file-name "项目/src/加法.py" dir)
                                      "def 加法(a, b):\n    return a - b\n")
      (test-remote-files--write-local (expand-file-name "elsewhere.py" dir) "secret = 1\nmore = 2\n")
      (let ((buffer (find-file-noselect name))
            (other (find-file-noselect outside)))
        (test-remote-files--flymake-on buffer)
        (test-remote-files--flymake-on other)
        (with-current-buffer buffer (goto-char (point-max)) (insert "# 未保存\n"))
        ;; Once visited, nothing here needs the connection again.
        (tramp-cleanup-all-connections)
        (switch-to-buffer buffer)
        (let ((seen (agent-shell-remote-files-tool project "buffer_overview" nil)))
          (should (equal (alist-get 'file seen) "src/加法.py"))
          (should (equal (alist-get 'buffer seen) (buffer-name buffer)))
          (should (eq (alist-get 'modified seen) t))
          (should (equal (alist-get 'point_line seen) 4))
          (should (equal (alist-get 'flymake_diagnostics seen) 1)))
        ;; A buffer of the same host outside the project: not described.
        (switch-to-buffer other)
        (let ((seen (agent-shell-remote-files-tool project "buffer_overview" nil)))
          (should (eq (alist-get 'outside_project seen) t))
          (should-not (alist-get 'file seen)))
        (let ((seen (agent-shell-remote-files-tool
                     project "buffer_overview" `((buffer . ,(buffer-name other))))))
          (should (eq (alist-get 'outside_project seen) t)))
        ;; The diagnostics Flymake has in the project's buffer, and only its.
        (let* ((found (agent-shell-remote-files-tool project "project_diagnostics" nil))
               (items (append (alist-get 'diagnostics found) nil)))
          (should (equal (alist-get 'checked_buffers found) 1))
          (should (equal (length items) 1))
          (should (equal (alist-get 'file (car items)) "src/加法.py"))
          (should (equal (alist-get 'line (car items)) 2))
          (should (equal (alist-get 'type (car items)) "error"))
          (should (equal (alist-get 'text (car items)) test-remote-files--flymake-text))
          ;; Serializable as the bridge gets it, Chinese intact.
          (should (string-search "未定义的名字"
                                 (decode-coding-string (json-serialize found) 'utf-8))))
        (should-not (tramp-list-connections))
        (dolist (b (list buffer other))
          (with-current-buffer b (flymake-mode -1)))))))

(ert-deftest test-remote-files/perception-opens-no-connection-for-other-names ()
  (test-remote-files--with-project (dir root)
    (let* ((project (concat root "p/"))
           (local (expand-file-name "p/a.py" dir)))
      (make-directory (file-name-directory local) t)
      (test-remote-files--write-local local "a = 1\n")
      (tramp-cleanup-all-connections)
      (let ((buffers (buffer-list)))
        ;; No buffer visits the project: nothing to see, nothing connected.
        (should (equal (alist-get 'checked_buffers
                                  (agent-shell-remote-files-tool
                                   project "project_diagnostics" nil))
                       0))
        ;; A buffer name that is a TRAMP name of the project is just a name.
        (should-error (agent-shell-remote-files-tool
                       project "buffer_overview" `((buffer . ,(concat project "a.py"))))
                      :type 'agent-shell-tool-error)
        ;; A local buffer of the same path is not one of the project's.
        (with-temp-buffer
          (setq buffer-file-name local)
          (should (eq (alist-get 'outside_project
                                 (agent-shell-remote-files-tool
                                  project "buffer_overview" `((buffer . ,(buffer-name)))))
                      t))
          (setq buffer-file-name nil))
        ;; The other Emacs-side tools do not run for a remote project.
        (dolist (tool '("symbol_search" "open_file" "org_search" "magit_stage"
                        "write_file" "describe_symbol"))
          (should-error (agent-shell-remote-files-tool project tool '((path . "a.py")))
                        :type 'agent-shell-tool-error))
        (should-error (agent-shell-remote-files-tool nil "buffer_overview" nil)
                      :type 'agent-shell-tool-error)
        (should-not (tramp-list-connections))
        (should (equal (buffer-list) buffers))))))

;;; test-remote-files.el ends here
