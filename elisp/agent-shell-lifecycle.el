;;; agent-shell-lifecycle.el --- Starting, losing and restarting a session  -*- lexical-binding: t; -*-

;; SPDX-License-Identifier: GPL-3.0-or-later

;;; Commentary:

;; The edges of a shell buffer's life, where nothing the user typed or
;; saw may be lost:
;;
;; - a prompt sent while the session is still starting (the bridge
;;   coming up, `session/new' or `session/resume' under way) is queued:
;;   it shows in the transcript at once, the header line says so, and
;;   it goes out when the session is ready.  When the session cannot
;;   start, the prompt goes back into the input;
;; - when the bridge connection drops (the bridge was killed, crashed or
;;   stopped), the running turn ends at once: tool lines still running
;;   are marked cancelled, steps and plans waiting for the user say they
;;   can no longer be answered;
;; - `agent-shell-restart' (C-c C-r in a shell buffer) starts a
;;   bridge again and resumes the buffer's session in place: the
;;   transcript and the unsent input stay.
;;
;; agent-shell.el requires this file and calls it from its commands and
;; from the bridge's exit callback; the state and the transcript
;; functions used here live in agent-shell.el, agent-shell-input.el,
;; agent-shell-turn.el, agent-shell-session-params.el and
;; agent-shell-transcript.el.

;;; Code:

(require 'cl-lib)
(require 'agent-shell-session)
(require 'subr-x)
(require 'agent-shell-rpc)
(require 'agent-shell-transcript)

(declare-function agent-shell-bridge-with-connection "agent-shell-bridge" (fn))
(declare-function agent-shell-bridge-live-connection "agent-shell-bridge" ())
(declare-function agent-shell-on-session "agent-shell" (buffer result))
(declare-function agent-shell-failure-reporter "agent-shell-session-params"
                  (buffer what))
(declare-function agent-shell-new-session-params "agent-shell-session-params"
                  (root &optional settings wide-confirmed))
(declare-function agent-shell-dispatch-prompt "agent-shell-turn" (text))
(declare-function agent-shell-show-prompt "agent-shell-turn" (text))
(declare-function agent-shell-input "agent-shell-input" ())
(declare-function agent-shell-set-input "agent-shell-input" (text))
(declare-function agent-shell-bridge-session-buffer "agent-shell-bridge" (session-id))

;;; The queued prompt

(defun agent-shell-lifecycle-queue-prompt (text)
  "Keep TEXT until the session of this shell buffer is ready.
The prompt shows in the transcript at once; the header line says
that it is queued."
  (when (agent-shell-session-queued-prompt agent-shell--session)
    (user-error "A prompt is already queued; it is sent when the session is ready"))
  (let ((start (copy-marker (agent-shell-session-output-marker agent-shell--session))))
    (agent-shell-show-prompt text)
    (setf (agent-shell-session-queued-prompt agent-shell--session)
          (list text
                (agent-shell-transcript-notice
                 "(queued: sent as soon as the session is ready)")
                start)))
  (force-mode-line-update))

(defun agent-shell-lifecycle-before-queued (fn)
  "Call FN with the transcript's output going before a queued prompt.
A resumed session's history arrives after the prompt was queued; it
belongs above it."
  (let ((start (nth 2 (agent-shell-session-queued-prompt agent-shell--session))))
    (if (not (and (markerp start) (eq (marker-buffer start) (current-buffer))))
        (funcall fn)
      (let ((end (copy-marker (agent-shell-session-output-marker agent-shell--session) t)))
        (set-marker (agent-shell-session-output-marker agent-shell--session) start)
        (unwind-protect (funcall fn)
          (set-marker (agent-shell-session-output-marker agent-shell--session) end)
          (set-marker end nil)
          (agent-shell-transcript-update-prompt-gap))))))

(defun agent-shell-lifecycle-send-queued ()
  "Send the queued prompt of this shell buffer, if any."
  (when-let ((queued (agent-shell-session-queued-prompt agent-shell--session)))
    (setf (agent-shell-session-queued-prompt agent-shell--session) nil)
    (agent-shell-transcript-replace-notice (nth 1 queued) "(sent)")
    (condition-case err
        (agent-shell-dispatch-prompt (car queued))
      (error (message "agent-shell: the queued prompt was not sent: %s"
                      (error-message-string err))))))

(defun agent-shell-lifecycle-unqueue ()
  "Put a queued prompt back into the input: the session did not start.
Text already typed after it stays, on the next line."
  (when-let ((queued (agent-shell-session-queued-prompt agent-shell--session)))
    (setf (agent-shell-session-queued-prompt agent-shell--session) nil)
    (agent-shell-transcript-replace-notice
     (nth 1 queued) "(not sent: the session did not start; it is back in the input)")
    (let ((typed (agent-shell-input)))
      (agent-shell-set-input (if (string-empty-p typed)
                                 (car queued)
                               (concat (car queued) "\n" typed))))
    (force-mode-line-update)))

;;; Recalled experiences

(defun agent-shell-lifecycle--recalled-lines (props)
  "Return the lines naming each recalled experience of PROPS, with its score."
  (let ((titles (split-string (or (alist-get 'RECALLED props) "") " | " t "[ \t]+"))
        (scores (split-string (format "%s" (or (alist-get 'SCORES props) "")) " | " t))
        (paths (split-string (or (alist-get 'PATHS props) "") " | " t)))
    (cl-loop for title in titles
             for n from 0
             collect (string-join
                      (delq nil (list (nth n scores) (nth n paths)
                                      (concat "— " title)))
                      " "))))

(defun agent-shell-lifecycle-show-recalled (entry)
  "Name the recalled experiences of the `log/entry' ENTRY in its shell buffer.
The bridge logs, when a turn starts, which experiences it put in the
system prompt (source \"memory\", properties RECALLED, SCORES and
PATHS); the shell shows them at the start of the turn as one folded
entry, each with its score and file, as it does for a resumed session."
  (let* ((props (alist-get 'properties entry))
         (recalled (and (equal (alist-get 'source entry) "memory")
                        (alist-get 'RECALLED props)))
         (buffer (and (stringp recalled) (not (string-empty-p recalled))
                      (agent-shell-bridge-session-buffer (alist-get 'session_id entry)))))
    (when buffer
      (with-current-buffer buffer
        (let ((titles (split-string recalled " | " t "[ \t]+")))
          (agent-shell-transcript-editing
            (agent-shell-transcript-close-block)
            (agent-shell-transcript-attachment
             (format "Recalled %d experience%s for this task: %s"
                     (length titles) (if (cdr titles) "s" "")
                     (string-join titles "; "))
             (concat (string-join (agent-shell-lifecycle--recalled-lines props) "\n")
                     "\n(M-x agent-shell-memory-forget drops one from the memory)"))))))))

;;; A dropped connection

(defun agent-shell-lifecycle-cancel-running-tools (why)
  "Mark the tool entries still pending or running as cancelled because of WHY."
  (dolist (cell (agent-shell-session-tools agent-shell--session))
    (let* ((id (cdr cell))
           (plist (agent-shell-transcript-entry id)))
      (when (and plist (member (plist-get plist :status) '("pending" "in_progress")))
        (let ((base (or (plist-get plist :base-title) (plist-get plist :title))))
          (agent-shell-transcript-entry-put id :status "cancelled")
          (agent-shell-transcript-entry-put id :base-title base)
          (agent-shell-transcript-set-entry-glyph id
                                                  (agent-shell-transcript-status-glyph
                                                   "cancelled"))
          (agent-shell-transcript-set-entry-title id (concat base " — " why)))))))

(defun agent-shell-lifecycle-resolve-plan-notice (text)
  "Replace the \"Plan waiting for you\" notice of this buffer with TEXT."
  (when (agent-shell-session-plan-notice agent-shell--session)
    (agent-shell-transcript-replace-notice
     (agent-shell-session-plan-notice agent-shell--session) text)
    (setf (agent-shell-session-plan-notice agent-shell--session) nil)))

(defun agent-shell-lifecycle-connection-lost (text)
  "End this shell buffer's turn at once: the bridge connection dropped.
TEXT says what happened and what to do; it is shown as a notice.
Running tool lines are marked cancelled, waiting notices say the step
can no longer be answered, and queued prompts go back into the
input.  The transcript and the input are kept."
  (when (stringp (agent-shell-session-turn-id agent-shell--session))
    (push (agent-shell-session-turn-id agent-shell--session)
          (agent-shell-session-stale-turns agent-shell--session)))
  (setf (agent-shell-session-turn-id agent-shell--session) nil
        (agent-shell-session-turn-start agent-shell--session) nil)
  (agent-shell-lifecycle-cancel-running-tools "cancelled: the bridge stopped")
  (dolist (cell (copy-sequence (agent-shell-session-waiting-notices agent-shell--session)))
    (agent-shell-transcript-resolve-waiting
     (car cell) "Not decided: %s — the bridge stopped"))
  (agent-shell-lifecycle-resolve-plan-notice "Plan not answered: the bridge stopped")
  (agent-shell-lifecycle-unqueue)
  ;; As after a cancel: prompts queued for after the turn go back into the input.
  (run-hook-with-args 'agent-shell-transcript-turn-end-functions
                      '((sessionUpdate . "turn_end") (stopReason . "cancelled")))
  (unless (eq (agent-shell-session-state agent-shell--session) 'dead)
    (agent-shell-transcript-notice text)
    (agent-shell-header-set-state 'dead)))

(defun agent-shell-lifecycle-dead-bridge-text (reason)
  "Return the notice shown when the bridge ended because of REASON."
  (substitute-command-keys
   (format "The agent-shell bridge stopped (%s).  \
\\<agent-shell-mode-map>\\[agent-shell-restart] restarts it and resumes this \
session here, keeping the transcript and your input."
           (string-trim (format "%s" reason)))))

;;; Commands

(defun agent-shell-restart ()
  "Restart the bridge when needed and resume this buffer's session in place.
The transcript and any unsent input stay as they are; nothing is
erased.  A buffer whose session never started gets a new session.  A
prompt sent while this runs is queued and goes out once the session is
back."
  (interactive)
  (unless (derived-mode-p 'agent-shell-mode)
    (user-error "Not in an agent-shell buffer"))
  (when (eq (agent-shell-session-state agent-shell--session) 'starting)
    (user-error "The session is already starting"))
  (when (and (agent-shell-session-id agent-shell--session)
             (not (eq (agent-shell-session-state agent-shell--session) 'dead))
             (agent-shell-bridge-live-connection))
    (user-error "The session is running; C-c C-k cancels a turn"))
  (let ((buffer (current-buffer))
        (session (agent-shell-session-id agent-shell--session))
        (root (agent-shell-session-root agent-shell--session)))
    (when (agent-shell-session-turn-id agent-shell--session)
      (agent-shell-lifecycle-connection-lost "The turn was abandoned for a restart"))
    (agent-shell-transcript-notice (if session
                                       (format "Restarting: resuming session %s…" session)
                                     "Restarting: starting a new session…"))
    (agent-shell-header-set-state 'starting)
    (agent-shell-bridge-with-connection
     (lambda (conn)
       (agent-shell-rpc-request
        conn
        (if session "session/resume" "session/new")
        (if session
            `((sessionId . ,session) (cwd . ,(directory-file-name root)))
          (agent-shell-new-session-params root))
        :on-success (lambda (result)
                      (when (buffer-live-p buffer)
                        (with-current-buffer buffer
                          (agent-shell-transcript-notice
                           (format "Session %s is back; the transcript above is kept"
                                   (alist-get 'sessionId result))))
                        (agent-shell-on-session buffer result)))
        :on-error (agent-shell-failure-reporter
                   buffer (if session "Resuming the session" "Starting the session")))))
    buffer))

(provide 'agent-shell-lifecycle)
;;; agent-shell-lifecycle.el ends here
