"""Custom ``/NAME`` commands: reusable prompts kept as Markdown files.

``.agent-shell/commands/NAME.md`` (the project's) and
``~/.config/agent-shell/commands/NAME.md`` (the user's) turn ``/NAME text`` into the
file's body with ``$ARGUMENTS`` replaced by ``text`` and ``$1`` … ``$9`` by its
words. An optional header between ``---`` lines may give a ``description``, a
``mode`` (ask or act) and an ``argument-hint`` (what to type after the name). When
both define a name, the user's own file wins: a cloned repository cannot redefine a
command the user relies on.
"""

from __future__ import annotations

import os
import re
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from ..errors import InvalidParams

__all__ = [
    "CommandFile",
    "CommandFileError",
    "UnknownCommand",
    "discover_commands",
    "expand_command",
    "parse_command_file",
    "split_command",
]

BUILTIN = frozenset({"ask", "act"})
# A size no prompt template needs; a larger file is refused, not cut.
MAX_BYTES = 64_000
_NAME = r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}"
_NAME_RE = re.compile(rf"\A{_NAME}\Z")
# Only at the very start: a prompt that begins with a space is sent as written.
_INVOCATION = re.compile(rf"\A/({_NAME})(?:[ \t]+|\n|\Z)")
_PLACEHOLDER = re.compile(r"\$(ARGUMENTS|[1-9])")

Scope = Literal["project", "user"]


class CommandFileError(InvalidParams):
    """A command file that cannot be used as it is (bad header, too big, unreadable)."""


class UnknownCommand(InvalidParams):
    """``/NAME`` names no built-in and no command file."""


@dataclass(frozen=True)
class CommandFile:
    name: str
    path: Path
    scope: Scope
    body: str
    description: str = ""
    mode: Literal["ask", "act"] | None = None
    hint: str = ""

    @property
    def argument_hint(self) -> str:
        """What to type after ``/NAME``: the header's hint, else one read from the body."""
        if self.hint:
            return self.hint
        numbered = sorted(
            {int(m.group(1)) for m in _PLACEHOLDER.finditer(self.body) if m.group(1) != "ARGUMENTS"}
        )
        if numbered:
            return " ".join(f"<{n}>" for n in numbered)
        return "text (optional)" if "$ARGUMENTS" not in self.body else "text"

    def describe(self) -> dict[str, object]:
        return {
            "name": self.name,
            "description": self.description,
            "mode": self.mode,
            "scope": self.scope,
            "path": str(self.path),
            "hint": self.argument_hint,
        }


def _parse_header(lines: list[str], path: Path) -> tuple[dict[str, str], int]:
    """The ``key: value`` pairs between the opening and closing ``---``, and the body's start."""
    fields: dict[str, str] = {}
    for number, line in enumerate(lines[1:], start=2):
        if line.strip() == "---":
            return fields, number
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        key, sep, value = line.partition(":")
        if not sep or not key.strip():
            raise CommandFileError(
                f"{path}: line {number} of the header is not 'key: value': {line.strip()!r}"
            )
        fields[key.strip().lower()] = value.strip().strip("\"'")
    raise CommandFileError(f"{path}: the header opened with '---' on line 1 is never closed")


