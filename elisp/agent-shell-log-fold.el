;;; agent-shell-log-fold.el --- Folding the action log's drawers without overlays  -*- lexical-binding: t; -*-

;; SPDX-License-Identifier: GPL-3.0-or-later

;;; Commentary:

;; The action log (agent-shell-log.el) folds the properties drawer of
;; every entry, as the saved log opens.  A day's session has tens of
;; thousands of drawers.  Org folds a drawer with an overlay (Org 9.5 in
;; Emacs 28 always, Org 9.7 in Emacs 30 by default), and Emacs 28 walks
;; every overlay of a buffer on each insertion: the log got slower with
;; every entry.  A drawer is folded here by the text property
;; `agent-shell-log-fold' instead, which costs nothing once made.  It is
;; an alias of `invisible' in the log's buffer only (through
;; `char-property-alias-alist'; font-lock clears `invisible' itself).
;; TAB on a drawer's first line (`org-tab-first-hook'), Org's folding
;; of the drawers a visibility cycle shows (`org-cycle-hook'), and TAB
;; with three prefix arguments (show everything) use that property, and
;; the overlays Org still makes for drawers are removed as they go.
;; Isearch does not open a drawer folded this way; TAB does.
;;
;; `agent-shell-log-fold-setup' prepares a log buffer (the mode calls
;; it) and `agent-shell-log-fold-entry' folds the drawer of an entry
;; just inserted.  A log file opened from disk gets Org's own startup
;; visibility (#+STARTUP: overview folds the headings, and Org leaves
;; the drawers inside them for the cycle that shows them).

;;; Code:

(require 'org)

(defconst agent-shell-log-fold--spec 'agent-shell-log-drawer
  "The invisibility spec of a folded drawer.")

(defconst agent-shell-log-fold--drawer-re "^:PROPERTIES:[ \t]*$"
  "The first line of an entry's properties drawer.")

(defun agent-shell-log-fold--remove-drawer-overlays (beg end)
  "Delete the overlays Org made to fold drawers between BEG and END.
Those are the folding overlays starting at the end of a drawer's first
line and lying within BEG..END; a fold of headings stays."
  (save-excursion
    (dolist (o (overlays-in beg end))
      (when (and (memq (overlay-get o 'invisible) '(outline org-hide-drawer))
                 (>= (overlay-start o) beg) (<= (overlay-end o) end)
                 (progn (goto-char (overlay-start o))
                        (and (eolp)
                             (progn (beginning-of-line)
                                    (looking-at-p agent-shell-log-fold--drawer-re)))))
        (delete-overlay o)))))

(defun agent-shell-log-fold--ensure-alias ()
  "Make `agent-shell-log-fold' an alias of `invisible' in this buffer.
