;;; test-perception.el --- ERT tests for the perception tools  -*- lexical-binding: t; -*-

;; SPDX-License-Identifier: GPL-3.0-or-later

;;; Commentary:

;; Exercises buffer_overview, project_status, symbol_search, org_search
;; and open_file through `agent-shell-tools-call' on real temporary git
;; projects, with real git and ripgrep subprocesses.

;;; Code:

(require 'ert)
(require 'cl-lib)
(require 'agent-shell-test-helpers)
(require 'agent-shell-tools)
(require 'agent-shell-perception)
(require 'agent-shell-custom)

(defconst test-perception--python
  (concat "import os\n"
          "\n"
          "def greet(name):\n"
          "    message = \"你好, \" + name\n"
          "    return message\n"
          "\n"
          "def other():\n"
          "    return greet(\"世界\")\n")
  "A small Python module for buffer tests.")

(defun test-perception--visit (root path)
  "Visit PATH under ROOT in the selected window; return the buffer.
As with \\[find-file], it becomes the most recently used buffer."
  (let ((buffer (find-file-noselect (expand-file-name path root))))
    (switch-to-buffer buffer)
    buffer))

(defun test-perception--goto (buffer line column)
  "Put the selected window's point in BUFFER at LINE and COLUMN."
  (with-current-buffer buffer
    (goto-char (point-min))
    (forward-line (1- line))
    (move-to-column column)
    (set-window-point (selected-window) (point))
    (point)))

;;; buffer_overview

(ert-deftest test-perception/buffer-overview-region-and-function ()
  "The overview reports point, the function at point and a bounded region preview."
  (agent-shell-test-with-project (root `(("app.py" . ,test-perception--python)
                                         ("long.txt" . ,(make-string 300 ?x))))
    (let* ((buffer (test-perception--visit root "app.py"))
           (pos (test-perception--goto buffer 4 4)))
      (with-current-buffer buffer
        (transient-mark-mode 1)
        (set-mark pos)
        (goto-char (line-end-position))
        (activate-mark)
        (set-window-point (selected-window) (point)))
      (let ((result (agent-shell-test-call "buffer_overview" nil
                                           (agent-shell-test-context root))))
        (should (equal (alist-get 'file result) "app.py"))
        (should (equal (alist-get 'major_mode result) "python-mode"))
        (should (equal (alist-get 'line_count result) 8))
        (should (equal (alist-get 'point_line result) 4))
        (should (equal (alist-get 'function result) "greet"))
        (should (eq (alist-get 'region_active result) t))
        (should (equal (alist-get 'region_preview result) "message = \"你好, \" + name"))
        (should-not (alist-get 'modified result))))
    ;; A long region is cut to 200 characters.
    (let ((buffer (find-file-noselect (expand-file-name "long.txt" root))))
      (with-current-buffer buffer
        (set-mark (point-min))
        (goto-char (point-max))
        (activate-mark))
      (let ((result (agent-shell-test-call "buffer_overview" '((buffer . "long.txt"))
                                           (agent-shell-test-context root))))
        (should (equal (alist-get 'file result) "long.txt"))
        (should (equal (length (alist-get 'region_preview result)) 200))
        (should (equal (alist-get 'region_length result) 300))))))

(ert-deftest test-perception/buffer-overview-skips-agent-buffer ()
  "With an agent-shell buffer selected the user's last file buffer is described.
Regression: the test visited its file without making it the most
recent buffer, so it passed only while no other file buffer was open.
On Emacs 30 one always was after an earlier failure: ERT visits a
failed test's file to print where it is."
  (agent-shell-test-with-project (root `(("app.py" . ,test-perception--python)
                                         ("older.py" . "x = 1\n")))
    (let* ((_older (test-perception--visit root "older.py"))
           (file-buffer (test-perception--visit root "app.py"))
           (agent (get-buffer-create "*agent-shell test*")))
      (unwind-protect
          (progn
            ;; Both are file buffers of the project: recency decides.
            (with-current-buffer file-buffer (set-buffer-modified-p t))
            (switch-to-buffer agent)
            (let ((result (agent-shell-test-call "buffer_overview" nil
                                                 (agent-shell-test-context root))))
              (should (equal (alist-get 'file result) "app.py"))
              (should (eq (alist-get 'modified result) t))
              (should-not (alist-get 'region_active result))))
        (kill-buffer agent)))
    (should (string-match-p
             "No buffer named"
             (agent-shell-test-tool-error
               (agent-shell-test-call "buffer_overview" '((buffer . "no such buffer"))
                                      (agent-shell-test-context root)))))))

(ert-deftest test-perception/buffer-overview-hides-buffers-outside-project ()
  "Regression: buffer_overview described any buffer, in or out of the project.
Its file name and region text reached the model unasked.  Outside the
roots the answer now only says so, for a named buffer and for the
user's current one alike."
  (agent-shell-test-with-project (root `(("app.py" . ,test-perception--python)))
    (let* ((outside (file-name-as-directory
                     (file-truename (make-temp-file "agent-shell-outside-" t))))
           (secret (expand-file-name "私密-notes.txt" outside)))
      (unwind-protect
          (progn
            (agent-shell-test-write outside "私密-notes.txt" "password=hunter2\n")
            (let ((buffer (test-perception--visit outside "私密-notes.txt")))
              (with-current-buffer buffer
                (transient-mark-mode 1)
                (set-mark (point-min))
                (goto-char (point-max))
                (activate-mark))
              (dolist (args `(nil ((buffer . ,(buffer-name buffer)))))
                (let* ((result (agent-shell-test-call "buffer_overview" args
                                                      (agent-shell-test-context root)))
                       (text (format "%S" result)))
                  (should (eq (alist-get 'outside_project result) t))
                  (should-not (string-search "hunter2" text))
                  (should-not (string-search "私密" text))
                  (should-not (alist-get 'file result))))
              ;; The same file is described once it is under an extra root.
              (let ((result (agent-shell-test-call
                             "buffer_overview" nil
                             (agent-shell-test-context root 'extra_roots (list outside)))))
                (should (equal (alist-get 'file result) secret))
                (should (equal (alist-get 'region_preview result) "password=hunter2\n")))
              ;; A buffer visiting no file is outside too.
              (with-temp-buffer
                (rename-buffer "*草稿 scratch*" t)
                (insert "draft secret")
                (should (eq (alist-get 'outside_project
                                       (agent-shell-test-call
                                        "buffer_overview" `((buffer . ,(buffer-name)))
                                        (agent-shell-test-context root)))
                            t)))))
        (agent-shell-test-cleanup-buffers outside)
        (delete-directory outside t)))))

(ert-deftest test-perception/remote-names-never-start-tramp ()
  "Regression: a path such as \"/sudo::/etc/passwd\" started TRAMP (sudo, ssh).
The file name was expanded and resolved with file name handlers on,
before the confinement check.  Remote names are now refused up front
and no process or TRAMP buffer appears."
  (agent-shell-test-with-project (root nil)
    (let ((before (process-list))
          (buffers (buffer-list)))
      (dolist (path '("/sudo::/etc/passwd" "/ssh:evil.invalid:/x" "/-:evil.invalid:/y"))
        (should (string-match-p
                 "Remote file names are not allowed"
                 (agent-shell-test-tool-error
                   (agent-shell-test-call "open_file" `((path . ,path))
                                          (agent-shell-test-context root))))))
      (should (string-match-p
               "Remote"
               (agent-shell-test-tool-error
                 (agent-shell-test-call "project_status" nil
                                        (agent-shell-test-context "/ssh:evil.invalid:/")))))
      (should (equal (cl-set-difference (process-list) before) nil))
      (should-not (cl-find-if (lambda (b) (string-match-p "tramp" (buffer-name b)))
                              (cl-set-difference (buffer-list) buffers))))))

;;; project_status

(ert-deftest test-perception/project-status-chinese-names ()
  "Staged, changed and untracked files come through with Chinese names intact."
  (agent-shell-test-with-project (root '(("a.py" . "x = 1\n")))
    (agent-shell-test-write root "中文.py" "# 改过了\n")
    (agent-shell-test-write root "新文件.txt" "新\n")
    (agent-shell-test-git root "add" "新文件.txt")
    (agent-shell-test-write root "目录/未跟踪.md" "未跟踪\n")
    (let ((result (agent-shell-test-call "project_status" nil
                                         (agent-shell-test-context root))))
      (should (eq (alist-get 'git result) t))
      (should (equal (alist-get 'branch result) "main"))
      (should (equal (alist-get 'staged result) '("A 新文件.txt")))
      (should (equal (alist-get 'changed result) '("M 中文.py")))
      (should (equal (alist-get 'untracked result) '("目录/未跟踪.md")))
      (should-not (alist-get 'clean result))
      (let ((commits (alist-get 'commits result)))
        (should (= (length commits) 1))
        (should (equal (alist-get 'subject (car commits)) "初始提交 initial commit")))
      (should (string-match-p "中文.py" (alist-get 'diff_stat result))))))

(ert-deftest test-perception/project-status-not-a-repo ()
  "A root outside any git repository gives a clear result, not an error."
  (let ((dir (make-temp-file "agent-shell-norepo-" t)))
    (unwind-protect
        (let* ((process-environment (cons (format "GIT_CEILING_DIRECTORIES=%s"
                                                  (file-name-directory
                                                   (directory-file-name dir)))
                                          process-environment))
               (result (agent-shell-test-call "project_status" nil
                                              (agent-shell-test-context dir))))
          (should (null (alist-get 'git result)))
          (should (string-match-p "not inside a git" (alist-get 'message result))))
      (delete-directory dir t))))

;;; Git run for the agent runs nothing the repository configures

(defun test-perception--arm-fsmonitor (git-dir marker)
  "Make the repository at GIT-DIR touch MARKER whenever git refreshes it."
  (with-temp-buffer
    (insert (format "[core]\n\tfsmonitor = touch %s; false\n" marker))
    (append-to-file (point-min) (point-max) (expand-file-name "config" git-dir))))

(ert-deftest test-perception/project-status-runs-no-fsmonitor ()
  "Neither the root's nor a submodule's fsmonitor runs for `project_status'.
Plain git in the same project runs both, so the trap is real."
  (agent-shell-test-with-project (upstream '(("lib.txt" . "上游\n")))
    (agent-shell-test-with-project (root '(("a.py" . "x = 1\n")))
      (agent-shell-test-git root "-c" "protocol.file.allow=always"
                            "submodule" "-q" "add" upstream "sub")
      (agent-shell-test-git root "commit" "-q" "-m" "子模块")
      (let ((marker (expand-file-name "fired" (make-temp-file "agent-shell-mark-" t))))
        (test-perception--arm-fsmonitor (expand-file-name ".git" root) marker)
        (test-perception--arm-fsmonitor (expand-file-name ".git/modules/sub" root) marker)
        (agent-shell-test-write root "a.py" "x = 2\n")
        (agent-shell-test-git root "status" "--short")
        (should (file-exists-p marker))
        (delete-file marker)
        (let ((result (agent-shell-test-call "project_status" nil
                                             (agent-shell-test-context root))))
          (should (equal (alist-get 'changed result) '("M a.py"))))
        (should-not (file-exists-p marker))
        (delete-directory (file-name-directory marker) t)))))

;;; symbol_search

(ert-deftest test-perception/symbol-search-elisp-xref ()
  "Definitions come from the elisp xref backend, references from ripgrep."
  (agent-shell-test-with-project
      (root '(("demo-lib.el" . ";;; demo-lib.el --- x  -*- lexical-binding: t; -*-\n\n(defun test-perception-demo-greet (name)\n  \"Greet NAME.\"\n  (format \"你好 %s\" name))\n\n(provide 'demo-lib)\n")
              ("demo-use.el" . ";;; demo-use.el --- y  -*- lexical-binding: t; -*-\n\n(defun demo-use-run ()\n  \"Run.\"\n  (test-perception-demo-greet \"世界\"))\n")))
    (load (expand-file-name "demo-lib.el" root) nil t t)
    (test-perception--visit root "demo-use.el")
    (let* ((result (agent-shell-test-call
                    "symbol_search" '((symbol . "test-perception-demo-greet"))
                    (agent-shell-test-context root)))
           (defs (alist-get 'definitions result))
           (refs (alist-get 'references result)))
      (should (string-match-p "xref:elisp" (alist-get 'backend result)))
      (should (= (length defs) 1))
      (should (equal (alist-get 'path (car defs)) "demo-lib.el"))
      (should (equal (alist-get 'line (car defs)) 3))
      (should (string-prefix-p "(defun test-perception-demo-greet" (alist-get 'text (car defs))))
      (should (member '("demo-use.el" . 5)
                      (mapcar (lambda (h) (cons (alist-get 'path h) (alist-get 'line h)))
                              refs)))
      (should-not (alist-get 'truncated result)))))

(ert-deftest test-perception/symbol-search-ripgrep-python ()
  "Without an xref backend ripgrep finds definitions and references, capped."
  (agent-shell-test-with-project
      (root `(("calc.py" . "def add_numbers(a, b):\n    return a + b\n")
              ("main.py" . "from calc import add_numbers\n\nprint(add_numbers(1, 2))\nadd_numbers_extra = 3\n")
              ("说明.py" . "# 用法：add_numbers(1, 2)\n")))
    (let* ((result (agent-shell-test-call
                    "symbol_search" '((symbol . "add_numbers"))
                    (agent-shell-test-context root)))
           (defs (alist-get 'definitions result))
           (refs (alist-get 'references result)))
      (should (equal (alist-get 'backend result) "ripgrep"))
      (should (equal (mapcar (lambda (h) (alist-get 'path h)) defs) '("calc.py")))
      (should (equal (alist-get 'column (car defs)) 5))
      (should (= (length refs) 4))
      (should-not (member "add_numbers_extra = 3"
                          (mapcar (lambda (h) (alist-get 'text h)) refs)))
      (let ((chinese (cl-find "说明.py" refs :key (lambda (h) (alist-get 'path h))
                              :test #'equal)))
        (should chinese)
        (should (equal (alist-get 'text chinese) "# 用法：add_numbers(1, 2)"))
        (should (equal (alist-get 'column chinese) 6))))
    (let* ((agent-shell-perception-max-hits 2)
           (result (agent-shell-test-call
                    "symbol_search" '((symbol . "add_numbers") (kind . "references"))
                    (agent-shell-test-context root))))
      (should (= (length (alist-get 'references result)) 2))
      (should-not (assq 'definitions result))
      (should (eq (alist-get 'truncated result) t)))
    (should (string-match-p
             "kind"
             (agent-shell-test-tool-error
               (agent-shell-test-call "symbol_search"
                                      '((symbol . "x") (kind . "everything"))
                                      (agent-shell-test-context root)))))))

;;; org_search

(defconst test-perception--org
  (concat "#+TITLE: 计划\n"
          "* TODO 写测试 :work:\n"
          "** DONE 准备环境\n"
          "* 文档 :docs:\n"
          "Some text.\n"
          "** TODO Review README :docs:urgent:\n")
  "An org file with TODO keywords, tags and Chinese titles.")

(ert-deftest test-perception/org-search-outline-and-filter ()
  "The outline has levels, TODO states, tags and lines, and the query filters it."
  (agent-shell-test-with-project (root `(("README.org" . ,test-perception--org)))
    (let* ((result (agent-shell-test-call "org_search" nil (agent-shell-test-context root)))
           (headings (alist-get 'headings result)))
      (should (equal (alist-get 'file result) "README.org"))
      (should (= (length headings) 4))
      (should (equal (car headings)
                     '((level . 1) (title . "写测试") (todo . "TODO")
                       (tags . ("work")) (line . 2))))
      (should (equal (alist-get 'todo (nth 1 headings)) "DONE")))
    (let* ((result (agent-shell-test-call "org_search"
                                          '((file . "README.org") (query . "docs"))
                                          (agent-shell-test-context root)))
           (headings (alist-get 'headings result)))
      (should (equal (mapcar (lambda (h) (alist-get 'title h)) headings)
                     '("文档" "Review README")))
      (should (equal (alist-get 'tags (nth 1 headings)) '("docs" "urgent")))
      (should (= (alist-get 'total_headings result) 4)))
    (should (string-match-p
             "outside the project"
             (agent-shell-test-tool-error
               (agent-shell-test-call "org_search" '((file . "../x.org"))
                                      (agent-shell-test-context root)))))))

;;; open_file

(ert-deftest test-perception/open-file-keeps-selected-window ()
  "The file is shown at the line while the user's selected window stays put."
  (agent-shell-test-with-project (root `(("app.py" . ,test-perception--python)))
    (let ((agent (get-buffer-create "*agent-shell open test*")))
      (unwind-protect
          (progn
            (delete-other-windows)
            (set-window-buffer (selected-window) agent)
            (let* ((selected (selected-window))
                   (result (agent-shell-test-call "open_file"
                                                  '((path . "app.py") (line . 7))
                                                  (agent-shell-test-context root)))
                   (buffer (get-file-buffer (expand-file-name "app.py" root))))
              (should (equal (alist-get 'path result) "app.py"))
              (should (equal (alist-get 'line result) 7))
              (should (equal (alist-get 'line_count result) 8))
              (should (equal (alist-get 'major_mode result) "python-mode"))
              (should (eq (selected-window) selected))
              (should (eq (window-buffer selected) agent))
              (with-current-buffer buffer
                (should (= (line-number-at-pos) 7)))
              (should (eq (alist-get 'displayed result) t))
              (let ((window (get-buffer-window buffer)))
                (should window)
                (should-not (eq window selected))
                (with-current-buffer buffer
                  (should (= (line-number-at-pos (window-point window)) 7))))))
        (delete-other-windows)
        (kill-buffer agent)))
    (should (string-match-p
             "outside the project"
             (agent-shell-test-tool-error
               (agent-shell-test-call "open_file" '((path . "/etc/passwd"))
                                      (agent-shell-test-context root)))))
    (should (string-match-p
             "outside 1..8"
             (agent-shell-test-tool-error
               (agent-shell-test-call "open_file" '((path . "app.py") (line . 99))
                                      (agent-shell-test-context root)))))))

;;; Subprocesses

(ert-deftest test-perception/process-runner-is-bounded ()
  "A helper process that outlives its time budget is killed, never waited on."
  (let* ((agent-shell-tools-process-timeout 0.3)
         (start (float-time))
         (result (agent-shell-tools-run temporary-file-directory "sleep" "30")))
    (should (eq (car result) 'timeout))
    (should (< (- (float-time) start) 10)))
  (should (equal (agent-shell-tools-run temporary-file-directory "printf" "中文\\n")
                 '(0 . "中文\n")))
  (should (equal (agent-shell-tools-run temporary-file-directory
                                        "agent-shell-no-such-program")
                 '(nil . ""))))

(ert-deftest test-perception/line-runner-stops-when-told ()
  "Lines come one by one, decoded; asking to stop kills the program at once."
  (let ((lines nil)
        (procs (length (process-list))))
    ;; `yes' never ends by itself: only the stop ends it.
    (should (eq (agent-shell-tools-run-lines
                 temporary-file-directory "yes" '("是的")
                 (lambda (line) (push line lines) (= (length lines) 3)))
                'stopped))
    (should (equal lines '("是的" "是的" "是的")))
    (should (= (length (process-list)) procs))
    (setq lines nil)
    ;; The last line needs no newline; the exit code comes back.
    (should (eql (agent-shell-tools-run-lines
                  temporary-file-directory "printf" '("一\\n\\n三")
                  (lambda (line) (push line lines) nil))
                 0))
    (should (equal (nreverse lines) '("一" "" "三")))
    ;; An error in the handler kills the program and reaches the caller.
    (should-error (agent-shell-tools-run-lines
                   temporary-file-directory "yes" nil
                   (lambda (_line) (error "Handler failed")))
                  :type 'error)
    (should (= (length (process-list)) procs))
    (should-not (agent-shell-tools-run-lines temporary-file-directory
                                             "agent-shell-no-such-program" nil #'ignore))))

(ert-deftest test-perception/symbol-search-checks-only-what-it-keeps ()
  "Ripgrep stops once the cap is passed: the secret check sees a few files, not all."
  (agent-shell-test-with-project
      (root (cl-loop for n below 40
                     collect (cons (format "m%02d.py" n)
                                   (format "# 第%d个\nx = find_me(%d)\n" n n))))
    (let ((agent-shell-perception-max-hits 3)
          (checked 0))
      (cl-letf* ((real (symbol-function 'agent-shell-tools-secret-reason))
                 ((symbol-function 'agent-shell-tools-secret-reason)
                  (lambda (&rest files) (cl-incf checked) (apply real files))))
        (let* ((result (agent-shell-test-call
                        "symbol_search" '((symbol . "find_me") (kind . "references"))
                        (agent-shell-test-context root)))
               (refs (alist-get 'references result)))
          (should (= (length refs) 3))
          (should (eq (alist-get 'truncated result) t))
          (dolist (hit (append refs nil))
            (should (string-match "\\`m\\([0-9][0-9]\\)\\.py\\'" (alist-get 'path hit)))
            (should (equal (alist-get 'text hit)
                           (format "x = find_me(%d)"
                                   (string-to-number (match-string 1 (alist-get 'path hit))))))
            (should (equal (alist-get 'line hit) 2))
            (should (equal (alist-get 'column hit) 5)))
          ;; One more than the cap, to know the list was cut; none of the rest.
          (should (= checked 4)))))))

;;; Dispatch

(ert-deftest test-perception/dispatch-rejects-unknown-tool-and-bad-args ()
  "Unknown tools and ill-typed arguments are tool errors with clear messages."
  (agent-shell-test-with-project (root nil)
    (should (string-match-p
             "Unknown Emacs-side tool"
             (agent-shell-test-tool-error
               (agent-shell-tools-call "read_file" nil (agent-shell-test-context root)))))
    (should (string-match-p
             "must be a string"
             (agent-shell-test-tool-error
               (agent-shell-test-call "symbol_search" '((symbol . 3))
                                      (agent-shell-test-context root)))))
    (should (string-match-p
             "Missing required argument `path'"
             (agent-shell-test-tool-error
               (agent-shell-test-call "open_file" nil (agent-shell-test-context root)))))
    (should (equal (sort (agent-shell-tools-names) #'string<)
                   '("buffer_overview" "insert_text" "magit_stage" "open_file"
                     "org_search" "project_diagnostics" "project_status" "replace_pattern"
                     "replace_region"
                     "symbol_search" "write_file")))))

(ert-deftest test-perception/context-snapshot ()
  "The prompt context names the user's file, line and region state."
  (agent-shell-test-with-project (root '(("src/a.py" . "one\ntwo\nthree\n")))
    (with-current-buffer (find-file-noselect (expand-file-name "src/a.py" root))
      (switch-to-buffer (current-buffer))
      (goto-char (point-min))
      (forward-line 2)
      (let ((snapshot (agent-shell-perception-context-snapshot root)))
        (should (equal (alist-get 'file snapshot) (expand-file-name "src/a.py" root)))
        (should (equal (alist-get 'line snapshot) 3))
        (should (eq (alist-get 'region snapshot) :json-false))
        (should (equal (alist-get 'root snapshot) root))
        (should (json-serialize snapshot :false-object :json-false))))))

(ert-deftest test-perception/context-snapshot-hides-outside-files ()
  "Regression: the prompt context named any file the user had open.
A file outside the project (and the extra allowed paths) sent its
absolute path, line and mode to the model; now only a flag says the
user's buffer is outside the project."
  (agent-shell-test-with-project (root nil)
    (let ((outside (file-name-as-directory
                     (file-truename (make-temp-file "agent-shell-outside-" t)))))
      (unwind-protect
          (progn
            (agent-shell-test-write outside "私人日记.txt" "一\n二\n")
            (switch-to-buffer (find-file-noselect (expand-file-name "私人日记.txt" outside)))
            (forward-line 1)
            (let ((snapshot (agent-shell-perception-context-snapshot root)))
              (should (eq (alist-get 'outside_project snapshot) t))
              (should-not (string-search "私人日记" (format "%S" snapshot)))
              (should-not (alist-get 'line snapshot)))
            (let* ((agent-shell-extra-allowed-paths (list outside))
                   (snapshot (agent-shell-perception-context-snapshot root)))
              (should (equal (alist-get 'file snapshot)
                             (expand-file-name "私人日记.txt" outside)))
              (should (equal (alist-get 'line snapshot) 2))))
        (agent-shell-test-cleanup-buffers outside)
        (delete-directory outside t)))))

(provide 'test-perception)
;;; test-perception.el ends here
