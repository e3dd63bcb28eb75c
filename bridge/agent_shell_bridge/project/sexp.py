"""A tiny Emacs Lisp *reader* for settings files: data in, data out, nothing evaluated.

Supports lists, dotted pairs, strings, symbols, integers, ``'x`` (as ``(quote x)``)
and ``;`` comments. Everything else — ``#`` syntax such as ``#.(eval ...)``, vectors,
backquote, character literals — is refused with a :class:`SexpError`, because a
settings file that needs it is not plain data.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import InvalidParams

__all__ = ["Cons", "SexpError", "Symbol", "read_all"]

_MAX_DEPTH = 64
_MAX_CHARS = 1_000_000
_DELIMS = set("()'\";") | set(" \t\r\n\f")


class SexpError(InvalidParams):
    """The settings file is not valid data for this reader."""


@dataclass(frozen=True, slots=True)
class Symbol:
    name: str


@dataclass(frozen=True, slots=True)
class Cons:
    """A dotted pair ``(car . cdr)`` whose cdr is not a list."""

    car: object
    cdr: object


Datum = object


class _Reader:
    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0

    def error(self, message: str) -> SexpError:
        line = self.text.count("\n", 0, self.pos) + 1
        return SexpError(f"line {line}: {message}")

    def skip(self) -> None:
        while self.pos < len(self.text):
            ch = self.text[self.pos]
            if ch in " \t\r\n\f":
                self.pos += 1
            elif ch == ";":
                nl = self.text.find("\n", self.pos)
                self.pos = len(self.text) if nl < 0 else nl + 1
            else:
                return

    def datum(self, depth: int) -> Datum:
        if depth > _MAX_DEPTH:
            raise self.error("nesting is too deep")
        self.skip()
        if self.pos >= len(self.text):
            raise self.error("unexpected end of file")
        ch = self.text[self.pos]
        if ch == "(":
            self.pos += 1
            return self.list_tail(depth)
        if ch == ")":
            raise self.error("unexpected ')'")
        if ch == "'":
            self.pos += 1
            return [Symbol("quote"), self.datum(depth + 1)]
        if ch == '"':
            return self.string()
        if ch in "#`,[]?\\":
            raise self.error(f"unsupported syntax {ch!r} (only plain data is read)")
        return self.atom()

    def list_tail(self, depth: int) -> Datum:
        items: list[Datum] = []
        while True:
            self.skip()
            if self.pos >= len(self.text):
                raise self.error("unclosed '('")
            if self.text[self.pos] == ")":
                self.pos += 1
                return items
            if self.text[self.pos] == "." and (
                self.pos + 1 >= len(self.text) or self.text[self.pos + 1] in _DELIMS
            ):
                if len(items) != 1:
                    raise self.error("only two-element dotted pairs are supported")
                self.pos += 1
                cdr = self.datum(depth + 1)
                self.skip()
                if self.pos >= len(self.text) or self.text[self.pos] != ")":
                    raise self.error("expected ')' after dotted pair")
                self.pos += 1
                if isinstance(cdr, list):
                    return [items[0], *cdr]
                return Cons(items[0], cdr)
            items.append(self.datum(depth + 1))

    def string(self) -> str:
        self.pos += 1
        out: list[str] = []
        escapes = {"n": "\n", "t": "\t", '"': '"', "\\": "\\", "\n": ""}
        while self.pos < len(self.text):
            ch = self.text[self.pos]
            if ch == '"':
                self.pos += 1
                return "".join(out)
            if ch == "\\":
                nxt = self.text[self.pos + 1 : self.pos + 2]
                if nxt not in escapes:
                    raise self.error(f"unsupported string escape \\{nxt}")
                out.append(escapes[nxt])
                self.pos += 2
                continue
            out.append(ch)
            self.pos += 1
        raise self.error("unterminated string")

    def atom(self) -> Datum:
        start = self.pos
        while self.pos < len(self.text) and self.text[self.pos] not in _DELIMS:
            self.pos += 1
        token = self.text[start : self.pos]
        try:
            return int(token)
        except ValueError:
            return Symbol(token)


def read_all(text: str) -> list[Datum]:
    """Read every top-level form of ``text``."""
    if len(text) > _MAX_CHARS:
        raise SexpError(f"file is larger than {_MAX_CHARS} characters")
    reader = _Reader(text)
    forms: list[Datum] = []
    while True:
        reader.skip()
        if reader.pos >= len(text):
            return forms
        forms.append(reader.datum(0))
