;;; test-context.el --- ERT tests for the send commands and @ mentions  -*- lexical-binding: t; -*-

;; SPDX-License-Identifier: GPL-3.0-or-later

;;; Commentary:

;; agent-shell-context.el, agent-shell-mention.el and
;; agent-shell-diagnostics.el with real parts: a real *compilation*
;; buffer (make failing), a real *grep* buffer, Flymake's byte-compile
;; backend, Dired with marked files, and for the payloads the real
;; bridge with its scripted model, whose recorded requests say what the
;; model received.

;;; Code:

(require 'ert)
(require 'cl-lib)
(require 'url)
(require 'dired)
(require 'compile)
(require 'grep)
(require 'flymake)
(require 'agent-shell-test-session)
(require 'agent-shell-context)

(defconst test-context--module "第一行 first\n第二行 second 你好\n第三行 third\n第四行 fourth\n"
  "Content of the Chinese-named module of the test project.")

(defconst test-context--files
  `(("源码/模块.py" . ,test-context--module)
    ("notes.txt" . "plain notes\n")
    ("Makefile" . "all:\n\t@echo '源码/模块.py:2: error: 坏了 broken' >&2; exit 2\n"))
  "Files of the test project.")

(defun test-context--last-user (marker)
  "Return the last user message the model got whose text contains MARKER."
  (let (found)
    (dolist (body (test-shell--model-requests))
      (dolist (m (alist-get 'messages body))
        (when (and (equal (alist-get 'role m) "user")
                   (string-search marker (alist-get 'content m)))
          (setq found (alist-get 'content m)))))
    found))

(defun test-context--wait-turn (shell marker)
  "Wait until SHELL's turn ended and the model got a prompt with MARKER."
  (test-shell--wait "the model's request" (lambda () (test-context--last-user marker)) 30)
  (with-current-buffer shell
    (test-shell--wait "the turn's end"
                      (lambda () (null (agent-shell-session-turn-id agent-shell--session)))
                      30)))

(defun test-context--log (shell)
  "Return the text of SHELL's org log file."
  (with-temp-buffer
    (let ((coding-system-for-read 'utf-8))
      (insert-file-contents
       (with-current-buffer shell (agent-shell-session-log-path agent-shell--session))))
    (buffer-string)))

(defmacro test-context--with-project (spec &rest body)
  "Run BODY with ROOT bound to a fresh project and the real bridge; SPEC is (ROOT)."
  (declare (indent 1) (debug ((symbolp) body)))
  `(agent-shell-test-with-project (,(car spec) test-context--files)
     (test-shell--bridge)
     (unwind-protect (progn ,@body)
       (dolist (b (buffer-list))
         (when (and (eq (buffer-local-value 'major-mode b) 'agent-shell-mode)
                    (equal (agent-shell-session-root (buffer-local-value 'agent-shell--session b))
                           ,(car spec)))
           (kill-buffer b))))))

(defun test-context--visit (root path)
  "Visit PATH under ROOT and return its buffer."
  (find-file-noselect (expand-file-name path root)))

;;; The send commands, through the real bridge

(ert-deftest test-context/send-region-payload-transcript-and-log ()
  "A region of a Chinese-named file reaches the model as @PATH:START-END, framed."
  (test-context--with-project (root)
    (let* ((file (expand-file-name "源码/模块.py" root))
           (buffer (test-context--visit root "源码/模块.py"))
           shell)
      (with-current-buffer buffer
        (goto-char (point-min))
        (forward-line 1)
        (set-mark (point))
        (forward-line 2)
        (activate-mark)
        ;; No session yet: the command starts one and sends once it is ready.
        (setq shell (agent-shell-send-region (region-beginning) (region-end) t)))
      (test-context--wait-turn shell "[ATTACHMENT name=\"源码/模块.py:2-3\"")
      (let ((user (test-context--last-user "[ATTACHMENT name=\"源码/模块.py:2-3\"")))
        (should (string-prefix-p "@源码/模块.py:2-3\n\n" user))
        (let ((system (alist-get 'content (car (alist-get 'messages
                                                          (car (last (test-shell--model-requests))))))))
          (should (string-search "\"branch\": \"main\"" system)))
        (should (string-search
                 (format "[ATTACHMENT name=\"源码/模块.py:2-3\" kind=region path=\"%s\" \
lines=2-3 chars=%d]\n第二行 second 你好\n第三行 third\n\n[/ATTACHMENT]" file
                         (length "第二行 second 你好\n第三行 third\n"))
                 user)))
      (with-current-buffer shell
        (should (string-search "> @源码/模块.py:2-3\n▸ @ 源码/模块.py:2-3 (2 lines, 24 chars)"
                               (test-shell--transcript))))
      ;; A resumed session's history names what was attached.
      (with-temp-buffer
        (agent-shell--setup "test-context-history" root nil)
        (agent-shell-transcript-insert-history
         (alist-get 'history
                    (test-shell--sync "session/resume"
                                      `((sessionId . ,(with-current-buffer shell
                                                        (agent-shell-session-id
                                                         agent-shell--session)))
                                        (cwd . ,root)))))
        (should (string-search "> @源码/模块.py:2-3\n@ 源码/模块.py:2-3 (24 chars)\n\n"
                               (test-shell--transcript))))
      (let ((org (test-context--log shell)))
        (should (string-search ":ATTACHMENT_1: 源码/模块.py:2-3 (24 chars)" org))
        (should (string-search ":ATTACHMENT_1:\n源码/模块.py:2-3 (24 chars)\n#+begin_src text\n\
第二行 second 你好\n第三行 third\n#+end_src\n:END:" org))))))

(ert-deftest test-context/compilation-grep-dired-and-caps ()
  "dwim on a real *compilation* error and a *grep* match; Dired's marked files;
a capped buffer; each as the model received it."
  (test-context--with-project (root)
    (let ((shell (test-shell--start-session root))
          (agent-shell-context-lines-around 1))
      ;; A failing make in a real *compilation* buffer.
      (let ((default-directory root)
            (finished nil))
        (let ((compilation-finish-functions (list (lambda (_b _s) (setq finished t)))))
          (compile "make -k")
          (test-shell--wait "make" (lambda () finished) 20)))
      (with-current-buffer "*compilation*"
        (goto-char (point-min))
        (compilation-next-error 1)
        (let ((spec (car (agent-shell-context-dwim-specs))))
          (should (eq (plist-get spec :kind) 'compilation))
          (should (equal (plist-get spec :start) 2))
          (should (string-search "坏了 broken" (plist-get spec :text)))
          (should (string-search "    2  第二行 second 你好" (plist-get spec :text))))
        (agent-shell-send-dwim t))
      (test-context--wait-turn shell "kind=compilation")
      (let ((user (test-context--last-user "kind=compilation")))
        (should (string-search "name=\"源码/模块.py:2\" kind=compilation" user))
        (should (string-search "From *compilation* (make -k):" user))
        (should (string-search "    1  第一行 first\n    2  第二行 second 你好\n    3  第三行 third"
                               user)))
      ;; A real *grep* buffer.
      (let ((default-directory root))
        (grep "grep -nH -e third 源码/模块.py")
        (with-current-buffer "*grep*"
          (test-shell--wait "grep" (lambda () (not (get-buffer-process (current-buffer)))) 20)
          (goto-char (point-min))
          (compilation-next-error 1)
          (agent-shell-send-dwim t)))
      (test-context--wait-turn shell "From *grep*")
      (should (string-search "name=\"源码/模块.py:3\"" (test-context--last-user "From *grep*")))
      ;; Dired with two marked files.
      (with-current-buffer (dired-noselect root)
        (dired-mark-files-regexp "\\`\\(notes\\.txt\\|Makefile\\)\\'")
        (should (equal (length (agent-shell-context-dwim-specs)) 2))
        (agent-shell-send-file t))
      (test-context--wait-turn shell "name=\"notes.txt\"")
      (let ((user (test-context--last-user "name=\"notes.txt\"")))
        (should (string-search "[ATTACHMENT name=\"Makefile\" kind=file" user))
        (should (string-search (format "name=\"notes.txt\" kind=file path=\"%snotes.txt\" \
chars=12]\nplain notes\n" root) user)))
      ;; The cap: a buffer cut on both sides, the cut said.
      (let ((agent-shell-attachment-max-chars 10))
        (with-current-buffer (test-context--visit root "源码/模块.py")
          (agent-shell-send-buffer t)))
      (test-context--wait-turn shell "cut=")
      (let ((user (test-context--last-user "cut=")))
        (should (string-search (format "chars=%d cut=%d]\n第一行 first\n\n[… %d more"
                                       (length test-context--module)
                                       (- (length test-context--module) 10)
                                       (- (length test-context--module) 10))
                               user))
        (should (string-search "more characters cut at the attachment cap" user)))
      (with-current-buffer shell
        (should (string-search (format "(1 line, 10 of %d chars: cut at 10)"
                                       (length test-context--module))
                               (test-shell--transcript)))))))

(ert-deftest test-context/typed-mentions-and-the-outside-rule ()
  "A typed @ mention attaches a project file, never one outside the project;
an explicit send of the outside file attaches it, marked in the log."
  (test-context--with-project (root)
    (let* ((outside (make-temp-file "agent-shell-outside-" nil ".txt" "外面 outside\n"))
           (shell (test-shell--start-session root)))
      (unwind-protect
          (progn
            (with-current-buffer shell
              (goto-char (point-max))
              (insert (format "compare @notes.txt:1 and @%s please" outside))
              (agent-shell-send-input)
              (should (string-search "Not attached: @" (test-shell--transcript)))
              (should (string-search "is outside the project" (test-shell--transcript))))
            (test-context--wait-turn shell "compare @notes.txt:1")
            (let ((user (test-context--last-user "compare @notes.txt:1")))
              (should (string-search "name=\"notes.txt:1\" kind=region" user))
              (should-not (string-search "外面" user)))
            ;; A file in no project goes to the one session there is.
            (with-current-buffer (find-file-noselect outside)
              (agent-shell-send-file t))
            (test-context--wait-turn shell "外面 outside")
            (should (string-search "[sent explicitly: outside the project]"
                                   (test-context--log shell))))
        (when (get-file-buffer outside) (kill-buffer (get-file-buffer outside)))
        (delete-file outside)))))

(ert-deftest test-context/a-prompt-queued-during-a-turn-keeps-its-attachments ()
  "An explicit attachment in a prompt queued while a turn runs goes with it.
The outside file was sent by a command (the consent); queued and sent
later, it must still be attached as explicit, not refused as typed."
  (test-context--with-project (root)
    (let* ((outside (make-temp-file "agent-shell-outside-" nil ".txt" "排队 queued outside\n"))
           (shell (test-shell--start-session root)))
      (unwind-protect
          (progn
            (with-current-buffer shell
              (goto-char (point-max))
              (insert "带附件 hold-first please")
              (agent-shell-send-input)
              (test-shell--wait "the turn's id"
                                (lambda () (stringp (agent-shell-session-turn-id
                                                     agent-shell--session)))
                                20))
            (with-current-buffer (find-file-noselect outside)
              (agent-shell-send-file))
            (with-current-buffer shell
              (should (agent-shell-session-turn-id agent-shell--session))
              (goto-char (point-max))
              (insert " 带附件 queued-second please")
              (agent-shell-send-input)
              (should (= 1 (length (agent-shell-session-prompt-queue agent-shell--session))))
              (should-not (string-search "Not attached" (test-shell--transcript))))
            (test-context--wait-turn shell "带附件 queued-second please")
            (let ((user (test-context--last-user "带附件 queued-second please")))
              (should (string-search "排队 queued outside" user)))
            (should (string-search "[sent explicitly: outside the project]"
                                   (test-context--log shell))))
        (when (get-file-buffer outside) (kill-buffer (get-file-buffer outside)))
        (delete-file outside)))))

(ert-deftest test-context/a-typed-mention-never-attaches-a-secret ()
  "A mention (typed or completed) of a file among the user's secrets is refused;
the same file sent by a command is attached, marked explicit."
  (test-shell--bridge)                  ; the bridge's list of secrets is known
  (let* ((home (file-name-as-directory (file-truename (make-temp-file "agent-shell-home-" t))))
         (root (file-name-as-directory (expand-file-name "项目" home)))
         (process-environment (cons (concat "HOME=" (directory-file-name home))
                                    process-environment))
         (agent-shell-secret-paths '("项目/密钥.txt")))
    (unwind-protect
        (progn
          (make-directory root t)
          (agent-shell-test-write root "密钥.txt" "TOKEN=secret\n")
          (agent-shell-test-write root "普通.txt" "plain\n")
          (let ((secret (agent-shell-mention-resolve "密钥.txt" root))
                (plain (agent-shell-mention-resolve "普通.txt:1" root)))
            (should (equal (agent-shell-mention-refusal secret root) "holds credentials"))
            (should-not (agent-shell-mention-refusal plain root))
            (should (eq (plist-get plain :kind) 'region))
            (let ((buffer (get-buffer-create "*agent-shell: test-context-secret*")))
              (unwind-protect
                  (with-current-buffer buffer
                    (agent-shell--setup "test-context-secret" root nil)
                    (goto-char (point-max))
                    (insert "@密钥.txt and @普通.txt:1 ")
                    (agent-shell-context-insert-mention
                     (list :kind 'file :path (expand-file-name "密钥.txt" root) :explicit t))
                    (let ((items (agent-shell-context-capture)))
                      (should (equal (mapcar (lambda (i) (alist-get 'name i)) items)
                                     '("密钥.txt" "普通.txt:1")))
                      (should (eq (alist-get 'explicit (car items)) t))
                      (should (equal (alist-get 'text (car items)) "TOKEN=secret\n"))
                      (should (string-search "Not attached: @密钥.txt holds credentials"
                                             (test-shell--transcript)))))
                (kill-buffer buffer)))))
      (delete-directory home t))))

;;; Flymake, in batch

(ert-deftest test-context/flymake-diagnostic-at-point-and-after-an-edit ()
  "The byte-compile backend's warning is sent by dwim, listed for the project,
and reported near an edit once Flymake settled."
  (agent-shell-test-with-project (root '(("坏.el" . ";;; 坏.el --- x  -*- lexical-binding: t; -*-\n\
(defun test-context-f ()\n  (test-context-undefined-function-xyz))\n")))
    (let ((buffer (find-file-noselect (expand-file-name "坏.el" root)))
          ;; The backend starts another Emacs: slow in a loaded CI.
          (agent-shell-diagnostics-wait 30)
          (reported nil))
      (with-current-buffer buffer
        (emacs-lisp-mode)
        ;; Emacs's security fix: the backend compiles only trusted files.
        (when (boundp 'trusted-content) (setq-local trusted-content :all))
        (setq-local flymake-diagnostic-functions '(elisp-flymake-byte-compile))
        (flymake-mode 1)
        (agent-shell-diagnostics-after-edit buffer 2 3 (lambda (text) (setq reported text)))
        (test-shell--wait "Flymake's report" (lambda () reported) 30)
        (should (string-search "line 3" reported))
        (should (string-search "test-context-undefined-function-xyz" reported))
        (goto-char (point-min))
        (search-forward "(test-context-undefined")
        (let ((spec (agent-shell-context-diagnostic-spec)))
          (should (eq (plist-get spec :kind) 'diagnostic))
          (should (string-search "warning at line 3" (plist-get spec :text)))
          (should (string-search "    2  (defun test-context-f ()" (plist-get spec :text)))))
      (should (string-search "坏.el:3" (agent-shell-diagnostics-project-text root)))
      ;; @diagnostics in the input attaches them, read when the prompt is sent.
      (let ((shell (get-buffer-create "*agent-shell: test-context-diagnostics*")))
        (unwind-protect
            (with-current-buffer shell
              (agent-shell--setup "test-context-diagnostics" root nil)
              (goto-char (point-max))
              (insert "fix @diagnostics")
              (let ((item (car (agent-shell-context-capture))))
                (should (equal (alist-get 'kind item) "diagnostics"))
                (should (string-search "坏.el:3:" (alist-get 'text item)))
                (should (string-search "warning" (alist-get 'text item)))))
          (kill-buffer shell)))
      (with-temp-buffer
        ;; Flymake on with no backend to run: settled at once, nothing to wait for.
        (setq-local flymake-diagnostic-functions nil)
        (flymake-mode 1)
        (let ((reply nil))
          (agent-shell-diagnostics-after-edit (current-buffer) 1 1
                                              (lambda (text) (setq reply text)))
          (should (equal reply "No diagnostics near lines 1-1.")))
        (flymake-mode -1))
      (let ((reply nil))
        (with-current-buffer (get-buffer-create "*test-context-nochecker*")
          (agent-shell-diagnostics-after-edit (current-buffer) 1 1
                                              (lambda (text) (setq reply (list text)))))
        (should (equal reply '(nil))))
      (flymake-mode -1))))

;;; The automatic context

(ert-deftest test-context/automatic-context-names-windows-task-branch-and-run ()
  "The automatic context: visible buffers, the clocked-in task, branch, last run."
  (require 'org-clock)
  (agent-shell-test-with-project (root (append test-context--files
                                               '(("任务.org" . "* TODO 修复 the build\n\
第一行 body line one\nline two\n"))))
    (let ((default-directory root)
          (finished nil))
      (let ((compilation-finish-functions (list (lambda (_b _s) (setq finished t)))))
        (compile "make -k")
        (test-shell--wait "make" (lambda () finished) 20)))
    (let ((module (test-context--visit root "源码/模块.py"))
          (org (test-context--visit root "任务.org"))
          (outside (find-file-noselect (make-temp-file "agent-shell-outside-" nil ".txt"))))
      (unwind-protect
          (save-window-excursion
            (delete-other-windows)
            (switch-to-buffer module)
            (goto-char (point-min))
            (forward-line 1)
            (set-mark (point))
            (forward-line 2)
            (activate-mark)
            (set-window-buffer (split-window) outside)
            (with-current-buffer org
              (goto-char (point-min))
              (org-clock-in))
            (let* ((context (agent-shell-ambient-context root))
                   (visible (append (alist-get 'visible context) nil))
                   (json (json-serialize context)))
              (should (equal (alist-get 'file (car visible)) "源码/模块.py"))
              (should (equal (alist-get 'line (car visible)) 4))
              (should (equal (alist-get 'region (car visible)) "2-4"))
              (should (equal (alist-get 'outside_project (cadr visible)) 1))
              (should-not (string-search (buffer-file-name outside) json))
              (should (equal (alist-get 'heading (alist-get 'org_task context)) "修复 the build"))
              (should (string-search "第一行 body line one"
                                     (alist-get 'body (alist-get 'org_task context))))
              (should (equal (alist-get 'branch context) "main"))
              (let ((run (alist-get 'last_run context)))
                (should (equal (alist-get 'command run) "make -k"))
                (should (string-search "code 2" (alist-get 'status run)))
                (should (string-search "源码/模块.py:2: error: 坏了" (alist-get 'first_error run))))
              (should (< (length json) 1500))
              (let ((agent-shell-context-org-clock nil)
                    (agent-shell-context-last-run nil)
                    (agent-shell-context-git-branch nil)
                    (agent-shell-context-visible-buffers nil))
                (should (null (agent-shell-ambient-context root))))))
        (with-current-buffer org (org-clock-out nil t))
        (let ((file (buffer-file-name outside)))
          (kill-buffer outside)
          (delete-file file))))))

;;; dwim without a bridge

(ert-deftest test-context/dwim-diff-hunk-and-function-at-point ()
  "In `diff-mode' dwim takes the hunk at point; in code, the function at point."
  (with-temp-buffer
    (insert "--- a/f.py\n+++ b/f.py\n@@ -1,2 +1,2 @@\n-旧 old\n+新 new\n same\n")
    (diff-mode)
    (goto-char (point-min))
    (search-forward "新")
    (let ((spec (car (agent-shell-context-dwim-specs))))
      (should (eq (plist-get spec :kind) 'hunk))
      (should (string-search "@@ -1,2 +1,2 @@\n-旧 old\n+新 new\n same" (plist-get spec :text)))))
  (with-temp-buffer
    (insert "(defun a () 1)\n\n(defun 乙 ()\n  2)\n")
    (emacs-lisp-mode)
    (goto-char (point-max))
    (search-backward "2")
    (let ((spec (car (agent-shell-context-dwim-specs))))
      (should (eq (plist-get spec :kind) 'function))
      (should (equal (list (plist-get spec :start) (plist-get spec :end)) '(3 4)))
      (should (equal (agent-shell-context-mention spec nil)
                     (format "@%s:3-4" (buffer-name)))))))

(declare-function magit-diff-unstaged "ext:magit-diff" (&optional args files))

(ert-deftest test-context/dwim-magit-hunk ()
  "In a real magit diff buffer dwim takes the hunk at point."
  (agent-shell-test-add-elpa-to-load-path)
  (require 'magit)
  (agent-shell-test-with-project (root '(("甲.py" . "a = 1\nb = 2\n")))
    (agent-shell-test-write root "甲.py" "a = 1\nb = 新\n")
    (let ((process-environment (agent-shell-test-git-environment))
          (default-directory (file-name-as-directory root)))
      (let ((buffer (magit-diff-unstaged)))
        (unwind-protect
            (with-current-buffer (if (bufferp buffer) buffer (current-buffer))
              (goto-char (point-min))
              (search-forward "+b = 新")
              (let ((spec (car (agent-shell-context-dwim-specs))))
                (should (eq (plist-get spec :kind) 'hunk))
                (should (string-search "-b = 2\n+b = 新" (plist-get spec :text)))))
          (when (buffer-live-p buffer) (kill-buffer buffer)))))))

;;; Diagnostics in an edit's result, through the real bridge

(defconst test-context--bad-el
  (concat ";;; 坏.el --- x  -*- lexical-binding: t; -*-\n"
          "(defun test-context-f ()\n  (test-context-undefined-function-xyz))\n"
          (make-string 20 ?\n)
          "(defun test-context-g ()\n  (test-context-far-undefined-xyz))\n")
  "An Emacs Lisp file with two warnings far apart.")

(defun test-context--flymake-on (buffer)
  "Turn on the byte-compile backend in BUFFER and wait for its first report."
  (with-current-buffer buffer
    (emacs-lisp-mode)
    (when (boundp 'trusted-content) (setq-local trusted-content :all))
    (setq-local flymake-diagnostic-functions '(elisp-flymake-byte-compile))
    (flymake-mode 1)
    (flymake-start nil t)
    (test-shell--wait "Flymake's first report" (lambda () (flymake-diagnostics)) 30)))

(ert-deftest test-context/an-edit-result-carries-the-diagnostics-near-it ()
  "After replace_region the model's tool result lists the diagnostic of the
edited line and says how many more the file has."
  (test-shell--with-session (root)
    (agent-shell-test-write root "坏.el" test-context--bad-el)
    (let ((agent-shell-diagnostics-wait 30)
          (agent-shell-log-notify-on-wait nil)
          (file (find-file-noselect (expand-file-name "坏.el" root)))
          (shell (current-buffer)))
      (test-context--flymake-on file)
      (goto-char (point-max))
      (insert "edit with diagnostics 诊断")
      (agent-shell-send-input)
      (condition-case err
          (test-shell--wait "the permission request"
                            (lambda () (ignore-errors (agent-shell-permissions-choose "Approve")))
                            30)
        (error (message "TRANSCRIPT: %s" (test-shell--transcript)) (signal (car err) (cdr err))))
      (agent-shell-approve)
      (test-context--wait-turn shell "edit with diagnostics")
      (let* ((tool (cl-loop for body in (test-shell--model-requests)
                            thereis (cl-loop for m in (alist-get 'messages body)
                                             when (and (equal (alist-get 'role m) "tool")
                                                       (string-search "replace_region"
                                                                      (alist-get 'content m)))
                                             return (alist-get 'content m)))))
        (should tool)
        (should (string-search "\"diagnostics\": \"line 3:" tool))
        (should (string-search "test-context-edited-undefined-xyz" tool))
        (should-not (string-search "test-context-far-undefined-xyz" tool))
        (should (string-search "1 more in the file." tool)))
      (with-current-buffer file (flymake-mode -1)))))

(ert-deftest test-context/project-diagnostics-tool ()
  "project_diagnostics lists the project's diagnostics, or says there is no checker."
  (agent-shell-test-with-project (root `(("坏.el" . ,test-context--bad-el)))
    (let ((context (agent-shell-test-context root)))
      (should (string-search "No checker"
                             (alist-get 'note (agent-shell-tools-call "project_diagnostics"
                                                                      nil context))))
      (let ((buffer (find-file-noselect (expand-file-name "坏.el" root))))
        (test-context--flymake-on buffer)
        (let* ((result (agent-shell-tools-call "project_diagnostics" '((limit . 1)) context))
               (first (aref (alist-get 'diagnostics result) 0)))
          (should (equal (alist-get 'checked_buffers result) 1))
          (should (equal (alist-get 'file first) "坏.el"))
          (should (equal (alist-get 'total result) 2))
          (should (equal (alist-get 'more result) 1)))
        (with-current-buffer buffer (flymake-mode -1))))))

;;; @ completion

(ert-deftest test-context/completion-offers-files-buffers-and-diagnostics ()
  "@ completes project files, non-file buffers and diagnostics, with kind and size."
  (agent-shell-test-with-project (root test-context--files)
    (with-current-buffer (get-buffer-create "*compilation*")
      (let ((inhibit-read-only t)) (erase-buffer) (insert "make -k\n")))
    (let ((shell (get-buffer-create "*agent-shell: test-context-completion*")))
      (unwind-protect
          (with-current-buffer shell
            (agent-shell--setup "test-context-completion" root nil)
            (goto-char (point-max))
            (insert "look at @源")
            (let* ((capf (agent-shell-mention-completion-at-point))
                   (table (nth 2 capf))
                   (annotate (plist-get (nthcdr 3 capf) :annotation-function)))
              (should (equal (all-completions "源" table) '("源码/模块.py")))
              (should (member "*compilation*" (all-completions "*co" table)))
              (should (member "diagnostics" (all-completions "diag" table)))
              (should (string-match-p "file, [0-9]+ B" (funcall annotate "源码/模块.py")))
              (should (string-match-p "buffer compilation-mode\\|buffer fundamental-mode"
                                      (funcall annotate "*compilation*")))))
        (kill-buffer shell)))))

(ert-deftest test-context/file-list-refreshes-in-the-background ()
  "A saved file the cached list lacks marks it stale; the next completion starts a
background listing and keeps answering from the old list meanwhile."
  (agent-shell-test-with-project (root test-context--files)
    (should-not (member "新文件.txt" (agent-shell-mention-project-files root)))
    (with-current-buffer (find-file-noselect (expand-file-name "新文件.txt" root))
      (insert "新\n")
      (save-buffer))
    (let ((record (gethash root agent-shell-mention--files)))
      (should (agent-shell-mention-files-stale record))
      (should-not (member "新文件.txt" (agent-shell-mention-project-files root)))
      (test-shell--wait "the background listing"
                        (lambda () (member "新文件.txt"
                                           (agent-shell-mention-files-names record)))
                        20)
      (should-not (agent-shell-mention-files-stale record)))))

(ert-deftest test-context/a-completed-buffer-name-with-spaces-stays-whole ()
  "Completing a buffer whose name has spaces marks the mention, so it attaches whole."
  (let ((other (get-buffer-create "magit: 项目 x"))
        (shell (get-buffer-create "*agent-shell: test-context-spaces*")))
    (unwind-protect
        (with-current-buffer shell
          (with-current-buffer other (insert "On branch main\n"))
          (agent-shell--setup "test-context-spaces" temporary-file-directory nil)
          (goto-char (point-max))
          (insert "see @magit: 项目 x")
          (funcall (plist-get (nthcdr 3 (save-excursion
                                          (goto-char (- (point) (length "magit: 项目 x")))
                                          (agent-shell-mention-completion-at-point)))
                              :exit-function)
                   "magit: 项目 x" 'finished)
          (let ((items (agent-shell-context-capture)))
            (should (equal (mapcar (lambda (i) (alist-get 'name i)) items) '("magit: 项目 x")))
            (should (equal (alist-get 'text (car items)) "On branch main\n"))))
      (kill-buffer shell)
      (kill-buffer other))))

(provide 'test-context)
;;; test-context.el ends here
