;;; test-roles.el --- Tests of roles in the shell and in session/new  -*- lexical-binding: t; -*-

;; SPDX-License-Identifier: GPL-3.0-or-later

;;; Commentary:

;; A delegated role shows as one foldable entry holding the role, its
;; steps and its report; the role options reach the real bridge's
;; `session/new'.

;;; Code:

(require 'ert)
(require 'agent-shell)
(require 'agent-shell-roles)
(require 'agent-shell-test-helpers)
(require 'agent-shell-test-session)

(ert-deftest test-roles/delegate-entry-shows-role-steps-and-report ()
  "A `delegate' call is one entry: its line names the role, its body the report."
  (test-shell--with-shell (sid)
    (test-shell--emit
     (test-shell--tool sid "d1" "delegate explorer: where is add defined?"
                       '((role . "explorer") (task . "where is add defined?")))
     (test-shell--tool sid "d1-r" "[explorer] read_file calc.py" '((path . "calc.py")))
     (test-shell--tool-done sid "d1-r" "completed" '(rawOutput . ((path . "calc.py"))))
     (test-shell--tool-done sid "d1" "completed"
                            '(rawOutput . ((role . "explorer") (steps . 3)
                                           (report . "add 在 calc.py:1-2，写成了减法")))))
    (test-shell--wait "the report" (lambda () (string-search "写成了减法"
                                                            (test-shell--transcript))))
    (let ((transcript (test-shell--transcript)))
      (should (string-match-p "^▸ ● delegate explorer: where is add defined\\?$" transcript))
      (should (string-match-p "^▸ ● \\[explorer\\] read_file calc\\.py$" transcript)))
    ;; Folded until TAB, like every entry.
    (goto-char (point-min))
    (search-forward "Report:")
    (should (invisible-p (point)))
    (let ((entry (test-shell--entry-text "delegate explorer")))
      (should (string-search "Role explorer, 3 steps" entry))
      (should (string-search "Report:\nadd 在 calc.py:1-2，写成了减法" entry)))))

(ert-deftest test-roles/options-become-session-new-params ()
  "`agent-shell-roles' and `agent-shell-review-changes' reach the bridge's session."
  (agent-shell-test-with-project (root nil)
    (let ((agent-shell-review-changes nil)
          (agent-shell-roles '((:name "explorer" :model "cheap-model" :max-steps 4)
                               (:name "docs" :prompt "Write docs."
                                :tools ("read_file" "task_complete")
                                :write-globs ("docs/*")))))
      (let ((params (agent-shell-new-session-params root)))
        (should (eq (alist-get 'review params) :json-false))
        (should (equal (alist-get 'roles params)
                       [((name . "explorer") (max_steps . 4) (model . "cheap-model"))
                        ((name . "docs") (prompt . "Write docs.")
                         (tools . ["read_file" "task_complete"])
                         (write_globs . ["docs/*"]))]))
        (let* ((result (test-shell--sync "session/new" params))
               (roles (append (alist-get 'roles result) nil))
               (explorer (cl-find "explorer" roles :key (lambda (r) (alist-get 'name r))
                                  :test #'equal)))
          (should (eq (alist-get 'review result) :json-false))
          (should (equal (alist-get 'model explorer) "cheap-model"))
          (should (cl-find "docs" roles :key (lambda (r) (alist-get 'name r))
                           :test #'equal)))))
    (let ((agent-shell-review-changes t) (agent-shell-roles nil))
      (should (eq (alist-get 'review (agent-shell-new-session-params root)) t)))))

(ert-deftest test-roles/project-roles-need-trust ()
  "A project's roles.el is announced until trusted; trusting it lets sessions use it."
  (agent-shell-test-with-project
      (root '((".agent-shell/roles.el"
               . "(setq agent-shell-roles '((:name \"docs\" :prompt \"写文档\"
  :tools (\"read_file\" \"task_complete\"))))\n")))
    (test-shell--bridge)
    (let* ((params `((cwd . ,(directory-file-name root))))
           (before (test-shell--sync "session/new" params)))
      (should (string-search "agent-shell-trust-roles" (agent-shell-roles-notice before)))
      (let ((done nil))
        (cl-letf (((symbol-function 'message) (lambda (&rest args)
                                                 (setq done (apply #'format args)))))
          (agent-shell-trust-roles root)
          (test-shell--wait "the trust answer" (lambda () done) 20))
        (should (string-match-p "\\`Trusted .*/\\.agent-shell/roles\\.el: roles docs\\'" done)))
      (let ((after (test-shell--sync "session/new" params)))
        (should-not (agent-shell-roles-notice after))
        (should (cl-find "docs" (append (alist-get 'roles after) nil)
                         :key (lambda (r) (alist-get 'name r)) :test #'equal))))))

(provide 'test-roles)
;;; test-roles.el ends here
