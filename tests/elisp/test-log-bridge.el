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
;; must equal the file's, byte for byte, once the updates the file
;; appends (headings with LOG_UPDATE) are applied to their steps.

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

(defun test-log-bridge--parse (text)
  "Return TEXT's headings as plists, in order, from its first heading on.
Each has :stars :todo :stamp :title :props (raw lines by key, in
order) and :body."
  (let ((chunks (with-temp-buffer
                  (insert text)
                  (goto-char (point-min))
                  (let (starts)
                    (while (re-search-forward "^\\*+ " nil t)
                      (push (match-beginning 0) starts))
                    (setq starts (nreverse starts))
                    (cl-loop for (beg end) on starts
                             collect (buffer-substring-no-properties
                                      beg (or end (point-max)))))))
        out)
    (dolist (chunk chunks (nreverse out))
      (string-match "\\`\\(\\*+\\) \\(?:\\([A-Z]+\\) \\)?\\(\\[[^]\n]+\\]\\) ?\\([^\n]*\\)\n\
:PROPERTIES:\n\\(\\(?:.*\n\\)*?\\):END:\n" chunk)
      (let ((head (list :stars (match-string 1 chunk) :todo (match-string 2 chunk)
                        :stamp (match-string 3 chunk) :title (match-string 4 chunk)
                        :body (substring chunk (match-end 0))))
            (drawer (match-string 5 chunk)))
        (push (append head
                      (list :props (mapcar (lambda (line)
                                             (string-match "\\`:\\([^:]+\\):" line)
                                             (cons (match-string 1 line) line))
                                           (split-string drawer "\n" t))))
              out)))))

(defun test-log-bridge--fold (text)
  "Return the log file TEXT with each appended update applied to its entry.
The file is only appended to: a step's later state (its new TODO
keyword, changed properties, added output) follows as a heading with
LOG_UPDATE naming it.  Folded, the file must read as the live buffer."
  (let* ((headings (test-log-bridge--parse text))
         (entries (cl-remove-if (lambda (h) (assoc "LOG_UPDATE" (plist-get h :props)))
                                headings)))
    (dolist (h headings)
      (when-let ((target (cdr (assoc "LOG_UPDATE" (plist-get h :props)))))
        (let* ((id (string-trim (substring target (length ":LOG_UPDATE:"))))
               (entry (cl-find-if (lambda (e) (equal (cdr (assoc "LOG_ID" (plist-get e :props)))
                                                     (concat ":LOG_ID: " id)))
                                  entries)))
          (when (plist-get h :todo) (plist-put entry :todo (plist-get h :todo)))
          (dolist (prop (plist-get h :props))
            (unless (member (car prop) '("SOURCE" "LOG_UPDATE"))
              (if-let ((cell (assoc (car prop) (plist-get entry :props))))
                  (setcdr cell (cdr prop))
                (plist-put entry :props (append (plist-get entry :props) (list prop))))))
          ;; Blocks of a body are a blank line apart, as the renderer joins them.
          (let ((body (plist-get entry :body)) (added (plist-get h :body)))
            (plist-put entry :body
                       (concat body
                               (and (not (string-empty-p body)) (not (string-empty-p added))
                                    "\n")
                               added))))))
    (mapconcat (lambda (e)
                 (concat (plist-get e :stars) " "
                         (if (plist-get e :todo) (concat (plist-get e :todo) " ") "")
                         (plist-get e :stamp)
                         (if (string-empty-p (plist-get e :title)) "" (concat " " (plist-get e :title)))
                         "\n:PROPERTIES:\n"
                         (mapconcat (lambda (p) (concat (cdr p) "\n")) (plist-get e :props) "")
                         ":END:\n" (plist-get e :body)))
               entries "")))

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
        ;; The file has the steps' later states appended, as headings
        ;; that name them; applied, it reads exactly as the live buffer.
        (should (string-search ":LOG_UPDATE: " file-text))
        (should (equal (test-log-bridge--entries buffer-text)
                       (test-log-bridge--entries (test-log-bridge--fold file-text))))))))

(provide 'test-log-bridge)
;;; test-log-bridge.el ends here
