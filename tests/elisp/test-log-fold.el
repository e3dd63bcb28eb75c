;;; test-log-fold.el --- The live action log opens folded like the saved one  -*- lexical-binding: t; -*-

;; SPDX-License-Identifier: GPL-3.0-or-later

;;; Commentary:

;; Regression tests: the live log buffer was a wall of property drawers
;; while the saved file opens folded.  The live buffer is built by the
;; real `agent-shell-log-insert-entry' and `agent-shell-log-apply-update'
;; from parsed notification JSON carrying the org text rendered by the
;; bridge's writer, as the shell's handlers call them.

;;; Code:

(require 'ert)
(require 'agent-shell-log)
(require 'agent-shell-test-helpers)

(defun test-log-fold--entry (method json)
  "Return the params JSON of METHOD as the bridge notifies them."
  (agent-shell-test-render-log "test-log-fold" method json))

(defun test-log-fold--invisible-at (buffer text)
  "Return non-nil when the first TEXT in BUFFER is hidden."
  (with-current-buffer buffer
    (save-excursion
      (goto-char (point-min))
      (search-forward text)
      (invisible-p (match-beginning 0)))))

(ert-deftest test-log-fold/drawers-are-folded-live ()
  "New entries show their heading and body; the drawer is folded, also after an update."
  (let* ((agent-shell-log-notify-on-wait nil)
         (buf (agent-shell-log-buffer (format "fold-%s" (random 1000000)))))
    (unwind-protect
        (progn
          (agent-shell-log-insert-entry
           buf (test-log-fold--entry
                "log/entry" "{\"id\":\"t\",\"session_id\":\"s\",\"title\":\"修复 测试\",\"source\":\"user\",
                  \"timestamp\":\"2026-11-30T10:15:00+08:00\",\"properties\":{\"MODEL\":\"m\"},\"body\":[]}"))
          (agent-shell-log-insert-entry
           buf (test-log-fold--entry
                "log/entry" "{\"id\":\"w\",\"parent_id\":\"t\",\"session_id\":\"s\",\"todo\":\"WAIT\",
                  \"title\":\"run make\",\"source\":\"tool\",\"timestamp\":\"2026-11-30T10:16:00+08:00\",
                  \"properties\":{\"TOOL\":\"run_command\",\"RISK\":\"write\"},
                  \"body\":[{\"kind\":\"src\",\"lang\":\"sh\",\"text\":\"make 构建\"}]}"))
          (should-not (test-log-fold--invisible-at buf "修复 测试"))
          (should-not (test-log-fold--invisible-at buf "WAIT [2026-11-30 Mon 10:16] run make"))
          (should-not (test-log-fold--invisible-at buf "make 构建"))
          (should-not (test-log-fold--invisible-at buf ":PROPERTIES:"))
          (should (test-log-fold--invisible-at buf ":TOOL: run_command"))
          (should (test-log-fold--invisible-at buf ":MODEL: m"))
          (agent-shell-log-apply-update
           buf (test-log-fold--entry
                "log/update" "{\"id\":\"w\",\"session_id\":\"s\",\"todo\":\"APPROVED\",
                  \"properties\":{\"EXIT_CODE\":0}}"))
          (should-not (test-log-fold--invisible-at buf "APPROVED"))
          (should (test-log-fold--invisible-at buf ":EXIT_CODE: 0"))
          (should (test-log-fold--invisible-at buf ":TOOL: run_command"))
          ;; TAB on the drawer shows it again, as in any org buffer.
          (with-current-buffer buf
            (goto-char (point-min))
            (search-forward ":EXIT_CODE:")
            (re-search-backward "^:PROPERTIES:$")
            (org-cycle))
          (should-not (test-log-fold--invisible-at buf ":EXIT_CODE: 0")))
      (kill-buffer buf))))

(ert-deftest test-log-fold/overview-keeps-old-entries-folded ()
  "After an overview, new entries show folded like fresh ones; older stay folded.
Org 9.5 (Emacs 28) and Org 9.7 (Emacs 30) fold headings in different
ways: on both, a step or task arriving in a folded log shows its
heading and body with its drawer folded, and TAB folds it like any
other heading."
  (let* ((agent-shell-log-notify-on-wait nil)
         (buf (agent-shell-log-buffer (format "fold-%s" (random 1000000)))))
    (unwind-protect
        (progn
          (agent-shell-log-insert-entry
           buf (test-log-fold--entry
                "log/entry" "{\"id\":\"o-t\",\"session_id\":\"s\",\"title\":\"任务一\",\"source\":\"user\",
                  \"timestamp\":\"2026-11-30T10:15:00+08:00\",\"properties\":{\"MODEL\":\"m\"},\"body\":[]}"))
          (agent-shell-log-insert-entry
           buf (test-log-fold--entry
                "log/entry" "{\"id\":\"o-w\",\"parent_id\":\"o-t\",\"session_id\":\"s\",\"title\":\"run make\",
                  \"source\":\"tool\",\"timestamp\":\"2026-11-30T10:16:00+08:00\",
                  \"properties\":{\"TOOL\":\"run_command\"},
                  \"body\":[{\"kind\":\"src\",\"lang\":\"sh\",\"text\":\"make 构建\"}]}"))
          (with-current-buffer buf
            (switch-to-buffer buf)
            (org-overview))
          (should (test-log-fold--invisible-at buf "run make"))
          (should (test-log-fold--invisible-at buf "make 构建"))
          (agent-shell-log-insert-entry
           buf (test-log-fold--entry
                "log/entry" "{\"id\":\"o-c\",\"parent_id\":\"o-t\",\"session_id\":\"s\",\"title\":\"子步骤\",
                  \"source\":\"tool\",\"timestamp\":\"2026-11-30T10:17:00+08:00\",
                  \"properties\":{\"TOOL\":\"read_file\"},
                  \"body\":[{\"kind\":\"src\",\"lang\":\"text\",\"text\":\"子内容\"}]}"))
          (agent-shell-log-insert-entry
           buf (test-log-fold--entry
                "log/entry" "{\"id\":\"o-n\",\"session_id\":\"s\",\"title\":\"任务二\",\"source\":\"user\",
                  \"timestamp\":\"2026-11-30T10:18:00+08:00\",\"properties\":{\"STEP\":\"2\"},
                  \"body\":[{\"kind\":\"text\",\"text\":\"新的正文\"}]}"))
          (should-not (test-log-fold--invisible-at buf "子步骤"))
          (should-not (test-log-fold--invisible-at buf "子内容"))
          (should (test-log-fold--invisible-at buf ":TOOL: read_file"))
          (should-not (test-log-fold--invisible-at buf "任务二"))
          (should-not (test-log-fold--invisible-at buf "新的正文"))
          (should (test-log-fold--invisible-at buf ":STEP: 2"))
          (should (test-log-fold--invisible-at buf "run make"))
          (should (test-log-fold--invisible-at buf "make 构建"))
          (with-current-buffer buf
            (goto-char (point-min))
            (search-forward "任务二")
            (org-cycle))
          (should-not (test-log-fold--invisible-at buf "任务二"))
          (should (test-log-fold--invisible-at buf "新的正文")))
      (kill-buffer buf))))

(provide 'test-log-fold)
;;; test-log-fold.el ends here
