;;; test-memory.el --- Tests of the agent-shell memory browser  -*- lexical-binding: t; -*-

;; SPDX-License-Identifier: GPL-3.0-or-later

;;; Commentary:

;; The experience browser on real files in a temporary git project,
;; driven through its real keymap.

;;; Code:

(require 'ert)
(require 'cl-lib)
(require 'agent-shell-memory)
(require 'agent-shell-test-helpers)

(defun test-memory--experience (title date &optional tags)
  "Return the text of an experience file with TITLE, DATE and TAGS."
  (format "---\ntitle: %s\ndate: %s\ntask_type: bugfix\ntags: [%s]\nsummary: \"修复 it\"\n---\n\n## Goal\n\nx\n"
          title date (or tags "")))

(defmacro test-memory--with-browser (spec &rest body)
  "Run BODY in the memory browser of a project; SPEC is (ROOT-VAR FILES)."
  (declare (indent 1) (debug ((symbolp form) body)))
  `(agent-shell-test-with-project (,(car spec) ,(cadr spec))
     (let ((buffer (agent-shell-memory-browse ,(car spec))))
       (unwind-protect
           (with-current-buffer buffer ,@body)
         (kill-buffer buffer)))))

(defun test-memory--titles ()
  "Return the titles listed in the current browser, top to bottom."
  (mapcar (lambda (e) (aref (cadr e) 1)) tabulated-list-entries))

(ert-deftest test-memory/lists-newest-first-with-chinese-titles ()
  "Experiences are listed newest first with their front matter titles."
  (test-memory--with-browser
      (root `((".agent-shell/memory/2025-01-02--old.md"
               . ,(test-memory--experience "旧的经验" "2025-01-02"))
              (".agent-shell/memory/2025-03-04--new.md"
               . ,(test-memory--experience "新的经验：修复构建" "2025-03-04" "build, 中文"))
              (".agent-shell/memory/.hidden.md" . "---\ntitle: hidden\n---\n")
              (".agent-shell/memory/notes.txt" . "not an experience")))
    (should (equal (test-memory--titles) '("新的经验：修复构建" "旧的经验")))
    (goto-char (point-min))
    (should (equal (tabulated-list-get-entry)
                   ["2025-03-04" "新的经验：修复构建" "bugfix" "accepted" "build, 中文"]))))

(ert-deftest test-memory/ret-opens-k-deletes-g-refreshes ()
  "RET opens the experience, k deletes it after confirmation, g picks up new files."
  (test-memory--with-browser
      (root `((".agent-shell/memory/2025-01-02--a.md"
               . ,(test-memory--experience "A" "2025-01-02"))))
    (switch-to-buffer (current-buffer))
    (goto-char (point-min))
    (execute-kbd-macro (kbd "RET"))
    (should (equal (buffer-file-name (window-buffer (selected-window)))
                   (expand-file-name ".agent-shell/memory/2025-01-02--a.md" root)))
    (kill-buffer (window-buffer (selected-window)))
    (switch-to-buffer (get-buffer (format "*agent-shell memory: %s*"
                                          (file-name-nondirectory
                                           (directory-file-name root)))))
    (agent-shell-test-write root ".agent-shell/memory/2025-02-02--b.md"
                            (test-memory--experience "B" "2025-02-02"))
    (execute-kbd-macro (kbd "g"))
    (should (equal (test-memory--titles) '("B" "A")))
    ;; Refusing the confirmation keeps the file.
    (goto-char (point-min))
    (cl-letf (((symbol-function 'yes-or-no-p) (lambda (_prompt) nil)))
      (execute-kbd-macro (kbd "k")))
    (should (file-exists-p (expand-file-name ".agent-shell/memory/2025-02-02--b.md" root)))
    (goto-char (point-min))
    (let ((asked nil))
      (cl-letf (((symbol-function 'yes-or-no-p) (lambda (prompt) (setq asked prompt) t)))
        (execute-kbd-macro (kbd "k")))
      (should (string-search "2025-02-02--b.md" asked)))
    (should-not (file-exists-p (expand-file-name ".agent-shell/memory/2025-02-02--b.md" root)))
    (should (equal (test-memory--titles) '("A")))))

(ert-deftest test-memory/front-matter-quoting ()
  "Quoted front matter values are decoded; keys are case- and dash-insensitive."
  (agent-shell-test-with-project (root `(("e.md" . "---\nTitle: \"  spaced 标题 \"\ntask-type: feature\n---\n")))
    (let ((fm (agent-shell-memory-front-matter (expand-file-name "e.md" root))))
      (should (equal (alist-get 'title fm) "  spaced 标题 "))
      (should (equal (alist-get 'task_type fm) "feature")))))

(provide 'test-memory)
;;; test-memory.el ends here
