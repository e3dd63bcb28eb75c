;;; test-paths.el --- Path confinement shared with the bridge  -*- lexical-binding: t; -*-

;; SPDX-License-Identifier: GPL-3.0-or-later

;;; Commentary:

;; The Emacs side of path confinement, checked against the bridge's own
;; corpus: tests/fixtures/policy/paths.jsonl is replayed through
;; `agent-shell-tools-resolve' on the same tree of files and symlinks that
;; tests/python/test_policy_paths.py builds, so the two halves cannot
;; drift.  tests/fixtures/policy/home_paths.jsonl holds the shared cases
;; for home references ("~", "$HOME") and for the files that hold
;; credentials.  $HOME is a temporary directory here, never the real one.

;;; Code:

(require 'ert)
(require 'cl-lib)
(require 'agent-shell-tools)
(require 'auth-source)
(require 'agent-shell-test-helpers)

(defconst test-paths--fixtures
  (expand-file-name "../fixtures/policy/"
                    (file-name-directory (or load-file-name buffer-file-name)))
  "Directory of the shared policy corpus.")

(defun test-paths--nul-back (row)
  "Return ROW with U+E000 in its string values turned back into NUL."
  (mapcar (lambda (pair)
            (cons (car pair)
                  (if (stringp (cdr pair))
                      (string-replace "\ue000" "\0" (cdr pair))
                    (cdr pair))))
          row))

(defun test-paths--rows (name)
  "Return the rows of the JSON-lines fixture NAME as alists."
  (with-temp-buffer
    (let ((coding-system-for-read 'utf-8))
      (insert-file-contents (expand-file-name name test-paths--fixtures)))
    ;; Emacs's JSON parser refuses \u0000, which the corpus uses.
    (mapcar (lambda (line)
              (test-paths--nul-back
               (json-parse-string (string-replace "\\u0000" "\\ue000" line)
                                  :object-type 'alist :null-object nil
                                  :false-object nil)))
            (split-string (buffer-string) "\n" t))))

(defun test-paths--write (file content)
  "Write CONTENT to FILE, making its directory.
No file name handler runs: a `.gpg' name must not start EasyPG."
  (let ((file-name-handler-alist nil))
    (agent-shell-test-write (file-name-directory file) (file-name-nondirectory file) content)))

(defun test-paths--build-tree (tmp)
  "Lay out under TMP the tree test_policy_paths.py builds; return the root."
  (let ((root (expand-file-name "proj/" tmp)))
    (dolist (file '(("src/a.py" . "print('a')\n")
                    ("文档/说明.md" . "说明\n")
                    (".git/config" . "[core]\n")
                    (".git/HEAD" . "ref: refs/heads/main\n")
                    (".git/hooks/pre-commit" . "#!/bin/sh\n")
                    (".agent-shell/allowlist.el" . "")
                    (".agent-shell/config.el" . "")))
      (test-paths--write (expand-file-name (car file) root) (cdr file)))
    (make-directory (expand-file-name ".agent-shell/memory" root) t)
    (test-paths--write (expand-file-name "outside/secret.txt" tmp) "secret\n")
    (make-directory (expand-file-name "proj-evil" tmp))
    (make-directory (expand-file-name "extra" tmp))
    (dolist (link '(("../outside" . "link_out") ("src" . "link_in")
                    ("loop_b" . "loop_a") ("loop_a" . "loop_b")
                    ("self_loop" . "self_loop")
                    ("../outside/not-there.txt" . "dangling_out")
                    ("src/not-yet.txt" . "dangling_in") (".git" . "gitlink")
                    (".git/hooks/post-merge" . "hooklink")
                    (".agent-shell/allowlist.el" . "allow_link")))
      (make-symbolic-link (car link) (expand-file-name (cdr link) root)))
    (make-symbolic-link (expand-file-name ".agent-shell/config.el" root)
                        (expand-file-name "config_link" root))
    (make-symbolic-link "../proj/src" (expand-file-name "outside/to_inside" tmp))
    ;; Not expand-file-name: "~/" there would mean the real home directory.
    (make-directory (concat root "~") t)
    (with-temp-file (concat root "~/note.txt")
      (insert "a directory literally named ~\n"))
    (test-paths--write (expand-file-name ".ssh/id_rsa" root) "PRIVATE\n")
    (make-symbolic-link ".ssh" (expand-file-name "ssh_link" root))
    (add-name-to-file (expand-file-name ".git/hooks/pre-commit" root)
                      (expand-file-name "innocent_hardlink.txt" root))
    root))

