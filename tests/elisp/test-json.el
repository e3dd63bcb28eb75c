;;; test-json.el --- JSON text and bytes are the same on every Emacs  -*- lexical-binding: t; -*-

;; SPDX-License-Identifier: GPL-3.0-or-later

;;; Commentary:

;; `json-serialize' gives characters on Emacs 28 and 29 and UTF-8 bytes
;; on Emacs 30.  agent-shell-json.el hides the difference; these cases
;; pin what each of its two functions returns, with Chinese, an emoji
;; and a combining accent, whichever Emacs runs them.

;;; Code:

(require 'ert)
(require 'cl-lib)
(require 'agent-shell-json)

(defconst test-json--value
  '((title . "改 calc.py 里的 add")
    (steps . [((files . ["计算/calc.py" "e\u0301 🚀"]) (done . :json-false))])
    (note . :null))
  "A tool argument as the package builds them for `json-serialize'.")

(defconst test-json--text
  (concat "{\"title\":\"改 calc.py 里的 add\","
          "\"steps\":[{\"files\":[\"计算/calc.py\",\"e\u0301 🚀\"],\"done\":false}],"
          "\"note\":null}")
  "`test-json--value' as JSON text.")

(ert-deftest test-json/text-is-characters ()
  "The text form is the characters of the JSON, fit to insert and compare."
  (let ((text (agent-shell-json-text test-json--value)))
    (should (multibyte-string-p text))
    (should (equal text test-json--text))
    (with-temp-buffer
      (insert text)
      (should (equal (buffer-string) test-json--text))
      ;; No raw bytes: they are what would show as \346\224\271.
      (should-not (cl-find-if (lambda (c) (eq (char-charset c) 'eight-bit))
                              (buffer-string))))))

(ert-deftest test-json/bytes-are-utf-8 ()
  "The bytes form is the UTF-8 encoding of the text, fit to send or write."
  (let ((bytes (agent-shell-json-bytes test-json--value)))
    (should-not (multibyte-string-p bytes))
    (should (equal bytes (encode-coding-string test-json--text 'utf-8)))
    (should (= (length bytes) (string-bytes (encode-coding-string test-json--text 'utf-8))))
    (should (equal (json-parse-string (decode-coding-string bytes 'utf-8)
                                      :object-type 'alist :null-object :null
                                      :false-object :json-false)
                   '((title . "改 calc.py 里的 add")
                     (steps . [((files . ["计算/calc.py" "e\u0301 🚀"])
                                (done . :json-false))])
                     (note . :null))))))

(ert-deftest test-json/null-and-false-can-be-changed ()
  "The :null-object and :false-object keywords reach `json-serialize'."
  (should (equal (agent-shell-json-text '((a . nil) (b . :false)) :null-object nil
                                        :false-object :false)
                 "{\"a\":null,\"b\":false}"))
  (should (equal (agent-shell-json-bytes ["无" :json-false :null])
                 (encode-coding-string "[\"无\",false,null]" 'utf-8)))
  (should-error (agent-shell-json-text [:false])))

(ert-deftest test-json/ascii-is-the-same-either-way ()
  "Plain ASCII gives the same string as text and as bytes."
  (should (equal (agent-shell-json-text '((a . 1))) "{\"a\":1}"))
  (should (equal (agent-shell-json-bytes '((a . 1))) "{\"a\":1}")))

(provide 'test-json)
;;; test-json.el ends here
