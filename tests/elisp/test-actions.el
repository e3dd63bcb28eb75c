;;; test-actions.el --- ERT tests for the action tools and undo-turn  -*- lexical-binding: t; -*-

;; SPDX-License-Identifier: GPL-3.0-or-later

;;; Commentary:

;; Exercises replace_region, insert_text, replace_pattern, write_file and
;; magit_stage through `agent-shell-tools-call' on real temporary git
;; projects, checking the bytes on disk, the snapshots and their index,
;; the refusals (path escapes, stale reads, unsaved user edits) and
;; `agent-shell-undo-turn'.

;;; Code:

(require 'ert)
(require 'cl-lib)
(require 'agent-shell-test-helpers)
(require 'agent-shell-tools)
(require 'agent-shell-actions)
(require 'agent-shell-undo)
(require 'agent-shell-rpc-http)
(require 'agent-shell)
(require 'agent-shell-test-session)

(defconst test-actions--lines "第一行\nline two\nline three\nline four\n最后一行\n"
  "Five lines, some Chinese.")

(defvar agent-shell-extra-allowed-paths)
(declare-function agent-shell--setup "agent-shell" (name root session-id))

(defun test-actions--index (root)
  "Return the snapshot index entries of ROOT."
  (agent-shell-actions-read-index root))

;;; replace_region

(ert-deftest test-actions/replace-region-happy-path ()
  "Lines are replaced byte-exactly, hashes and diff are reported, a snapshot is kept."
  (agent-shell-test-with-project (root `(("中文.txt" . ,test-actions--lines)))
    (let* ((context (agent-shell-test-context root 'turn_id "turn-7"))
           (result (agent-shell-test-call
                    "replace_region"
                    '((path . "中文.txt") (start_line . 2) (end_line . 3)
                      (new_text . "第二行\n第三行\n")
                      (expected_text . "line two\nline three"))
                    context))
           (expected "第一行\n第二行\n第三行\nline four\n最后一行\n"))
      (should (equal (agent-shell-test-read-bytes (expand-file-name "中文.txt" root))
                     (encode-coding-string expected 'utf-8)))
      (should (equal (alist-get 'path result) "中文.txt"))
      (should (equal (alist-get 'sha256_before result)
                     (agent-shell-test-sha256 test-actions--lines)))
      (should (equal (alist-get 'sha256_after result) (agent-shell-test-sha256 expected)))
      (should (string-match-p "^-line two$" (alist-get 'diff result)))
      (should (string-match-p "^\\+第三行$" (alist-get 'diff result)))
      (should (string-match-p "^--- a/中文.txt" (alist-get 'diff result)))
      (should (= (alist-get 'lines_added result) 2))
      (should (= (alist-get 'lines_removed result) 2))
      ;; Snapshot bytes and the manifest line.
      (let* ((op (alist-get 'op_id context))
             (snapshot (expand-file-name (format ".agent-shell/snapshots/%s/中文.txt" op)
                                         root))
             (entry (car (last (test-actions--index root)))))
        (should (equal (agent-shell-test-read-bytes snapshot)
                       (encode-coding-string test-actions--lines 'utf-8)))
        (should (equal (alist-get 'op_id entry) op))
        (should (equal (alist-get 'turn_id entry) "turn-7"))
        (should (equal (alist-get 'session_id entry) "session-1"))
        (should (equal (alist-get 'path entry) "中文.txt"))
        (should (eq (alist-get 'existed entry) t))
        (should (equal (alist-get 'sha256_after entry) (alist-get 'sha256_after result)))
        (should (stringp (alist-get 'time entry))))
      ;; Snapshots never show up as untracked files.
      (should-not (string-match-p "snapshots"
                                  (agent-shell-test-git root "status" "--porcelain"))))))

(ert-deftest test-actions/replace-region-expected-text-mismatch ()
  "A stale expected_text is refused and the file is left alone."
  (agent-shell-test-with-project (root `(("a.txt" . ,test-actions--lines)))
    (let ((message (agent-shell-test-tool-error
                     (agent-shell-test-call
                      "replace_region"
                      '((path . "a.txt") (start_line . 2) (end_line . 2)
                        (new_text . "x") (expected_text . "line 2"))
                      (agent-shell-test-context root)))))
      (should (string-match-p "no longer hold the expected text" message)))
    (should (equal (agent-shell-test-read root "a.txt") test-actions--lines))
    ;; The refused call leaves no buffer it opened and no snapshot behind.
    (should-not (get-file-buffer (expand-file-name "a.txt" root)))
    (should-not (test-actions--index root))
    (should (equal (directory-files (expand-file-name ".agent-shell/snapshots" root)
                                    nil "\\`[^.]")
                   nil))
    (should (string-match-p
             "outside the file"
             (agent-shell-test-tool-error
               (agent-shell-test-call
                "replace_region"
                '((path . "a.txt") (start_line . 5) (end_line . 6) (new_text . "x"))
                (agent-shell-test-context root)))))))

(ert-deftest test-actions/replace-region-deletes-lines ()
  "An empty new_text deletes the lines with their line ends."
  (agent-shell-test-with-project (root `(("a.txt" . ,test-actions--lines)))
    (agent-shell-test-call "replace_region"
                           '((path . "a.txt") (start_line . 2) (end_line . 4)
                             (new_text . ""))
                           (agent-shell-test-context root))
    (should (equal (agent-shell-test-read root "a.txt") "第一行\n最后一行\n"))))

;;; insert_text

(ert-deftest test-actions/insert-text-positions ()
  "Text goes before line N; N = count + 1 appends, adding a missing newline."
  (agent-shell-test-with-project (root '(("a.txt" . "one\ntwo")))
    (agent-shell-test-call "insert_text" '((path . "a.txt") (line . 1) (text . "零"))
                           (agent-shell-test-context root))
    (should (equal (agent-shell-test-read root "a.txt") "零\none\ntwo"))
    (agent-shell-test-call "insert_text" '((path . "a.txt") (line . 3) (text . "一点五\n"))
                           (agent-shell-test-context root))
    (should (equal (agent-shell-test-read root "a.txt") "零\none\n一点五\ntwo"))
    (let ((result (agent-shell-test-call "insert_text"
                                         '((path . "a.txt") (line . 5) (text . "end"))
                                         (agent-shell-test-context root))))
      (should (= (alist-get 'lines_added result) 2)))
    (should (equal (agent-shell-test-read root "a.txt") "零\none\n一点五\ntwo\nend\n"))
    (should (string-match-p
             "outside 1..6"
             (agent-shell-test-tool-error
               (agent-shell-test-call "insert_text"
                                      '((path . "a.txt") (line . 9) (text . "x"))
                                      (agent-shell-test-context root)))))))

;;; replace_pattern

(ert-deftest test-actions/replace-pattern-literal-regexp-and-no-match ()
  "Literal patterns ignore regexp syntax, regexps use groups, no match is an error."
  (agent-shell-test-with-project (root '(("a.py" . "x = a.b\ny = axb\nz = a.b\n")))
    (let ((result (agent-shell-test-call
                   "replace_pattern"
                   '((path . "a.py") (pattern . "a.b") (replacement . "甲.乙")
                     (literal . t))
                   (agent-shell-test-context root))))
      (should (= (alist-get 'replacements result) 2)))
    (should (equal (agent-shell-test-read root "a.py") "x = 甲.乙\ny = axb\nz = 甲.乙\n"))
    (let ((result (agent-shell-test-call
                   "replace_pattern"
                   '((path . "a.py") (pattern . "^\\([xyz]\\) = ")
                     (replacement . "\\1: ") (literal . :json-false))
                   (agent-shell-test-context root))))
      (should (= (alist-get 'replacements result) 3)))
    (should (equal (agent-shell-test-read root "a.py") "x: 甲.乙\ny: axb\nz: 甲.乙\n"))
    (should (string-match-p
             "matched nothing"
             (agent-shell-test-tool-error
               (agent-shell-test-call "replace_pattern"
                                      '((path . "a.py") (pattern . "不存在")
                                        (replacement . "x"))
                                      (agent-shell-test-context root)))))
    (should (string-match-p
             "Invalid Emacs regexp"
             (agent-shell-test-tool-error
               (agent-shell-test-call "replace_pattern"
                                      '((path . "a.py") (pattern . "\\(")
                                        (replacement . "x"))
                                      (agent-shell-test-context root)))))))

;;; write_file and confinement

(ert-deftest test-actions/write-file-new-nested-and-overwrite ()
  "New files get their directories; overwriting keeps a snapshot."
  (agent-shell-test-with-project (root nil)
    (let* ((content "第一行\n第二行 🙂\n")
           (result (agent-shell-test-call "write_file"
                                          `((path . "新目录/子目录/文件.txt")
                                            (content . ,content))
                                          (agent-shell-test-context root))))
      (should (eq (alist-get 'created result) t))
      (should-not (alist-get 'sha256_before result))
      (should (equal (alist-get 'sha256_after result) (agent-shell-test-sha256 content)))
      (should (equal (agent-shell-test-read-bytes
                      (expand-file-name "新目录/子目录/文件.txt" root))
                     (encode-coding-string content 'utf-8)))
      (should (eq (alist-get 'existed (car (last (test-actions--index root)))) nil)))
    (let ((result (agent-shell-test-call "write_file"
                                         '((path . "中文.py") (content . "print(1)\n"))
                                         (agent-shell-test-context root))))
      (should (eq (alist-get 'created result) nil))
      (should (string-match-p "^-print(\"你好，世界\")$" (alist-get 'diff result)))
      (should (equal (agent-shell-test-read root "中文.py") "print(1)\n")))))

(ert-deftest test-actions/write-file-refuses-escapes-and-protected-paths ()
  "Paths leaving the root, symlinks out, .git and agent-shell's own files are refused."
  (agent-shell-test-with-project (root nil)
    (let ((outside (make-temp-file "agent-shell-outside-" t)))
      (unwind-protect
          (progn
            (make-symbolic-link outside (expand-file-name "link" root))
            (make-symbolic-link (expand-file-name ".git/hooks" root)
                                (expand-file-name "hooks" root))
            (dolist (case '(("../escape.txt" . "outside the project")
                            ("link/evil.txt" . "outside the project")
                            ("/tmp/agent-shell-evil.txt" . "outside the project")
                            (".git/hooks/pre-commit" . "inside .git")
                            ("hooks/pre-commit" . "inside .git")
                            ("sub/../.git/config" . "inside .git")
                            (".agent-shell/allowlist.el" . "cannot be written")
                            (".agent-shell/config.el" . "cannot be written")
                            (".agent-shell/snapshots/index.jsonl" . "cannot be written")))
              (let ((message (agent-shell-test-tool-error
                               (agent-shell-test-call
                                "write_file" `((path . ,(car case)) (content . "x"))
                                (agent-shell-test-context root)))))
                (should (string-match-p (cdr case) message))))
            (should (null (directory-files outside nil "\\`[^.]")))
            (should-not (file-exists-p (expand-file-name ".git/hooks/pre-commit" root)))
            (should-not (file-exists-p (expand-file-name ".agent-shell/allowlist.el" root)))
            (should-not (file-exists-p (expand-file-name "../escape.txt" root))))
        (delete-directory outside t)))
    (should (string-match-p
             "op_id"
             (agent-shell-test-tool-error
               (agent-shell-test-call "write_file" '((path . "ok.txt") (content . "x"))
                                      (agent-shell-test-context root 'op_id "../../x")))))))

(ert-deftest test-actions/stale-read-refused ()
  "A file the user changed after the agent read it is not overwritten."
  (agent-shell-test-with-project (root `(("a.txt" . ,test-actions--lines)))
    (let ((read-sha (agent-shell-test-sha256 test-actions--lines)))
      (agent-shell-test-write root "a.txt" "用户改过了\n")
      (dolist (call `(("write_file" . ((path . "a.txt") (content . "agent\n")))
                      ("replace_pattern" . ((path . "a.txt") (pattern . "用户")
                                            (replacement . "x")))))
        (should (string-match-p
                 "changed since you last read it"
                 (agent-shell-test-tool-error
                   (agent-shell-test-call (car call) (cdr call)
                                          (agent-shell-test-context
                                           root 'expected_sha256 read-sha))))))
      (should (equal (agent-shell-test-read root "a.txt") "用户改过了\n"))
      ;; With the current hash the write goes through.
      (agent-shell-test-call "write_file" '((path . "a.txt") (content . "agent\n"))
                             (agent-shell-test-context
                              root 'expected_sha256
                              (agent-shell-test-sha256 "用户改过了\n")))
      (should (equal (agent-shell-test-read root "a.txt") "agent\n"))
      ;; A file deleted since it was read is not silently recreated.
      (delete-file (expand-file-name "a.txt" root))
      (should (string-match-p
               "changed since you last read it"
               (agent-shell-test-tool-error
                 (agent-shell-test-call "write_file" '((path . "a.txt") (content . "x"))
                                        (agent-shell-test-context
                                         root 'expected_sha256
                                         (agent-shell-test-sha256 "agent\n"))))))
      (should-not (file-exists-p (expand-file-name "a.txt" root))))))

(ert-deftest test-actions/extra-roots-writable-and-undoable ()
  "Files under an extra root can be written and restored; their .git stays closed."
  (agent-shell-test-with-project (root nil)
    (let ((extra (file-name-as-directory (file-truename (make-temp-file "agent-shell-extra-" t)))))
      (unwind-protect
          (let ((target (expand-file-name "共享.txt" extra)))
            (agent-shell-test-write extra "共享.txt" "旧\n")
            (agent-shell-test-call "write_file" `((path . ,target) (content . "新\n"))
                                   (agent-shell-test-context root 'extra_roots (list extra)
                                                             'turn_id "turn-x"))
            (should (equal (agent-shell-test-read extra "共享.txt") "新\n"))
            (should (string-match-p
                     "inside .git"
                     (agent-shell-test-tool-error
                       (agent-shell-test-call
                        "write_file" `((path . ,(expand-file-name ".git/config" extra))
                                       (content . "x"))
                        (agent-shell-test-context root 'extra_roots (list extra))))))
            (should (string-match-p
                     "outside the project"
                     (agent-shell-test-tool-error
                       (agent-shell-test-call "write_file" `((path . ,target) (content . "x"))
                                              (agent-shell-test-context root)))))
            ;; Undo trusts only the user's own extra roots, not the index.
            (should (string-match-p "outside the project"
                                    (agent-shell-test-tool-error
                                      (agent-shell-undo-turn root "turn-x"))))
            (let ((agent-shell-extra-allowed-paths (list extra)))
              (should (equal (agent-shell-undo-turn root "turn-x") (list target))))
            (should (equal (agent-shell-test-read extra "共享.txt") "旧\n")))
        (agent-shell-test-cleanup-buffers extra)
        (delete-directory extra t)))))

(ert-deftest test-actions/unsaved-user-edits-refused ()
  "A buffer with unsaved user edits is never touched."
  (agent-shell-test-with-project (root `(("a.txt" . ,test-actions--lines)))
    (let ((buffer (find-file-noselect (expand-file-name "a.txt" root))))
      (with-current-buffer buffer
        (goto-char (point-min))
        (insert "用户正在输入"))
      (should (string-match-p
               "unsaved changes"
               (agent-shell-test-tool-error
                 (agent-shell-test-call "replace_region"
                                        '((path . "a.txt") (start_line . 1)
                                          (end_line . 1) (new_text . "x"))
                                        (agent-shell-test-context root)))))
      (with-current-buffer buffer
        (should (string-prefix-p "用户正在输入第一行" (buffer-string)))
        (should (buffer-modified-p)))
      (should (equal (agent-shell-test-read root "a.txt") test-actions--lines)))))

(ert-deftest test-actions/edit-is-one-undo-unit ()
  "One undo in the visiting buffer reverts a whole multi-match replacement."
  (agent-shell-test-with-project (root '(("a.txt" . "foo 1\nfoo 2\nfoo 3\n")))
    (let ((buffer (find-file-noselect (expand-file-name "a.txt" root))))
      (with-current-buffer buffer
        (goto-char (point-max))
        (insert "user\n")
        (save-buffer))
      (agent-shell-test-call "replace_pattern"
                             '((path . "a.txt") (pattern . "foo") (replacement . "栏"))
                             (agent-shell-test-context root))
      (with-current-buffer buffer
        (should (equal (buffer-string) "栏 1\n栏 2\n栏 3\nuser\n"))
        (should-not (buffer-modified-p))
        (let ((last-command nil))
          (undo))
        (should (equal (buffer-string) "foo 1\nfoo 2\nfoo 3\nuser\n"))))))

;;; The snapshot index

(ert-deftest test-actions/snapshot-index-holds-the-bridges-bytes ()
  "A Chinese path in the snapshot index is the bridge's bytes, exactly.
The arguments are decoded from the UTF-8 bytes of a request as the
bridge sends it; the index line must hold those bytes for the path and
the snapshot's name, on Emacs 28 (where `json-serialize' gives text)
as on Emacs 30 (where it gives bytes)."
  (agent-shell-test-with-project (root '(("文档/笔记 🚀.txt" . "旧内容\n")))
    (let* ((sent (encode-coding-string
                  "{\"path\": \"文档/笔记 🚀.txt\", \"content\": \"新内容 e\u0301\\n\"}"
                  'utf-8))
           (path (progn (should (string-match "\"path\": \"\\([^\"]+\\)\"" sent))
                        (match-string 1 sent)))
           (context (agent-shell-test-context root))
           (op (alist-get 'op_id context)))
      (agent-shell-tools-call "write_file" (agent-shell-rpc-http--decode sent) context)
      (should (equal (agent-shell-test-read root "文档/笔记 🚀.txt") "新内容 e\u0301\n"))
      (let ((line (car (last (split-string
                              (agent-shell-test-read-bytes
                               (agent-shell-actions-index-file root))
                              "\n" t)))))
        (should (string-search (concat "\"path\":\"" path "\"") line))
        (should (string-search (concat "\"snapshot\":\"" op "/" path "\"") line))
        (should (equal (decode-coding-string path 'utf-8) "文档/笔记 🚀.txt"))
        (should (equal (alist-get 'path (car (last (test-actions--index root))))
                       "文档/笔记 🚀.txt"))))))

;;; Encodings

(ert-deftest test-actions/coding-systems-and-line-ends-kept ()
  "Latin-1 and CRLF files keep their encoding; unencodable text is refused."
  (agent-shell-test-with-project (root `(("latin.txt" . ,(unibyte-string ?c ?a ?f #xe9 ?\n ?b ?\n))
                                         ("dos.txt" . "one\r\ntwo\r\n")))
    (agent-shell-test-call "replace_region"
                           '((path . "latin.txt") (start_line . 2) (end_line . 2)
                             (new_text . "B"))
                           (agent-shell-test-context root))
    (should (equal (agent-shell-test-read-bytes (expand-file-name "latin.txt" root))
                   (unibyte-string ?c ?a ?f #xe9 ?\n ?B ?\n)))
    (should (string-match-p
             "cannot encode"
             (agent-shell-test-tool-error
               (agent-shell-test-call "insert_text"
                                      '((path . "latin.txt") (line . 1) (text . "中文"))
                                      (agent-shell-test-context root)))))
    (should (equal (agent-shell-test-read-bytes (expand-file-name "latin.txt" root))
                   (unibyte-string ?c ?a ?f #xe9 ?\n ?B ?\n)))
    (with-current-buffer (get-file-buffer (expand-file-name "latin.txt" root))
      (should-not (buffer-modified-p)))
    (agent-shell-test-call "insert_text" '((path . "dos.txt") (line . 2) (text . "一点五"))
                           (agent-shell-test-context root))
    (should (equal (agent-shell-test-read root "dos.txt") "one\r\n一点五\r\ntwo\r\n"))))

;;; Undo a turn

(defun test-actions--make-turn (root turn)
  "Make agent changes in ROOT during TURN: edit a.txt twice, create b.txt."
  (agent-shell-test-call "replace_region"
                         '((path . "a.txt") (start_line . 1) (end_line . 1)
                           (new_text . "改一"))
                         (agent-shell-test-context root 'turn_id turn))
  (agent-shell-test-call "write_file" '((path . "新/b.txt") (content . "新的\n"))
                         (agent-shell-test-context root 'turn_id turn))
  (agent-shell-test-call "insert_text" '((path . "a.txt") (line . 1) (text . "改二"))
                         (agent-shell-test-context root 'turn_id turn)))

(ert-deftest test-actions/undo-turn-restores-files ()
  "Undoing the last turn restores edited files and deletes created ones."
  (agent-shell-test-with-project (root `(("a.txt" . ,test-actions--lines)))
    (agent-shell-test-call "write_file" '((path . "earlier.txt") (content . "早\n"))
                           (agent-shell-test-context root 'turn_id "turn-0"))
    (test-actions--make-turn root "turn-1")
    (should (equal (agent-shell-test-read root "a.txt")
                   "改二\n改一\nline two\nline three\nline four\n最后一行\n"))
    ;; Declining the confirmation changes nothing.
    (cl-letf (((symbol-function 'yes-or-no-p) (lambda (_prompt) nil)))
      (should-not (agent-shell-undo-turn root nil t)))
    (should (file-exists-p (expand-file-name "新/b.txt" root)))
    (should (equal (sort (agent-shell-undo-turn root) #'string<) '("a.txt" "新/b.txt")))
    (should (equal (agent-shell-test-read root "a.txt") test-actions--lines))
    (should-not (file-exists-p (expand-file-name "新/b.txt" root)))
    (should (file-exists-p (expand-file-name "earlier.txt" root)))
    (with-current-buffer (get-file-buffer (expand-file-name "a.txt" root))
      (should (equal (buffer-string) test-actions--lines)))
    ;; The undone turn is not picked again; the one before it is.
    (should (equal (agent-shell-undo-last-turn root) nil))
    (should (equal (agent-shell-undo-turn root "turn-0") '("earlier.txt")))
    (should-not (file-exists-p (expand-file-name "earlier.txt" root)))))

(ert-deftest test-actions/new-file-diff-names-dev-null ()
  "Regression: the diff of a created file named it a/PATH on both sides.
A new file's old name is now /dev/null, so diff tools see a creation."
  (agent-shell-test-with-project (root nil)
    (let ((diff (alist-get 'diff (agent-shell-test-call
                                  "write_file" '((path . "新.py") (content . "print(\"新\")\n"))
                                  (agent-shell-test-context root)))))
      (should (string-prefix-p "--- /dev/null\n+++ b/新.py\n" diff))
      (should (string-search "+print(\"新\")" diff)))
    (let ((diff (alist-get 'diff (agent-shell-test-call
                                  "write_file" '((path . "新.py") (content . "print(2)\n"))
                                  (agent-shell-test-context root)))))
      (should (string-prefix-p "--- a/新.py\n+++ b/新.py\n" diff)))))

(ert-deftest test-actions/undo-turn-names-the-prompt-and-tells-the-shell ()
  "Regression: undo-turn asked about a bare turn id and left no trace in the shell.
The question now quotes the turn's prompt (from the shell, else from
the action log's task heading), and the shell gets a notice."
  (agent-shell-test-with-project (root `(("a.txt" . ,test-actions--lines)))
    (require 'agent-shell)
    (test-actions--make-turn root "turn-1")
    (test-actions--make-turn root "turn-2")
    ;; turn-1 is known only from an action log of an earlier session.
    (agent-shell-test-write
     root ".agent-shell/logs/2026-11-30-090000-s1.org"
     "#+TODO: WAIT | DONE\n* [2026-11-30 Mon 09:00] 把第一行改掉\n:PROPERTIES:\n:SOURCE: user\n:TURN: turn-1\n:END:\n")
    (let ((shell (get-buffer-create "*agent-shell: undo-test*"))
          (questions nil))
      (unwind-protect
          (progn
            (with-current-buffer shell
              (agent-shell--setup "undo-test" root nil)
              (push (cons "turn-2" "再改一次 a.txt\n第二行") (agent-shell-session-turn-prompts agent-shell--session)))
            (cl-letf (((symbol-function 'yes-or-no-p)
                       (lambda (prompt) (push prompt questions) t)))
              (agent-shell-undo-turn root "turn-2" t)
              (should (string-search "turn-2 (“再改一次 a.txt”)" (car questions)))
              (should (string-search "a.txt" (car questions)))
              (with-current-buffer shell
                (should (string-search
                         "Undid turn turn-2 (“再改一次 a.txt”): restored 2 file(s): a.txt, 新/b.txt"
                         (buffer-substring-no-properties
                          (point-min) (agent-shell-session-output-marker agent-shell--session)))))
              (agent-shell-undo-turn root "turn-1" t)
              (should (string-search "turn-1 (“把第一行改掉”)" (car questions)))))
        (with-current-buffer shell (setf (agent-shell-session-id agent-shell--session) nil))
        (kill-buffer shell)))))

(ert-deftest test-actions/undo-turn-refuses-when-edited-since ()
  "A file edited after the turn blocks the undo and is named in the refusal."
  (agent-shell-test-with-project (root `(("a.txt" . ,test-actions--lines)))
    (test-actions--make-turn root "turn-1")
    (agent-shell-test-write root "a.txt" "用户的修改\n")
    (let ((message (agent-shell-test-tool-error (agent-shell-undo-turn root))))
      (should (string-match-p "edited since then: a.txt" message)))
    (should (equal (agent-shell-test-read root "a.txt") "用户的修改\n"))
    (should (file-exists-p (expand-file-name "新/b.txt" root)))))

;;; Undo from a hostile index

(defun test-actions--write-index (root entries &optional snapshots)
  "Write ENTRIES (alists) as ROOT's snapshot index, with SNAPSHOTS files.
SNAPSHOTS is an alist (NAME . CONTENT) under the snapshot directory."
  (let ((dir (expand-file-name ".agent-shell/snapshots/" root)))
    (make-directory dir t)
    (dolist (snap snapshots)
      (agent-shell-test-write dir (car snap) (cdr snap)))
    (agent-shell-test-write
     dir "index.jsonl"
     (mapconcat (lambda (e) (concat (agent-shell-json-bytes e) "\n")) entries ""))))

(defun test-actions--entry (path sha &rest more)
  "Return an index entry of turn \"evil\" for PATH left with SHA, plus MORE."
  (append `((op_id . "op-evil") (turn_id . "evil") (session_id . "s")
            (path . ,path) (existed . t) (snapshot . "op-evil/x")
            (sha256_before . :null) (sha256_after . ,(or sha :null)))
          more))

(ert-deftest test-actions/undo-turn-refuses-hostile-index ()
  "Regression: undo wrote wherever the snapshot index said.
An index naming a file outside the project (absolute or through a
symlink), one recording no resulting content, or one whose snapshot is
a symlink was obeyed: a repository could overwrite or delete any file."
  (agent-shell-test-with-project (root nil)
    (let* ((outside (file-name-as-directory
                     (file-truename (make-temp-file "agent-shell-victim-" t))))
           (victim (expand-file-name "victim.txt" outside))
           (victim-sha (agent-shell-test-sha256 "秘密\n")))
      (unwind-protect
          (progn
            (agent-shell-test-write outside "victim.txt" "秘密\n")
            (make-symbolic-link outside (expand-file-name "link" root))
            (dolist (case `((,(test-actions--entry victim victim-sha) . "outside the project")
                            (,(test-actions--entry "link/victim.txt" victim-sha)
                             . "outside the project")
                            (,(test-actions--entry ".git/config" nil) . "no resulting content")
                            (,(test-actions--entry "gone.txt" nil (cons 'existed :json-false))
                             . "no resulting content")
                            (,(test-actions--entry ".agent-shell/config.el"
                                                   (agent-shell-test-sha256 "x"))
                             . "own configuration")))
              (test-actions--write-index root (list (car case)) '(("op-evil/x" . "PWNED\n")))
              (should (string-match-p (cdr case)
                                      (agent-shell-test-tool-error
                                        (agent-shell-undo-turn root "evil")))))
            (should (equal (agent-shell-test-read outside "victim.txt") "秘密\n"))
            ;; A snapshot that is a symlink to a file elsewhere is refused.
            (agent-shell-test-write root "in.txt" "mine\n")
            (test-actions--write-index
             root (list (test-actions--entry "in.txt" (agent-shell-test-sha256 "mine\n"))))
            (let ((snap (expand-file-name ".agent-shell/snapshots/op-evil/x" root)))
              (delete-file snap)
              (make-symbolic-link victim snap))
            (should (string-match-p "bad snapshot"
                                    (agent-shell-test-tool-error
                                      (agent-shell-undo-turn root "evil"))))
            (should (equal (agent-shell-test-read root "in.txt") "mine\n")))
        (delete-directory outside t)))))

(ert-deftest test-actions/undo-turn-refuses-index-tracked-by-git ()
  "Regression: a repository could ship its own snapshot index (git add -f).
Undo now refuses any index that git tracks, even a well-formed one."
  (agent-shell-test-with-project (root '(("a.txt" . "原来\n")))
    (test-actions--write-index
     root (list (test-actions--entry "a.txt" (agent-shell-test-sha256 "原来\n")))
     '(("op-evil/x" . "PWNED\n")))
    (agent-shell-test-git root "add" "-f" ".agent-shell/snapshots/index.jsonl")
    (agent-shell-test-git root "commit" "-q" "-m" "ship an index")
    (should (string-match-p "tracked by git"
                            (agent-shell-test-tool-error
                              (agent-shell-undo-turn root "evil"))))
    (should (equal (agent-shell-test-read root "a.txt") "原来\n"))))

;;; magit_stage

(ert-deftest test-actions/magit-stage-with-git ()
  "Without magit, files are staged with git add, Chinese names included."
  (agent-shell-test-with-project (root '(("a.py" . "x = 1\n")))
    (agent-shell-test-write root "a.py" "x = 2\n")
    (agent-shell-test-write root "新文件.py" "y = 1\n")
    (delete-file (expand-file-name "中文.py" root))
    (let* ((agent-shell-actions-use-magit nil)
           (result (agent-shell-test-call "magit_stage"
                                          '((paths . ["a.py" "新文件.py" "中文.py"]))
                                          (agent-shell-test-context root))))
      (should (equal (alist-get 'via result) "git"))
      (should (equal (sort (alist-get 'index result) #'string<)
                     (sort (list "a.py" "中文.py" "新文件.py") #'string<))))
    (should (equal (agent-shell-test-git root "diff" "--cached" "--name-status")
                   "M\ta.py\nD\t中文.py\nA\t新文件.py\n"))
    (should (string-match-p
             "inside .git"
             (agent-shell-test-tool-error
               (agent-shell-test-call "magit_stage" '((paths . [".git/config"]))
                                      (agent-shell-test-context root)))))))

(ert-deftest test-actions/magit-stage-with-magit ()
  "With magit loaded, staging goes through magit."
  (agent-shell-test-add-elpa-to-load-path)
  (require 'magit)
  (agent-shell-test-with-project (root '(("a.py" . "x = 1\n")))
    (agent-shell-test-write root "a.py" "x = 2\n")
    (agent-shell-test-write root "目录/新.py" "y\n")
    (let ((process-environment (agent-shell-test-git-environment))
          (result (agent-shell-test-call "magit_stage"
                                         '((paths . ["a.py" "目录/新.py"]))
                                         (agent-shell-test-context root))))
      (should (equal (alist-get 'via result) "magit"))
      (should (equal (alist-get 'staged result) '("a.py" "目录/新.py"))))
    (should (equal (agent-shell-test-git root "diff" "--cached" "--name-status")
                   "M\ta.py\nA\t目录/新.py\n"))))

(ert-deftest test-actions/magit-stage-runs-no-fsmonitor ()
  "Staging, through git or magit, runs no fsmonitor the repository names."
  (agent-shell-test-add-elpa-to-load-path)
  (require 'magit)
  (dolist (use-magit '(nil t))
    (agent-shell-test-with-project (root '(("a.py" . "x = 1\n")))
      (let ((marker (expand-file-name "fired" (make-temp-file "agent-shell-mark-" t))))
        (with-temp-buffer
          (insert (format "[core]\n\tfsmonitor = touch %s; false\n" marker))
          (append-to-file (point-min) (point-max) (expand-file-name ".git/config" root)))
        (agent-shell-test-write root "a.py" "x = 2\n")
        (let* ((agent-shell-actions-use-magit use-magit)
               (process-environment (agent-shell-test-git-environment))
               (result (agent-shell-test-call "magit_stage" '((paths . ["a.py"]))
                                              (agent-shell-test-context root))))
          (should (equal (alist-get 'via result) (if use-magit "magit" "git"))))
        (should-not (file-exists-p marker))
        (should (equal (agent-shell-test-git root "-c" "core.fsmonitor=false"
                                             "diff" "--cached" "--name-only")
                       "a.py\n"))
        (delete-directory (file-name-directory marker) t)))))

(ert-deftest test-actions/package-does-not-require-magit ()
  "Loading the tools never loads magit, even when magit is installed."
  (let* ((dirs (file-expand-wildcards "/usr/share/emacs/site-lisp/elpa/*"))
         (output (with-temp-buffer
                   (apply #'call-process (expand-file-name invocation-name invocation-directory)
                          nil t nil "-Q" "--batch"
                          "-L" (file-name-directory (locate-library "agent-shell-tools"))
                          (append
                           (mapcan (lambda (dir) (list "-L" dir)) dirs)
                           (list "-l" "agent-shell-actions" "-l" "agent-shell-perception"
                                 "--eval" "(princ (list :magit (featurep 'magit)))")))
                   (buffer-string))))
    (should (string-match-p "(:magit nil)" output))))

(ert-deftest test-actions/magit-stage-pathspec-magic-is-literal ()
  "Regression: magit_stage honoured git pathspec magic.
Staging \":(glob)*\" staged every file; it must stage only the file
of that exact name, both through git and through magit."
  (agent-shell-test-add-elpa-to-load-path)
  (require 'magit)
  (dolist (use-magit '(nil t))
    (agent-shell-test-with-project (root '(("a.py" . "x = 1\n")))
      (agent-shell-test-write root "a.py" "x = 2\n")
      (agent-shell-test-write root "其他.txt" "其他\n")
      (agent-shell-test-write root ":(glob)*" "literal\n")
      (let ((agent-shell-actions-use-magit use-magit)
            (process-environment (agent-shell-test-git-environment)))
        (agent-shell-test-call "magit_stage" '((paths . [":(glob)*"]))
                               (agent-shell-test-context root)))
      (should (equal (agent-shell-test-git root "diff" "--cached" "--name-only")
                     ":(glob)*\n")))))

;;; Scale

(ert-deftest test-actions/large-buffer-replace-region ()
  "Replacing two lines in the middle of a 200k-line file works."
  (agent-shell-test-with-project
      (root `(("big.txt" . ,(with-temp-buffer
                              (dotimes (i 200000) (insert (format "line %d\n" (1+ i))))
                              (buffer-string)))))
    (let ((result (agent-shell-test-call "replace_region"
                                         '((path . "big.txt") (start_line . 100000)
                                           (end_line . 100001) (new_text . "中间"))
                                         (agent-shell-test-context root))))
      (should (= (alist-get 'lines_removed result) 2))
      (should (= (alist-get 'lines_added result) 1)))
    (with-temp-buffer
      (insert-file-contents (expand-file-name "big.txt" root))
      (should (= (count-lines (point-min) (point-max)) 199999))
      (goto-char (point-min))
      (forward-line 99998)
      (should (equal (buffer-substring (point) (progn (forward-line 3) (point)))
                     "line 99999\n中间\nline 100002\n")))))

(ert-deftest test-actions/undo-turn-reaches-the-bridge-log ()
  "Regression: undo-turn left no trace in the action log nor for the model.
The shell of the project reports the undo to the bridge, which logs it
and keeps a note for the model's next request."
  (agent-shell-test-with-project (root '(("a.txt" . "一\n")))
    (let* ((result (test-shell--sync "session/new"
                                     `((cwd . ,(directory-file-name root)))))
           (sid (alist-get 'sessionId result))
           (log (alist-get 'logPath result))
           (shell (get-buffer-create "*agent-shell: undo-bridge*")))
      (unwind-protect
          (progn
            (with-current-buffer shell
              (agent-shell--setup "undo-bridge" root sid))
            (agent-shell-test-call "write_file" '((path . "新.txt") (content . "新\n"))
                                   (agent-shell-test-context root 'turn_id "t-undo-1"))
            (should (equal (agent-shell-undo-turn root "t-undo-1") '("新.txt")))
            (test-shell--wait
             "the undo in the action log"
             (lambda ()
               (with-temp-buffer
                 (insert-file-contents log)
                 (and (search-forward ":UNDO_OF: t-undo-1" nil t)
                      (search-forward "新.txt" nil t)))))
            ;; The bridge saves the session last: wait for that too, so the
            ;; project is not deleted under its write.
            (test-shell--wait
             "the session saved with the undo"
             (lambda ()
               ;; The checkpoint is a snapshot and a journal of the steps since.
               (cl-some (lambda (name)
                          (let ((saved (expand-file-name
                                        (format ".agent-shell/sessions/%s%s" sid name) root)))
                            (and (file-exists-p saved)
                                 (with-temp-buffer
                                   (insert-file-contents saved)
                                   (search-forward "the user undid turn t-undo-1" nil t)))))
                        '(".json" ".journal.jsonl")))))
        (with-current-buffer shell (setf (agent-shell-session-id agent-shell--session) nil))
        (kill-buffer shell)))))

(provide 'test-actions)
;;; test-actions.el ends here
