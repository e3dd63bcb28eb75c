"""Bash's quote removal for one piece of a word: ``$'...'``, unquoted, double-quoted.

Each function gives the text bash would pass for that piece; the parser
(``shell_parse``) decides which piece is which.
"""

from __future__ import annotations

import re

__all__ = ["decode_ansi_c", "unescape_double", "unescape_unquoted"]

ANSI_SIMPLE = {
    "a": "\a",
    "b": "\b",
    "e": "\x1b",
    "E": "\x1b",
    "f": "\f",
    "n": "\n",
    "r": "\r",
    "t": "\t",
    "v": "\v",
    "\\": "\\",
    "'": "'",
    '"': '"',
    "?": "?",
}
DOUBLE_ESCAPE_RE = re.compile(r'\\([$`"\\\n])')


def decode_ansi_c(body: str) -> str:
    """Decode the inside of ``$'...'`` the way bash does."""
    out: list[str] = []
    i = 0
    while i < len(body):
        ch = body[i]
        if ch != "\\" or i + 1 >= len(body):
            out.append(ch)
            i += 1
            continue
        nxt = body[i + 1]
        if nxt in ANSI_SIMPLE:
            out.append(ANSI_SIMPLE[nxt])
            i += 2
        elif nxt in "xuU":
            width = {"x": 2, "u": 4, "U": 8}[nxt]
            m = re.match(f"[0-9A-Fa-f]{{1,{width}}}", body[i + 2 :])
            if m:
                out.append(chr(min(int(m.group(0), 16), 0x10FFFF)))
                i += 2 + len(m.group(0))
            else:
                out.append("\\" + nxt)
                i += 2
        elif nxt in "01234567":
            m = re.match(r"[0-7]{1,3}", body[i + 1 :])
            assert m is not None
            out.append(chr(int(m.group(0), 8) & 0xFF))
            i += 1 + len(m.group(0))
        elif nxt == "c" and i + 2 < len(body):
            out.append(chr(ord(body[i + 2]) & 0x1F))
            i += 3
        else:
            out.append("\\" + nxt)
            i += 2
    return "".join(out)


def unescape_unquoted(raw: str) -> str:
    """Remove backslash escapes from an unquoted word."""
    if "\\" not in raw:
        return raw
    out: list[str] = []
    i = 0
    while i < len(raw):
        if raw[i] == "\\" and i + 1 < len(raw):
            if raw[i + 1] != "\n":
                out.append(raw[i + 1])
            i += 2
        else:
            out.append(raw[i])
            i += 1
    return "".join(out)


def unescape_double(raw: str) -> str:
    """Backslash only escapes ``$ ` " \\`` and newline inside double quotes."""
    if "\\" not in raw:
        return raw
    return DOUBLE_ESCAPE_RE.sub(lambda m: "" if m.group(1) == "\n" else m.group(1), raw)
