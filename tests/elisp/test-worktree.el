;;; test-worktree.el --- Tests of sessions in git worktrees  -*- lexical-binding: t; -*-

;; SPDX-License-Identifier: GPL-3.0-or-later

;;; Commentary:

;; Real git repositories in temporary directories: `.worktreeinclude'
;; copies an untracked `.env.local' (and nothing through a link), a real
;; session's edit lands in the worktree only, and the worktree is
;; finished with keep, merge and remove; remove shows what a dirty or
;; unmerged worktree would lose and removes nothing without a yes.

;;; Code:

(require 'ert)
(require 'cl-lib)
(require 'agent-shell-test-session)
(require 'agent-shell-worktree)
(require 'agent-shell-sessions)

(defconst test-worktree--files
  '((".gitignore" . ".env.local\n*.local\n")
    (".worktreeinclude" . "# local settings, never committed\n.env.local\n*.local\n"))
  "Files of the test repository.")

(defmacro test-worktree--with-repo (spec &rest body)
  "Run BODY with a repository and a worktree location; SPEC is (ROOT PLACE).
ROOT has `test-worktree--files' committed and an untracked `.env.local';
PLACE is an empty directory that `agent-shell-worktree-directory' names."
  (declare (indent 1) (debug ((symbolp symbolp) body)))
  (let ((place (make-symbol "place")))
    `(agent-shell-test-with-project (,(car spec) test-worktree--files)
       (let* ((,place (file-name-as-directory
                       (file-truename (make-temp-file "agent-shell-worktrees-" t))))
              (agent-shell-worktree-directory ,place)
              (process-environment (agent-shell-test-git-environment)))
         (unwind-protect
             (let ((,(cadr spec) ,place))
               (agent-shell-test-write ,(car spec) ".env.local" "SECRET=密钥 key\n")
               ,@body)
           (delete-directory ,place t))))))

(defun test-worktree--dir (place root branch)
  "Return the worktree directory of BRANCH of ROOT under PLACE."
  (file-name-as-directory
   (expand-file-name (replace-regexp-in-string "/" "-" branch)
                     (expand-file-name (file-name-nondirectory (directory-file-name root))
                                       place))))

(defun test-worktree--read (file)
  "Return the contents of FILE as text."
  (with-temp-buffer
    (insert-file-contents file)
    (buffer-string)))

(defun test-worktree--branches (root)
  "Return the branch names of ROOT's repository."
  (split-string (agent-shell-test-git root "branch" "--format=%(refname:short)") "\n" t))

(ert-deftest test-worktree/include-copies-untracked-files-not-links ()
  "`.worktreeinclude' copies `.env.local'; a link and unnamed files stay behind.
The branch name proposed comes from the prompt's words; the default
location is beside the repository."
  (test-worktree--with-repo (root place)
    (let ((outside (make-temp-file "agent-shell-outside-" nil ".txt" "外面 outside\n")))
      (unwind-protect
          (progn
            (make-symbolic-link outside (expand-file-name "linked.local" root))
            (agent-shell-test-write root "notes.txt" "不要复制 not copied\n")
            (let ((dir (agent-shell-worktree-create root "agent/复制-copy")))
              (should (equal dir (test-worktree--dir place root "agent/复制-copy")))
              (should (equal (test-worktree--read (expand-file-name ".env.local" dir))
                             "SECRET=密钥 key\n"))
              (should-not (file-exists-p (expand-file-name "linked.local" dir)))
              (should-not (file-exists-p (expand-file-name "notes.txt" dir)))
              (should (file-exists-p (expand-file-name "中文.py" dir)))
              (should (agent-shell-worktree-linked-p dir))
              (should (equal (agent-shell-worktree-origin dir) "main"))
              (should (equal (agent-shell-sessions-git-head dir)
                             '("agent/复制-copy" . t)))
              (should (equal (agent-shell-sessions-git-head root) '("main")))))
        (delete-file outside))))
  (should (equal (agent-shell-worktree-branch-from-prompt "Fix the failing test, 快!")
                 "agent/fix-the-failing-test"))
  (should-not (agent-shell-worktree-branch-from-prompt "修复测试"))
  (let ((agent-shell-worktree-directory nil))
    (should (equal (agent-shell-worktree-directory-for "/src/项目/" "agent/x")
                   "/src/项目.worktrees/agent-x/")))
  (test-worktree--with-repo (root _place)
    (should-error (agent-shell-worktree-create root "bad..name") :type 'user-error)))

(ert-deftest test-worktree/session-edits-the-worktree-then-keep-merge-remove ()
  "A real session in a worktree edits it alone; keep, merge and remove finish it.
Remove on the dirty worktree shows the loss and, refused, keeps all."
  (test-worktree--with-repo (root place)
    (test-shell--bridge)
    (let* ((default-directory root)
           (main-shell (test-shell--start-session root))
           (asked-branch nil)
           ;; The prompt typed in the main shell names the branch and goes along.
           (shell (with-current-buffer main-shell
                    (agent-shell-set-input "wt-edit 改一下")
                    (cl-letf (((symbol-function 'read-string)
                               (lambda (prompt &optional _initial _history default &rest _)
                                 (push prompt asked-branch)
                                 default)))
                      (call-interactively #'agent-shell-start-worktree))))
           (dir (test-worktree--dir place root "agent/wt-edit"))
           (edited (expand-file-name "改动.txt" dir))
           (log (with-current-buffer shell
                  (agent-shell-log-buffer (agent-shell-session-name agent-shell--session))))
           (asked nil))
      (unwind-protect
          (progn
            (with-current-buffer shell
              (should (equal (agent-shell-session-root agent-shell--session) dir)))
            (should (equal (length asked-branch) 1))
            (should (string-search "agent/wt-edit" (car asked-branch)))
            (with-current-buffer main-shell
              (should (equal (agent-shell-input) "")))
            ;; The dashboard names the branch and says it is a worktree.
            (with-current-buffer (agent-shell-sessions)
              (goto-char (point-min))
              (should (search-forward "agent/wt-edit (worktree)" nil t))
              (should (eq (tabulated-list-get-id) shell))
              (kill-buffer))
            (test-shell--wait "the edit's WAIT step" (lambda () (agent-shell-log-pending log)) 20)
            (test-shell--wait "the permission request"
                              (lambda () (agent-shell-permissions--waiting-p
                                          (car (agent-shell-log-pending log)))))
            (agent-shell-permissions-log-decide (car (agent-shell-log-pending log)) 'approve nil)
            (with-current-buffer shell
              (test-shell--wait "the turn's end"
                                (lambda () (and (string-search "wt-edit 完成 done."
                                                               (test-shell--transcript))
                                                (eq (agent-shell-session-state
                                                     agent-shell--session)
                                                    'idle)))
                                20))
            (should (equal (test-worktree--read edited) "工作树 worktree edit\n"))
            (should-not (file-exists-p (expand-file-name "改动.txt" root)))
            ;; keep
            (with-current-buffer shell
              (agent-shell-worktree-finish "keep"))
            (should (file-directory-p dir))
            ;; remove, refused: the uncommitted edit is shown
            (cl-letf (((symbol-function 'yes-or-no-p)
                       (lambda (prompt) (push prompt asked) nil)))
              (with-current-buffer shell
                (agent-shell-worktree-finish "remove")))
            (should (= (length asked) 1))
            (should (string-search "改动.txt"
                                   (with-current-buffer "*agent-shell worktree*"
                                     (buffer-string))))
            (should (file-exists-p edited))
            (should (buffer-live-p shell))
            ;; merge, once committed
            (agent-shell-test-git dir "add" "改动.txt")
            (agent-shell-test-git dir "commit" "-q" "-m" "工作树 edit")
            (with-current-buffer shell
              (let ((agent-shell-worktree-use-magit nil))
                (agent-shell-worktree-finish "merge")))
            (should (equal (test-worktree--read (expand-file-name "改动.txt" root))
                           "工作树 worktree edit\n"))
            ;; remove, now that nothing would be lost: no question
            (cl-letf (((symbol-function 'yes-or-no-p)
                       (lambda (prompt) (ert-fail (list "asked" prompt)))))
              (with-current-buffer shell
                (agent-shell-worktree-finish "remove")))
            (should-not (file-exists-p dir))
            (should-not (buffer-live-p shell))
            (should-not (member "agent/wt-edit" (test-worktree--branches root))))
        (dolist (buffer (list shell main-shell))
          (when (buffer-live-p buffer) (kill-buffer buffer)))
        (agent-shell-test-cleanup-buffers dir)))))

(ert-deftest test-worktree/remove-refuses-to-lose-unmerged-commits-silently ()
  "An unmerged commit is listed and removing needs a yes; with it, all goes."
  (test-worktree--with-repo (root _place)
    (let ((dir (agent-shell-worktree-create root "agent/unmerged"))
          (asked nil))
      (agent-shell-test-write dir "新.txt" "新 new\n")
      (agent-shell-test-git dir "add" "新.txt")
      (agent-shell-test-git dir "commit" "-q" "-m" "未合并 unmerged work")
      (cl-letf (((symbol-function 'yes-or-no-p)
                 (lambda (prompt) (push prompt asked) nil)))
        (should-not (agent-shell-worktree-remove dir)))
      (should (= (length asked) 1))
      (let ((shown (with-current-buffer "*agent-shell worktree*" (buffer-string))))
        (should (string-search "未合并 unmerged work" shown))
        (should (string-search "Commits not merged" shown))
        (should-not (string-search "Uncommitted" shown)))
      (should (file-directory-p dir))
      (should (member "agent/unmerged" (test-worktree--branches root)))
      (let ((default-directory root))
        (should-error (agent-shell-worktree-finish "keep") :type 'user-error))
      (cl-letf (((symbol-function 'yes-or-no-p) (lambda (_prompt) t)))
        (should (agent-shell-worktree-remove dir)))
      (should-not (file-exists-p dir))
      (should-not (member "agent/unmerged" (test-worktree--branches root)))
      (should (equal (test-worktree--branches root) '("main"))))))

(provide 'test-worktree)
;;; test-worktree.el ends here
