"""Which commands may still run without asking when there is no sandbox.

Without bubblewrap nothing limits what an auto-allowed command does, so the
bridge narrows "runs without asking" from what the policy allows to what cannot
run project code at all: every simple command (substitutions included) must be a
system program from a short list of readers, found on ``PATH`` outside the project,
written plainly, with no variable assignments in front. Project test and build
commands, allowlisted commands and anything else the policy allows then ask.

This is a second filter after the policy, never a replacement: a command passes
here only if the policy has already allowed it.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Sequence
from pathlib import Path

from .policy.commands import effective_name
from .policy.shell_parse import parse_command

__all__ = ["STRICT_READERS", "strictly_read_only"]

# Programs and builtins that read and print, and never run code they are given.
# Left out on purpose: sort (--compress-program runs one), date (-s), awk and sed
# (their scripts can run commands), every interpreter, build tool and test runner.
STRICT_READERS = frozenset(
    {
        "[",
        "[[",
        "base64",
        "basename",
        "cat",
        "cd",
        "cksum",
        "cmp",
        "column",
        "comm",
        "cut",
        "df",
        "diff",
        "dirname",
        "du",
        "echo",
        "egrep",
        "expr",
        "false",
        "fgrep",
        "file",
        "find",
        "fold",
        "git",
        "grep",
        "head",
        "hexdump",
        "id",
        "jq",
        "ls",
        "md5sum",
        "nl",
        "od",
        "printf",
        "pwd",
        "readlink",
        "realpath",
        "rev",
        "rg",
        "seq",
        "sha1sum",
        "sha256sum",
        "sha512sum",
        "stat",
        "tac",
        "tail",
        "test",
        "tr",
        "tree",
        "true",
        "type",
        "uname",
        "uniq",
        "wc",
        "which",
        "whoami",
        "xxd",
    }
)
_BUILTINS = frozenset({"[", "[[", "cd", "echo", "false", "printf", "pwd", "test", "true", "type"})


def _inside(path: Path, roots: Sequence[Path]) -> bool:
    return any(path == root or root in path.parents for root in roots)


def strictly_read_only(command: str, roots: Sequence[Path], path_env: str | None = None) -> bool:
    """Whether every part of ``command`` is a plain system reader (see module doc)."""
    parsed = parse_command(command)
    # Issues (substitutions and the like) are the policy's to judge; it allowed the
    # command already. Here only what would run counts, substitutions included.
    if not parsed.commands or parsed.functions:
        return False
    resolved_roots = [Path(os.path.realpath(r)) for r in roots]
    for cmd in parsed.commands:
        if not cmd.argv or cmd.assignments:
            return False
        word = cmd.argv[0]
        name, plain = effective_name(word)
        if not plain or "/" in word.text or name not in STRICT_READERS:
            return False
        if name in _BUILTINS:
            continue
        found = shutil.which(
            name, path=path_env if path_env is not None else os.environ.get("PATH", os.defpath)
        )
        if found is None or _inside(Path(os.path.realpath(found)), resolved_roots):
            return False
    return True
