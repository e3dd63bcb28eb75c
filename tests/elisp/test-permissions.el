;;; test-permissions.el --- Tests of the steps waiting for the user's decision  -*- lexical-binding: t; -*-

;; SPDX-License-Identifier: GPL-3.0-or-later

;;; Commentary:

;; agent-shell-permissions.el: a `session/request_permission' waits in
;; the shell and the action log until the user answers with a key (y, n
;; or a in the log; C-c C-y or C-c C-n in the shell), the answer reaches
;; the bridge even after a failed delivery, and a grant for the session
;; is shown, listed and revoked.
;;
;; Every test talks to the REAL bridge (AGENT_SHELL_TEST_BRIDGE, started
;; with its debug methods, see agent-shell-test-session.el) over real
;; HTTP and SSE; prompts go to its scripted mock model on loopback, the
;; only fake part.  Waiting is on conditions with deadlines, never on
;; sleeps.

;;; Code:

(require 'ert)
(require 'warnings)
(require 'cl-lib)
(require 'agent-shell)
(require 'agent-shell-test-helpers)
(require 'agent-shell-test-session)

(ert-deftest test-permissions/permission-approved-with-y-in-log ()
  "A permission request waits until `y' in the log buffer answers allow_once."
  (test-shell--with-shell (sid)
    (let ((answer nil) (failure nil))
      (agent-shell-rpc-request
       (test-shell--bridge) "debug/client_request"
       `((method . "session/request_permission")
         (params . ((sessionId . ,sid)
                    (toolCall . ((toolCallId . "c7") (title . "write_file 中文.py")
                                 (kind . "edit") (rawInput . ((path . "中文.py")))))
                    (options . [((optionId . "allow_once") (name . "Allow") (kind . "allow_once"))
                                ((optionId . "reject_once") (name . "Reject") (kind . "reject_once"))])
                    (logEntryId . ,(concat sid "-e1")) (risk . "write")
                    (reason . "writes a file")))
         (timeout_s . 20))
       :timeout 25
       :on-success (lambda (r) (setq answer r))
       :on-error (lambda (e) (setq failure e)))
      (test-shell--emit
       `((method . "log/entry")
         (params . ,(agent-shell-test-render-log
                     sid "log/entry"
                     `((id . ,(concat sid "-e1")) (session_id . ,sid) (todo . "WAIT")
                       (title . "write_file 中文.py") (timestamp . "2025-01-02T03:04:05+00:00")
                       (source . "tool") (properties . ((TOOL . "write_file") (RISK . "write"))))))))
      (test-shell--wait "the permission request"
                        (lambda () (cl-find sid (agent-shell-bridge-permissions agent-shell-bridge--current)
                                            :key #'agent-shell-bridge-permission-session
                                            :test #'equal)))
      (should (eq (agent-shell-session-state agent-shell--session) 'waiting))
      (should (string-search "waiting for you" (agent-shell-header-line)))
      (should (string-search "y/n in the log (C-c C-l)" (test-shell--transcript)))
      (let ((log (agent-shell-log-buffer sid)))
        (test-shell--wait "the WAIT entry" (lambda () (agent-shell-log-pending log)))
        (with-current-buffer log
          (switch-to-buffer log)
          (goto-char (point-max))
          (execute-kbd-macro (kbd "y")))
        (test-shell--wait "the answer" (lambda () (or answer failure)))
        (should-not failure)
        (should (equal (alist-get 'optionId (alist-get 'outcome (alist-get 'result answer)))
                       "allow_once"))
        (should (equal (alist-get 'outcome (alist-get 'outcome (alist-get 'result answer)))
                       "selected"))
        (kill-buffer log))
      (switch-to-buffer (get-buffer (format "*agent-shell: %s*" sid)))
      (should-not (eq (agent-shell-session-state agent-shell--session) 'waiting)))))

(ert-deftest test-permissions/reject-from-shell-buffer ()
  "C-c C-n in the shell buffer rejects the oldest waiting step with a reason."
  (test-shell--with-shell (sid)
    (let ((answer nil))
      (agent-shell-rpc-request
       (test-shell--bridge) "debug/client_request"
       `((method . "session/request_permission")
         (params . ((sessionId . ,sid) (toolCall . ((toolCallId . "c8") (title . "rm")))
                    (options . [((optionId . "reject_once") (name . "Reject")
                                 (kind . "reject_once"))])
                    (logEntryId . ,(concat sid "-e2")) (risk . "dangerous"))))
       :on-success (lambda (r) (setq answer r)))
      (test-shell--wait "the permission request"
                        (lambda () (eq (agent-shell-session-state agent-shell--session) 'waiting)))
      (cl-letf (((symbol-function 'read-string) (lambda (&rest _) "不要删除")))
        (execute-kbd-macro (kbd "C-c C-n")))
      (test-shell--wait "the answer" (lambda () answer))
      (let ((result (alist-get 'result answer)))
        (should (equal (alist-get 'optionId (alist-get 'outcome result)) "reject_once"))
        (should (equal (alist-get 'reason result) "不要删除"))))))

(defun test-permissions--ask (sid entry &optional log-entry)
  "Have the bridge ask SID's permission for log ENTRY; return the answer box.
With LOG-ENTRY non-nil, also publish ENTRY as a WAIT step in the log."
  (let ((box (list nil)))
    (agent-shell-rpc-request
     (test-shell--bridge) "debug/client_request"
     `((method . "session/request_permission")
       (params . ((sessionId . ,sid)
                  (toolCall . ((toolCallId . ,entry) (title . ,(concat "write " entry))))
                  (options . [((optionId . "allow_once") (name . "Allow")
                               (kind . "allow_once"))])
                  (logEntryId . ,entry) (risk . "write")))
       (timeout_s . 20))
     :timeout 25
     :on-success (lambda (r) (setcar box (list :result r)))
     :on-error (lambda (e) (setcar box (list :error e))))
    (when log-entry
      (test-shell--emit
       `((method . "log/entry")
         (params . ,(agent-shell-test-render-log
                     sid "log/entry"
                     `((id . ,entry) (session_id . ,sid) (todo . "WAIT")
                       (title . ,(concat "write " entry))
                       (timestamp . "2025-01-02T03:04:05+00:00") (source . "tool")))))))
    (test-shell--wait "the permission request"
                      (lambda () (agent-shell-permissions--waiting-p entry)))
    box))

(ert-deftest test-permissions/undelivered-approval-is-not-lost ()
  "Regression: an approval whose POST failed was dropped from the pending list.
The step then waited forever and could not be approved again.  Now it
stays pending until the bridge accepts the answer."
  (test-shell--with-shell (sid)
    (let* ((entry (concat sid "-e1"))
           (box (test-permissions--ask sid entry))
           (conn (agent-shell-bridge-connection agent-shell-bridge--current))
           (port (agent-shell-rpc-http-port (agent-shell-rpc-bridge-conn-http conn)))
           (closed (let ((server (make-network-process
                                  :name "test-shell-closed" :server t :host "127.0.0.1"
                                  :service t :noquery t)))
                     (prog1 (process-contact server :service) (delete-process server)))))
      (setf (agent-shell-rpc-http-port (agent-shell-rpc-bridge-conn-http conn)) closed)
      (unwind-protect
          (let ((inhibit-message t)
                (warning-minimum-log-level :emergency))
            (execute-kbd-macro (kbd "C-c C-y")))
        (setf (agent-shell-rpc-http-port (agent-shell-rpc-bridge-conn-http conn)) port))
      (should (agent-shell-permissions--waiting-p entry))
      (should-not (agent-shell-bridge-permission-sending (agent-shell-permissions--waiting-p entry)))
      (should (eq (agent-shell-session-state agent-shell--session) 'waiting))
      (should-not (car box))
      (execute-kbd-macro (kbd "C-c C-y"))
      (test-shell--wait "the answer" (lambda () (car box)))
      (should (equal (alist-get 'optionId (alist-get 'outcome (alist-get 'result
                                                                        (plist-get (car box) :result))))
                     "allow_once"))
      (test-shell--wait "the pending list to empty"
                        (lambda () (not (agent-shell-permissions--waiting-p entry)))))))

(ert-deftest test-permissions/stale-wait-does-not-block-after-restart ()
  "Regression: a WAIT left in a reused log buffer by a dead bridge took `y'.
After a restart, `y' picked that stale step (oldest first) and failed,
so the new step could not be approved from the log.  Now the bridge's
end marks its waiting steps FAILED, and `y' skips steps nobody waits for."
  (test-shell--with-shell (sid)
    (let ((log (agent-shell-log-buffer sid))
          (first (concat sid "-old")))
      (unwind-protect
          (progn
            (test-permissions--ask sid first t)
            (test-shell--wait "the WAIT step" (lambda () (agent-shell-log-pending log)))
            (signal-process (agent-shell-rpc-bridge-conn-process (agent-shell-bridge-connection agent-shell-bridge--current)) 'SIGKILL)
            (test-shell--wait "the bridge's end" (lambda () (eq (agent-shell-session-state agent-shell--session) 'dead)))
            (should-not (agent-shell-log-pending log))
            (with-current-buffer log
              (goto-char (point-min))
              (should (re-search-forward "^\\* FAILED \\[.*\\] write .*-old" nil t))
              (should (string-search "bridge stopped before this step was decided"
                                     (buffer-string))))
            ;; A fresh bridge; the same session's log buffer is reused.
            (let* ((second (concat sid "-new"))
                   (box (test-permissions--ask sid second t)))
              (test-shell--wait "the new WAIT step"
                                (lambda () (equal (agent-shell-log-pending log) (list second))))
              (with-current-buffer log
                (switch-to-buffer log)
                (goto-char (point-min))
                (execute-kbd-macro (kbd "y")))
              (test-shell--wait "the answer" (lambda () (car box)))
              (should (plist-get (car box) :result))))
        (kill-buffer log)))))

(ert-deftest test-permissions/waiting-notice-says-where-the-command-runs ()
  "The bridge's note on an approval (outside the sandbox) shows in the notice."
  (test-shell--with-shell (sid)
    (test-shell--emit (test-shell--tool sid "n1" "run_command make deploy"
                                        '((command . "make deploy"))))
    (test-shell--wait "the tool" (lambda () (string-search "make deploy" (test-shell--transcript))))
    (let ((box (list nil))
          (note "If you approve, it runs outside the sandbox, with your full permissions."))
      (agent-shell-rpc-request
       (test-shell--bridge) "debug/client_request"
       `((method . "session/request_permission")
         (params . ((sessionId . ,sid)
                    (toolCall . ((toolCallId . "n1") (title . "run_command make deploy")
                                 (rawInput . ((command . "make deploy")))))
                    (options . [((optionId . "allow_once") (name . "Allow")
                                 (kind . "allow_once"))])
                    (logEntryId . ,(concat sid "-n1")) (risk . "write")
                    (note . ,note)))
         (timeout_s . 20))
       :timeout 25
       :on-success (lambda (r) (setcar box r)))
      (test-shell--wait "waiting" (lambda () (eq (agent-shell-session-state agent-shell--session) 'waiting)))
      (should (string-search (concat "Waiting for you: run_command make deploy")
                             (test-shell--transcript)))
      (should (string-search note (test-shell--transcript)))
      (execute-kbd-macro (kbd "C-c C-y"))
      (test-shell--wait "the answer" (lambda () (car box))))))

(ert-deftest test-permissions/approval-resolves-waiting-notice ()
  "Regression: after approval the \"Waiting for you\" line stayed forever.
The diff that followed opened a second \"— output\" entry.  Now the
notice turns into the decision and the diff joins the tool's entry."
  (test-shell--with-shell (sid)
    (test-shell--emit (test-shell--tool sid "w1" "replace_region calc.py"
                                        '((path . "calc.py"))))
    (test-shell--wait "the tool" (lambda () (string-search "calc.py" (test-shell--transcript))))
    (let ((box (list nil)))
      (agent-shell-rpc-request
       (test-shell--bridge) "debug/client_request"
       `((method . "session/request_permission")
         (params . ((sessionId . ,sid)
                    (toolCall . ((toolCallId . "w1") (title . "replace_region calc.py")
                                 (rawInput . ((path . "calc.py")))))
                    (options . [((optionId . "allow_once") (name . "Allow")
                                 (kind . "allow_once"))])
                    (logEntryId . ,(concat sid "-w1")) (risk . "write")))
         (timeout_s . 20))
       :timeout 25
       :on-success (lambda (r) (setcar box r)))
      (test-shell--wait "waiting" (lambda () (eq (agent-shell-session-state agent-shell--session) 'waiting)))
      (should (string-search "Waiting for you: replace_region calc.py"
                             (test-shell--transcript)))
      (execute-kbd-macro (kbd "C-c C-y"))
      (test-shell--wait "the answer" (lambda () (car box)))
      (test-shell--wait "the notice resolved"
                        (lambda () (string-search "Approved: replace_region calc.py"
                                                  (test-shell--transcript))))
      (should-not (string-search "Waiting for you" (test-shell--transcript)))
      (test-shell--emit (test-shell--tool-done
                         sid "w1" "completed"
                         '(content . [((type . "diff") (path . "calc.py")
                                       (diff . "-a = 1\n+a = 2 # 改"))])))
      (test-shell--wait "the diff" (lambda () (string-search "+a = 2" (test-shell--transcript))))
      (should-not (string-search "— output" (test-shell--transcript)))
      (should (string-search "+a = 2 # 改" (test-shell--entry-text "replace_region")))
      (should (string-match-p "\\`▸ ● replace_region calc\\.py\nargs: path: calc\\.py\ndiff calc\\.py\n-a = 1\n\\+a = 2 # 改\nApproved: replace_region calc\\.py\n\\'"
                              (test-shell--transcript))))))

(ert-deftest test-permissions/c-c-c-y-asks-which-when-several-wait ()
  "Regression: C-c C-y approved the oldest waiting step, possibly off-screen.
With several steps waiting it now asks which; the one named is answered."
  (test-shell--with-shell (sid)
    (let ((answers nil) (offered nil))
      (dolist (n '(1 2))
        (let ((title (format "write_file 第%d.py" n)))
          (agent-shell-rpc-request
           (test-shell--bridge) "debug/client_request"
           `((method . "session/request_permission")
             (params . ((sessionId . ,sid)
                        (toolCall . ((toolCallId . ,(format "w%d" n)) (title . ,title)))
                        (options . [((optionId . "allow_once") (name . "Allow")
                                     (kind . "allow_once"))])
                        (logEntryId . ,(format "%s-w%d" sid n)) (risk . "write")))
             (timeout_s . 20))
           :timeout 25
           :on-success (lambda (r) (push (cons title r) answers)))))
      (test-shell--wait "both requests"
                        (lambda () (= 2 (cl-count sid (agent-shell-bridge-permissions agent-shell-bridge--current)
                                                  :key #'agent-shell-bridge-permission-session
                                                  :test #'equal))))
      (cl-letf (((symbol-function 'completing-read)
                 (lambda (_prompt table &rest _)
                   (setq offered (mapcar #'car table))
                   (cadr offered))))
        (execute-kbd-macro (kbd "C-c C-y")))
      (should (equal offered '("1. write_file 第1.py" "2. write_file 第2.py")))
      (test-shell--wait "the answer" (lambda () answers))
      (should (equal (mapcar #'car answers) '("write_file 第2.py")))
      ;; One step left: C-c C-y answers it without a question.
      (setq offered nil)
      (cl-letf (((symbol-function 'completing-read)
                 (lambda (&rest _) (error "Asked with a single step waiting"))))
        (execute-kbd-macro (kbd "C-c C-y")))
      (test-shell--wait "the second answer" (lambda () (= (length answers) 2)))
      (should (equal (car (car answers)) "write_file 第1.py")))))

(ert-deftest test-permissions/session-grant-is-shown ()
  "Regression: approving with `a' (for the session) left no trace.
The shell now says what was allowed and the header counts grants."
  (test-shell--with-shell (sid)
    (let ((box (list nil)) (entry (concat sid "-g1")))
      (agent-shell-rpc-request
       (test-shell--bridge) "debug/client_request"
       `((method . "session/request_permission")
         (params . ((sessionId . ,sid)
                    (toolCall . ((toolCallId . "g1") (title . "write_file 新.py")
                                 (rawInput . ((path . "新.py")))))
                    (options . [((optionId . "allow_session") (name . "Allow")
                                 (kind . "allow_always"))])
                    (logEntryId . ,entry) (risk . "write")))
         (timeout_s . 20))
       :timeout 25
       :on-success (lambda (r) (setcar box r)))
      (test-shell--wait "waiting" (lambda () (agent-shell-permissions--waiting-p entry)))
      (agent-shell-permissions-log-decide entry 'approve-session nil)
      (test-shell--wait "the answer" (lambda () (car box)))
      (test-shell--wait "the grant" (lambda () (agent-shell-session-grants agent-shell--session)))
      (should (string-search "Allowed for this session: write_file on any file"
                             (test-shell--transcript)))
      (should (string-search "│ 1 grant" (agent-shell-header-line))))))

(ert-deftest test-permissions/grants-are-said-listed-and-revoked ()
  "`a' says exactly what it grants and asks; `agent-shell-grants' lists and revokes.
A real turn on the real bridge: the model runs `mkdir -p 构建', the
user allows it for the session, the grants buffer shows it, and `k'
takes it back in the bridge."
  (test-shell--with-session (root)
    (goto-char (point-max))
    (insert "grant me 授权")
    (execute-kbd-macro (kbd "RET"))
    (let ((log (agent-shell-log-buffer (agent-shell-session-name agent-shell--session)))
          (shell (current-buffer))
          (sid (agent-shell-session-id agent-shell--session))
          (prompts nil))
      (test-shell--wait "the WAIT step" (lambda () (agent-shell-log-pending log)) 20)
      (test-shell--wait "the permission request"
                        (lambda () (agent-shell-permissions--waiting-p
                                    (car (agent-shell-log-pending log)))))
      (with-current-buffer log
        (switch-to-buffer log)
        (goto-char (agent-shell-log-node-start
                    (gethash (car (agent-shell-log-pending log)) agent-shell-log--nodes)))
        (cl-letf (((symbol-function 'y-or-n-p)
                   (lambda (prompt) (push prompt prompts) t)))
          (execute-kbd-macro (kbd "a"))))
      (should (equal (length prompts) 1))
      (should (string-search "run exactly `mkdir -p 构建` in" (car prompts)))
      (should (string-search (directory-file-name root) (car prompts)))
      (with-current-buffer shell
        (test-shell--wait "the turn's end"
                          (lambda () (and (string-search "granted 已授权" (test-shell--transcript))
                                          (eq (agent-shell-session-state agent-shell--session) 'idle)))
                          20))
      (should (file-directory-p (expand-file-name "构建" root)))
      (let ((grants (with-current-buffer shell (agent-shell-grants))))
        (unwind-protect
            (with-current-buffer grants
              (test-shell--wait "the listing" (lambda () agent-shell-grants--list))
              (goto-char (point-min))
              (should (search-forward "`mkdir -p 构建'" nil t))
              (should (equal (length (alist-get 'grants
                                                (test-shell--sync
                                                 "session/grants" `((sessionId . ,sid)))))
                             1))
              (should (string-search "│ 1 grant" (with-current-buffer shell
                                                   (agent-shell-header-line))))
              (beginning-of-line)
              (execute-kbd-macro (kbd "k"))
              (test-shell--wait "the revocation" (lambda () (null tabulated-list-entries)))
              (should (equal (alist-get 'grants (test-shell--sync
                                                 "session/grants" `((sessionId . ,sid))))
                             nil))
              (should-not (with-current-buffer shell (agent-shell-session-grants agent-shell--session))))
          (kill-buffer grants))))))

(provide 'test-permissions)
;;; test-permissions.el ends here
