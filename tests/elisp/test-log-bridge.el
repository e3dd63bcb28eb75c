;;; test-log-bridge.el --- The live action log is the bridge's file, byte for byte  -*- lexical-binding: t; -*-

;; SPDX-License-Identifier: GPL-3.0-or-later

;;; Commentary:

;; The bridge renders every log entry once: it writes the text to
;; .agent-shell/logs/*.org and sends the same text with `log/entry'
;; and `log/update'.  A real turn on the real bridge (the scripted
;; mock model of agent-shell-test-session.el) runs a read-only command
;; whose output holds Chinese text, lines starting with `*' and `#+',
;; an overlong line and more lines than a block keeps, then a command
;; the user approves with `y' in the log.  The live buffer's entries
;; must equal the file's, byte for byte.

;;; Code:

(require 'ert)
(require 'cl-lib)
(require 'agent-shell-test-session)

(defconst test-log-bridge--notes
  (concat "* 标题 heading\n#+begin_src sh\n  #+TITLE: fake\n,* already escaped\n"
          ":END:\n" (make-string 700 ?长) "\n"
          (mapconcat (lambda (i) (format "第%d行 line %d" i i))
                     (number-sequence 1 400) "\n")
          "\n#+end_src\n")
  "A file whose output tries every escape and the line caps.")

(defun test-log-bridge--entries (text)
  "Return TEXT from its first heading on, encoded as UTF-8."
  (encode-coding-string
   (substring text (or (string-match "^\\*" text) (length text))) 'utf-8 t))

(defun test-log-bridge--file-text (file)
  "Return the contents of FILE decoded as UTF-8."
  (with-temp-buffer
    (let ((coding-system-for-read 'utf-8))
      (insert-file-contents file))
    (buffer-string)))

(ert-deftest test-log-bridge/live-buffer-equals-the-file ()
  "A real turn: the log buffer's entries are the file's, byte for byte."
  (test-shell--with-session (root)
    (agent-shell-test-write root "笔记.org" test-log-bridge--notes)
    (goto-char (point-max))
    (insert "log parity 日志")
    (let ((agent-shell-log-notify-on-wait nil)
          (log (agent-shell-log-buffer (agent-shell-session-name agent-shell--session))))
      (execute-kbd-macro (kbd "RET"))
      (test-shell--wait "the WAIT step" (lambda () (agent-shell-log-pending log)) 30)
      (with-current-buffer log
        (switch-to-buffer log)
        (let ((id (car (agent-shell-log-pending log))))
          (test-shell--wait "the permission request"
                            (lambda () (agent-shell-permissions--waiting-p id)))
          (goto-char (point-min))
          (re-search-forward (concat "^:LOG_ID: " (regexp-quote id) "$"))
          (execute-kbd-macro (kbd "y"))))
      ;; The task's DONE is the turn's last log write, after its summary.
      (test-shell--wait "the task's end"
                        (lambda () (with-current-buffer log
                                     (save-excursion
                                       (goto-char (point-min))
                                       (re-search-forward "^\\* DONE .*log parity" nil t))))
                        30)
      (should (file-directory-p (expand-file-name "输出" root)))
      (let* ((buffer-text (with-current-buffer log
                            (buffer-substring-no-properties (point-min) (point-max))))
             (file (buffer-local-value 'agent-shell-log--file log))
             (file-text (test-log-bridge--file-text file)))
        ;; The turn really produced what the comparison is about.
        (should (string-search "第1行 line 1" buffer-text))
        (should (string-search ",* 标题 heading" buffer-text))
        (should (string-search "  ,#+TITLE: fake" buffer-text))
        (should (string-search ",,* already escaped" buffer-text))
        (should (string-search "lines omitted" buffer-text))
        (should (string-search (concat (make-string 500 ?长) "…") buffer-text))
        (should (string-match-p "^\\*\\* DONE .*mkdir -p 输出" buffer-text))
        (should (string-match-p "^\\*\\* .*Summary: 3 model calls" buffer-text))
        (should (string-search ",* 完成 done\n,#+end_src not a keyword" buffer-text))
        (should (equal (test-log-bridge--entries buffer-text)
                       (test-log-bridge--entries file-text)))))))

(provide 'test-log-bridge)
;;; test-log-bridge.el ends here
