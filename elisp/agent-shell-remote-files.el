;;; agent-shell-remote-files.el --- A remote project's files through their buffers  -*- lexical-binding: t; -*-

;; SPDX-License-Identifier: GPL-3.0-or-later

;;; Commentary:

;; In a remote session (doc/remote.org) the bridge reads and writes the
;; project's files on the host through its own connection.  Before it
;; does, it asks Emacs whether a buffer here visits the file, so that
;; the agent sees the text the user sees and its edits land in that
;; buffer, undoable there, instead of behind its back:
;;
;; - `remote/buffer_read' answers the buffer's text (an unmodified
;;   buffer whose file changed on the host is reverted first);
;; - `remote/buffer_write' replaces the buffer's text as one undo unit
;;   and saves it through TRAMP without a prompt, in its coding system,
;;   or refuses when the user has unsaved changes in the buffer.
;;
;; The bridge has already confined the path (to the project, links
;; resolved on the host); the name it sends is checked again here to be
;; under the session's remote root, then looked up among the buffers
;; with no file name handler: a name no buffer visits is answered
;; `visited: false' and never expanded, visited or connected to.
;;
;; The same buffers are what the remote session's `buffer_overview' and
;; `project_diagnostics' see (`agent-shell-remote-files-tool'): only a
;; live buffer already visiting a file under the session's own remote
;; root counts, its name compared as a string and given relative to
;; that root, and its diagnostics are whatever Flymake or Flycheck
;; already has there (no checker is started over TRAMP).
;; agent-shell-handlers.el receives the requests and the tool calls of
;; a remote session.

;;; Code:

