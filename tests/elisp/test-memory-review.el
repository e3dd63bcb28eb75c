;;; test-memory-review.el --- Tests of the memory review inbox and forget  -*- lexical-binding: t; -*-

;; SPDX-License-Identifier: GPL-3.0-or-later

;;; Commentary:

;; The review inbox and `agent-shell-memory-forget' against the REAL
;; bridge (agent-shell-test-session.el) with a real session on a fresh
;; git project: keys go through the inbox's keymap, the bridge marks
;; the files, and its decisions are read back from the session's
;; action log file.  Waiting is on conditions, never on sleeps.

;;; Code:

(require 'ert)
(require 'cl-lib)
(require 'agent-shell)
(require 'agent-shell-memory)
(require 'agent-shell-test-helpers)
(require 'agent-shell-test-session)

(defun test-memory-review--file (root name title &optional terms)
  "Write experience NAME in ROOT titled TITLE, status new, with search TERMS."
  (let ((path (expand-file-name (concat ".agent-shell/memory/" name) root)))
    (make-directory (file-name-directory path) t)
    (agent-shell-test-write-bytes
     path
     (encode-coding-string
      (format "---\ntitle: %s\ndate: 2025-06-01\nproject: p\ntask_type: bugfix\n\
tags: [t]\nsymbols: []\ntrigger: saved by the user\nsummary: %s 的总结\n%sstatus: new\n---\n\n\
## Goal\n\n目标\n\n## Steps\n\n1. 步骤\n\n## Key decisions\n\n无\n\n## Pitfalls\n\n无\n\n\
## Open issues\n\nNone\n"
              title title (if terms (format "search_terms: [%s]\n" terms) ""))
      'utf-8))
    path))

(defun test-memory-review--log ()
  "Return the text of the current session's action log file."
  (let ((path (agent-shell-session-log-path agent-shell--session)))
    (if (and path (file-readable-p path))
        (with-temp-buffer
          (let ((coding-system-for-read 'utf-8))
            (insert-file-contents path))
          (buffer-string))
      "")))

(defun test-memory-review--status (file)
  "Return FILE's status line value."
  (alist-get 'status (agent-shell-memory-front-matter file)))

(ert-deftest test-memory-review/accept-edit-reject-through-the-inbox ()
  "The inbox shows new experiences one at a time; a, e and r mark the files
through the bridge and each decision is in the action log."
  (test-shell--with-session (root)
    (let* ((shell (current-buffer))
           (a (test-memory-review--file root "2025-06-01--a.md" "中文导出乱码"
                                        "导出乱码, Excel 打开是乱码"))
           (b (test-memory-review--file root "2025-06-02--b.md" "Slow orders page"))
           (c (test-memory-review--file root "2025-06-03--c.md" "Flaky coupon test"))
           (before-c (agent-shell-test-read-bytes c))
           (inbox (agent-shell-memory-review root)))
      (unwind-protect
          (with-current-buffer inbox
            (switch-to-buffer inbox)
            (should (string-search "中文导出乱码" (buffer-string)))
            (should (string-search "导出乱码; Excel 打开是乱码" (buffer-string)))
            (should (string-search "3 left to review" (buffer-string)))
            (execute-kbd-macro (kbd "a"))
            (test-shell--wait "a accepted"
                              (lambda () (equal (test-memory-review--status a) "accepted")))
            (test-shell--wait "the next one" (lambda () (string-search "Slow orders page"
                                                                      (buffer-string))))
            (execute-kbd-macro (kbd "r"))
            (test-shell--wait "b rejected"
                              (lambda () (equal (test-memory-review--status b) "rejected")))
            (test-shell--wait "the last one" (lambda () (string-search "Flaky coupon test"
                                                                      (buffer-string))))
            (switch-to-buffer inbox)
            (execute-kbd-macro (kbd "e"))
            (test-shell--wait "c opened for editing"
                              (lambda () (get-file-buffer c)))
            (should (equal (test-memory-review--status c) "accepted"))
            (test-shell--wait "the empty inbox"
                              (lambda () (string-search "No experience left to review (3 decided)"
                                                        (with-current-buffer inbox
                                                          (buffer-string)))))
            ;; Only the status line changed, byte for byte.
            (should (equal (agent-shell-test-read-bytes c)
                           (replace-regexp-in-string "status: new" "status: accepted"
                                                     before-c t t)))
            ;; The Chinese search terms are untouched.
            (should (string-search (encode-coding-string
                                    "search_terms: [导出乱码, Excel 打开是乱码]\nstatus: accepted\n"
                                    'utf-8)
                                   (agent-shell-test-read-bytes a)))
            (with-current-buffer shell
              (test-shell--wait "the decisions in the action log"
                                (lambda ()
                                  (string-search "Memory: edit 2025-06-03--c.md"
                                                 (test-memory-review--log))))
              (let ((log (test-memory-review--log)))
                (should (string-search "Memory: accept 2025-06-01--a.md" log))
                (should (string-search "Memory: reject 2025-06-02--b.md" log))
                (should (string-search ":DECISION: reject" log))
                (should (string-search ":SEARCH_TERMS: 导出乱码 | Excel 打开是乱码" log))
                (should (string-search ":STATUS: rejected" log))))
            ;; A new inbox is empty: nothing is left with status new.
            (should-not (agent-shell-memory-inbox root)))
        (when (get-file-buffer c) (kill-buffer (get-file-buffer c)))
        (kill-buffer inbox)))))

(ert-deftest test-memory-review/forget-marks-the-file-and-search-never-finds-it ()
  "Forget keeps the file, marks it forgotten, and memory/search no longer finds it."
  (test-shell--with-session (root)
    (let ((file (test-memory-review--file root "2025-06-04--d.md" "数据库索引缺失导致订单页很慢")))
      (test-shell--wait "found before"
                        (lambda ()
                          (cl-some (lambda (h) (equal (alist-get 'path h) file))
                                   (append (alist-get 'hits (test-shell--sync
                                                             "memory/search"
                                                             `((query . "订单页很慢"))))
                                           nil))))
      (agent-shell-memory-forget file)
      (test-shell--wait "forgotten"
                        (lambda () (equal (test-memory-review--status file) "forgotten")))
      (should (file-exists-p file))
      (should-not (cl-some (lambda (h) (equal (alist-get 'path h) file))
                           (append (alist-get 'hits (test-shell--sync
                                                     "memory/search"
                                                     `((query . "订单页很慢"))))
                                   nil)))
      (test-shell--wait "the forget in the action log"
                        (lambda () (string-search "Memory: forget 2025-06-04--d.md"
                                                  (test-memory-review--log)))))))

(ert-deftest test-memory-review/parse-list ()
  "Front matter lists are read back with their quoted items."
  (should (equal (agent-shell-memory-parse-list "[a, \"b, c\", 中文 乱码]")
                 '("a" "b, c" "中文 乱码")))
  (should (equal (agent-shell-memory-parse-list "") nil)))

(ert-deftest test-memory-review/search-terms-prompt-is-prefilled ()
  "The save command's search-terms question offers the model's draft to edit."
  (let* ((offered nil)
         (answer
          ;; The user's typing: the offered text, with one more term.
          (cl-letf (((symbol-function 'read-string)
                     (lambda (_prompt initial &rest _)
                       (setq offered initial)
                       (concat initial ", 订单 慢 ,"))))
            (agent-shell-memory-read-search-terms '("页面很慢" "missing index")))))
    (should (equal offered "页面很慢, missing index"))
    (should (equal answer '("页面很慢" "missing index" "订单 慢")))))

(provide 'test-memory-review)
;;; test-memory-review.el ends here
