"""Variables bash evaluates as arithmetic, and whether the command set them itself.

In arithmetic (``$(( ))``, ``$[ ]``, ``(( ))``, ``let``, the operands of ``[[ -eq ]]``
and its kin, array subscripts, ``${x:offset:length}``) bash takes a variable's *value*
as an expression and evaluates it, subscripts included: a value ``a[$(cmd)]`` read
from a file runs ``cmd``. A variable read there is therefore safe only when the
command itself gave it a number first: a loop over integer literals, an arithmetic
assignment ``i=0``, or one of bash's own counters (``$#``, ``RANDOM``). Anything else
(a ``read``, a file's lines, a loop over command output or file names, whatever the
environment holds) may be code.

The parser records, in the order bash meets them, which names are set to a number
(``int``), set to data (``data``) or read as arithmetic (``use``), each with the loops
around it; :func:`first_unsafe_use` replays them. A loop runs its body again, so data
assigned anywhere inside a loop reaches every read in that loop, even an earlier one.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

__all__ = ["INTEGER_VALUE_RE", "Event", "first_unsafe_use", "scan"]

# (kind, name, loops): kind is "int", "data" or "use"; loops the ids of enclosing loops.
Event = tuple[str, str, tuple[int, ...]]

# Bash's own variables that always hold a number (until the command assigns them).
_INTEGER_SPECIALS = frozenset(
    {
        "RANDOM", "SRANDOM", "LINENO", "SECONDS", "BASHPID", "PPID", "UID", "EUID",
        "EPOCHSECONDS", "BASH_SUBSHELL", "HISTCMD",
    }
)  # fmt: skip
# A word whose value is a number bash reads without evaluating anything further.
INTEGER_VALUE_RE = re.compile(r"^[+-]?[0-9]+$")
_TOKEN_RE = re.compile(
    r"""
      (?P<number>[0-9][0-9A-Za-z_#@]*)
    | (?P<length>\$\{\#[A-Za-z_][A-Za-z0-9_]*(?:\[[@*]\])?\})
    | \$\{(?P<braced>[A-Za-z_][A-Za-z0-9_]*)\}
    | \$(?P<plain>[A-Za-z_][A-Za-z0-9_]*)
    | (?P<counter>\$[#?$!])
    | (?P<opener>\$\(\(|\$\[)
    | (?P<unreadable>[$`'\\])
    | (?P<name>[A-Za-z_][A-Za-z0-9_]*)(?P<assign>[ \t\n]*=(?!=))?
    | (?P<comma>,)
    """,
    re.VERBOSE,
)


def scan(text: str) -> tuple[list[tuple[str, str]], str | None]:
    """The names arithmetic ``text`` sets (``int``) and reads (``use``), in order.

    The second value says why the text cannot be checked at all (a substitution,
    a positional parameter, quotes), or is ``None``. An assignment ``x = …`` takes
    effect after its expression, at the next comma or the end: ``x = x + 1`` reads
    ``x`` before it is set.
    """
    events: list[tuple[str, str]] = []
    pending: list[str] = []
    for m in _TOKEN_RE.finditer(text):
        if m.group("comma") is not None:
            events.extend(("int", name) for name in pending)
            pending.clear()
        elif m.group("unreadable") is not None:
            return events, (
                f"arithmetic {text.strip()!r} holds an expansion, substitution or quote "
                "whose value cannot be checked"
            )
        elif m.group("name") is not None:
            if m.group("assign") is not None:
                pending.append(m.group("name"))
            else:
                events.append(("use", m.group("name")))
        elif m.group("braced") is not None or m.group("plain") is not None:
            events.append(("use", m.group("braced") or m.group("plain")))
    events.extend(("int", name) for name in pending)
    return events, None


def first_unsafe_use(events: Sequence[Event]) -> str | None:
    """The first name read as arithmetic that the command had not set to a number."""
    if not any(kind == "use" for kind, _, _ in events):
        return None
    data_in: dict[int, set[str]] = {}
    for kind, name, loops in events:
        if kind == "data":
            for loop in loops:
                data_in.setdefault(loop, set()).add(name)
    numbers = set(_INTEGER_SPECIALS)
    for kind, name, loops in events:
        if kind == "int":
            numbers.add(name)
        elif kind == "data":
            numbers.discard(name)
        elif name not in numbers or any(name in data_in.get(loop, ()) for loop in loops):
            return name
    return None