Org's folding with text properties rebuilds the aliases of `invisible'
when it makes a new property; the log's is put back."
  (let ((aliases (cdr (assq 'invisible char-property-alias-alist))))
    (unless (memq 'agent-shell-log-fold aliases)
      (setq-local char-property-alias-alist
                  (cons (cons 'invisible (cons 'agent-shell-log-fold aliases))
                        (assq-delete-all 'invisible
                                         (copy-alist char-property-alias-alist)))))))

(defun agent-shell-log-fold-region (beg end flag)
  "Fold the drawer text from BEG to END when FLAG is non-nil, else show it."
  (with-silent-modifications
    (if flag
        (progn (agent-shell-log-fold--ensure-alias)
               (put-text-property beg end 'agent-shell-log-fold agent-shell-log-fold--spec))
      (remove-text-properties beg end '(agent-shell-log-fold nil))
      (agent-shell-log-fold--remove-drawer-overlays beg end))))

(defun agent-shell-log-fold--drawer-bounds (&optional limit)
  "Return (BEG . END) of the text to fold of the drawer starting at point.
Point is at the start of a \":PROPERTIES:\" line; BEG is the end of
that line and END the end of the \":END:\" line, searched up to
LIMIT (default: the next heading).  Return nil when there is no end."
  (save-excursion
    (let ((beg (line-end-position))
          (limit (or limit (save-excursion
                             (if (re-search-forward org-outline-regexp-bol nil t)
                                 (match-beginning 0)
                               (point-max))))))
      (and (re-search-forward "^:END:[ \t]*$" limit t)
           (cons beg (point))))))

(defun agent-shell-log-fold-entry (pos &optional end)
  "Fold the properties drawer of the heading at POS.
END, when known, is where the entry's heading and drawer end."
  (save-excursion
    (goto-char pos)
    (forward-line 1)
    (when (looking-at-p agent-shell-log-fold--drawer-re)
      (when-let ((bounds (agent-shell-log-fold--drawer-bounds end)))
        (agent-shell-log-fold-region (car bounds) (cdr bounds) t)))))

(defun agent-shell-log-fold-drawers (beg end)
  "Fold every properties drawer of a heading between BEG and END.
The overlays Org folded some of them with go."
  (agent-shell-log-fold--remove-drawer-overlays beg end)
  (save-excursion
    (goto-char beg)
    (let ((case-fold-search nil))
      (while (re-search-forward agent-shell-log-fold--drawer-re end t)
        (beginning-of-line)
        (let ((bounds (and (save-excursion
                             (and (zerop (forward-line -1))
                                  (looking-at-p org-outline-regexp)))
                           (agent-shell-log-fold--drawer-bounds))))
          (if (null bounds)
              (forward-line 1)
            (agent-shell-log-fold-region (car bounds) (cdr bounds) t)
            (goto-char (cdr bounds))))))))

;;; TAB and cycling

(defun agent-shell-log-fold--tab ()
  "Toggle the drawer on the line at point, for `org-tab-first-hook'.
Return non-nil when point was on a drawer's first line."
  (when (save-excursion (beginning-of-line)
                        (and (looking-at-p agent-shell-log-fold--drawer-re)
                             (zerop (forward-line -1))
                             (looking-at-p org-outline-regexp)))
    (when-let ((bounds (save-excursion (beginning-of-line)
                                       (agent-shell-log-fold--drawer-bounds))))
      (agent-shell-log-fold-region (car bounds) (cdr bounds)
                                   (not (invisible-p (car bounds))))
      t)))

(defun agent-shell-log-fold--after-cycle (state)
  "Fold the drawers a visibility cycle to STATE has shown, for `org-cycle-hook'.
Stands for `org-cycle-hide-drawers', which folds each with an overlay,
and removes the overlays Org made all the same (showing every heading
calls it directly)."
  (unless (memq state '(overview folded contents))
    (save-excursion
      (if (eq state 'all)
          (agent-shell-log-fold-drawers (point-min) (point-max))
        (let ((beg (line-beginning-position))
              (end (if (eq state 'children)
                       (org-entry-end-position)
                     (save-excursion (org-end-of-subtree t t)))))
          (agent-shell-log-fold-drawers beg end))))))

(defun agent-shell-log-fold-cycle (&optional arg)
  "Cycle visibility like `org-cycle', which it stands for in the log; pass ARG.
With three \\[universal-argument], which shows the whole buffer, the
drawers the log folded itself are shown too."
  (interactive "P")
  (when (equal arg '(64))
    (org-with-wide-buffer
     (agent-shell-log-fold-region (point-min) (point-max) nil)))
  (org-cycle arg))

;;; Setup

(defun agent-shell-log-fold-setup ()
  "Prepare the current log buffer for text-property drawer folds."
  (add-to-invisibility-spec (cons agent-shell-log-fold--spec t))
  (agent-shell-log-fold--ensure-alias)
  (add-hook 'org-tab-first-hook #'agent-shell-log-fold--tab nil t)
  (setq-local org-cycle-hook
              (append (remq 'org-cycle-hide-drawers
                            (remq t (default-value 'org-cycle-hook)))
                      (list #'agent-shell-log-fold--after-cycle))))

(provide 'agent-shell-log-fold)
;;; agent-shell-log-fold.el ends here
