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
                   (make-temp-file "agent-shell-mock-b-" nil ".json"
                                   (agent-shell-json-bytes
                                    '((steps . [((text . "第二个模型 model B answers."))]))))))
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

(provide 'test-models)
;;; test-models.el ends here