(defmacro test-paths--with-tree (spec &rest body)
  "Run BODY with SPEC's (TMP ROOT) bound to a fresh corpus tree.
The tree is deleted when BODY succeeds and kept when it fails."
  (declare (indent 1) (debug ((symbolp symbolp) body)))
  (let ((ok (make-symbol "ok")))
    `(let* ((,(car spec) (file-name-as-directory
                          (file-truename (make-temp-file "agent-shell-paths-" t))))
            (,(cadr spec) (test-paths--build-tree ,(car spec)))
            (,ok nil))
       (unwind-protect
           (prog1 (progn ,@body) (setq ,ok t))
         (if ,ok
             (delete-directory ,(car spec) t)
           (message "Kept failing path tree: %s" ,(car spec)))))))

(defun test-paths--expand (text tmp)
  "Replace {root} and {tmp} in TEXT as the Python corpus runner does."
  (string-replace "{tmp}" (directory-file-name tmp)
                  (string-replace "{root}" (concat tmp "proj") text)))

(defun test-paths--decide (path op context)
  "Return (DECISION . RESOLVED-OR-MESSAGE) for PATH and OP in CONTEXT."
  (condition-case err
      (cons "allow" (agent-shell-tools-resolve path context (equal op "write")))
    (agent-shell-tool-error (cons "deny" (cadr err)))))

(defun test-paths--home-row-p (row)
  "Return non-nil when ROW's path starts with a home reference."
  (string-match-p "\\`\\(~\\|\\$HOME\\|\\${HOME}\\)" (alist-get 'path row)))

;;; The shared corpus

(ert-deftest test-paths/corpus-agrees-with-the-bridge ()
  "Every row of paths.jsonl gets the bridge's decision from the Emacs side.
Allowed rows also resolve to the same file.  This covers the
containment shapes (the sibling /proj-evil, `..', symlinks in and out,
dangling links, loops, extra roots) and the protected paths."
  (test-paths--with-tree (tmp root)
    (let* ((home (make-temp-file "agent-shell-home-" t))
           (context (agent-shell-test-context
                     root 'extra_roots (list (concat tmp "extra"))))
           (rows (test-paths--rows "paths.jsonl"))
           (failures nil))
      (should (> (length rows) 90))
      (should (cl-some #'test-paths--home-row-p rows))
      (dolist (row rows)
        (let* ((path (test-paths--expand (alist-get 'path row) tmp))
               (op (alist-get 'op row))
               ;; A row marked home "root" is judged with $HOME at the project root.
               (process-environment
                (cons (concat "HOME=" (if (equal (alist-get 'home row) "root")
                                          (directory-file-name root)
                                        home))
                      process-environment))
               (got (test-paths--decide path op context))
               (want (alist-get 'decision row)))
          (unless (and (equal (car got) want)
                       (or (equal want "deny")
                           (equal (cdr got)
                                  (directory-file-name
                                   (expand-file-name (alist-get 'resolved row) tmp)))))
            (push (list (truncate-string-to-width (alist-get 'path row) 60) op
                        :want want :got got)
                  failures))))
      (delete-directory home t)
      (should (equal (nreverse failures) nil)))))

(ert-deftest test-paths/write-deny-rows-are-all-replayed ()
  "The corpus holds the write-deny shapes the Emacs side once let through.
Case variants, `.agent-shell/logs/' and `.agent-shell/sessions/' must
be among the replayed rows, so dropping them from the corpus is seen."
  (let ((denied (mapcar (lambda (row) (alist-get 'path row))
                        (cl-remove-if-not
                         (lambda (row) (and (equal (alist-get 'op row) "write")
                                            (equal (alist-get 'decision row) "deny")))
                         (test-paths--rows "paths.jsonl")))))
    (dolist (path '(".GIT/config" ".AGENT-SHELL/Allowlist.el"
                    ".agent-shell/logs/2026-11-30-x.org" ".agent-shell/sessions/s1.json"
                    ".agent-shell/SESSIONS/s1.json" "{tmp}/proj-evil/x.txt"))
      (should (member path denied)))))

(ert-deftest test-paths/sibling-prefix-is-outside ()
  "A sibling whose name extends the root's (/proj-evil next to /proj) is outside."
  (test-paths--with-tree (tmp root)
    (let ((context (agent-shell-test-context root)))
      (test-paths--write (concat tmp "proj-evil/x.txt") "evil\n")
      (dolist (path (list (concat tmp "proj-evil/x.txt") "../proj-evil/x.txt"
                          (concat (directory-file-name root) "-evil/x.txt")))
        (should (string-match-p "outside the project root"
                                (agent-shell-test-tool-error
                                  (agent-shell-tools-resolve path context)))))
      (should-not (agent-shell-tools-inside-roots (concat tmp "proj-evil/x.txt") context))
      (should (agent-shell-tools-inside-roots (concat root "src/a.py") context)))))

;;; Home references and secrets

(defun test-paths--make-home ()
  "Return a fresh fake $HOME with secrets, a symlinked .ssh and plain files."
  (let ((home (file-name-as-directory
               (file-truename (make-temp-file "agent-shell-home-" t)))))
    (dolist (file '("dotfiles/ssh/id_rsa" "dotfiles/ssh/authorized_keys"
                    ".gnupg/private-keys-v1.d/k.key" ".aws/credentials" ".netrc"
                    ".pypirc" ".docker/config.json" ".docker/daemon.json"
                    ".config/gh/hosts.yml" ".config/ghostty/config" ".kube/config"
                    ".authinfo" ".authinfo.gpg" ".password-store/site.gpg"
                    ".local/share/keyrings/login.keyring" "notes.txt" "src/main.py"
                    ".sshx/notes" "private/creds.txt"))
      (test-paths--write (expand-file-name file home) "SECRET-或-plain\n"))
    (make-symbolic-link "dotfiles/ssh" (expand-file-name ".ssh" home))
    (make-symbolic-link ".ssh" (expand-file-name "ssh_link" home))
    home))

(defmacro test-paths--with-home (spec &rest body)
  "Run BODY with SPEC's (HOME PROJECT) bound to a fake $HOME and a project.
$HOME points at the fake one; `auth-sources' has its default value."
  (declare (indent 1) (debug ((symbolp symbolp) body)))
  `(let* ((,(car spec) (test-paths--make-home))
          (,(cadr spec) (file-name-as-directory
                         (file-truename (make-temp-file "agent-shell-proj-" t))))
          (process-environment (cons (concat "HOME=" (directory-file-name ,(car spec)))
                                     process-environment))
          (auth-sources '("~/.authinfo" "~/.authinfo.gpg" "~/.netrc")))
     (unwind-protect (progn (ignore ,(cadr spec)) ,@body)
       (agent-shell-test-cleanup-buffers ,(car spec))
       (delete-directory ,(car spec) t)
       (delete-directory ,(cadr spec) t))))

(ert-deftest test-paths/home-references-expand-like-a-shell ()
  "Each expansion row of home_paths.jsonl: ~ and $HOME as a shell reads them.
\"~user\" and \"$HOMEX\" are refused; a `~' that does not start the
path is an ordinary name."
  (test-paths--with-home (home project)
    (let ((rows (cl-remove-if-not (lambda (row) (assq 'expands row))
                                  (test-paths--rows "home_paths.jsonl"))))
      (should (> (length rows) 15))
      (dolist (row rows)
        (let ((want (alist-get 'expands row))
              (path (alist-get 'path row)))
          (if want
              (should (equal (list path (agent-shell-tools-expand-home path))
                             (list path (string-replace "{home}" (directory-file-name home)
                                                        want))))
            (should (agent-shell-test-tool-error
                      (agent-shell-tools-expand-home path)))))))))

(ert-deftest test-paths/home-and-secret-decisions ()
  "Each decision row of home_paths.jsonl, with the project elsewhere or at $HOME.
Secrets stay refused even when the user made $HOME the project root,
through symlinks, `..' and case variants alike."
  (test-paths--with-home (home project)
    (let ((rows (cl-remove-if-not (lambda (row) (assq 'decision row))
                                  (test-paths--rows "home_paths.jsonl")))
          (failures nil))
      (should (> (length rows) 25))
      (dolist (row rows)
        (let* ((root (if (equal (alist-get 'root row) "home") home project))
               (got (car (test-paths--decide (alist-get 'path row) (alist-get 'op row)
                                             (agent-shell-test-context root)))))
          (unless (equal got (alist-get 'decision row))
            (push (list (alist-get 'root row) (alist-get 'path row) :got got) failures))))
      (should (equal (nreverse failures) nil))
      (should (string-match-p
               "holds credentials"
               (agent-shell-test-tool-error
                 (agent-shell-tools-resolve "~/.ssh/id_rsa" (agent-shell-test-context home))))))))

(ert-deftest test-paths/auth-sources-files-are-secret ()
  "A file named in `auth-sources' is refused although no default name matches it."
  (test-paths--with-home (home project)
    (let ((context (agent-shell-test-context home)))
      (should (agent-shell-tools-resolve "private/creds.txt" context))
      (let ((auth-sources '("~/private/creds.txt" (:source "~/.netrc"))))
        (should (string-match-p
                 "auth-sources"
                 (agent-shell-test-tool-error
                   (agent-shell-tools-resolve "private/creds.txt" context))))))))

(ert-deftest test-paths/tools-never-show-secrets ()
  "open_file, buffer_overview and symbol_search share nothing from a secret file.
The project root is $HOME itself, so only the secret rule stands in the way."
  (test-paths--with-home (home project)
    (let ((context (agent-shell-test-context home))
          (auth-sources '("~/private/creds.txt")))
      (should (string-match-p
               "holds credentials"
               (agent-shell-test-tool-error
                 (agent-shell-test-call "open_file" '((path . "~/.aws/credentials"))
                                        context))))
      (should-not (find-buffer-visiting (expand-file-name ".aws/credentials" home)))
      (let ((buffer (find-file-noselect (expand-file-name ".authinfo" home))))
        (should (eq (alist-get 'outside_project
                               (agent-shell-test-call
                                "buffer_overview" `((buffer . ,(buffer-name buffer)))
                                context))
                    t)))
      (when (executable-find "rg")
        (let* ((result (agent-shell-test-call "symbol_search"
                                              '((symbol . "SECRET") (kind . "references"))
                                              context))
               (paths (mapcar (lambda (hit) (alist-get 'path hit))
                              (alist-get 'references result))))
          (should (member "notes.txt" paths))
          (should-not (member "private/creds.txt" paths)))))))

;;; One list of secrets, the bridge's

(declare-function agent-shell-bridge--initialize "agent-shell-bridge")
(declare-function agent-shell-bridge-create "agent-shell-bridge")
(declare-function agent-shell-bridge-initialized "agent-shell-bridge")
(defvar agent-shell-bridge--current)

(ert-deftest test-paths/the-bridge-says-which-files-are-secret ()
  "`initialize' sends the user's own secrets and brings back the bridge's list.
Emacs's tools then refuse what the bridge refuses: a new entry of the
built-in list (~/.claude.json) and the user's addition alike."
  (require 'agent-shell)
  (test-paths--with-home (home project)
    (test-paths--write (expand-file-name ".claude.json" home) "{\"token\": \"秘密\"}\n")
    (test-paths--write (expand-file-name "vault/keys.txt" home) "秘密\n")
    (let* ((memory (make-temp-file "agent-shell-memory-" t))
           (agent-shell-secret-paths '("vault"))
           (agent-shell-api-key "sk-test-paths")
           (agent-shell-rpc-message-functions nil)
           (agent-shell-tools--builtin-secret-paths nil)
           (agent-shell-bridge--current (agent-shell-bridge-create))
           (conn (agent-shell-rpc-start
                  :directory temporary-file-directory
                  :environment (list (concat "AGENT_SHELL_MEMORY_DIR=" memory))
                  :name "test-paths-bridge" :ready-timeout 30)))
      (unwind-protect
          (progn
            (agent-shell-bridge--initialize conn)
            (agent-shell-test-wait "initialize"
                                   (lambda () (eq (agent-shell-bridge-initialized
                                                   agent-shell-bridge--current)
                                                  conn))
                                   30)
            (let ((names agent-shell-tools--builtin-secret-paths))
              (should (member ".claude.json" names))
              (should (member ".pgpass" names))
              ;; The bridge took the user's entry into its own list.
              (should (equal (car (last names)) "vault"))
              (should (equal (agent-shell-tools-secret-paths) names)))
            (let ((context (agent-shell-test-context home)))
              (dolist (path '("~/.claude.json" ".claude.json" "vault/keys.txt" "VAULT/keys.txt"))
                (should (string-match-p
                         "holds credentials"
                         (agent-shell-test-tool-error
                           (agent-shell-test-call "open_file" `((path . ,path)) context)))))
              (should-not (find-buffer-visiting (expand-file-name ".claude.json" home)))
              (should (agent-shell-tools-resolve "notes.txt" context))))
        (agent-shell-rpc-stop conn)
        (delete-directory memory t)))))

(ert-deftest test-paths/without-the-bridges-list-no-file-is-used ()
  "No list from the bridge (its program missing): tools refuse rather than guess."
  (test-paths--with-home (home project)
    (let ((agent-shell-tools--builtin-secret-paths nil)
          (agent-shell-bridge-command (list (expand-file-name "no-such-bridge" home))))
      (should (string-match-p
               "did not say which files hold your secrets"
               (agent-shell-test-tool-error
                 (agent-shell-tools-resolve "notes.txt" (agent-shell-test-context home)))))
      (should-not agent-shell-tools--builtin-secret-paths))))

(ert-deftest test-paths/file-tools-refuse-links-planted-out-of-the-project ()
  "A link in the project to ~/.bashrc, to a missing file or into ~/.ssh is refused
by every file tool, and nothing outside changes: a chain of links too."
  (test-paths--with-home (home project)
    (test-paths--write (expand-file-name ".bashrc" home) "# mine\n")
    (agent-shell-test-write project "README.md" "# 说明\n")
    (dolist (link `((,(expand-file-name ".bashrc" home) . "notes_link.md")
                    ("notes_link.md" . "chain.md")
                    (,(expand-file-name ".profile.new" home) . "dangling.md")
                    (,(expand-file-name "dotfiles/ssh" home) . "keys")))
      (make-symbolic-link (car link) (expand-file-name (cdr link) project)))
    (let ((context (agent-shell-test-context project))
          (before (agent-shell-test-read home ".bashrc")))
      (dolist (path '("notes_link.md" "chain.md" "dangling.md" "keys/authorized_keys"))
        (dolist (call `(("write_file" (path . ,path) (content . "pwned\n"))
                        ("insert_text" (path . ,path) (line . 1) (text . "pwned\n"))
                        ("replace_region" (path . ,path) (start_line . 1) (end_line . 1)
                         (new_text . "pwned\n"))
                        ("replace_pattern" (path . ,path) (pattern . "mine")
                         (replacement . "pwned"))
                        ("open_file" (path . ,path))))
          (should (string-match-p
                   "outside the project"
                   (agent-shell-test-tool-error
                     (agent-shell-test-call (car call) (cdr call) context))))))
      (should (equal (agent-shell-test-read home ".bashrc") before))
      (should (equal (agent-shell-test-read home "dotfiles/ssh/authorized_keys")
                     "SECRET-或-plain\n"))
      (should-not (file-exists-p (expand-file-name ".profile.new" home))))))

(provide 'test-paths)
;;; test-paths.el ends here
