;;; test-models.el --- Tests for switching a session's model  -*- lexical-binding: t; -*-

;; SPDX-License-Identifier: GPL-3.0-or-later

;;; Commentary:

;; `agent-shell-switch-model' (C-c C-v) with two scripted model servers:
;; the shared one of agent-shell-test-session.el and a second started
;; here.  After the switch the header names the second model, the next
;; prompt is answered by the second server, and the log notes the switch.

;;; Code:

(require 'ert)
(require 'cl-lib)
(require 'agent-shell)
(require 'agent-shell-json)
(require 'agent-shell-test-helpers)
(require 'agent-shell-test-session)

(defun test-models--start-second ()
  "Start a second scripted model; return (PROCESS . API-BASE)."
  (let* ((script (let ((coding-system-for-write 'no-conversion))
                   (make-temp-file
                    "agent-shell-mock-b-" nil ".json"
                    (agent-shell-json-bytes
                     '((steps . [((match . ((last_user_contains . "resumed-b")))
                                  (text . "恢复后 model B again."))
                                 ((text . "第二个模型 model B answers."))]))))))
         (out "")
         (proc (make-process
                :name "agent-shell-test-mock-b" :noquery t :connection-type 'pipe
                :command (list (getenv "AGENT_SHELL_TEST_BRIDGE") "mock-model"
                               "--script" script "--port" "0")
                :stderr (get-buffer-create " *agent-shell-test-mock-b stderr*")
                :filter (lambda (_proc text) (setq out (concat out text))))))
    (agent-shell-test-wait "the second model" (lambda () (string-search "\n" out)))
    (cons proc (alist-get 'api_base (json-parse-string (car (split-string out "\n"))
                                                       :object-type 'alist)))))

(ert-deftest test-models/the-next-request-goes-to-the-chosen-model ()
  "C-c C-v picks a model of `agent-shell-models'; the next turn is its."
  (let ((second (test-models--start-second)))
    (unwind-protect
        (test-shell--with-session (root)
          (ignore root)
          (let ((agent-shell-models `((:name "second" :api-base ,(cdr second)
                                       :model "model-b" :price (1.0 2.0)))))
            (should-error (agent-shell-switch-model "nonesuch") :type 'user-error)
            (agent-shell-switch-model "second")
            (test-shell--wait "the switch"
                              (lambda () (string-search "Model: second (model-b)"
                                                        (test-shell--transcript))))
            (should (string-prefix-p " second │" (agent-shell-header-line)))
            (goto-char (point-max))
            (insert "after the switch")
            (agent-shell-send-input)
            (test-shell--wait "the second model's answer"
                              (lambda () (string-search "第二个模型 model B answers."
                                                        (test-shell--transcript)))
                              20)
            (test-shell--wait "the turn's end"
                              (lambda () (eq (agent-shell-session-state agent-shell--session)
                                             'idle))
                              20)
            (should (string-search
                     "Model: switched from"
                     (let ((file (agent-shell-session-log-path agent-shell--session)))
                       (with-temp-buffer
                         (let ((coding-system-for-read 'utf-8)) (insert-file-contents file))
                         (buffer-string)))))))
      (when (process-live-p (car second)) (delete-process (car second))))))

(defun test-models--kill-bridge ()
  "Kill the bridge with SIGKILL, so that a resume reads the session from disk."
  (signal-process (agent-shell-rpc-bridge-conn-process
                   (agent-shell-bridge-connection agent-shell-bridge--current))
                  'SIGKILL)
  (test-shell--wait "the dead bridge"
                    (lambda () (eq (agent-shell-session-state agent-shell--session) 'dead))))

(defmacro test-models--with-second (spec &rest body)
  "Run BODY with a second scripted model; SPEC is (BASE-VAR), its API base."
  (declare (indent 1) (debug ((symbolp) body)))
  (let ((second (make-symbol "second")))
    `(let* ((,second (test-models--start-second))
            (,(car spec) (cdr ,second)))
       (unwind-protect (progn ,@body)
         (when (process-live-p (car ,second)) (delete-process (car ,second)))))))

(defun test-models--switch-to-second ()
  "Switch this shell to the model \"second\" and wait for the notice."
  (agent-shell-switch-model "second")
  (test-shell--wait "the switch"
                    (lambda () (string-search "Model: second (model-b)"
                                              (test-shell--transcript)))))

(defun test-models--log-count (text)
  "How many times TEXT is in this session's log file."
  (let ((file (agent-shell-session-log-path agent-shell--session)))
    (with-temp-buffer
      (let ((coding-system-for-read 'utf-8)) (insert-file-contents file))
      (how-many (regexp-quote text) (point-min) (point-max)))))

(ert-deftest test-models/a-resumed-session-chooses-its-model-again ()
  "Resuming a session that had switched models switches it back to that model."
  (test-models--with-second (base)
        (test-shell--with-session (root)
          (let ((agent-shell-models `((:name "second" :api-base ,base :model "model-b")))
                (sid (agent-shell-session-id agent-shell--session)))
            (test-models--switch-to-second)
            (test-models--kill-bridge)
            (with-current-buffer (agent-shell-resume-session (test-shell--bridge) root sid)
              (test-shell--wait "resumed"
                                (lambda () (eq (agent-shell-session-state agent-shell--session)
                                               'idle))
                                20)
              (test-shell--wait "the model chosen again"
                                (lambda () (equal (agent-shell-session-model agent-shell--session)
                                                  "second"))
                                20)
              (should (= 2 (test-models--log-count "Model: switched from")))
              (goto-char (point-max))
              (insert "resumed-b 你好")
              (agent-shell-send-input)
              (test-shell--wait "model B's answer after the resume"
                                (lambda () (string-search "恢复后 model B again."
                                                          (test-shell--transcript)))
                                20)
              (test-shell--wait "the turn's end"
                                (lambda () (eq (agent-shell-session-state agent-shell--session)
                                               'idle))
                                20))))))

(ert-deftest test-models/a-model-no-longer-configured-is-named-not-chosen ()
  "A resumed session whose model is not in `agent-shell-models' says so."
  (test-models--with-second (base)
        (test-shell--with-session (root)
          (let ((sid (agent-shell-session-id agent-shell--session)))
            (let ((agent-shell-models `((:name "second" :api-base ,base :model "model-b"))))
              (test-models--switch-to-second))
            (test-models--kill-bridge)
            (let ((agent-shell-models nil))
              (with-current-buffer (agent-shell-resume-session (test-shell--bridge) root sid)
                (test-shell--wait "the notice"
                                  (lambda () (string-search "had switched to second (model-b"
                                                            (test-shell--transcript)))
                                  20)
                (should-not (equal (agent-shell-session-model agent-shell--session)
                                   "second"))))))))

(ert-deftest test-models/a-live-session-resumed-keeps-its-model-name ()
  "Resuming a session the bridge still runs shows the model's name, not its id."
  (test-models--with-second (base)
        (test-shell--with-session (root)
          (let ((agent-shell-models `((:name "second" :api-base ,base :model "model-b")))
                (sid (agent-shell-session-id agent-shell--session)))
            (test-models--switch-to-second)
            (with-current-buffer (agent-shell-resume-session (test-shell--bridge) root sid)
              (test-shell--wait "resumed"
                                (lambda () (eq (agent-shell-session-state agent-shell--session)
                                               'idle))
                                20)
              (should (equal (agent-shell-session-model agent-shell--session) "second"))
              ;; Still talking to it: no second switch.
              (should (= 1 (test-models--log-count "Model: switched from"))))))))

(provide 'test-models)
;;; test-models.el ends here
