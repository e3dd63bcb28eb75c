"""The project allowlist: ``.agent-shell/allowlist.el`` read as data.

The file has the seed's shape::

    (setq agent-shell-allowlist
          '((command . "git push --force origin main")
            (command . "rm -rf build/")))

It is read with :mod:`.sexp` and never evaluated. Every entry must be one simple
command with plain words; it is stored as its normalised argv, so a command matches
an entry only when bash would run exactly that argv — ``rm -rf build/ /`` does not
match ``rm -rf build/``, while ``rm -rf "build/"`` does.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from ..project.sexp import Cons, SexpError, Symbol, read_all
from .shell_parse import SimpleCommand, parse_command

__all__ = ["AllowEntry", "Allowlist", "AllowlistError", "load_allowlist"]

_VARIABLES = frozenset({"agent-shell-allowlist", "agent-shell/allowlist"})


class AllowlistError(SexpError):
    """The allowlist file is malformed; the message says where and why."""


@dataclass(frozen=True, slots=True)
class AllowEntry:
    command: str
    argv: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Allowlist:
    """Exact simple commands the user allows to run without confirmation."""

    entries: tuple[AllowEntry, ...] = ()

    @classmethod
    def from_commands(cls, commands: Iterable[str]) -> Allowlist:
        return cls(tuple(_entry(c, i) for i, c in enumerate(commands, start=1)))

    def match(self, cmd: SimpleCommand) -> AllowEntry | None:
        """The entry naming exactly ``cmd``, if any."""
        if (
            not self.entries
            or cmd.assignments
            or not cmd.argv
            or not all(w.literal for w in cmd.argv)
        ):
            return None
        argv = tuple(w.text for w in cmd.argv)
        for entry in self.entries:
            if entry.argv == argv:
                return entry
        return None


def _entry(command: str, index: int) -> AllowEntry:
    parsed = parse_command(command)
    if parsed.issues or parsed.redirects or len(parsed.commands) != 1:
        raise AllowlistError(f"entry {index} ({command!r}) is not a single simple command")
    cmd = parsed.commands[0]
    if cmd.assignments or cmd.redirects or not cmd.argv:
        raise AllowlistError(
            f"entry {index} ({command!r}) must be a plain command, no redirections"
        )
    if not all(w.literal for w in cmd.argv):
        raise AllowlistError(
            f"entry {index} ({command!r}) contains globs or expansions; name exact words"
        )
    return AllowEntry(command, tuple(w.text for w in cmd.argv))


def _strip_quote(value: object) -> object:
    if isinstance(value, list) and len(value) == 2 and value[0] == Symbol("quote"):
        return value[1]
    return value


def parse_allowlist(text: str) -> Allowlist:
    """Parse allowlist file text; raise :class:`AllowlistError` when malformed."""
    try:
        forms = read_all(text)
    except SexpError as exc:
        raise AllowlistError(f"allowlist: {exc.message}") from exc
    commands: list[str] = []
    found = False
    for form in forms:
        if not (isinstance(form, list) and form and form[0] in (Symbol("setq"), Symbol("defvar"))):
            raise AllowlistError(
                "allowlist: only (setq agent-shell-allowlist '(...)) is understood"
            )
        if len(form) != 3 or not isinstance(form[1], Symbol) or form[1].name not in _VARIABLES:
            raise AllowlistError("allowlist: expected (setq agent-shell-allowlist '(...))")
        found = True
        entries = _strip_quote(form[2])
        if not isinstance(entries, list):
            raise AllowlistError("allowlist: the value must be a quoted list of entries")
        for i, item in enumerate(entries, start=1):
            if not (isinstance(item, Cons) and item.car == Symbol("command")):
                raise AllowlistError(f'allowlist: entry {i} must look like (command . "...")')
            if not isinstance(item.cdr, str):
                raise AllowlistError(f"allowlist: entry {i} command must be a string")
            commands.append(item.cdr)
    if not found and forms:
        raise AllowlistError("allowlist: no agent-shell-allowlist setting found")
    try:
        return Allowlist.from_commands(commands)
    except AllowlistError as exc:
        raise AllowlistError(f"allowlist: {exc.message}") from exc


def load_allowlist(path: Path) -> Allowlist:
    """Read ``path`` as data (never evaluated); raise :class:`AllowlistError` if malformed."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise AllowlistError(f"cannot read allowlist {path}: {exc}") from exc
    return parse_allowlist(text)
