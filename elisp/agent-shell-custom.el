;;; agent-shell-custom.el --- Options of agent-shell  -*- lexical-binding: t; -*-

;; SPDX-License-Identifier: GPL-3.0-or-later

;;; Commentary:

;; The customization group and the user options of agent-shell, in one
;; file every other part can require without loading the rest.

;;; Code:

(require 'cl-lib)

;;; The error every agent-shell error inherits from

(define-error 'agent-shell-error "agent-shell error")

(declare-function agent-shell-notify-default "agent-shell" (text))

;;; Options

(defgroup agent-shell nil
  "A coding agent that lives inside Emacs."
  :group 'tools
  :prefix "agent-shell-")

(defgroup agent-shell-rpc nil
  "Connection between Emacs and the agent-shell bridge."
  :group 'agent-shell
  :prefix "agent-shell-rpc-")

(defcustom agent-shell-api-base
  (or (getenv "AGENT_SHELL_API_BASE") "https://api.deepseek.com/v1")
  "Base URL of the OpenAI-compatible model API.
The default comes from the environment variable AGENT_SHELL_API_BASE
when it is set, else DeepSeek's API."
  :type 'string
  :group 'agent-shell
  :package-version '(agent-shell . "0.1.0"))

(defcustom agent-shell-model (or (getenv "AGENT_SHELL_MODEL") "deepseek-chat")
  "Model name sent to the model API.
The default comes from the environment variable AGENT_SHELL_MODEL when
it is set."
  :type 'string
  :group 'agent-shell
  :package-version '(agent-shell . "0.1.0"))

(defcustom agent-shell-models nil
  "Models a session can switch to with `agent-shell-switch-model' (\\[agent-shell-switch-model]).
Each entry is a property list:

  (:name \"deepseek\" :api-base \"https://api.deepseek.com/v1\"
   :model \"deepseek-chat\" :key-env \"DEEPSEEK_API_KEY\"
   :context-window 64000 :reasoning-effort nil :price (0.27 1.10))

Only :name, :api-base and :model are required.  :key-env names the
environment variable holding the key; without it the key is found as
for `agent-shell-api-base' (`agent-shell-api-key', `auth-source' for the
host, then the environment).  :price is (INPUT OUTPUT) per million
tokens, optionally with CACHED-INPUT third; :reasoning-effort a string
such as \"low\" or \"high\" for providers that take one."
  :type '(repeat (plist :tag "Model"
                        :options ((:name string) (:api-base string) (:model string)
                                  (:key-env string) (:context-window integer)
                                  (:reasoning-effort (choice (const :tag "None" nil) string))
                                  (:price (repeat number)))))
  :group 'agent-shell
  :package-version '(agent-shell . "0.2.0"))

(defcustom agent-shell-api-key nil
  "API key for the model API, or a function returning it, or nil.
When nil, the key comes from `auth-source' for the host of
`agent-shell-api-base', then from the environment variables
AGENT_SHELL_API_KEY, DEEPSEEK_API_KEY and OPENAI_API_KEY.  Prefer
`auth-source' or a function over a plain string."
  :type '(choice (const :tag "Look it up (auth-source, environment)" nil)
                 (string :tag "Key")
                 (function :tag "Function returning the key"))
  :group 'agent-shell
  :package-version '(agent-shell . "0.1.0"))

(defcustom agent-shell-context-window nil
  "Context window of the model in tokens, or nil for the bridge's default."
  :type '(choice (const :tag "Bridge default" nil)
                 (integer :tag "Tokens"))
  :group 'agent-shell
  :package-version '(agent-shell . "0.1.0"))

(defcustom agent-shell-echo-reasoning 'auto
  "Whether the model's reasoning is sent back with its tool calls.
DeepSeek's thinking mode requires it; other providers (Groq, among
others) reject it.  `auto' decides by the API base: only DeepSeek
gets it.  Whatever the choice, when a provider answers that the
`reasoning_content' field is wrong, the bridge flips the choice and
sends the request once more."
  :type '(choice (const :tag "By provider (DeepSeek only)" auto)
                 (const :tag "Always" always)
                 (const :tag "Never" never))
  :group 'agent-shell
  :package-version '(agent-shell . "0.1.0"))

(defcustom agent-shell-trust-env nil
  "When non-nil, the bridge honours proxy variables for model API calls.
Loopback traffic between Emacs and the bridge never uses a proxy."
  :type '(choice (const :tag "Ignore proxy variables" nil)
                 (const :tag "Use proxy variables" t))
  :group 'agent-shell
  :package-version '(agent-shell . "0.1.0"))

(defcustom agent-shell-memory-dir (locate-user-emacs-file "agent-shell-memory/")
  "Directory of the bridge's memory index, shared by all projects."
  :type 'directory
  :group 'agent-shell
  :package-version '(agent-shell . "0.1.0"))

(defcustom agent-shell-memory-accepted-only nil
  "Non-nil: inject only experiences accepted in the review inbox.
By default new experiences, not reviewed yet, are injected too.  The
bridge reads it when it starts (AGENT_SHELL_MEMORY_ACCEPTED_ONLY)."
  :type 'boolean
  :group 'agent-shell
  :package-version '(agent-shell . "0.1.0"))

(defcustom agent-shell-workspace-root nil
  "Directory used as the project root when no project is found.
When nil, `default-directory' is used."
  :type '(choice (const :tag "The current directory" nil)
                 (directory :tag "Directory"))
  :group 'agent-shell
  :package-version '(agent-shell . "0.1.0"))

(defcustom agent-shell-max-steps 25
  "Largest number of model steps in one turn."
  :type 'integer
  :group 'agent-shell
  :package-version '(agent-shell . "0.1.0"))

(defcustom agent-shell-extra-allowed-paths nil
  "Directories besides the project root that file tools may touch."
  :type '(repeat directory)
  :group 'agent-shell
  :package-version '(agent-shell . "0.1.0"))

(defcustom agent-shell-sandbox-approved-commands nil
  "Non-nil runs the commands you approve in the sandbox too, with network.
Commands that run without your yes always run in the bridge's
sandbox (bubblewrap) when it has one; by default the ones you approve
run outside it, with your full permissions.  The header line says
\"no sandbox\" where bubblewrap cannot run."
  :type 'boolean
  :group 'agent-shell
  :package-version '(agent-shell . "0.1.0"))

(defcustom agent-shell-sandbox-visible-paths nil
  "More directories shown read-only inside the sandbox.
The sandbox shows the system, the project, the programs on your
PATH and, in your home directory, only the toolchains it knows
\(~/.cargo, ~/.rustup, ~/.pyenv, ~/.nvm, ~/go, ~/.m2, ~/.gradle,
~/.local/lib …).  Add here what your builds need besides, as
absolute names or relative to your home directory, for example
\='(\"~/.mytool\" \"/srv/shared/sdk\").  Credentials under them stay
masked, and /run and your runtime directory are never shown."
  :type '(repeat (string :tag "Directory"))
  :group 'agent-shell
  :package-version '(agent-shell . "0.2.0"))

(defcustom agent-shell-default-mode 'act
  "Mode of a new session.
In `act' mode the agent may change files and run commands (with the
safety policy); in `ask' mode it only reads and answers."
  :type '(choice (const :tag "Act: read, write and run" act)
                 (const :tag "Ask: read only" ask))
  :group 'agent-shell
  :package-version '(agent-shell . "0.1.0"))

(defcustom agent-shell-prices nil
  "Prices in US dollars per million tokens, for the cost shown in the log.
A list (INPUT OUTPUT CACHED-INPUT), or nil to show no cost."
  :type '(choice (const :tag "No prices" nil)
                 (list :tag "Prices per million tokens"
                       (number :tag "Input")
                       (number :tag "Output")
                       (number :tag "Cached input")))
  :group 'agent-shell
  :package-version '(agent-shell . "0.1.0"))

(defcustom agent-shell-notify-threshold 30
  "Seconds a turn must last for its end to be notified."
  :type 'number
  :group 'agent-shell
  :package-version '(agent-shell . "0.1.0"))

(defcustom agent-shell-notify-webhook nil
  "URL the bridge posts task completions and failures to, or nil for none.
The message names the task, the failed step, the reason and the log file."
  :type '(choice (const :tag "No webhook" nil) (string :tag "URL"))
  :group 'agent-shell
  :package-version '(agent-shell . "0.1.0"))

(defcustom agent-shell-notify-webhook-kind 'generic
  "Shape of the webhook message: plain JSON, WeCom or Slack markdown."
  :type '(choice (const :tag "Generic JSON" generic)
                 (const :tag "WeCom (企业微信) markdown" wecom)
                 (const :tag "Slack markdown" slack))
  :group 'agent-shell
  :package-version '(agent-shell . "0.1.0"))

(defcustom agent-shell-notify-function #'agent-shell-notify-default
  "Function called with a message string when a long turn ends."
  :type 'function
  :group 'agent-shell
  :package-version '(agent-shell . "0.1.0"))

(defface agent-shell-prompt-face '((t :inherit minibuffer-prompt))
  "Face of the input prompt."
  :group 'agent-shell
  :package-version '(agent-shell . "0.1.0"))

;; The transcript (agent-shell-transcript.el)

(defcustom agent-shell-tool-output-max-chars 4000
  "Largest piece of tool output shown in the shell buffer per update.
The action log and its files keep the full output."
  :type 'integer
  :group 'agent-shell
  :package-version '(agent-shell . "0.1.0"))

(defface agent-shell-user-face '((t :inherit font-lock-keyword-face))
  "Face of the user's messages in the transcript."
  :group 'agent-shell
  :package-version '(agent-shell . "0.1.0"))

(defface agent-shell-entry-face '((t :inherit font-lock-comment-face))
  "Face of thought, tool and plan entries."
  :group 'agent-shell
  :package-version '(agent-shell . "0.1.0"))

(defface agent-shell-notice-face '((t :inherit font-lock-warning-face))
  "Face of notices from agent-shell itself."
  :group 'agent-shell
  :package-version '(agent-shell . "0.1.0"))

(defface agent-shell-queued-face '((t :inherit shadow))
  "Face of the prompts queued while a turn runs."
  :group 'agent-shell
  :package-version '(agent-shell . "0.1.0"))

(defface agent-shell-refusal-face '((t :inherit error))
  "Face of an answer in which the model refused the request."
  :group 'agent-shell
  :package-version '(agent-shell . "0.1.0"))

(provide 'agent-shell-custom)
;;; agent-shell-custom.el ends here
