;;; agent-shell-remote.el --- Projects on another host, through TRAMP  -*- lexical-binding: t; -*-

;; SPDX-License-Identifier: GPL-3.0-or-later

;;; Commentary:

;; A project whose root is a TRAMP directory (/ssh:host:/srv/app/,
;; /docker:web:/app/) gets a session whose commands and files are on
;; that host, while the bridge, the API key and the records stay here
;; (doc/remote.org).  This file reads the root into the `remote'
;; parameter of `session/new' and `session/resume'; the bridge makes
;; its own ssh connection.  Only the name is parsed here: no connection
;; is opened from Emacs for it.
;;
;; Methods that run no processes (sudo, smb, ftp, …) and multi-hop
;; names are refused with a one-line reason before anything starts.

;;; Code:

(require 'cl-lib)
(require 'subr-x)


(defcustom agent-shell-remote-ssh-options nil
  "Extra ssh options for the bridge's connection to a remote project.
Each is one KEY=VALUE string, as after ssh's -o (\"IdentityFile=~/.ssh/dev\").
Your ~/.ssh/config applies as it does for ssh itself; options that run
a command of their own (ProxyCommand, LocalCommand, …) are refused by
the bridge."
  :type '(repeat string)
  :group 'agent-shell
  :package-version '(agent-shell . "0.2"))

(defconst agent-shell-remote-methods
  '("ssh" "scp" "sshx" "scpx" "docker" "podman")
  "TRAMP methods a remote project may use: those whose host runs processes.")

(defun agent-shell-remote-p (root)
  "Return non-nil when ROOT is a remote (TRAMP) directory name.
Only the name is parsed; no connection is made."
  (and (stringp root) (file-remote-p root) t))

(defun agent-shell-remote-refusal (root)
  "Return why the remote ROOT cannot be a project, or nil when it can."
  (let ((method (ignore-errors (file-remote-p root 'method))))
    (cond
     ((not (stringp method)) (format "%s is not a TRAMP file name" root))
     ((not (member method agent-shell-remote-methods))
      (format "/%s: runs no project commands; remote projects use %s"
              method (mapconcat (lambda (m) (concat "/" m ":"))
                                agent-shell-remote-methods ", ")))
     ((ignore-errors (file-remote-p root 'hop))
      (format "%s goes through several hops; remote projects take one" root))
     ((and (member method '("docker" "podman")) (not (executable-find method)))
      (format "/%s: needs the %s program on this machine" method method))
     ((not (assoc method (bound-and-true-p tramp-methods)))
      ;; Emacs 28's TRAMP has no /docker: or /podman: (Emacs 29 brought them).
      (format "/%s: is not a method of this Emacs's TRAMP (Emacs 29 or later has it)"
              method)))))

(defun agent-shell-remote-session-params (root)
  "Return the `remote' parameter of a session for ROOT, or nil when it is local.
A ROOT that cannot be a remote project signals a `user-error' saying why."
  (when (agent-shell-remote-p root)
    (when-let ((why (agent-shell-remote-refusal root)))
      (user-error "agent-shell: %s" why))
    `((remote . ((tramp . ,(directory-file-name root))
                 (sshOptions . ,(vconcat agent-shell-remote-ssh-options)))))))

(defun agent-shell-remote-describe (result)
  "Return a notice for the `remote' part of a session RESULT, or nil."
  (when-let ((remote (alist-get 'remote result)))
    (format "Remote project %s: commands run there (%s); the log stays here: %s"
            (alist-get 'tramp remote) (alist-get 'sandbox remote)
            (abbreviate-file-name (or (alist-get 'mirror remote) "?")))))

;;; The records of a remote project

;; The bridge keeps a remote project's records (snapshots, logs,
;; sessions) in a local mirror whose project.txt names the project the
;; way `remote/target.py' writes it: /ssh:USER@HOST#PORT:/PATH, with scp,
;; sshx and scpx written as ssh and no trailing slash.

(defconst agent-shell-remote--name-regexp
  (concat "\\`/\\([A-Za-z0-9-]+\\):\\(?:\\([^@:/|]+\\)@\\)?\\([^:#|/]*\\)"
          "\\(?:#\\([0-9]+\\)\\)?:\\(/.*\\)?\\'")
  "A single-hop TRAMP name: method, user, host, port and path.")

(defun agent-shell-remote-canonical-name (name)
  "Return the remote project NAME as the bridge writes it, or nil.
Only the name is parsed; no connection is made."
  (let ((case-fold-search nil))
    (when (and (stringp name) (string-match agent-shell-remote--name-regexp name))
      (let* ((method (match-string 1 name))
             (user (match-string 2 name))
             (host (match-string 3 name))
             (port (match-string 4 name))
             (path (string-trim (or (match-string 5 name) "/") "/+" "/+")))
        (format "/%s:%s%s%s:/%s"
                (if (member method '("ssh" "scp" "sshx" "scpx")) "ssh" method)
                (if user (concat user "@") "") host (if port (concat "#" port) "")
                path)))))

(defun agent-shell-remote-records-directory ()
  "Return the directory holding the mirrors of remote projects."
  (expand-file-name "agent-shell/remote/"
                    (or (getenv "XDG_DATA_HOME") (expand-file-name "~/.local/share/"))))

(defun agent-shell-remote-mirror (root)
  "Return the local mirror directory of the remote project ROOT, or nil.
It is the one whose project.txt names ROOT; nil before any session."
  (let ((want (agent-shell-remote-canonical-name root))
        (base (agent-shell-remote-records-directory))
        (file-name-handler-alist nil))
    (when (and want (file-directory-p base))
      (cl-loop for host in (directory-files base t "\\`[^.]")
               thereis
               (and (file-directory-p host)
                    (cl-loop for dir in (directory-files host t "\\`[^.]")
                             for note = (expand-file-name "project.txt" dir)
                             thereis
                             (and (file-regular-p note)
                                  (equal (with-temp-buffer
                                           (let ((coding-system-for-read 'utf-8-unix))
                                             (insert-file-contents note))
                                           (string-trim (buffer-string)))
                                         want)
                                  (file-name-as-directory dir))))))))

(provide 'agent-shell-remote)
;;; agent-shell-remote.el ends here
