"""Which commands may still run without asking when there is no sandbox.

Without bubblewrap nothing limits what an auto-allowed command does, so the
bridge narrows "runs without asking" from what the policy allows to what cannot
run project code at all: every simple command (substitutions included) must be a
system program from a short list of readers, found on ``PATH`` outside the project,
written plainly, with no variable assignments in front, and used without the few
options of those readers that run or load something else (``find -exec``, ``git``
against another repository or with a pager, diff driver or configuration of its
own, ``jq`` modules). Programs that run another program (``env``, ``xargs``,
``nice``, ``timeout`` …) are never readers here, whatever they would run. Project
test and build commands, allowlisted commands and anything else the policy allows
then ask.

This is a second filter after the policy, never a replacement: a command passes
here only if the policy has already allowed it. It still refuses on its own what
the parser could not vouch for (arithmetic on data, substitutions it could not
judge), so that it never relies on the policy for those.
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Callable, Sequence
from pathlib import Path

from ..policy.builtins import variable_target
from ..policy.commands import effective_name
from ..policy.options import SPECS, normalise, positional
from ..policy.repository import foreign_repository
from ..policy.rules.shells import WRAPPERS
from ..policy.shell_parse import ParsedCommand, Word, parse_command

__all__ = ["RUNS_PROGRAMS", "STRICT_READERS", "strictly_read_only"]

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
# Programs whose job is to run another program: never a reader, even if one were
# added to the list above by mistake (``env make test`` runs the project's code).
RUNS_PROGRAMS = frozenset(
    {
        *WRAPPERS,
        "busybox",
        "toybox",
        "eval",
        "source",
        ".",
        "coproc",
        "rgrep",
    }
)
_BUILTINS = frozenset({"[", "[[", "cd", "echo", "false", "printf", "pwd", "test", "true", "type"})
_FIND_ACTIONS = frozenset(
    {
        "-exec", "-execdir", "-ok", "-okdir", "-delete", "-fprint", "-fprint0", "-fprintf",
        "-fls", "-files0-from",
    }
)  # fmt: skip
# git sub-commands that only read the repository, with no pager, editor or remote.
_GIT_READS = frozenset(
    {
        "status", "diff", "log", "show", "rev-parse", "ls-files", "ls-tree", "blame",
        "describe", "shortlog", "rev-list", "name-rev", "merge-base", "show-ref",
        "for-each-ref", "count-objects", "grep", "annotate", "show-branch", "cherry",
        "whatchanged", "check-ignore", "version",
    }
)  # fmt: skip
_GIT_GLOBALS = frozenset({"--no-pager", "-P", "--no-optional-locks", "--literal-pathspecs"})
# Options (and any abbreviation git would take for them) that run a configured
# program, open a pager, write a file or read more configuration.
_GIT_ESCAPES = (
    "--ext-diff",
    "--textconv",
    "--open-files-in-pager",
    "--output",
    "--exec",
    "--upload-pack",
    "--receive-pack",
    "--config",
    "--config-env",
    "--paginate",
    "--recurse-submodules",
    "--submodule",
)
_JQ_LOADS = re.compile(r"\b(import|include)\s*\"|\bmodulemeta\b")


def _inside(path: Path, roots: Sequence[Path]) -> bool:
    return any(path == root or root in path.parents for root in roots)


def _find_ok(args: Sequence[Word], where: str | None, root: str) -> bool:
    """``find`` without actions that run, delete, write or read a list of places."""
    return not any(w.text in _FIND_ACTIONS for w in args)


def _git_escape(text: str) -> bool:
    """Whether ``text`` is, or abbreviates, an option that runs or loads something."""
    option = text.split("=", 1)[0]
    if option.startswith("--"):
        return any(
            full == option or (len(option) > 3 and full.startswith(option)) for full in _GIT_ESCAPES
        )
    return option.startswith("-O") or option == "-c"


def _git_ok(args: Sequence[Word], where: str | None, root: str) -> bool:
    """A read-only sub-command of the project's own repository, nothing more."""
    start = where
    i = 0
    while i < len(args) and args[i].text.startswith("-"):
        t = args[i].text
        if t == "-C" and i + 1 < len(args) and args[i + 1].literal:
            start = os.path.join(start, args[i + 1].text) if start is not None else None
            i += 2
        elif t in _GIT_GLOBALS:
            i += 1
        else:
            return False
    if i >= len(args) or args[i].text not in _GIT_READS:
        return False
    for w in args[i + 1 :]:
        if w.text == "--":
            break
        if not w.literal or _git_escape(w.text):
            return False
    if start is None:
        return False
    return foreign_repository(os.path.realpath(start), root) is None


