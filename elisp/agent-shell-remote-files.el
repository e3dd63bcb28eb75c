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
;; agent-shell-handlers.el receives the requests.

;;; Code:

(require 'cl-lib)
(require 'subr-x)
(require 'agent-shell-tools)
(require 'agent-shell-actions)

(defun agent-shell-remote-files-name (root name)
  "Return NAME when it names a file under the remote directory ROOT.
Signal `agent-shell-tool-error' otherwise: a name not starting with
ROOT, or whose rest is empty or has an empty, \".\" or \"..\" part.
Only the strings are compared; nothing is expanded."
  (let ((root (and (stringp root) (file-name-as-directory root))))
    (unless (and root (stringp name) (string-prefix-p root name)
                 (let ((rest (substring name (length root))))
                   (and (not (string-empty-p rest))
                        (not (string-match-p "[\0\n]" rest))
                        (not (cl-some (lambda (part) (member part '("" "." "..")))
                                      (split-string rest "/"))))))
      (agent-shell-tools-error "`%s' is not a file of this session's remote project %s"
                               name (or root "(none)")))
    name))

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

(provide 'agent-shell-remote-files)
;;; agent-shell-remote-files.el ends here