(require 'cl-lib)
(require 'subr-x)
(require 'agent-shell-tools)
(require 'agent-shell-actions)
(require 'agent-shell-perception)
(require 'agent-shell-diagnostics)

(defun agent-shell-remote-files-relative (root name)
  "Return NAME relative to the remote directory ROOT, or nil.
Nil when NAME does not start with ROOT, or its rest is empty or has
an empty, \".\" or \"..\" part.  Only the strings are compared; no
file name handler runs and nothing is expanded."
  (let ((root (and (stringp root)
                   (let ((file-name-handler-alist nil))
                     (file-name-as-directory root)))))
    (and root (stringp name) (string-prefix-p root name)
         (let ((rest (substring name (length root))))
           (and (not (string-empty-p rest))
                (not (string-match-p "[\0\n]" rest))
                (not (cl-some (lambda (part) (member part '("" "." "..")))
                              (split-string rest "/")))
                rest)))))

(defun agent-shell-remote-files-name (root name)
  "Return NAME when it names a file under the remote directory ROOT.
Signal `agent-shell-tool-error' otherwise: a name not starting with
ROOT, or whose rest is empty or has an empty, \".\" or \"..\" part.
Only the strings are compared; nothing is expanded."
  (unless (agent-shell-remote-files-relative root name)
    (agent-shell-tools-error "`%s' is not a file of this session's remote project %s"
                             name (if (stringp root) (file-name-as-directory root) "(none)")))
  name)

(defun agent-shell-remote-files-buffer (name)
  "Return the live buffer visiting exactly the file NAME, or nil.
No file name handler runs: a TRAMP NAME is neither expanded on its
host nor connected to."
  (let ((file-name-handler-alist nil))
    (get-file-buffer name)))

(defun agent-shell-remote-files--bool (value)
  "Return VALUE as a JSON boolean."
  (if value t :json-false))

(defun agent-shell-remote-files-read (root name)
  "Answer `remote/buffer_read' for NAME under the remote ROOT.
Return ((visited . :json-false)) when no buffer visits NAME, else
the buffer's whole text and whether it has unsaved changes."
  (let ((buffer (agent-shell-remote-files-buffer
                 (agent-shell-remote-files-name root name))))
    (if (not buffer)
        '((visited . :json-false))
      (with-current-buffer buffer
        (unless (or (buffer-modified-p) (verify-visited-file-modtime buffer))
          (let ((inhibit-message t))
            (revert-buffer t t t)))
        (save-restriction
          (widen)
          `((visited . t)
            (modified . ,(agent-shell-remote-files--bool (buffer-modified-p)))
            (text . ,(buffer-substring-no-properties (point-min) (point-max)))))))))

(defun agent-shell-remote-files--refusal (buffer text)
  "Return why writing TEXT through BUFFER is refused, or nil."
  (let ((coding (buffer-local-value 'buffer-file-coding-system buffer)))
    (cond
     ((buffer-modified-p buffer) (agent-shell-actions-unsaved-message buffer))
     ((not (verify-visited-file-modtime buffer))
      (format "The file of buffer `%s' changed on the host since it was read; read it again before editing"
              (buffer-name buffer)))
     ((and coding (not (eq (coding-system-type coding) 'undecided))
           (unencodable-char-position 0 (length text) coding nil text))
      (format "The new text has a character (%s) that the file's coding system %s cannot encode"
              (string (aref text (unencodable-char-position
                                  0 (length text) coding nil text)))
              coding)))))

(defun agent-shell-remote-files--replace (text)
  "Make the current buffer's whole text TEXT, changing only what differs."
  (let ((target (current-buffer)))
    (with-temp-buffer
      (insert text)
      (let ((source (current-buffer)))
        (with-current-buffer target
          (replace-buffer-contents source 1.0)))))
  nil)

(defun agent-shell-remote-files-write (root name text)
  "Answer `remote/buffer_write' of TEXT to NAME under the remote ROOT.
Return ((visited . :json-false)) when no buffer visits NAME.  A buffer
with the user's unsaved changes, or whose file changed on the host, is
left alone and the answer says why (`refused').  Otherwise the
buffer's text becomes TEXT as one undo unit and is saved without a
prompt, keeping its coding system and line ends."
  (let* ((name (agent-shell-remote-files-name root name))
         (buffer (agent-shell-remote-files-buffer name)))
    (unless (stringp text)
      (agent-shell-tools-error "No text to write to %s" name))
    (if (not buffer)
        '((visited . :json-false))
      (unless (memq (coding-system-eol-type
                     (buffer-local-value 'buffer-file-coding-system buffer))
                    '(0 nil))
        ;; The buffer holds newlines; saving writes the file's own line ends.
        (setq text (agent-shell-actions-normalize-newlines text)))
      (if-let ((why (agent-shell-remote-files--refusal buffer text)))
          `((visited . t) (written . :json-false) (refused . ,why))
        (agent-shell-actions-edit-buffer
         buffer name (lambda () (agent-shell-remote-files--replace text)))
        `((visited . t)
          (written . t)
          (coding_system . ,(symbol-name
                             (buffer-local-value 'buffer-file-coding-system buffer))))))))

;;; What the agent sees of the project's buffers

(defconst agent-shell-remote-files-tools
  '(("buffer_overview" . agent-shell-remote-files-buffer-overview)
    ("project_diagnostics" . agent-shell-remote-files-diagnostics))
  "The Emacs-side tools a remote session runs here: (NAME . HANDLER).
HANDLER is called with the session's remote root and the tool's ARGS.
The other Emacs-side tools look at local files only; the bridge
answers them from the host.")

(defun agent-shell-remote-files--file (root buffer)
  "Return BUFFER's file relative to the remote ROOT, or nil.
Nil unless BUFFER is live and visits a file under ROOT, as named."
  (and (buffer-live-p buffer)
       (agent-shell-remote-files-relative root (buffer-file-name buffer))))

(defun agent-shell-remote-files--project-buffers (root)
  "Return the live buffers visiting files under the remote ROOT."
  (cl-remove-if-not (lambda (b) (agent-shell-remote-files--file root b))
                    (buffer-list)))

(defun agent-shell-remote-files-buffer-overview (root args)
  "Handle a remote session's `buffer_overview' with ARGS, ROOT its remote root.
As locally (`agent-shell-perception-buffer-overview'): the named
buffer, else the user's current file buffer, described only when it
visits a file under ROOT, its name relative to ROOT."
  (let* ((name (agent-shell-tools-arg args 'buffer 'string))
         (buffer (if name
                     (or (get-buffer name)
                         (agent-shell-tools-error "No buffer named `%s'" name))
                   (or (agent-shell-perception-user-buffer)
                       (agent-shell-tools-error "The user has no file buffer open"))))
         (file (agent-shell-remote-files--file root buffer)))
    (if file
        (agent-shell-perception-describe buffer file)
      (agent-shell-perception-outside name))))

(defun agent-shell-remote-files-diagnostics (root args)
  "Handle a remote session's `project_diagnostics' with ARGS, ROOT its remote root.
The diagnostics Flymake or Flycheck already has in the buffers visiting
files under ROOT, errors first, at most ARGS' `limit'."
  (agent-shell-diagnostics-tool-result
   (agent-shell-diagnostics-of-buffers
    (cl-remove-if-not #'agent-shell-diagnostics-checker
                      (agent-shell-remote-files--project-buffers root))
    (lambda (b) (agent-shell-remote-files--file root b)))
   args))

(defun agent-shell-remote-files-tool (root name args)
  "Run the Emacs-side tool NAME with ARGS for the remote session of ROOT.
ROOT is the session's own remote root, never one the bridge or the
model chose.  Only `agent-shell-remote-files-tools' run; any other is
refused."
  (let ((handler (cdr (assoc name agent-shell-remote-files-tools))))
    (unless (stringp root)
      (agent-shell-tools-error "No shell buffer of this remote session is open in Emacs"))
    (unless handler
      (agent-shell-tools-error
       "%s does not run in Emacs for a remote project; only %s do" name
       (mapconcat #'car agent-shell-remote-files-tools " and ")))
    (unless (listp args)
      (agent-shell-tools-error "Tool arguments must be a JSON object"))
    (agent-shell-tools-drop-nulls (funcall handler root args))))

(provide 'agent-shell-remote-files)
;;; agent-shell-remote-files.el ends here