def _jq_ok(args: Sequence[Word], where: str | None, root: str) -> bool:
    """``jq`` without module search paths, program files or module directives."""
    for w in args:
        t = w.text
        if t.startswith(("--library-path", "--from-file")):
            return False
        if t.startswith("-") and not t.startswith("--") and ("L" in t or "f" in t):
            return False
        if _JQ_LOADS.search(t):
            return False
    return True


def _uniq_ok(args: Sequence[Word], where: str | None, root: str) -> bool:
    """``uniq`` with one input and no output operand (``--`` does not hide one)."""
    canonical = normalise(SPECS["uniq"], args)
    return not isinstance(canonical, str) and len(positional(canonical)) <= 1


def _rg_ok(args: Sequence[Word], where: str | None, root: str) -> bool:
    """``rg`` without preprocessors or decompressors (programs looked up on PATH)."""
    return not any(
        w.text.startswith(("--pre", "--search-zip", "--hostname-bin"))
        or (w.text.startswith("-") and not w.text.startswith("--") and "z" in w.text)
        for w in args
    )


_Check = Callable[[Sequence[Word], str | None, str], bool]
_CHECKS: dict[str, _Check] = {
    "find": _find_ok,
    "git": _git_ok,
    "jq": _jq_ok,
    "uniq": _uniq_ok,
    "rg": _rg_ok,
}


def _changed_directory(args: Sequence[Word], where: str | None) -> str | None:
    """Where ``cd ARGS`` leads, when that is known from its words alone."""
    targets = [w for w in args if w.text != "--"]
    if where is None or len(targets) != 1 or not targets[0].literal:
        return None
    if targets[0].text.startswith("-"):
        return None
    return os.path.join(where, targets[0].text)


def strictly_read_only(
    command: str,
    roots: Sequence[Path],
    path_env: str | None = None,
    *,
    cwd: Path | None = None,
    parsed: ParsedCommand | None = None,
) -> bool:
    """Whether every part of ``command`` is a plain system reader (see module doc).

    ``roots[0]`` is the project root; ``cwd`` (the root by default) is where the
    command starts, which decides the repository a ``git`` there would use.
    ``parsed`` is the policy's parse of the same line, when it has one.
    """
    if parsed is None:
        parsed = parse_command(command)
    # The policy judged the command already; what the parser itself could not vouch
    # for is refused here too. Otherwise only what would run counts, substitutions
    # included.
    if not parsed.commands or parsed.functions or parsed.issues:
        return False
    resolved_roots = [Path(os.path.realpath(r)) for r in roots]
    root = str(resolved_roots[0]) if resolved_roots else "/"
    where: str | None = os.path.realpath(cwd) if cwd is not None else root
    for cmd in parsed.commands:
        if cmd.kind == "bind":
            # A loop variable or an arithmetic assignment runs nothing, unless it
            # steers what later commands run (for PATH in ...).
            if any(variable_target(Word(n), "a loop") for n, _ in cmd.assignments):
                return False
            continue
        if not cmd.argv or cmd.assignments:
            return False
        word = cmd.argv[0]
        name, plain = effective_name(word)
        if not plain or "/" in word.text or name not in STRICT_READERS or name in RUNS_PROGRAMS:
            return False
        args = cmd.argv[1:]
        check = _CHECKS.get(name)
        if check is not None and not check(args, where, root):
            return False
        if name == "cd":
            where = _changed_directory(args, where)
        if name in _BUILTINS:
            continue
        found = shutil.which(
            name, path=path_env if path_env is not None else os.environ.get("PATH", os.defpath)
        )
        if found is None or _inside(Path(os.path.realpath(found)), resolved_roots):
            return False
    return True
