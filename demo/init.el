;;; init.el --- Start the agent-shell demo  -*- lexical-binding: t; -*-

;; SPDX-License-Identifier: GPL-3.0-or-later

;;; Commentary:

;; Loaded by demo/run-demo.sh as `emacs -Q -l demo/init.el' from inside a
;; fresh copy of the sample project.  It loads agent-shell from this
;; checkout, points it at a model and starts a session, through the same
;; options and commands a user would use:
;;
;; - with an API key configured (`agent-shell-api-key', auth-source, or
;;   AGENT_SHELL_API_KEY / DEEPSEEK_API_KEY / OPENAI_API_KEY), the real
;;   model of `agent-shell-api-base' (AGENT_SHELL_API_BASE and
;;   AGENT_SHELL_MODEL override the defaults);
;; - without one, or with AGENT_SHELL_DEMO_MOCK=1, the bridge's scripted
;;   mock model serving demo/script.json on loopback.  The echo area and
;;   the first lines of the shell buffer say so.
;;
;; The memory index goes to AGENT_SHELL_DEMO_STATE when set, so the demo
;; never touches the user's own memory index.

;;; Code:

(require 'subr-x)

(defconst agent-shell-demo-directory
  (file-name-directory (or load-file-name buffer-file-name))
  "The demo/ directory of the checkout.")

(defconst agent-shell-demo-checkout
  (file-name-directory (directory-file-name agent-shell-demo-directory))
  "The checkout holding the demo.")

(add-to-list 'load-path (expand-file-name "elisp" agent-shell-demo-checkout))
(require 'agent-shell)
(require 'agent-shell-memory)

(declare-function agent-shell-transcript-notice "agent-shell-transcript" (text))

(defconst agent-shell-demo-task
  "Fix the failing test: glossary.export_json turns 智能体 into \\u escapes. \
Run the tests before and after the fix."
  "The task pre-filled after the prompt; RET sends it.")

(defconst agent-shell-demo-follow-up
  "Next I want a CSV export of the glossary too — anything to remember?"
  "The second task the scripted demo answers from memory.")

(defvar agent-shell-demo--mock nil "The scripted mock model process, or nil.")

(defun agent-shell-demo--bridge ()
  "Return the bridge program of this checkout."
  (expand-file-name ".venv/bin/agent-shell-bridge" agent-shell-demo-checkout))

(defun agent-shell-demo--start-mock ()
  "Start the scripted mock model on loopback; return its API base."
  (let ((out "")
        (deadline (+ (float-time) 30)))
    (setq agent-shell-demo--mock
          (make-process
           :name "agent-shell-demo-mock" :noquery t :connection-type 'pipe
           :command (list (agent-shell-demo--bridge) "mock-model" "--script"
                          (expand-file-name "script.json" agent-shell-demo-directory)
                          "--port" "0")
           :stderr (get-buffer-create " *agent-shell-demo mock stderr*")
           :filter (lambda (_proc text) (setq out (concat out text)))))
    (while (and (not (string-search "\n" out))
                (process-live-p agent-shell-demo--mock)
                (< (float-time) deadline))
      (accept-process-output agent-shell-demo--mock 0.05))
    (let ((ready (ignore-errors
                   (json-parse-string (car (split-string out "\n"))
                                      :object-type 'alist))))
      (or (alist-get 'api_base ready)
          (error "The scripted mock model did not start: %s"
                 (with-current-buffer " *agent-shell-demo mock stderr*"
                   (buffer-string)))))))

(defun agent-shell-demo--scripted-p ()
  "Return non-nil when the demo should use the scripted mock model."
  (or (member (getenv "AGENT_SHELL_DEMO_MOCK") '("1" "t" "yes"))
      (not (agent-shell-project-api-key))))

(defun agent-shell-demo-configure ()
  "Set agent-shell's options for the demo; return non-nil when scripted."
  (setq agent-shell-bridge-command (list (agent-shell-demo--bridge)))
  (when-let ((state (getenv "AGENT_SHELL_DEMO_STATE")))
    (setq agent-shell-memory-dir (expand-file-name "memory-index/" state)))
  (let ((scripted (agent-shell-demo--scripted-p)))
    (if scripted
        (setq agent-shell-api-base (agent-shell-demo--start-mock)
              agent-shell-model "scripted-demo"
              agent-shell-api-key "scripted-demo-no-key")
      (when-let ((base (getenv "AGENT_SHELL_API_BASE")))
        (setq agent-shell-api-base base))
      (when-let ((model (getenv "AGENT_SHELL_MODEL")))
        (setq agent-shell-model model)))
    scripted))

(defun agent-shell-demo-start ()
  "Start the demo session in the current project and pre-fill the task."
  (let* ((scripted (agent-shell-demo-configure))
         (buffer (agent-shell-start))
         (banner
          (if scripted
              "SCRIPTED DEMO: no API key found (or AGENT_SHELL_DEMO_MOCK=1), so a \
scripted mock model answers on loopback; everything else — bridge, policy, \
tools, action log, memory — is the real thing."
            (format "LIVE DEMO: model %s at %s." agent-shell-model
                    agent-shell-api-base))))
    (delete-other-windows)
    (with-current-buffer buffer
      (agent-shell-transcript-notice banner)
      (agent-shell-transcript-notice
       (concat "Press RET to send the task below.  When a step waits for you, "
               "C-c C-l shows the action log; C-x o, then y approves, n rejects."
               (if scripted
                   (format "  Afterwards try: %s" agent-shell-demo-follow-up)
                 "")))
      (goto-char (point-max))
      (insert agent-shell-demo-task))
    (message "%s" (if scripted
                      "agent-shell: SCRIPTED DEMO (mock model, no API key) — press RET"
                    (format "agent-shell: live demo with %s — press RET"
                            agent-shell-model)))))

(defvar native-comp-deferred-compilation)
;; No background native compilation competing with the demo for the CPU.
(setq inhibit-startup-screen t
      native-comp-deferred-compilation nil)
(add-hook 'emacs-startup-hook #'agent-shell-demo-start)

;;; init.el ends here
