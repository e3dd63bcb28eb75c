;;; test-log.el --- Tests for agent-shell-log.el  -*- lexical-binding: t; -*-

;; SPDX-License-Identifier: GPL-3.0-or-later

;;; Commentary:

;; ERT tests of the live action-log buffer: incremental placement, in-place
;; updates, the confirmation keys driven through the real keymap, review
;; commands, and the shared fixture written by the Python writer
;; (tests/fixtures/orglog), which the buffer must reproduce exactly.
;; Entries get their org text from the bridge's own writer
;; (`agent-shell-test-render-log'), as they do from a live bridge.

;;; Code:

(require 'ert)
(require 'cl-lib)
(require 'org-element)
(require 'agent-shell-log)
(require 'agent-shell-log-keys)
(require 'agent-shell-test-helpers)

(defconst test-log--fixtures
  (expand-file-name "../fixtures/orglog/"
                    (file-name-directory (or load-file-name buffer-file-name)))
  "Directory of the shared orglog fixture.")

(defvar test-log--stream nil
  "The renderer stream of the running test: one log file on the bridge side.")

(defvar test-log--decisions nil
  "Decisions received by the test decision function, newest first.")

(defun test-log--record (id decision reason)
  "Record ID, DECISION and REASON as a decision function would send them."
  (push (list id decision reason) test-log--decisions))

(defun test-log--read-file (file)
  "Return the contents of FILE decoded as UTF-8."
  (with-temp-buffer
    (let ((coding-system-for-read 'utf-8))
      (insert-file-contents file))
    (buffer-string)))

(defmacro test-log--with-buffer (var &rest body)
  "Run BODY with VAR bound to a fresh log buffer shown in the selected window."
  (declare (indent 1) (debug t))
  `(let* ((agent-shell-log-notify-on-wait nil)
          (test-log--stream (format "test-log-%s" (cl-incf agent-shell-test--op-counter)))
          (test-log--decisions nil)
          (agent-shell-log-decision-function #'test-log--record)
          (agent-shell-log-answerable-function nil)
          (,var (agent-shell-log-buffer (format "test-%s" (random 1000000)))))
     (unwind-protect
         (progn (switch-to-buffer ,var) ,@body)
       (kill-buffer ,var))))

(defun test-log--entry (id title &rest fields)
  "Return `log/entry' params with ID and TITLE as the bridge sends them.
FIELDS is a JSON plist.  The org text comes from the bridge's writer of
the running test's stream, so entries must be made in insertion order."
  (let ((obj (list :id id :session_id "s" :parent_id :null :todo :null
                   :title title :timestamp "2026-11-30T10:15:00+08:00"
                   :source "tool" :properties (make-hash-table) :body [])))
    (while fields
      (setq obj (plist-put obj (pop fields) (pop fields))))
    (agent-shell-test-render-log test-log--stream "log/entry" obj)))

(defun test-log--update (json)
  "Return the `log/update' params JSON as the bridge sends them."
  (agent-shell-test-render-log test-log--stream "log/update" json))

(defun test-log--ids (buffer)
  "Return the LOG_ID values of BUFFER's headings in order."
  (with-current-buffer buffer
    (save-excursion
      (goto-char (point-min))
      (let (ids)
        (while (re-search-forward "^:LOG_ID: \\(.*\\)$" nil t)
          (push (match-string-no-properties 1) ids))
        (nreverse ids)))))

(defun test-log--goto (buffer id)
  "Move point in BUFFER to the heading of entry ID."
  (with-current-buffer buffer
    (goto-char (point-min))
    (re-search-forward (concat "^:LOG_ID: " (regexp-quote id) "$"))
    (org-back-to-heading t)))

(defun test-log--heading (buffer id)
  "Return the heading line of entry ID in BUFFER."
  (with-current-buffer buffer
    (save-excursion
      (test-log--goto buffer id)
      (buffer-substring-no-properties (point) (line-end-position)))))

(defun test-log--last-message ()
  "Return the last line logged to *Messages*."
  (with-current-buffer (messages-buffer)
    (save-excursion
      (goto-char (point-max))
      (skip-chars-backward "\n")
      (buffer-substring-no-properties (line-beginning-position) (point)))))

(defun test-log--replay (buffer)
  "Replay the fixture's notifications into BUFFER, rendered by the bridge."
  (let ((stream (format "fixture-%s" (cl-incf agent-shell-test--op-counter))))
    (seq-doseq (op (json-parse-string
                    (test-log--read-file (expand-file-name "entries.json"
                                                           test-log--fixtures))
                    :null-object :null :false-object :false))
      (let* ((method (gethash "method" op))
             (params (agent-shell-test-render-log
                      stream method (agent-shell-json-text (gethash "params" op)
                                                           :false-object :false))))
        (should-not (alist-get 'error params))
        (if (equal method "log/entry")
            (agent-shell-log-insert-entry buffer params)
          (agent-shell-log-apply-update buffer params))))))

(defun test-log--after-todo-line (text)
  "Return TEXT after its #+TODO line."
  (let ((start (string-match "^#\\+TODO: .*\n" text)))
    (should start)
    (substring text (match-end 0))))

;;; One contract, two sides

(ert-deftest test-log/fixture-matches-python-writer ()
  "The live buffer renders the fixture stream exactly as the Python writer does."
  (test-log--with-buffer buf
    (test-log--replay buf)
    (let ((expected (test-log--read-file
                     (expand-file-name "expected.org" test-log--fixtures)))
          (actual (with-current-buffer buf
                    (buffer-substring-no-properties (point-min) (point-max)))))
      (should (string-match-p "修复中文 JSON 解析" actual))
      (should (equal (test-log--after-todo-line actual)
                     (test-log--after-todo-line expected))))
    (should (equal (agent-shell-log-pending buf) '("e-9")))))

(ert-deftest test-log/org-element-parses-buffer ()
  "Org's parser sees the headings, TODO keywords and drawers of the live buffer."
  (test-log--with-buffer buf
    (test-log--replay buf)
    (with-current-buffer buf
      (let* ((tree (org-element-parse-buffer))
             (heads (org-element-map tree 'headline
                      (lambda (hl)
                        (list (org-element-property :level hl)
                              (org-element-property :todo-keyword hl)
                              (org-element-property :todo-type hl)
                              (org-element-property
                               :type (car (org-element-property :title hl)))))))
             (langs (org-element-map tree 'src-block
                      (lambda (b) (org-element-property :language b)))))
        (should (equal (mapcar #'car heads) '(1 2 3 2 2 2 1 2 1)))
        (should (equal (mapcar #'cadr heads)
                       '("DONE" "APPROVED" nil "DONE" nil "WAIT" nil "FAILED" nil)))
        (should (eq (nth 2 (nth 5 heads)) 'todo))
        (should (eq (nth 2 (nth 7 heads)) 'done))
        (should (cl-every (lambda (h) (eq (nth 3 h) 'inactive)) heads))
        (should (equal langs '("sh" "diff" "text" "go" "text" "sh")))
        (goto-char (point-min))
        (re-search-forward "^:LOG_ID: e-2$")
        (should (equal (org-entry-get nil "EXIT_CODE") "0"))
        (should (equal (org-entry-get nil "DECISION") "approved"))))))

;;; Incremental rendering

(ert-deftest test-log/steps-stay-under-their-task ()
  "Interleaved tasks: each step is inserted after the last entry of its task."
  (test-log--with-buffer buf
    (agent-shell-log-insert-entry buf (test-log--entry "a" "task A"))
    (agent-shell-log-insert-entry buf (test-log--entry "a1" "step" :parent_id "a"))
    (agent-shell-log-insert-entry buf (test-log--entry "b" "task B"))
    (agent-shell-log-insert-entry buf (test-log--entry "b1" "step" :parent_id "b"))
    (agent-shell-log-insert-entry buf (test-log--entry "a2" "step" :parent_id "a"))
    (agent-shell-log-insert-entry buf (test-log--entry "a1x" "sub" :parent_id "a1"))
    (agent-shell-log-insert-entry buf (test-log--entry "a3" "step" :parent_id "a"))
    (agent-shell-log-insert-entry buf (test-log--entry "a" "duplicate ignored"))
    (should (equal (test-log--ids buf) '("a" "a1" "a1x" "a2" "a3" "b" "b1")))
    (should (string-prefix-p "*** [" (test-log--heading buf "a1x")))
    (should (string-prefix-p "* [" (test-log--heading buf "b")))
    (should (equal (test-log--heading buf "a")
                   "* [2026-11-30 Mon 10:15] task A"))))

(ert-deftest test-log/update-changes-one-heading-in-place ()
  "An update rewrites the keyword and drawer and leaves other entries untouched."
  (test-log--with-buffer buf
    (agent-shell-log-insert-entry buf (test-log--entry "t" "task"))
    (agent-shell-log-insert-entry
     buf (test-log--entry "w" "run make" :parent_id "t" :todo "WAIT"
                          :properties '(:TOOL "run_command" :RISK "write")))
    (agent-shell-log-insert-entry buf (test-log--entry "t2" "other task"))
    ;; Mark the other entries' text: a full re-render would drop the mark.
    (with-current-buffer buf
      (let ((inhibit-read-only t))
        (put-text-property (point-min) (point-max) 'test-mark t)))
    (should (equal (agent-shell-log-pending buf) '("w")))
    (agent-shell-log-apply-update
     buf (test-log--update
          "{\"session_id\":\"s\",\"id\":\"w\",\"todo\":\"APPROVED\",\"properties\":{\"EXIT_CODE\":0,\"RISK\":\"w2\"},\"body_append\":[{\"kind\":\"text\",\"text\":\"done 完成\"}]}"))
    (should (equal (test-log--heading buf "w")
                   "** APPROVED [2026-11-30 Mon 10:15] run make"))
    (should (null (agent-shell-log-pending buf)))
    (with-current-buffer buf
      (test-log--goto buf "w")
      (should (equal (org-entry-get nil "RISK") "w2"))
      (should (equal (org-entry-get nil "EXIT_CODE") "0"))
      (should (string-match-p
               ":TOOL: run_command\n:RISK: w2\n:EXIT_CODE: 0\n:END:\ndone 完成\n\\* "
               (buffer-substring-no-properties (point) (point-max))))
      (test-log--goto buf "t2")
      (should (get-text-property (point) 'test-mark))
      (test-log--goto buf "t")
      (should (get-text-property (point) 'test-mark))
      (should buffer-read-only))))

;;; Confirmation keys

(defun test-log--waiting-buffer (buf)
  "Fill BUF with a task, two waiting steps and a done step."
  (agent-shell-log-insert-entry buf (test-log--entry "t" "task"))
  (agent-shell-log-insert-entry
   buf (test-log--entry "w1" "first" :parent_id "t" :todo "WAIT"
                        :properties '(:RISK "write")))
  (agent-shell-log-insert-entry
   buf (test-log--entry "w2" "second" :parent_id "t" :todo "WAIT"
                        :properties '(:RISK "dangerous")
                        :body (vector '(:kind "src" :lang "diff"
                                              :text "-a\n+b\n" :link :null
                                              :omitted_lines 0))))
  (agent-shell-log-insert-entry
   buf (test-log--entry "d" "done" :parent_id "t" :todo "DONE")))

(defun test-log--keys (&rest parts)
  "Run PARTS as typed keys: strings in `kbd' syntax, or (text STRING) typed as is."
  (execute-kbd-macro
   (apply #'vconcat (mapcar (lambda (part)
                              (if (consp part) (vconcat (cadr part)) (kbd part)))
                            parts))))

(ert-deftest test-log/y-acts-on-point-else-asks-which ()
  "`y' approves the WAIT entry at point; elsewhere it asks which waiting step.
Regression: with point elsewhere `y' decided the oldest waiting step,
which could be off-screen."
  (test-log--with-buffer buf
    (test-log--waiting-buffer buf)
    (test-log--goto buf "d")
    ;; Both steps are offered; the user names the newer one.
    (test-log--keys "y" '(text "second [dangerous]") "RET")
    (should (equal test-log--decisions '(("w2" approve nil))))
    (should (equal (agent-shell-log-node-id (agent-shell-log-node-at-point)) "w2"))
    (should (equal (test-log--heading buf "w1")
                   "** WAIT [2026-11-30 Mon 10:15] first"))
    ;; One waiting step left: it is the default, and RET takes it.
    (test-log--goto buf "d")
    (test-log--keys "y RET")
    (should (equal (car test-log--decisions) '("w1" approve nil)))
    (should (equal (test-log--last-message) "Sent approve for: first"))))

(ert-deftest test-log/quitting-the-question-decides-nothing ()
  "Quitting the which-step question sends no decision at all."
  (test-log--with-buffer buf
    (test-log--waiting-buffer buf)
    (test-log--goto buf "d")
    (let ((asked nil))
      (cl-letf (((symbol-function 'completing-read)
                 (lambda (prompt table &rest _)
                   (setq asked (list prompt (mapcar #'car table)))
                   (signal 'quit nil))))
        (should (eq (condition-case nil (progn (agent-shell-log-approve) 'ran)
                      (quit 'quit))
                    'quit))
        (should (eq (condition-case nil
                        (progn (call-interactively #'agent-shell-log-reject) 'ran)
                      (quit 'quit))
                    'quit)))
      (should (equal asked '("Reject which waiting step? "
                             ("first [write]" "second [dangerous]")))))
    (should (null test-log--decisions))))

(ert-deftest test-log/y-skips-steps-nobody-waits-for ()
  "Regression: `y' took a WAIT step whose request had gone with an old bridge.
Steps the answerable function rejects are neither decided at point nor offered."
  (test-log--with-buffer buf
    (test-log--waiting-buffer buf)
    (let ((agent-shell-log-answerable-function (lambda (id) (not (equal id "w1")))))
      (test-log--goto buf "w1")
      (test-log--keys "y RET")
      (should (equal (car test-log--decisions) '("w2" approve nil)))
      (should-error (agent-shell-log-approve) :type 'user-error))
    (agent-shell-log-abandon-pending buf "gone")
    (should-not (agent-shell-log-pending buf))
    (should (string-prefix-p "** FAILED" (test-log--heading buf "w1")))))

(ert-deftest test-log/c-c-c-c-approves-and-n-rejects-with-reason ()
  "`C-c C-c' approves; `n' and `C-c C-k' reject with the reason typed."
  (test-log--with-buffer buf
    (test-log--waiting-buffer buf)
    (goto-char (point-min))
    (test-log--keys "C-c C-c" '(text "first [write]") "RET")
    (should (equal (car test-log--decisions) '("w1" approve nil)))
    (test-log--goto buf "w2")
    (execute-kbd-macro (kbd "n 太 危 险 SPC r m RET"))
    (should (equal (car test-log--decisions) '("w2" reject "太危险 rm")))
    (test-log--goto buf "w1")
    ;; Both decisions are sent: on a sent step the key finds nothing to decide.
    (should-error (execute-kbd-macro (kbd "C-c C-k RET")) :type 'user-error)
    (agent-shell-log-unsend buf "w1")
    (test-log--goto buf "w1")
    (execute-kbd-macro (kbd "C-c C-k RET"))
    (should (equal (car test-log--decisions) '("w1" reject nil)))))

(ert-deftest test-log/a-says-what-it-grants-and-asks ()
  "`a' names the grant and asks before sending approve-session.
It is refused for a dangerous step, and answering no grants nothing."
  (test-log--with-buffer buf
    (test-log--waiting-buffer buf)
    (let* ((prompts nil)
           (agent-shell-log-grant-function
            (lambda (id) (format "run exactly `make' in /proj (step %s)" id))))
      (cl-letf (((symbol-function 'y-or-n-p)
                 (lambda (prompt) (push prompt prompts) (string-search "w1" (car prompts)))))
        (test-log--goto buf "w2")
        (should-error (execute-kbd-macro (kbd "a")) :type 'user-error)
        (should (null prompts))
        (test-log--goto buf "w1")
        (execute-kbd-macro (kbd "a"))
        (should (equal prompts '("Grant: run exactly `make' in /proj (step w1).  Allow? ")))
        (should (equal test-log--decisions '(("w1" approve-session nil))))
        ;; The user says no: the step keeps waiting, nothing is sent.
        (setq agent-shell-log-grant-function (lambda (_) "make any edit"))
        (agent-shell-log-unsend buf "w1")
        (test-log--goto buf "w1")
        (execute-kbd-macro (kbd "a"))
        (should (equal (length test-log--decisions) 1))
        (should (equal (agent-shell-log-pending buf) '("w1" "w2")))))))

(ert-deftest test-log/keyword-changes-only-on-bridge-update ()
  "A sent decision leaves WAIT until the bridge's update, then pending shrinks."
  (test-log--with-buffer buf
    (test-log--waiting-buffer buf)
    (test-log--goto buf "w1")
    (execute-kbd-macro (kbd "y"))
    (test-log--goto buf "w2")
    (execute-kbd-macro (kbd "y"))
    (should (equal (mapcar #'car test-log--decisions) '("w2" "w1")))
    (should-error (execute-kbd-macro (kbd "y")) :type 'user-error)
    (should (equal (agent-shell-log-pending buf) '("w1" "w2")))
    (agent-shell-log-apply-update
     buf (test-log--update "{\"session_id\":\"s\",\"id\":\"w1\",\"todo\":\"REJECTED\"}"))
    (should (equal (agent-shell-log-pending buf) '("w2")))
    (should (string-prefix-p "** REJECTED " (test-log--heading buf "w1")))))

(ert-deftest test-log/rebinding-keys-works ()
  "The keymap is an ordinary variable: a rebound key reaches the same command."
  (test-log--with-buffer buf
    (test-log--waiting-buffer buf)
    (let ((agent-shell-log-mode-map (copy-keymap agent-shell-log-mode-map)))
      (define-key agent-shell-log-mode-map (kbd "Y") #'agent-shell-log-approve)
      (use-local-map agent-shell-log-mode-map)
      (test-log--goto buf "w1")
      (execute-kbd-macro (kbd "Y"))
      (should (equal (car test-log--decisions) '("w1" approve nil))))))

;;; Review commands

(ert-deftest test-log/d-shows-diff ()
  "`d' shows the step's diff in a read-only `diff-mode' buffer."
  (test-log--with-buffer buf
    (test-log--waiting-buffer buf)
    (test-log--goto buf "w2")
    (execute-kbd-macro (kbd "d"))
    (let ((diff (get-buffer "*agent-shell-diff: w2*")))
      (unwind-protect
          (with-current-buffer diff
            (should (derived-mode-p 'diff-mode))
            (should buffer-read-only)
            (should (equal (buffer-string) "-a\n+b\n")))
        (kill-buffer diff)))))

(ert-deftest test-log/sparse-tree-shows-failures ()
  "`!' leaves FAILED and REJECTED headings visible and hides the rest."
  (test-log--with-buffer buf
    (test-log--replay buf)
    (test-log--goto buf "e-7")
    (execute-kbd-macro (kbd "!"))
    (test-log--goto buf "e-5")
    (should-not (org-invisible-p))
    (test-log--goto buf "e-4")
    (should (org-invisible-p))))

(ert-deftest test-log/exports-folded-or-not ()
  "The live log exports with the loaded Org's own exporters, sparse tree or not.
Org 9.5 (Emacs 28) and Org 9.7 (Emacs 30) fold in different ways; the
export must not depend on either.  Drawers stay out, TODO keywords,
Chinese titles and the escaped src lines stay in."
  (require 'ox-ascii)
  (require 'ox-html)
  (test-log--with-buffer buf
    (test-log--replay buf)
    (with-current-buffer buf
      (let ((plain (org-export-as 'ascii nil nil nil '(:ascii-charset utf-8))))
        (test-log--goto buf "e-7")
        (execute-kbd-macro (kbd "!"))
        (test-log--goto buf "e-4")
        (should (org-invisible-p))
        (should (equal (org-export-as 'ascii nil nil nil '(:ascii-charset utf-8))
                       plain))
        (should (string-match-p "DONE \\[2026-11-30 Mon 10:00\\] +修复中文 JSON 解析" plain))
        (should (string-match-p "APPROVED \\[2026-11-30 Mon 10:01\\] +run_command: go test"
                                plain))
        (should (string-match-p "WAIT \\[2026-11-30 Mon 10:08\\] +late step" plain))
        ;; Src lines the bridge escaped read as written.
        (should (string-match-p "[^,]\\* not a heading$" plain))
        (should (string-match-p "[^,]#\\+end_src$" plain))
        (should (string-search "line 1 输出" plain))
        (should-not (string-search "LOG_ID" plain))
        (should-not (string-search ":PROPERTIES:" plain)))
      (let ((html (org-export-as 'html nil nil t)))
        (should (string-search "修复中文 JSON 解析" html))
        (should (string-match-p "<span class=\"todo WAIT\">WAIT</span>" html))
        (should (string-search "func decodeString() {}" html))
        (should-not (string-search "LOG_ID" html))))))

(defvar test-log--evaluated nil
  "Set by Babel code in a log if an export ever runs it.")

(ert-deftest test-log/export-runs-no-code-the-model-wrote ()
  "Inline src and call syntax in model text stays text on export.
Babel would run `src_emacs-lisp{...}' in a paragraph or a heading on
export; the log's header says nothing in it is evaluated, so neither
the live buffer nor the file opened in plain Org runs it, even with
confirmation turned off."
  (require 'ox-ascii)
  (require 'ob-emacs-lisp)
  (let ((org-confirm-babel-evaluate nil)
        (payload "src_emacs-lisp{(setq test-log--evaluated 1)} 改了"))
    (setq test-log--evaluated nil)
    (test-log--with-buffer buf
      (agent-shell-log-insert-entry
       buf (test-log--entry "e-1" (concat "run_command: echo " payload)
                            :body (vector `(:kind "text" :text ,payload))))
      (with-current-buffer buf
        (let ((text (buffer-string)))
          (should (string-search agent-shell-log--no-eval-line text))
          (org-export-as 'ascii nil nil nil '(:ascii-charset utf-8))
          (should-not test-log--evaluated)
          ;; The same text opened as a plain Org file, as `find-file' would.
          (with-temp-buffer
            (insert text)
            (let ((org-export-use-babel t))
              (org-mode)
              (let ((out (org-export-as 'ascii nil nil nil '(:ascii-charset utf-8))))
                (should (string-search "改了" out))))
            (should-not test-log--evaluated)))))))

(ert-deftest test-log/navigation ()
  "`f', `b' and `w' move between headings and waiting steps."
  (test-log--with-buffer buf
    (test-log--waiting-buffer buf)
    (goto-char (point-min))
    (execute-kbd-macro (kbd "f"))
    (should (equal (org-entry-get nil "LOG_ID") "t"))
    (execute-kbd-macro (kbd "M-n"))
    (should (equal (org-entry-get nil "LOG_ID") "w1"))
    (execute-kbd-macro (kbd "w"))
    (should (equal (org-entry-get nil "LOG_ID") "w2"))
    (execute-kbd-macro (kbd "w"))
    (should (equal (org-entry-get nil "LOG_ID") "w1"))
    (execute-kbd-macro (kbd "b"))
    (should (equal (org-entry-get nil "LOG_ID") "t"))))

(ert-deftest test-log/visit-opens-path-and-line ()
  "`RET' on a step visits its PATH at LINE, relative to the project root."
  (let* ((root (make-temp-file "agent-shell-log" t))
         (file (expand-file-name "src/main.py" root)))
    (unwind-protect
        (test-log--with-buffer buf
          (make-directory (file-name-directory file) t)
          (with-temp-file file (insert "one\ntwo\nthree 三\n"))
          (agent-shell-log-set-file
           buf (expand-file-name ".agent-shell/logs/2026-11-30-101500-s.org" root))
          (agent-shell-log-insert-entry
           buf (test-log--entry "v" "edit" :properties '(:PATH "src/main.py" :LINE 3)))
          (test-log--goto buf "v")
          (execute-kbd-macro (kbd "RET"))
          (should (equal (buffer-file-name) file))
          (should (looking-at "three 三"))
          (kill-buffer))
      (delete-directory root t))))

(ert-deftest test-log/open-file-offers-newest-first ()
  "`L' offers the session logs newest first; RET takes the newest."
  (let* ((root (make-temp-file "agent-shell-log" t))
         (logs (expand-file-name ".agent-shell/logs/" root)))
    (unwind-protect
        (test-log--with-buffer buf
          (make-directory logs t)
          (dolist (name '("2026-11-29-090000-a.org" "2026-11-30-101500-c.org"
                          "2026-11-30-080000-b.org"))
            (with-temp-file (expand-file-name name logs)
              (insert "#+TODO: WAIT | APPROVED REJECTED DONE FAILED\n* WAIT [2026-11-30 Mon 10:15] x\n")))
          (with-current-buffer buf (setq default-directory root))
          (should (equal (mapcar #'file-name-nondirectory
                                 (agent-shell-log--log-files root))
                         '("2026-11-30-101500-c.org" "2026-11-30-080000-b.org"
                           "2026-11-29-090000-a.org")))
          (execute-kbd-macro (kbd "L RET"))
          (should (equal (file-name-nondirectory (buffer-file-name))
                         "2026-11-30-101500-c.org"))
          (should buffer-read-only)
          (goto-char (point-min))
          (re-search-forward "^\\* ")
          (should (equal (org-get-todo-state) "WAIT"))
          (kill-buffer))
      (delete-directory root t))))

;;; Review fixes

(ert-deftest test-log/heading-after-sparse-tree-starts-a-line ()
  "Regression: after `!' a new heading showed glued to the folded one before.
The sparse tree hid the previous subtree with its final newline, so
the next appended heading displayed as \"…...* [2026-…] Mem\"."
  (test-log--with-buffer buf
    (test-log--replay buf)
    (agent-shell-log-insert-entry buf (test-log--entry "t1" "最后一个任务" :todo "DONE"))
    (goto-char (point-max))
    (execute-kbd-macro (kbd "!"))
    (agent-shell-log-insert-entry buf (test-log--entry "m1" "Memory 记忆"))
    (agent-shell-log-insert-entry buf (test-log--entry "m2" "第二条"))
    (dolist (id '("m1" "m2"))
      (test-log--goto buf id)
      (should (bolp))
      (should (eq (char-before) ?\n))
      ;; The newline that ends the folded entry before is shown.
      (should-not (org-invisible-p (1- (point))))
      (should-not (org-invisible-p (point))))
    ;; The earlier entry stays folded.
    (test-log--goto buf "t1")
    (forward-line 1)
    (should (org-invisible-p (point)))))

(ert-deftest test-log/new-session-starts-a-fresh-log ()
  "Regression: a new session of the same project appended to the old log buffer.
Its entries went under the previous session's; now a log buffer that
gets another session's file starts empty."
  (test-log--with-buffer buf
    (agent-shell-log-set-file buf "/tmp/proj/.agent-shell/logs/2026-11-30-a.org")
    (agent-shell-log-insert-entry buf (test-log--entry "old" "旧会话的任务" :todo "WAIT"))
    ;; The same session attaching again (a resume) keeps its entries.
    (agent-shell-log-set-file buf "/tmp/proj/.agent-shell/logs/2026-11-30-a.org")
    (should (equal (test-log--ids buf) '("old")))
    (agent-shell-log-set-file buf "/tmp/proj/.agent-shell/logs/2026-11-30-b.org")
    (should-not (test-log--ids buf))
    (should-not (agent-shell-log-pending buf))
    (with-current-buffer buf
      (should (derived-mode-p 'agent-shell-log-mode))
      (should (string-prefix-p "#+TITLE: agent-shell log: test-" (buffer-string)))
      (should-not (string-search "旧会话" (buffer-string))))
    (agent-shell-log-insert-entry buf (test-log--entry "new" "新会话"))
    (should (equal (test-log--ids buf) '("new")))))

(ert-deftest test-log/picker-names-each-log-by-its-first-task ()
  "Regression: the past-log picker offered bare file names.
Each log is now offered with its first task's title, newest first."
  (let* ((root (make-temp-file "agent-shell-log" t))
         (logs (expand-file-name ".agent-shell/logs/" root)))
    (unwind-protect
        (progn
          (make-directory logs t)
          (with-temp-file (expand-file-name "2026-11-29-090000-a.org" logs)
            (insert "#+TITLE: x\n#+TODO: WAIT | DONE\n\n* [2026-11-29 Sun 09:00] 修复 add 函数\n:PROPERTIES:\n:END:\n"))
          (with-temp-file (expand-file-name "2026-11-30-101500-b.org" logs)
            (insert "#+TITLE: x\n\n* DONE [2026-11-30 Mon 10:15] Write the README\n"
                    (make-string 5000 ?y) "\n* [2026-11-30 Mon 10:20] later\n"))
          (with-temp-file (expand-file-name "2026-11-30-110000-c.org" logs)
            (insert "#+TITLE: empty\n"))
          (let (offered)
            (cl-letf (((symbol-function 'completing-read)
                       (lambda (_prompt table &rest _)
                         (setq offered (all-completions "" table))
                         (car offered)))
                      ((symbol-function 'find-file-read-only) #'ignore))
              (let ((default-directory root))
                (call-interactively #'agent-shell-log-open-file)))
            (should (equal offered
                           '("2026-11-30-110000-c.org"
                             "2026-11-30-101500-b.org  Write the README"
                             "2026-11-29-090000-a.org  修复 add 函数")))))
      (delete-directory root t))))

;;; Attention

(ert-deftest test-log/notify-displays-without-selecting ()
  "A WAIT entry shows the log in another window and leaves a message."
  (test-log--with-buffer buf
    (switch-to-buffer (get-buffer-create "*test-log-other*"))
    (delete-other-windows)
    (let ((agent-shell-log-notify-on-wait t)
          (selected (selected-window)))
      (agent-shell-log-insert-entry buf (test-log--entry "q" "需要确认" :todo "WAIT"))
      (should (eq (selected-window) selected))
      (should (get-buffer-window buf))
      (should (equal (test-log--last-message)
                     "agent-shell: Waiting for approval: 需要确认")))
    (kill-buffer "*test-log-other*")))

(ert-deftest test-log/notify-shows-the-waiting-step ()
  "The log window is scrolled to the WAIT entry, not left at the top."
  (test-log--with-buffer buf
    (switch-to-buffer (get-buffer-create "*test-log-other*"))
    (delete-other-windows)
    (let ((agent-shell-log-notify-on-wait t))
      (dotimes (i 80)
        (agent-shell-log-insert-entry
         buf (test-log--entry (format "d%d" i) (format "step %d" i) :todo "DONE")))
      (agent-shell-log-insert-entry buf (test-log--entry "w" "等待中的编辑" :todo "WAIT"))
      (let ((window (get-buffer-window buf)))
        (should window)
        (with-current-buffer buf
          (save-excursion
            (goto-char (window-point window))
            (should (looking-at-p "\\*+ WAIT .*等待中的编辑"))))))
    (kill-buffer "*test-log-other*")))

(ert-deftest test-log/notify-keeps-the-shell-window ()
  "Regression: a waiting step's log replaced the shell's window.
With the user in a file and the shell in the other window, the log
took the least recently used window: the shell's.  Now it splits."
  (test-log--with-buffer buf
    (let ((shell (get-buffer-create "*agent-shell: 测试*"))
          (file (get-buffer-create "*test-log-file*"))
          (agent-shell-log-notify-on-wait t))
      (switch-to-buffer file)
      (delete-other-windows)
      (set-window-buffer (split-window-right) shell)
      (let ((selected (selected-window)))
        (agent-shell-log-insert-entry buf (test-log--entry "q2" "需要确认" :todo "WAIT"))
        (should (eq (selected-window) selected))
        (should (eq (window-buffer selected) file))
        (should (get-buffer-window shell))
        (should (get-buffer-window buf)))
      (delete-other-windows)
      (kill-buffer shell)
      (kill-buffer file))))

;;; Text

(ert-deftest test-log/chinese-round-trip ()
  "Chinese titles, properties and output reach the buffer unchanged."
  (let ((text "处理中文字符：“测试”与 emoji 🚀 — 全角　空格"))
    (test-log--with-buffer buf
      (agent-shell-log-insert-entry
       buf (test-log--entry "c" text :properties `(:NOTE ,text)
                            :body (vector `(:kind "text" :text ,text)
                                          `(:kind "src" :lang "text" :text ,text
                                                  :link :null :omitted_lines 0))))
      (with-current-buffer buf
        (let ((content (buffer-substring-no-properties (point-min) (point-max))))
          (should (equal (test-log--heading buf "c")
                         (concat "* [2026-11-30 Mon 10:15] " text)))
          (should (= (cl-count-if (lambda (_) t)
                                  (split-string content (regexp-quote text)))
                     5))
          (test-log--goto buf "c")
          (should (equal (encode-coding-string (org-entry-get nil "NOTE") 'utf-8)
                         (encode-coding-string text 'utf-8))))))))

(ert-deftest test-log/injection-stays-text ()
  "Hostile titles and output cannot add headings or end blocks."
  (test-log--with-buffer buf
    (agent-shell-log-insert-entry
     buf (test-log--entry "x" "t\n* FAKE\n#+end_src :a:"
                          :body (vector '(:kind "src" :lang "sh"
                                                :text "* FAKE\n#+end_src\n:END:"
                                                :link :null :omitted_lines 0)
                                        '(:kind "text" :text "** FAKE"))))
    (with-current-buffer buf
      (let ((tree (org-element-parse-buffer)))
        (should (= 1 (length (org-element-map tree 'headline #'identity))))
        (should (equal (org-element-map tree 'src-block
                         (lambda (b) (org-element-property :value b)))
                       '("* FAKE\n#+end_src\n:END:\n")))
        (should (null (org-element-map tree 'headline
                        (lambda (h) (org-element-property :tags h)))))))))

(ert-deftest test-log/entry-without-its-text-is-reported ()
  "The buffer shows only the bridge's text: an entry without it is not made up."
  (test-log--with-buffer buf
    (let ((before (with-current-buffer buf (buffer-string)))
          (bare (assq-delete-all 'org (test-log--entry "bare" "没有文本"))))
      (should-not (agent-shell-log-insert-entry buf bare))
      (should (string-match-p "log entry bare came without its text"
                              (test-log--last-message)))
      (should (equal (with-current-buffer buf (buffer-string)) before))
      ;; Sent again with its text, it is shown.
      (agent-shell-log-insert-entry buf (test-log--entry "bare2" "有文本"))
      (should (equal (test-log--ids buf) '("bare2"))))))

(ert-deftest test-log/past-log-opens-in-log-mode ()
  "A past log file opens read-only in the log mode, so review keys work on it."
  (let* ((root (make-temp-file "agent-shell-log-past-" t))
         (dir (expand-file-name ".agent-shell/logs/" root))
         (file (expand-file-name "2026-11-30-101454-s1.org" dir)))
    (unwind-protect
        (progn
          (make-directory dir t)
          (with-temp-file file
            (insert "#+TODO: WAIT | APPROVED REJECTED DONE FAILED\n"
                    "* DONE [2026-11-30 Mon 10:14] 任务\n"
                    "** DONE [2026-11-30 Mon 10:14] read_file a.py\n"
                    "** FAILED [2026-11-30 Mon 10:15] run_test pytest\n"))
          (let ((default-directory root))
            (agent-shell-log-open-file file))
          (with-current-buffer (get-file-buffer file)
            (unwind-protect
                (progn
                  (should (derived-mode-p 'agent-shell-log-mode))
                  (should buffer-read-only)
                  (should (eq (key-binding (kbd "!")) #'agent-shell-log-sparse-failures))
                  (goto-char (point-min))
                  (agent-shell-log-sparse-failures)
                  (goto-char (point-min))
                  (re-search-forward "run_test")
                  (should-not (invisible-p (point)))
                  (goto-char (point-min))
                  (re-search-forward "read_file")
                  (should (invisible-p (point))))
              (kill-buffer))))
      (delete-directory root t))))

(ert-deftest test-log/past-log-visit-reads-the-drawer ()
  "Regression: RET and `o' failed on a past log opened from its file.
Such a buffer has no live nodes; the step's PATH and LINE now come
from its properties drawer."
  (let* ((root (file-name-as-directory (make-temp-file "agent-shell-log-past-" t)))
         (dir (expand-file-name ".agent-shell/logs/" root))
         (file (expand-file-name "2026-11-30-101454-s1.org" dir))
         (target (expand-file-name "源码/main.py" root)))
    (unwind-protect
        (progn
          (make-directory dir t)
          (make-directory (file-name-directory target) t)
          (with-temp-file target (insert "one\ntwo 二\nthree\n"))
          (with-temp-file file
            (insert "#+TODO: WAIT | APPROVED REJECTED DONE FAILED\n"
                    "* DONE [2026-11-30 Mon 10:14] replace_region 源码/main.py\n"
                    ":PROPERTIES:\n:SOURCE: tool\n:PATH: 源码/main.py\n:LINE: 2\n:END:\n"))
          (let ((default-directory root))
            (agent-shell-log-open-file file))
          (with-current-buffer (get-file-buffer file)
            (goto-char (point-min))
            (re-search-forward "replace_region")
            (execute-kbd-macro (kbd "o"))
            (should (equal (buffer-file-name) target))
            (should (looking-at "two 二"))
            (kill-buffer)
            (kill-buffer (get-file-buffer file))))
      (delete-directory root t))))

(provide 'test-log)
;;; test-log.el ends here
