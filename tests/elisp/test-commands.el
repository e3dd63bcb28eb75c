;;; test-commands.el --- Tests of /commands and instruction files  -*- lexical-binding: t; -*-

;; SPDX-License-Identifier: GPL-3.0-or-later

;;; Commentary:

;; Completion of custom /commands at the prompt reads the real command
;; files of a temporary project and user directory.  The session tests
;; start a real bridge with the scripted model (see
;; agent-shell-test-session.el).

;;; Code:

(require 'ert)
(require 'agent-shell)
(require 'agent-shell-test-helpers)
(require 'agent-shell-test-session)

(defmacro test-commands--with-user-dir (spec &rest body)
  "Run BODY with XDG_CONFIG_HOME set to a fresh directory; SPEC is (DIR-VAR).
DIR-VAR is bound to its agent-shell subdirectory."
  (declare (indent 1) (debug ((symbolp) body)))
  (let ((base (make-symbol "base")))
    `(let* ((,base (make-temp-file "agent-shell-xdg-" t))
            (,(car spec) (expand-file-name "agent-shell" ,base))
            (process-environment (cons (concat "XDG_CONFIG_HOME=" ,base)
                                       process-environment)))
       (make-directory (expand-file-name "commands" ,(car spec)) t)
       (unwind-protect (progn ,@body)
         (delete-directory ,base t)))))

(defun test-commands--capf-at-input (input)
  "Put INPUT at the prompt and return the completion table data, or nil."
  (agent-shell-set-input input)
  (agent-shell-commands-completion-at-point))

(ert-deftest test-commands/completion-offers-commands-with-descriptions ()
  "A /prefix at the prompt completes project and user commands with their descriptions."
  (test-commands--with-user-dir (user)
    (with-temp-file (expand-file-name "commands/review.md" user)
      (insert "---\ndescription: Review the diff\n---\nReview.\n"))
    (with-temp-file (expand-file-name "commands/fixit.md" user)
      (insert "---\ndescription: \"Mine wins\"\n---\nMine: $ARGUMENTS\n"))
    (agent-shell-test-with-project
        (root '((".agent-shell/commands/fixit.md"
                 . "---\ndescription: 修复一个问题\n---\nFix: $ARGUMENTS\n")
                (".agent-shell/commands/explain.md"
                 . "---\ndescription: 解释代码\nmode: ask\n---\nExplain $1\n")
                (".agent-shell/commands/notes.txt" . "not a command\n")))
      (with-temp-buffer
        (agent-shell--setup "cmd-test" root nil)
        (let* ((data (test-commands--capf-at-input "/"))
               (names (all-completions "" (nth 2 data)))
               (annotate (plist-get (nthcdr 3 data) :annotation-function)))
          (should (equal (sort names #'string<) '("act" "ask" "explain" "fixit" "review")))
          (should (equal (funcall annotate "explain") "  解释代码"))
          ;; The user's own file wins over the project's, as in the bridge.
          (should (equal (funcall annotate "fixit") "  Mine wins"))
          (should (equal (funcall annotate "ask")
                         "  Run this one prompt in ask mode (no edits, no commands)")))
        ;; TAB completes a unique prefix in place.
        (agent-shell-set-input "/exp")
        (agent-shell-toggle-entry)
        (should (equal (agent-shell-input) "/explain"))
        ;; Only the first word of an input starting with / is a command name.
        (should-not (test-commands--capf-at-input "explain /fi"))
        (agent-shell-set-input "/fixit some text")
        (should-not (agent-shell-commands-completion-at-point))))))

(ert-deftest test-commands/completion-outside-a-shell-offers-nothing ()
  "In a buffer with no session the completion offers nothing and signals nothing."
  (with-temp-buffer
    (insert "/fix")
    (should-not agent-shell--session)
    (should-not (agent-shell-commands-completion-at-point))))

(ert-deftest test-commands/unknown-command-is-refused-and-input-kept ()
  "An unknown /x is refused by the bridge: nothing is sent and the input stays."
  (test-shell--with-session (root)
    (goto-char (point-max))
    (insert "/nosuch 中文")
    (execute-kbd-macro (kbd "RET"))
    (test-shell--wait "the refusal"
                      (lambda () (string-search "unknown command /nosuch"
                                                (test-shell--transcript)))
                      20)
    (should (equal (agent-shell-input) "/nosuch 中文"))
    (should (eq (agent-shell-session-state agent-shell--session) 'idle))))

(ert-deftest test-commands/session-lists-and-opens-its-instructions ()
  "The session notice names AGENTS.md and `agent-shell-instructions' visits it."
  (agent-shell-test-with-project (root '(("AGENTS.md" . "# 规则\nUse tabs.\n")))
    (test-shell--bridge)
    (let ((shell (test-shell--start-session root)))
      (unwind-protect
          (with-current-buffer shell
            (test-shell--wait "the instructions notice"
                              (lambda () (string-search "Instructions loaded: AGENTS.md"
                                                        (test-shell--transcript)))
                              20)
            (let ((visited (save-window-excursion
                             (agent-shell-instructions)
                             (current-buffer))))
              (unwind-protect
                  (should (equal (buffer-file-name visited)
                                 (expand-file-name "AGENTS.md" root)))
                (kill-buffer visited))))
        (kill-buffer shell)))))

(ert-deftest test-commands/no-instructions-says-where-they-would-be ()
  "Without instruction files, `agent-shell-instructions' says where to put one."
  (with-temp-buffer
    (setq agent-shell--session (agent-shell-session-create))
    (let ((err (should-error (agent-shell-instructions) :type 'user-error)))
      (should (string-search "AGENTS.md" (cadr err))))))

(provide 'test-commands)
;;; test-commands.el ends here
