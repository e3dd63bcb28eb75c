;;; agent-shell-json.el --- JSON as text and as bytes, alike on every Emacs  -*- lexical-binding: t; -*-

;; SPDX-License-Identifier: GPL-3.0-or-later

;;; Commentary:

;; `json-serialize' returns a multibyte string of characters up to Emacs
;; 29 and a unibyte string of UTF-8 bytes from Emacs 30 on.  Inserted in
;; a buffer or compared with text, the bytes of Emacs 30 read as octal
;; escapes (\346\224\271 for 改); sent to a process or written to a file,
;; the characters of Emacs 28 must still be encoded.  So no other file
;; uses the result of `json-serialize' directly: what is shown or
;; compared comes from `agent-shell-json-text', what goes on the wire or
;; into a file from `agent-shell-json-bytes'.
;;
;; Both take `json-serialize''s :null-object and :false-object, which
;; default to this package's conventions: null is `:null' and false is
;; `:json-false'.  Used by agent-shell-rpc-protocol.el (messages to the
;; bridge and the events log), agent-shell-tool-text.el (structured
;; tool arguments in the transcript) and agent-shell-actions.el (the
;; snapshot index).

;;; Code:

(defun agent-shell-json--serialize (object options)
  "Return `json-serialize' of OBJECT with OPTIONS, a plist of its keywords.
Absent keywords take this package's values: null is `:null', false
is `:json-false'."
  (json-serialize object
                  :null-object (if (plist-member options :null-object)
                                   (plist-get options :null-object)
                                 :null)
                  :false-object (if (plist-member options :false-object)
                                    (plist-get options :false-object)
                                  :json-false)))

(defun agent-shell-json-text (object &rest options)
  "Return OBJECT as JSON text: a string of characters, to show or compare.
OPTIONS are `json-serialize''s :null-object and :false-object."
  (let ((json (agent-shell-json--serialize object options)))
    (if (multibyte-string-p json)
        json
      (decode-coding-string json 'utf-8 t))))

(defun agent-shell-json-bytes (object &rest options)
  "Return OBJECT as JSON bytes: a unibyte UTF-8 string, to send or write.
OPTIONS are `json-serialize''s :null-object and :false-object."
  (let ((json (agent-shell-json--serialize object options)))
    (if (multibyte-string-p json)
        (encode-coding-string json 'utf-8 t)
      json)))

(provide 'agent-shell-json)
;;; agent-shell-json.el ends here