def parse_command_file(path: Path, scope: Scope) -> CommandFile:
    """Read one command file; raise :class:`CommandFileError` saying what is wrong."""
    try:
        with path.open("rb") as fh:  # never more than the limit, whatever the file's size
            raw = fh.read(MAX_BYTES + 1)
            size = os.fstat(fh.fileno()).st_size
    except OSError as exc:
        raise CommandFileError(f"{path}: cannot be read ({exc.strerror})") from exc
    if len(raw) > MAX_BYTES:
        raise CommandFileError(
            f"{path}: {max(size, len(raw))} bytes, more than the {MAX_BYTES} allowed"
        )
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise CommandFileError(f"{path}: not UTF-8 text (byte {exc.start})") from exc
    lines = text.splitlines()
    fields: dict[str, str] = {}
    body_start = 0
    if lines and lines[0].strip() == "---":
        fields, body_start = _parse_header(lines, path)
    mode = fields.get("mode") or None
    if mode not in (None, "ask", "act"):
        raise CommandFileError(f"{path}: mode must be 'ask' or 'act', not {mode!r}")
    body = "\n".join(lines[body_start:]).strip("\n")
    if not body.strip():
        raise CommandFileError(f"{path}: the command has no prompt text")
    return CommandFile(
        name=path.stem,
        path=path,
        scope=scope,
        body=body,
        description=fields.get("description", ""),
        mode=mode,  # type: ignore[arg-type]  # checked just above
        hint=fields.get("argument-hint", "")[:200],
    )


def command_dirs(root: Path, user_dir: Path) -> list[tuple[Scope, Path]]:
    """Where commands live, lowest precedence first."""
    return [("project", root / ".agent-shell" / "commands"), ("user", user_dir / "commands")]


def _inside(path: Path, root: Path) -> bool:
    """Whether ``path`` resolves to a place under ``root`` (symlinks followed)."""
    try:
        path.resolve(strict=True).relative_to(root.resolve())
    except (OSError, RuntimeError, ValueError):
        return False
    return True


def _candidates(directory: Path, root: Path | None = None) -> dict[str, Path]:
    """Command files in ``directory``; with ``root``, only those that stay inside it.

    A project's file arrives with a clone: a link to ``~/.aws/credentials`` must not
    become the prompt sent to the model.
    """
    if not directory.is_dir():
        return {}
    found: dict[str, Path] = {}
    for path in sorted(directory.glob("*.md")):
        if (
            _NAME_RE.match(path.stem)
            and path.stem not in BUILTIN
            and path.is_file()
            and (root is None or _inside(path, root))
        ):
            found[path.stem] = path
    return found


def discover_commands(root: Path, user_dir: Path) -> dict[str, tuple[Scope, Path]]:
    """Every command name with the file that defines it (the user's over the project's)."""
    found: dict[str, tuple[Scope, Path]] = {}
    for scope, directory in command_dirs(root, user_dir):
        for name, path in _candidates(directory, root if scope == "project" else None).items():
            found[name] = (scope, path)
    return found


def split_command(text: str) -> tuple[str, str] | None:
    """``("fixit", "rest")`` for ``/fixit rest``; None when the prompt names no command."""
    match = _INVOCATION.match(text)
    if match is None or match.group(1) in BUILTIN:
        return None
    return match.group(1), text[match.end() :]


def _words(arguments: str) -> list[str]:
    try:
        return shlex.split(arguments)
    except ValueError:  # an unbalanced quote: words as typed
        return arguments.split()


def expand_command(command: CommandFile, arguments: str) -> str:
    """The prompt ``/NAME arguments`` stands for."""
    arguments = arguments.strip()
    words = _words(arguments)

    def value(match: re.Match[str]) -> str:
        key = match.group(1)
        if key == "ARGUMENTS":
            return arguments
        index = int(key) - 1
        return words[index] if index < len(words) else ""

    # One pass, so text inside the arguments is never read as a placeholder.
    body, count = _PLACEHOLDER.subn(value, command.body)
    if arguments and not count:
        body = f"{body}\n\n{arguments}"
    return body


def resolve_command(root: Path, user_dir: Path, name: str) -> CommandFile:
    """The parsed command ``name``, or :class:`UnknownCommand` listing what exists."""
    known = discover_commands(root, user_dir)
    if name not in known:
        names = ", ".join(f"/{n}" for n in sorted({*known, *BUILTIN}))
        raise UnknownCommand(
            f"unknown command /{name} (available: {names}); to send text that starts "
            "with '/', begin the prompt with a space"
        )
    scope, path = known[name]
    return parse_command_file(path, scope)
