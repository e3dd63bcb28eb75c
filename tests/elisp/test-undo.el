;;; test-undo.el --- Tests for the rewind of agent-shell-undo.el  -*- lexical-binding: t; -*-

;; SPDX-License-Identifier: GPL-3.0-or-later

;;; Commentary:

;; `agent-shell-rewind' and `agent-shell-rewind-undo' against the real
;; bridge (agent-shell-test-session.el): three real turns of a session,
;; each followed by edits through the real Emacs-side write tool under
;; that turn's id (so the snapshots and their index are the ones a turn
;; writes), two files, one of them edited by the user afterwards.  Each
;; of the three choices gives exactly the expected files, history and
;; input; the undo of a rewind; a project without git.

;;; Code:

(require 'ert)
(require 'cl-lib)
(require 'agent-shell)
(require 'agent-shell-undo)
(require 'agent-shell-test-helpers)
(require 'agent-shell-test-session)

(defun test-undo--turn (prompt)
  "Send PROMPT in this shell, wait for its end and return its turn id."
  (goto-char (point-max))
  (insert prompt)
  (agent-shell-send-input)
  (test-shell--wait (format "the turn of %s" prompt)
                    (lambda () (and (null (agent-shell-session-turn-id agent-shell--session))
                                    (string-search (format "好 %s done." prompt)
                                                   (test-shell--transcript))))
                    20)
  (car (rassoc prompt (agent-shell-session-turn-prompts agent-shell--session))))

(defun test-undo--write (root turn path content)
  "Write CONTENT to PATH of ROOT with the agent's write tool during TURN."
  (save-current-buffer
   (agent-shell-test-call "write_file" `((path . ,path) (content . ,content))
                         (agent-shell-test-context
                          root 'turn_id turn
                          'session_id (agent-shell-session-id agent-shell--session)))))

(defun test-undo--three-turns (root word)
  "Run the three turns named WORD-1..3 in ROOT; return their ids.
Turn 1 writes a.txt, turn 2 a.txt and b.txt, turn 3 b.txt; then the
user changes b.txt on disk."
  (let* ((t1 (test-undo--turn (concat word "-1")))
         (_ (test-undo--write root t1 "a.txt" "A1 一\n"))
         (t2 (test-undo--turn (concat word "-2")))
         (_ (test-undo--write root t2 "a.txt" "A2 二\n"))
         (_ (test-undo--write root t2 "b.txt" "B2 二\n"))
         (t3 (test-undo--turn (concat word "-3"))))
    (test-undo--write root t3 "b.txt" "B3 三\n")
    (agent-shell-test-write root "b.txt" "B3 三 — edited by the user\n")
    (list t1 t2 t3)))

(defmacro test-undo--answering (prompt choice confirm &rest body)
  "Run BODY with the rewind's questions answered.
The prompt is the candidate containing PROMPT, the action CHOICE; each
y-or-n question gets CONFIRM and is recorded in `asked'."
  (declare (indent 3) (debug t))
  `(let ((asked nil))
     (cl-letf (((symbol-function 'completing-read)
                (lambda (question table &rest _)
                  (if (string-prefix-p "Rewind what" question)
                      ,choice
                    (cl-find-if (lambda (c) (string-search ,prompt c))
                                (all-completions "" table)))))
               ((symbol-function 'y-or-n-p)
                (lambda (question) (push question asked) ,confirm)))
       ,@body)
     asked))

(defun test-undo--log ()
  "Return the text of this session's action log file."
  (let ((file (agent-shell-session-log-path agent-shell--session)))
    (with-temp-buffer
      (let ((coding-system-for-read 'utf-8))
        (insert-file-contents file))
      (buffer-string))))

(defconst test-undo--files '(("a.txt" . "A0 零\n") ("b.txt" . "B0 零\n"))
  "The two files of each rewind project.")

(ert-deftest test-undo/rewind-code-and-conversation-skips-what-the-user-edited ()
  "Both halves: a.txt as before turn 2, b.txt kept (edited since), history cut."
  (agent-shell-test-with-project (root test-undo--files)
    (test-shell--bridge)
    (with-current-buffer (test-shell--start-session root)
      (unwind-protect
          (let* ((ids (test-undo--three-turns root "rwa"))
                 (asked (test-undo--answering "rwa-2" "code and conversation" nil
                          (agent-shell-rewind))))
            (should (equal (agent-shell-test-read root "a.txt") "A1 一\n"))
            (should (equal (agent-shell-test-read root "b.txt")
                           "B3 三 — edited by the user\n"))
            (should (= 1 (length asked)))
            (should (string-search "b.txt was edited since" (car asked)))
            (with-current-buffer "*agent-shell rewind: b.txt*"
              (should (string-search "-B3 三 — edited by the user" (buffer-string)))
              (should (string-search "+B0 零" (buffer-string))))
            (let ((text (test-shell--transcript)))
              (should (string-search "> rwa-1" text))
              (should-not (string-search "> rwa-2" text))
              (should-not (string-search "rwa-3" text))
              (should (string-search "1 file(s) restored: a.txt" text))
              (should (string-search "left as you edited them: b.txt" text)))
            (should (equal (agent-shell-input) "rwa-2"))
            (let ((log (test-undo--log)))
              (should (string-search (format "REWIND: to before turn %s" (nth 1 ids)) log))
              (should (string-match-p "Files restored from the snapshots:\n\n#\\+begin_src text\na\\.txt" log))
              (should (string-match-p "left as they are:\n\n#\\+begin_src text\nb\\.txt" log)))
            ;; The undo: a.txt as the rewind found it, the conversation back.
            (agent-shell-rewind-undo)
            (should (equal (agent-shell-test-read root "a.txt") "A2 二\n"))
            (should (equal (agent-shell-test-read root "b.txt")
                           "B3 三 — edited by the user\n"))
            (should (string-search "> rwa-3" (test-shell--transcript)))
            (should (string-search "Rewind undone: 1 file(s) put back: a.txt"
                                   (test-shell--transcript))))
        (kill-buffer (current-buffer))))))

(ert-deftest test-undo/rewind-conversation-only-leaves-every-file ()
  "Conversation only: no file changes, the history is cut, the prompt is back."
  (agent-shell-test-with-project (root test-undo--files)
    (test-shell--bridge)
    (with-current-buffer (test-shell--start-session root)
      (unwind-protect
          (let ((asked (progn (test-undo--three-turns root "rwb")
                              (test-undo--answering "rwb-2" "conversation only" t
                                (agent-shell-rewind)))))
            (should-not asked)
            (should (equal (agent-shell-test-read root "a.txt") "A2 二\n"))
            (should (equal (agent-shell-test-read root "b.txt")
                           "B3 三 — edited by the user\n"))
            (should-not (string-search "> rwb-2" (test-shell--transcript)))
            (should (string-search "> rwb-1" (test-shell--transcript)))
            (should (equal (agent-shell-input) "rwb-2"))
            (should (string-search ":CONVERSATION: cut" (test-undo--log))))
        (kill-buffer (current-buffer))))))

(ert-deftest test-undo/rewind-code-only-outside-git ()
  "Code only, without git, the edited file confirmed: both files as before turn 1."
  (let ((root (file-name-as-directory
               (file-truename (make-temp-file "agent-shell-rewind-nogit-" t)))))
    (dolist (file test-undo--files)
      (agent-shell-test-write root (car file) (cdr file)))
    (agent-shell-test-write root "other.txt" "not the agent's\n")
    (should-not (file-exists-p (expand-file-name ".git" root)))
    (test-shell--bridge)
    (with-current-buffer (test-shell--start-session root)
      (unwind-protect
          (let ((asked (progn (test-undo--three-turns root "rwc")
                              (agent-shell-test-write root "other.txt" "the user's\n")
                              (test-undo--answering "rwc-1" "code only" t
                                (agent-shell-rewind)))))
            (should (= 1 (length asked)))
            (should (equal (agent-shell-test-read root "a.txt") "A0 零\n"))
            (should (equal (agent-shell-test-read root "b.txt") "B0 零\n"))
            (should (equal (agent-shell-test-read root "other.txt") "the user's\n"))
            (should (string-search "> rwc-3" (test-shell--transcript)))
            (should (equal (agent-shell-input) ""))
            (should (string-search ":CONVERSATION: kept" (test-undo--log)))
            (agent-shell-rewind-undo)
            (should (equal (agent-shell-test-read root "a.txt") "A2 二\n"))
            (should (equal (agent-shell-test-read root "b.txt")
                           "B3 三 — edited by the user\n")))
        (kill-buffer (current-buffer))
        (agent-shell-test-cleanup-buffers root)
        (delete-directory root t)))))

;;; Fork

(ert-deftest test-undo/fork-opens-a-second-session-of-its-own ()
  "C-u rewind forks before a prompt; the fork's turns stay out of the original."
  (test-shell--with-session (root)
    (ignore root)
    (let* ((original (current-buffer))
           (t1 (test-undo--turn "rwd-1"))
           (_ (test-undo--turn "rwd-2"))
           (fork (cl-letf (((symbol-function 'completing-read)
                            (lambda (_q table &rest _)
                              (cl-find-if (lambda (c) (string-search "rwd-2" c))
                                          (all-completions "" table)))))
                   (agent-shell-rewind t))))
      (should t1)
      (unwind-protect
          (progn
            (should (buffer-live-p fork))
            (should-not (eq fork original))
            (should (string-search "<fork 1>" (buffer-name fork)))
            (with-current-buffer fork
              (should (string-search "> rwd-1" (test-shell--transcript)))
              (should-not (string-search "> rwd-2" (test-shell--transcript)))
              (should (equal (agent-shell-input) "rwd-2"))
              (should-not (equal (agent-shell-session-id agent-shell--session)
                                 (with-current-buffer original
                                   (agent-shell-session-id agent-shell--session))))
              (should-not (equal (agent-shell-session-log-path agent-shell--session)
                                 (with-current-buffer original
                                   (agent-shell-session-log-path agent-shell--session))))
              (agent-shell-set-input "rwd-fork")
              (agent-shell-send-input)
              (test-shell--wait "the fork's turn"
                                (lambda () (string-search "好 rwd-fork done."
                                                          (test-shell--transcript)))
                                20)
              (test-shell--wait "the fork's turn end"
                                (lambda () (eq (agent-shell-session-state agent-shell--session)
                                               'idle))
                                20)
              (should (string-search "rwd-fork" (test-undo--log))))
            (with-current-buffer original
              (should (string-search "> rwd-2" (test-shell--transcript)))
              (should-not (string-search "rwd-fork" (test-shell--transcript)))
              (should-not (string-search "rwd-fork" (test-undo--log)))
              (let ((whole (agent-shell-fork)))
                (unwind-protect
                    (with-current-buffer whole
                      (should (string-search "<fork 2>" (buffer-name)))
                      (should (string-search "> rwd-2" (test-shell--transcript)))
                      (should (equal (agent-shell-input) "")))
                  (kill-buffer whole)))))
        (kill-buffer fork)))))

(provide 'test-undo)
;;; test-undo.el ends here
