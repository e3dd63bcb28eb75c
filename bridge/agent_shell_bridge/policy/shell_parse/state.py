"""The walk's shared state, and the variable events it records (see ..arithmetic).

The walker is put together from parts by concern (:mod:`.words`, :mod:`.redirects`,
:mod:`.loops`, :mod:`.statements`). They share this state, and reach the statement
walker, which a word enters again for its substitutions, through
:meth:`WalkerState.statement`.
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

import tree_sitter

from ..arithmetic import INTEGER_VALUE_RE, Event, scan
from ..shell_words import Issue, ParsedCommand, Word

__all__ = ["WalkerState"]

_IDENTIFIER_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# Builtins that assign the variables their words name (read NAME, mapfile NAME …),
# with the variable they fill when none is named.
_ASSIGNING_BUILTINS = {
    "read": "REPLY", "mapfile": "MAPFILE", "readarray": "MAPFILE", "getopts": "OPTARG",
    "unset": "", "declare": "", "typeset": "", "local": "", "export": "", "readonly": "",
    "let": "",
}  # fmt: skip


class WalkerState(ABC):
    """What one walk of a tree has found so far, shared by the walker's parts."""

    def __init__(self, source: bytes) -> None:
        self.source = source
        self.result = ParsedCommand()
        self.depth = 0
        # Inside an expansion, arithmetic or a [[ test: text there is evaluated.
        self.code = 0
        # The word being read is a plain argument of a simple command.
        self.arg = False
        # Where each judged substitution (and arithmetic expansion) starts, and
        # where a backquoted one ends: all other "$(", "`" and "<(" are looked at.
        self.judged: set[int] = set()
        # Names set and read as arithmetic, in order (see ..arithmetic).
        self.events: list[Event] = []
        self.loops: tuple[int, ...] = ()
        self.loop_count = 0
        # Loop variables whose value is one known word, and how often one was used.
        self.bound: dict[str, Word] = {}
        self.bound_uses = 0
        # Loop bodies walked again for a bound value (or after a rollback) so far:
        # past the budget, loops are walked once, unbound.
        self.rewalks = 0

    @abstractmethod
    def statement(self, node: tree_sitter.Node, *, in_sub: bool = False) -> None:
        """Walk one statement and all it holds (see :class:`.statements.Walker`)."""

    @contextmanager
    def in_loop(self) -> Iterator[None]:
        """Everything walked inside is inside one more loop (see ..arithmetic)."""
        self.loop_count += 1
        saved = self.loops
        self.loops = (*saved, self.loop_count)
        try:
            yield
        finally:
            self.loops = saved

    def event(self, kind: str, name: str) -> None:
        self.events.append((kind, name, self.loops))

    def assigned(self, name: str, value: Word) -> None:
        """``NAME=value``: a number from here on only if the value is one."""
        base = name.split("[", 1)[0]
        number = value.literal and INTEGER_VALUE_RE.match(value.text) is not None
        self.event("int" if number and base == name else "data", base)

    def builtin_assigns(self, argv: Sequence[Word]) -> None:
        """The variables ``read``, ``mapfile``, ``printf -v``, ``declare`` … fill with data.

        Every name in their words counts (over-counting costs only a question); for
        ``printf`` only the ``-v`` target does, its other words being text.
        """
        if not argv or not argv[0].literal:
            return
        program = argv[0].text
        if program == "printf":
            for i, w in enumerate(argv[1:], start=1):
                if w.text.startswith("-v"):
                    target = w.text[2:] or (argv[i + 1].text if i + 1 < len(argv) else "")
                    for name in _IDENTIFIER_RE.findall(target):
                        self.event("data", name)
            return
        implicit = _ASSIGNING_BUILTINS.get(program)
        if implicit is None:
            return
        if implicit:
            self.event("data", implicit)
        for w in argv[1:]:
            for name in _IDENTIFIER_RE.findall(w.text):
                self.event("data", name)

    def arithmetic_text(self, text: str) -> None:
        """Record the names arithmetic ``text`` sets and reads (see ..arithmetic)."""
        found, problem = scan(text)
        for kind, name in found:
            self.event(kind, name)
        if problem is not None:
            self.result.issues.append(Issue(problem))
