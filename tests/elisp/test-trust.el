;;; test-trust.el --- Tests of trusting the files a project ships  -*- lexical-binding: t; -*-

;; SPDX-License-Identifier: GPL-3.0-or-later

;;; Commentary:

;; One mechanism trusts a project's allowlist.el, config.el, roles.el,
;; .mcp.json and hooks.json (agent-shell-trust.el).  The table's commands and bridge
;; methods exist, the review shows the file and asks what trusting lets it
;; do, and the REAL bridge (AGENT_SHELL_TEST_BRIDGE) applies exactly the
;; bytes the user saw: a file changed after its review is refused.

;;; Code:

(require 'ert)
(require 'cl-lib)
(require 'agent-shell)
(require 'agent-shell-test-helpers)
(require 'agent-shell-test-session)

(defconst test-trust--config
  ";; 项目设置\n(setq agent-shell-sandbox nil)\n"
  "A project's config.el that turns the sandbox off.")

(defun test-trust--sandbox-setting (root)
  "Return what the bridge makes of ROOT's config.el in a new session."
  (alist-get 'projectSetting
             (alist-get 'sandbox
                        (test-shell--sync "session/new"
                                          `((cwd . ,(directory-file-name root)))))))

(defmacro test-trust--messages (var &rest body)
  "Run BODY with VAR bound to a function giving the messages, newest first."
  (declare (indent 1) (debug (symbolp body)))
  (let ((seen (make-symbol "seen")))
    `(let ((,seen nil))
       (cl-letf (((symbol-function 'message)
                  (lambda (format &rest args)
                    (when format (push (apply #'format format args) ,seen)))))
         (let ((,var (lambda () ,seen)))
           ,@body)))))

(ert-deftest test-trust/every-kind-has-its-command-and-bridge-method ()
  "Each kind of the table has a current command and a method the bridge offers.
The bridge sends its own table of the same kinds in `initialize'; the
file, method and command of each kind are the same on both sides."
  (test-shell--bridge)
  (let* ((info (agent-shell-bridge-info agent-shell-bridge--current))
         (methods (alist-get 'methods info))
         (bridge (mapcar (lambda (entry)
                           (list (intern (alist-get 'kind entry)) (alist-get 'path entry)
                                 (alist-get 'method entry) (intern (alist-get 'command entry))))
                         (alist-get 'trusted_files info))))
    (should (equal bridge
                   (mapcar (lambda (entry)
                             (list (car entry) (plist-get (cdr entry) :file)
                                   (plist-get (cdr entry) :method)
                                   (plist-get (cdr entry) :command)))
                           agent-shell-trust-kinds)))
    (should (member "ping" methods))
    (should (equal (mapcar #'car agent-shell-trust-kinds) '(allowlist config roles mcp hooks)))
    (pcase-dolist (`(,kind . ,plist) agent-shell-trust-kinds)
      (let ((command (plist-get plist :command)))
        (should (equal (list kind (commandp command) (get command 'byte-obsolete-info))
                       (list kind t nil)))
        (should (eq command (intern (format "agent-shell-trust-%s" kind))))
        (should (member (plist-get plist :method) methods))
        (should (string-search (format "M-x %s" command) (agent-shell-trust-notice kind)))))))

(ert-deftest test-trust/allowlist-lets-its-commands-run ()
  "An allowlist applies only after `agent-shell-trust-allowlist', checked by the bridge."
  (agent-shell-test-with-project
      (root '((".agent-shell/allowlist.el"
               . "(setq agent-shell-allowlist '((command . \"git push --force origin 主分支\")))\n")))
    (let* ((cwd (directory-file-name root))
           (check (lambda ()
                    (alist-get 'decision
                               (test-shell--sync
                                "policy/check"
                                `((cwd . ,cwd)
                                  (command . "git push --force origin 主分支")))))))
      (should (equal (funcall check) "deny"))
      (agent-shell-trust-allowlist root)
      (test-shell--wait "the allowlist to be trusted"
                        (lambda () (equal (funcall check) "allow"))))))

(ert-deftest test-trust/project-file-asks-which-and-trusts-that-one ()
  "`agent-shell-trust-project-file' offers the files the project has, shows the
chosen one, asks what trusting it lets it do, and the bridge applies it."
  (agent-shell-test-with-project
      (root `((".agent-shell/config.el" . ,test-trust--config)
              (".agent-shell/allowlist.el" . "(setq agent-shell-allowlist nil)\n")))
    (should (equal (test-trust--sandbox-setting root) "untrusted"))
    (let ((offered nil) (asked nil) (shown nil))
      (test-trust--messages messages
        (cl-letf (((symbol-function 'completing-read)
                   (lambda (_prompt table &rest _)
                     (setq offered (mapcar #'car table))
                     ".agent-shell/config.el"))
                  ((symbol-function 'yes-or-no-p)
                   (lambda (prompt)
                     (setq asked prompt
                           shown (with-current-buffer agent-shell-trust--review-buffer
                                   (list (buffer-string) major-mode buffer-read-only)))
                     t)))
          (call-interactively #'agent-shell-trust-project-file))
        (test-shell--wait "the trust answer"
                          (lambda () (cl-find-if (lambda (m) (string-prefix-p "Trusted" m))
                                                 (funcall messages)))
                          20)
        (should (string-match-p "\\`Trusted .*/\\.agent-shell/config\\.el: sandbox "
                                (car (funcall messages)))))
      (should (equal offered '(".agent-shell/allowlist.el" ".agent-shell/config.el")))
      (should (string-search "letting it turn the sandbox off" asked))
      (should (equal shown (list test-trust--config 'emacs-lisp-mode t)))
      (should-not (get-buffer agent-shell-trust--review-buffer)))
    (should (equal (test-trust--sandbox-setting root) "off"))))

(ert-deftest test-trust/file-changed-after-its-review-is-refused ()
  "What is trusted is the bytes shown: a change made during the review is refused."
  (agent-shell-test-with-project (root `((".agent-shell/config.el" . ,test-trust--config)))
    (test-trust--messages messages
      (cl-letf (((symbol-function 'yes-or-no-p)
                 (lambda (_prompt)
                   (agent-shell-test-write root ".agent-shell/config.el"
                                           (concat test-trust--config ";; 改过了\n"))
                   t)))
        (agent-shell-trust-config root t))
      (test-shell--wait "the refusal"
                        (lambda () (cl-find-if (lambda (m) (string-prefix-p "Trusting" m))
                                               (funcall messages)))
                        20)
      (should (string-prefix-p "Trusting config.el failed: " (car (funcall messages)))))
    (should (equal (test-trust--sandbox-setting root) "untrusted"))))

(ert-deftest test-trust/nothing-to-trust-says-what-could-be ()
  "A project shipping none of the files is told which files could be trusted."
  (agent-shell-test-with-project (root nil)
    (let ((err (should-error (agent-shell-trust--read-kind root) :type 'user-error)))
      (should (string-search ".agent-shell/allowlist.el, .agent-shell/config.el, \
.agent-shell/roles.el, .mcp.json, .agent-shell/hooks.json" (cadr err))))
    (should-error (agent-shell-trust-roles root) :type 'user-error)))

(ert-deftest test-trust/review-buffer-goes-away ()
  "Regression: the review buffer stayed after answering.
It is shown while the question is asked and killed after the answer,
also when the question is quit."
  (let ((file "/tmp/项目/.agent-shell/allowlist.el")
        (bytes (encode-coding-string "((command . \"make 测试\"))\n" 'utf-8))
        (seen nil))
    (cl-letf (((symbol-function 'yes-or-no-p)
               (lambda (_prompt)
                 (setq seen (with-current-buffer agent-shell-trust--review-buffer
                              (buffer-string)))
                 t)))
      (should (agent-shell-trust--review 'allowlist file bytes)))
    (should (string-search "make 测试" seen))
    (should-not (get-buffer agent-shell-trust--review-buffer))
    (cl-letf (((symbol-function 'yes-or-no-p) (lambda (_prompt) (signal 'quit nil))))
      (should (condition-case nil
                  (progn (agent-shell-trust--review 'allowlist file bytes) nil)
                (quit t))))
    (should-not (get-buffer agent-shell-trust--review-buffer))))

(ert-deftest test-trust/mcp-review-names-the-environment-the-file-reads ()
  "Trusting a project's `.mcp.json' hands it the variables it names: the question says so."
  (let ((asked nil)
        (mode nil)
        (text "{\"mcpServers\": {\"备忘\": {\"command\": \"${TOOL_BIN:-uvx}\",
 \"args\": [\"--key\", \"${DEEPSEEK_API_KEY}\"], \"env\": {\"K\": \"${DEEPSEEK_API_KEY}\"}}}}"))
    (cl-letf (((symbol-function 'yes-or-no-p)
               (lambda (prompt)
                 (setq asked prompt
                       mode (with-current-buffer agent-shell-trust--review-buffer major-mode))
                 nil)))
      (should-not (agent-shell-trust--review 'mcp "/tmp/项目/.mcp.json"
                                             (encode-coding-string text 'utf-8))))
    (should (string-search "(they get $DEEPSEEK_API_KEY, $TOOL_BIN from your environment)" asked))
    (should (string-search "/tmp/项目/.mcp.json" asked))
    (should (eq mode 'js-mode))
    (should-not (get-buffer agent-shell-trust--review-buffer))
    (setq asked nil)
    (cl-letf (((symbol-function 'yes-or-no-p) (lambda (prompt) (setq asked prompt) t)))
      (should (agent-shell-trust--review 'mcp "/tmp/.mcp.json" "{\"mcpServers\": {}}")))
    (should-not (string-search "environment" asked))))

(defconst test-trust--hooks
  "{\"pre_tool\": [{\"tools\": [\"run_command\"], \"command\": \"./检查\"}],
 \"turn_end\": [{\"command\": \"./通知\"}]}\n"
  "A project's hooks.json.")

(defun test-trust--hooks-status (root)
  "Return what the bridge makes of ROOT's hooks.json in a new session."
  (alist-get 'projectHooks
             (test-shell--sync "session/new" `((cwd . ,(directory-file-name root))))))

(ert-deftest test-trust/hooks-run-only-once-trusted-and-until-changed ()
  "`agent-shell-trust-hooks' shows hooks.json, asks what its commands may do,
and the bridge uses the file from then on; a change needs trust again."
  (agent-shell-test-with-project (root `((".agent-shell/hooks.json" . ,test-trust--hooks)))
    (should (equal (test-trust--hooks-status root) "untrusted"))
    (should (string-search "M-x agent-shell-trust-hooks" (agent-shell-trust-notice 'hooks)))
    (let ((asked nil) (shown nil))
      (test-trust--messages messages
        (cl-letf (((symbol-function 'yes-or-no-p)
                   (lambda (prompt)
                     (setq asked prompt
                           shown (with-current-buffer agent-shell-trust--review-buffer
                                   (list (buffer-string) major-mode buffer-read-only)))
                     t)))
          (call-interactively #'agent-shell-trust-hooks))
        (test-shell--wait "the trust answer"
                          (lambda () (cl-find-if (lambda (m) (string-prefix-p "Trusted" m))
                                                 (funcall messages)))
                          20)
        (should (string-match-p
                 "\\`Trusted .*/\\.agent-shell/hooks\\.json: pre_tool 1, turn_end 1 (run in the sandbox"
                 (car (funcall messages)))))
      (should (string-search "around the agent's steps (in the sandbox)" asked))
      (should (equal shown (list test-trust--hooks 'js-mode t))))
    (should (equal (test-trust--hooks-status root) "trusted"))
    (agent-shell-test-write root ".agent-shell/hooks.json" (concat test-trust--hooks " "))
    (should (equal (test-trust--hooks-status root) "untrusted"))))

(provide 'test-trust)
;;; test-trust.el ends here
