;;; agent-shell-session.el --- The state of one shell buffer's session  -*- lexical-binding: t; -*-

;; SPDX-License-Identifier: GPL-3.0-or-later

;;; Commentary:

;; A shell buffer of `agent-shell-mode' keeps everything it knows about
;; its session in one `agent-shell-session' record, the buffer-local
;; value of `agent-shell--session': the session's id and name, the
;; running turn, the markers of the transcript and the input, what the
;; header line shows, the queued prompt.  agent-shell.el makes the
;; record when the mode starts; agent-shell-transcript.el,
;; agent-shell-lifecycle.el and the other parts read and set its slots.
;;
;; Whoever changes what a session shows elsewhere (its state, its usage,
;; the steps waiting) calls `agent-shell-session-changed', which runs
;; `agent-shell-session-state-functions': the sessions dashboard
;; (agent-shell-sessions.el) redraws that session's row from it.

;;; Code:

(require 'cl-lib)

(cl-defstruct (agent-shell-session
               (:constructor agent-shell-session-create)
               (:copier nil))
  "What a shell buffer knows about its session."
  (id nil :documentation "The session id, or nil before the bridge made one.")
  (root nil :documentation "The project root.")
  (name nil :documentation "The session name.")
  (mode nil :documentation "The session's mode, `act' or `ask'.")
  (model nil :documentation "The model, as the bridge reported it.")
  ;; The running turn.
  (turn-id nil :documentation "The running turn, or nil.")
  (turn-start nil :documentation "When the running turn started.")
  (stale-turns nil :documentation "Ids of turns this buffer stopped waiting for.")
  (turn-prompts nil :documentation "Turn id to the prompt that started it, newest first.")
  (queued-prompt nil :documentation "A prompt sent while the session was starting, or nil.
It is a list (TEXT NOTICE START): NOTICE is the range of the
transcript notice saying that TEXT waits, START a marker where the
input began.")
  (prompt-queue nil :documentation "Prompts queued while a turn runs, oldest first.")
  (queue-display nil :documentation "The queue as shown above the prompt, or nil.")
  (question nil :documentation "The model's question waiting for an answer, or nil.
A plist (:conn CONN :id ID :params PARAMS :notice RANGE).")
  (plan-notice nil :documentation "Range of the \"Plan waiting for you\" notice, or nil.")
  ;; The input.
  (input-marker nil :documentation "Where the user's input starts.")
  (history nil :documentation "Sent inputs, newest first.")
  (history-index -1 :documentation "Position while walking the history.")
  (history-draft nil :documentation "Input saved before walking the history.")
  ;; What the header line shows.
  (state 'starting :documentation "What the agent is doing.")
  (state-detail nil :documentation "Tool name while running one.")
  (state-since nil :documentation "When the session entered its state.")
  (usage nil :documentation "The last `usage' update, an alist.")
  (sandbox nil :documentation "The sandbox as the bridge described it (an alist).")
  (grants nil :documentation "What the user allowed for the rest of the session.")
  (instructions nil :documentation "Instruction files, as the bridge described them.")
  (log-path nil :documentation "The session's log file.")
  ;; The transcript.
  (output-marker nil :documentation "Where transcript output goes.")
  (prompt-gap nil :documentation "Overlay showing the prompt on its own line.")
  (block nil :documentation "The open block: nil, `message', or an entry id.")
  (body-open nil :documentation "Non-nil when the open entry already has body text.")
  (entries nil :documentation "Entry id to plist (:start MARKER :folded BOOL :title STRING).
START is a marker because the plan entry is redrawn in place.")
  (entry-counter 0 :documentation "Counter for entry ids.")
  (tools nil :documentation "Tool call id to entry id.")
  (plan-entry nil :documentation "Id of the entry showing the current plan, or nil.
Reset when a turn starts, so that each turn's plan has its own entry.")
  (plan-id nil :documentation "The `planId' shown in the plan entry, or nil.")
  (waiting-notices nil :documentation "Tool call id to (START END TITLE) of its notice.
START and END are markers around the \"Waiting for you\" notice."))

(defvar-local agent-shell--session nil
  "This shell buffer's `agent-shell-session', or nil in other buffers.")

(defvar agent-shell-session-state-functions nil
  "Abnormal hook run when what a session shows changes.
Its state (`agent-shell-header-set-state'), its usage, its model, the
steps waiting for the user, or the end of its buffer.  Each function
is called with the shell buffer, perhaps a buffer being killed.  It
runs on every streamed state change: keep it cheap, and defer any
drawing (the sessions dashboard coalesces on a short timer).")

(defun agent-shell-session-changed (&optional buffer)
  "Run `agent-shell-session-state-functions' for BUFFER (default: this one)."
  (when agent-shell-session-state-functions
    (run-hook-with-args 'agent-shell-session-state-functions
                        (or buffer (current-buffer)))))

(provide 'agent-shell-session)
;;; agent-shell-session.el ends here
