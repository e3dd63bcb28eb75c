;;; test-log-growth.el --- The action log costs the same at entry 10 and 1,000  -*- lexical-binding: t; -*-

;; SPDX-License-Identifier: GPL-3.0-or-later

;;; Commentary:

;; Regression tests: the live log kept a marker per entry and, on
;; Emacs 28, an overlay per folded drawer, which Emacs walks on every
;; insertion (53 ms a turn at turn 3,000); opening a log file ran Org
;; twice and stopped at the large-file question past 10 MB.  Entries
;; get their org text from the bridge's own writer, as from a live
;; bridge.  No timing is asserted (bench/log_buffer_growth.py measures
;; it): what is counted is what made each insertion slower.

;;; Code:

(require 'ert)
(require 'cl-lib)
(require 'agent-shell-log)
(require 'agent-shell-log-keys)
(require 'agent-shell-test-helpers)

(defvar test-log-growth--stream nil
  "The renderer stream of the running test: one log on the bridge side.")

(defmacro test-log-growth--with-buffer (var &rest body)
  "Run BODY with VAR bound to a fresh live log buffer shown in the selected window."
  (declare (indent 1) (debug t))
  `(let* ((agent-shell-log-notify-on-wait nil)
          (agent-shell-log-answerable-function nil)
          (test-log-growth--stream
           (format "test-log-growth-%s" (cl-incf agent-shell-test--op-counter)))
          (,var (agent-shell-log-buffer (format "growth-%s" (random 1000000)))))
     (unwind-protect
         (progn (switch-to-buffer ,var) ,@body)
       (kill-buffer ,var))))

(defun test-log-growth--entry (id title &rest fields)
  "Return `log/entry' params for ID and TITLE with FIELDS, rendered by the bridge."
  (let ((obj (list :id id :session_id "s" :parent_id :null :todo :null
                   :title title :timestamp "2026-11-30T10:15:00+08:00"
                   :source "tool" :properties (make-hash-table) :body [])))
    (while fields
      (setq obj (plist-put obj (pop fields) (pop fields))))
    (agent-shell-test-render-log test-log-growth--stream "log/entry" obj)))

(defun test-log-growth--update (id &rest fields)
  "Return `log/update' params for ID with FIELDS, rendered by the bridge."
  (agent-shell-test-render-log test-log-growth--stream "log/update"
                               (append (list :session_id "s" :id id) fields)))

(defun test-log-growth--turn (buf n)
  "Add turn N to BUF: a task, a waiting step approved, a step with output."
  (let ((task (format "t%d" n))
        (wait (format "t%d-w" n))
        (read (format "t%d-r" n)))
    (agent-shell-log-insert-entry buf (test-log-growth--entry task (format "任务 %d" n)
                                                              :source "user"))
    (agent-shell-log-insert-entry
     buf (test-log-growth--entry wait "run make" :parent_id task :todo "WAIT"
                                 :properties '(:TOOL "run_command" :RISK "write")))
    (agent-shell-log-apply-update
     buf (test-log-growth--update wait :todo "APPROVED" :properties '(:EXIT_CODE 0)))
    (agent-shell-log-insert-entry
     buf (test-log-growth--entry read "read_file a.py" :parent_id task
                                 :properties '(:TOOL "read_file" :PATH "a.py")))
    (agent-shell-log-apply-update
     buf (test-log-growth--update
          read :todo "DONE"
          :body_append (vector (list :kind "src" :lang "python"
                                     :text (format "print(%d)  # 输出\n" n)))))
    (agent-shell-log-apply-update buf (test-log-growth--update task :todo "DONE"))))

(defun test-log-growth--markers (buffer)
  "Return how many markers into BUFFER its buffer-local values hold.
Lists, vectors, records (the log's nodes) and hash tables are walked."
  (let ((seen (make-hash-table :test #'eq))
        (count 0))
    (cl-labels ((walk (value)
                  (unless (or (null value) (symbolp value) (numberp value) (stringp value)
                              (gethash value seen))
                    (puthash value t seen)
                    (cond
                     ((markerp value)
                      (when (eq (marker-buffer value) buffer) (cl-incf count)))
                     ((consp value) (walk (car value)) (walk (cdr value)))
                     ((hash-table-p value)
                      (maphash (lambda (k v) (walk k) (walk v)) value))
                     ((or (vectorp value) (recordp value))
                      (dotimes (i (length value)) (walk (aref value i))))))))
      (dolist (cell (buffer-local-variables buffer))
        (when (consp cell) (walk (cdr cell)))))
    count))

(defun test-log-growth--overlays (buffer)
  "Return the number of overlays in BUFFER."
  (with-current-buffer buffer
    (save-restriction
      (widen)
      (length (overlays-in (point-min) (point-max))))))

(defun test-log-growth--goto (buffer id)
  "Move point in BUFFER to the heading of entry ID."
  (with-current-buffer buffer
    (goto-char (point-min))
    (re-search-forward (concat "^:LOG_ID: " (regexp-quote id) "$"))
    (org-back-to-heading t)))

(defun test-log-growth--invisible-at (buffer text)
  "Return non-nil when the first TEXT in BUFFER is hidden."
  (with-current-buffer buffer
    (save-excursion
      (goto-char (point-min))
      (search-forward text)
      (invisible-p (match-beginning 0)))))

(ert-deftest test-log-growth/no-overlay-or-marker-per-entry ()
  "Entries and updates leave no overlay and no marker behind, however many.
Regression: a marker per entry and (Emacs 28) an overlay per folded
drawer, walked by every insertion."
  (test-log-growth--with-buffer buf
    (dotimes (n 3) (test-log-growth--turn buf n))
    (let ((markers (test-log-growth--markers buf))
          (overlays (test-log-growth--overlays buf)))
      (dotimes (n 27) (test-log-growth--turn buf (+ n 3)))
      (with-current-buffer buf
        (should (= (hash-table-count agent-shell-log--nodes) 90)))
      (should (equal (test-log-growth--markers buf) markers))
      (should (equal (test-log-growth--overlays buf) overlays))
      (should (<= overlays 0))
      ;; The drawers are folded all the same.
      (should (test-log-growth--invisible-at buf ":LOG_ID: t0-w"))
      (should (test-log-growth--invisible-at buf ":LOG_ID: t29-r"))
      (should (test-log-growth--invisible-at buf ":EXIT_CODE: 0")))))

(ert-deftest test-log-growth/entries-found-after-their-text-moved ()
  "An update lands on its entry after text before it grew or shrank.
The buffer keeps no marker: an entry's place is checked and searched
again by its text property when text before it changed."
  (test-log-growth--with-buffer buf
    (agent-shell-log-insert-entry buf (test-log-growth--entry "a" "task A" :source "user"))
    (agent-shell-log-insert-entry buf (test-log-growth--entry "b" "task B" :source "user"))
    (agent-shell-log-insert-entry
     buf (test-log-growth--entry "b1" "step B1" :parent_id "b" :todo "WAIT"))
    ;; A step of A goes before B, and A's heading grows: B and B1 move.
    (agent-shell-log-insert-entry buf (test-log-growth--entry "a1" "step A1" :parent_id "a"))
    (agent-shell-log-apply-update
     buf (test-log-growth--update "a" :todo "DONE" :properties '(:DURATION_MS 123456789)))
    (agent-shell-log-apply-update
     buf (test-log-growth--update "b1" :todo "APPROVED"
                                  :body_append (vector '(:kind "text" :text "输出 B1"))))
    (with-current-buffer buf
      (let ((text (buffer-substring-no-properties (point-min) (point-max))))
        (should (string-match-p
                 (concat "^\\* DONE \\[2026-11-30 Mon 10:15\\] task A\n"
                         "\\(?:.*\n\\)*?\\*\\* \\[2026-11-30 Mon 10:15\\] step A1\n"
                         "\\(?:.*\n\\)*?\\* \\[2026-11-30 Mon 10:15\\] task B\n"
                         "\\(?:.*\n\\)*?\\*\\* APPROVED \\[2026-11-30 Mon 10:15\\] step B1\n"
                         "\\(?:.*\n\\)*?输出 B1\n\\'")
                 text)))
      (should-not (agent-shell-log-pending buf))
      ;; The keys reach the entries where they are now.
      (agent-shell-log-insert-entry
       buf (test-log-growth--entry "b2" "step B2" :parent_id "b" :todo "WAIT"))
      (agent-shell-log-apply-update
       buf (test-log-growth--update "a1" :todo "DONE" :properties '(:NOTE "长一点的备注")))
      (goto-char (point-min))
      (agent-shell-log-next-wait)
      (should (looking-at-p "\\*\\* WAIT \\[2026-11-30 Mon 10:15\\] step B2$"))
      (should (equal (agent-shell-log-node-id (agent-shell-log-node-at-point)) "b2")))))

(ert-deftest test-log-growth/insertion-ignores-narrowing ()
  "A new entry goes at the end of the log even while the user narrows to a task."
  (test-log-growth--with-buffer buf
    (agent-shell-log-insert-entry buf (test-log-growth--entry "a" "task A" :source "user"))
    (agent-shell-log-insert-entry buf (test-log-growth--entry "b" "task B" :source "user"))
    (with-current-buffer buf
      (test-log-growth--goto buf "a")
      (org-narrow-to-subtree)
      (agent-shell-log-insert-entry buf (test-log-growth--entry "c" "task C" :source "user"))
      (agent-shell-log-insert-entry buf (test-log-growth--entry "a1" "step" :parent_id "a"))
      (should (buffer-narrowed-p))
      (widen)
      (let ((text (buffer-substring-no-properties (point-min) (point-max))))
        (should (string-match-p (concat "task A\n\\(?:.*\n\\)*?.*step\n\\(?:.*\n\\)*?"
                                        ".*task B\n\\(?:.*\n\\)*?.*task C\n"
                                        "\\(?::.*\n\\)*\\'")
                                text))))))

(ert-deftest test-log-growth/tab-and-cycling-show-folded-drawers ()
  "TAB on a folded drawer shows it and folds it again; cycling keeps drawers folded.
Three \\[universal-argument] before TAB show everything, drawers included."
  (test-log-growth--with-buffer buf
    (dotimes (n 4) (test-log-growth--turn buf n))
    (with-current-buffer buf
      (should (test-log-growth--invisible-at buf ":EXIT_CODE: 0"))
      ;; TAB on the first drawer's first line, as a user presses it.
      (goto-char (point-min))
      (search-forward ":EXIT_CODE: 0")
      (re-search-backward "^:PROPERTIES:$")
      (execute-kbd-macro (kbd "TAB"))
      (should-not (test-log-growth--invisible-at buf ":EXIT_CODE: 0"))
      (execute-kbd-macro (kbd "TAB"))
      (should (test-log-growth--invisible-at buf ":EXIT_CODE: 0"))
      ;; Cycling a task: folded, then its children, drawers still folded.
      (test-log-growth--goto buf "t2")
      (execute-kbd-macro (kbd "TAB"))
      (should (test-log-growth--invisible-at buf ":LOG_ID: t2-r"))
      (save-excursion
        (re-search-forward "^\\*\\* DONE .*read_file a.py$")
        (should (invisible-p (match-beginning 0))))
      (test-log-growth--goto buf "t2")
      (execute-kbd-macro (kbd "TAB"))
      (save-excursion
        (re-search-forward "^\\*\\* DONE .*read_file a.py$")
        (should-not (invisible-p (match-beginning 0)))
        (forward-line 3)
        (should (looking-at-p ":LOG_ID: t2-r"))
        (should (invisible-p (point))))
      ;; Everything, drawers included.
      (goto-char (point-min))
      (execute-kbd-macro (kbd "C-u C-u C-u TAB"))
      (should-not (test-log-growth--invisible-at buf ":LOG_ID: t3-r"))
      (should-not (test-log-growth--invisible-at buf ":EXIT_CODE: 0"))
      ;; Global cycling from the contents to everything: the drawers fold
      ;; again, and no overlay per drawer stays.
      (let ((this-command 'org-cycle)
            (last-command 'org-cycle))
        (setq org-cycle-global-status 'contents)
        (org-cycle '(4)))
      (should (eq org-cycle-global-status 'all))
      (should-not (test-log-growth--invisible-at buf "任务 3"))
      (should (test-log-growth--invisible-at buf ":LOG_ID: t3-r"))
      (should (test-log-growth--invisible-at buf ":EXIT_CODE: 0"))
      (should (= (test-log-growth--overlays buf) 0)))))

(ert-deftest test-log-growth/chinese-entry-round-trips ()
  "A Chinese entry and its update read back as the bridge rendered them."
  (let ((title "修复“中文”标题 — 全角　空格 🚀")
        (out "第一行 输出\n第二行 ✓\n"))
    (test-log-growth--with-buffer buf
      (agent-shell-log-insert-entry buf (test-log-growth--entry "t" "任务" :source "user"))
      (let* ((params (test-log-growth--entry "c" title :parent_id "t" :todo "WAIT"
                                             :properties (list :NOTE title)))
             (update (test-log-growth--update
                      "c" :todo "DONE"
                      :body_append (vector (list :kind "src" :lang "text" :text out)))))
        (agent-shell-log-insert-entry buf params)
        (agent-shell-log-apply-update buf update)
        (with-current-buffer buf
          (let* ((node (gethash "c" agent-shell-log--nodes))
                 (old (alist-get 'org params))
                 (expected (concat (alist-get 'org_head update)
                                   (substring old (agent-shell-log--head-length old))
                                   (alist-get 'org_body_append update)))
                 (text (buffer-substring-no-properties
                        (agent-shell-log-node-start node)
                        (agent-shell-log--entry-end node))))
            (should (string-search title text))
            (should (string-search out text))
            (should (equal (encode-coding-string text 'utf-8)
                           (encode-coding-string expected 'utf-8)))
            (test-log-growth--goto buf "c")
            (should (equal (encode-coding-string (org-entry-get nil "NOTE") 'utf-8)
                           (encode-coding-string title 'utf-8)))))))))

(ert-deftest test-log-growth/large-log-opens-without-the-question ()
  "A log over `large-file-warning-threshold' opens at once, with Org run once.
Other large files still ask: the threshold is bound around the log's
own visit only.  The Chinese text reads back byte for byte."
  (let* ((root (file-name-as-directory (make-temp-file "agent-shell-log-growth-" t)))
         (dir (expand-file-name ".agent-shell/logs/" root))
         (file (expand-file-name "2026-11-30-101500-s1.org" dir))
         (other (expand-file-name "notes.org" root))
         (title "修复 中文 解析 ✓")
         (text (concat "#+TITLE: agent-shell log: s1\n#+STARTUP: overview\n"
                       "#+TODO: WAIT | APPROVED REJECTED DONE FAILED\n\n"
                       "* DONE [2026-11-30 Mon 10:15] " title "\n"
                       ":PROPERTIES:\n:SOURCE: user\n:LOG_ID: e-1\n:END:\n"
                       (mapconcat (lambda (i) (format "第%d行 output line %d\n" i i))
                                  (number-sequence 1 200) "")))
         (org-runs 0)
         (large-file-warning-threshold 1000))
    (unwind-protect
        (progn
          (make-directory dir t)
          (let ((coding-system-for-write 'utf-8))
            (write-region text nil file nil 'silent)
            (write-region text nil other nil 'silent))
          (cl-letf (((symbol-function 'yes-or-no-p)
                     (lambda (prompt) (error "Asked: %s" prompt)))
                    ((symbol-function 'y-or-n-p)
                     (lambda (prompt) (error "Asked: %s" prompt)))
                    ((symbol-function 'read-multiple-choice)
                     (lambda (prompt &rest _) (error "Asked: %s" prompt))))
            (let ((org-mode-hook (list (lambda () (cl-incf org-runs)))))
              (let ((default-directory root))
                (agent-shell-log-open-file file)))
            (should (= large-file-warning-threshold 1000))
            (with-current-buffer (get-file-buffer file)
              (unwind-protect
                  (progn
                    (should (derived-mode-p 'agent-shell-log-mode))
                    (should (= org-runs 1))
                    (should buffer-read-only)
                    (should (equal agent-shell-log--file file))
                    (should (equal (encode-coding-string (buffer-string) 'utf-8)
                                   (encode-coding-string text 'utf-8)))
                    ;; Opened folded, as #+STARTUP says.
                    (goto-char (point-min))
                    (search-forward "第1行")
                    (should (invisible-p (point))))
                (kill-buffer)))
            ;; Any other large file still asks.
            (should-error (find-file-noselect other) :type 'error)
            (should-not (get-file-buffer other))))
      (delete-directory root t))))

(ert-deftest test-log-growth/past-log-visit-follows-update-headings ()
  "RET on a heading that carries an entry's later change visits the entry's file.
A log file written append-only holds an entry's later state (its TODO,
its output) as a heading of its own naming the entry (LOG_UPDATE), and
a step placed after other tasks under a heading continuing its task
\(CONTINUES); PATH and LINE are the entry's."
  (let* ((root (file-name-as-directory (make-temp-file "agent-shell-log-growth-" t)))
         (dir (expand-file-name ".agent-shell/logs/" root))
         (file (expand-file-name "2026-11-30-101454-s1.org" dir))
         (target (expand-file-name "源码/main.py" root)))
    (unwind-protect
        (progn
          (make-directory dir t)
          (make-directory (file-name-directory target) t)
          (with-temp-file target (insert "one\ntwo 二\nthree\n"))
          (let ((coding-system-for-write 'utf-8))
            (with-temp-file file
              (insert "#+TODO: WAIT | APPROVED REJECTED DONE FAILED\n"
                      "* [2026-11-30 Mon 10:14] 任务\n"
                      ":PROPERTIES:\n:SOURCE: user\n:LOG_ID: e-1\n:END:\n"
                      "** WAIT [2026-11-30 Mon 10:14] replace_region 源码/main.py\n"
                      ":PROPERTIES:\n:SOURCE: tool\n:LOG_ID: e-2\n:PATH: 源码/main.py\n:LINE: 2\n:END:\n"
                      "* [2026-11-30 Mon 10:15] 另一个任务\n"
                      ":PROPERTIES:\n:SOURCE: user\n:LOG_ID: e-3\n:END:\n"
                      "* [2026-11-30 Mon 10:16] 任务 (continued)\n"
                      ":PROPERTIES:\n:SOURCE: bridge\n:CONTINUES: e-1\n:END:\n"
                      "** [2026-11-30 Mon 10:16] replace_region 源码/main.py (continued)\n"
                      ":PROPERTIES:\n:SOURCE: bridge\n:CONTINUES: e-2\n:END:\n"
                      "*** DONE [2026-11-30 Mon 10:16] ↳ replace_region 源码/main.py\n"
                      ":PROPERTIES:\n:SOURCE: bridge\n:LOG_UPDATE: e-2\n:EXIT_CODE: 0\n:END:\n"
                      "#+begin_src text\nok 完成\n#+end_src\n")))
          (let ((default-directory root))
            (agent-shell-log-open-file file))
          (with-current-buffer (get-file-buffer file)
            (dolist (heading '("↳ replace_region" "main.py (continued)"))
              (goto-char (point-min))
              (search-forward heading)
              (beginning-of-line)
              (execute-kbd-macro (kbd "o"))
              (should (equal (buffer-file-name) target))
              (should (looking-at "two 二"))
              (kill-buffer)
              (set-buffer (get-file-buffer file)))
            (kill-buffer)))
      (delete-directory root t))))

(provide 'test-log-growth)
;;; test-log-growth.el ends here
