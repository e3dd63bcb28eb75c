"""Which granted commands may run outside the sandbox again: plain git.

A command allowed for the session runs in the sandbox from its second run on,
because what it runs (a Makefile, a script) may have changed since the user's yes.
Inside the sandbox ``.git`` is read-only, so a granted ``git add`` or ``git commit``
would fail there from its second run. Such a command runs outside again when git
runs nothing the agent could have changed without a yes:

- every simple command is the system's ``git`` (found on ``PATH`` outside the
  project), written plainly, with literal words only: no assignments,
  substitutions, functions or redirections;
- its sub-command comes first (no global options: ``-c``, ``--exec-path``,
  ``--git-dir`` and ``-C`` would point git at other code or another repository) and
  is one of a fixed list;
- every option is one that sub-command is known to take harmlessly, spelled in
  full: an allowlist per sub-command, because git takes any unambiguous
  abbreviation of a long option (``--upl=PROG`` is ``--upload-pack=PROG``) and
  short spellings (``clone -u PROG``) of the options that run a program, open an
  editor, run a configured diff driver or recurse into submodules' repositories;
- a remote is named, never given as a URL or path (``ext::`` and local transports
  run programs of their own);
- the repository is the project's own ``.git``: no ``.git`` or bare layout lies
  between the working directory and the project root, so hooks and configuration
  come from the one ``.git`` that the sandbox and the policy keep from the agent;
- and its hooks are there too: no ``core.hooksPath`` leads into the work tree (as
  husky sets up, where the sandboxed agent can write), and the project's
  ``.git/config`` includes no other file.
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ..policy.repository import foreign_repository
from ..policy.rules.common import effective_name
from ..policy.shell_parse import ParsedCommand, Word, parse_command

__all__ = ["runs_outside_when_granted"]


@dataclass(frozen=True, slots=True)
class _Options:
    """What a sub-command may be given: ``flags`` (short letters, long names without
    a value), ``values`` (short letters and long names that take one, attached or as
    the next word) and ``choices`` (long names whose value must be one of a few)."""

    short_flags: str = ""
    short_values: str = ""
    flags: frozenset[str] = frozenset()
    values: frozenset[str] = frozenset()
    choices: Mapping[str, frozenset[str]] = field(default_factory=dict)
    remote_first: bool = False  # the first operand names a remote
    counts: bool = False  # -NUM is a count (log -5)


def _names(text: str) -> frozenset[str]:
    return frozenset(f"--{n}" for n in text.split())


_COMMON = "quiet verbose"
_FETCHING = _names(
    f"{_COMMON} all prune prune-tags tags no-tags dry-run force atomic unshallow"
    " no-recurse-submodules progress no-progress ipv4 ipv6 append keep"
)
_MERGING = _names(
    f"{_COMMON} ff no-ff ff-only squash no-squash no-edit commit no-commit stat no-stat"
    " signoff no-signoff no-verify no-gpg-sign autostash no-autostash abort continue quit"
    " allow-unrelated-histories no-rerere-autoupdate"
)
_LOGGING = _names(
    f"{_COMMON} oneline graph decorate no-decorate all stat shortstat numstat name-only"
    " name-status patch no-patch cached staged no-color no-ext-diff no-textconv follow"
    " reverse first-parent merges no-merges abbrev-commit no-abbrev-commit relative"
    " summary raw minimal histogram patience ignore-all-space ignore-space-change"
    " no-renames find-renames exit-code check full-diff source date-order topo-order"
    " ignore-submodules word-diff no-prefix"
)
_LOGGING_VALUES = _names(
    "max-count skip since after until before author committer grep format pretty date"
    " diff-filter unified src-prefix dst-prefix abbrev"
)

_SUBCOMMANDS: dict[str, _Options] = {
    "add": _Options(
        "AuvfNn", "", _names(f"{_COMMON} all update force intent-to-add dry-run ignore-errors")
    ),
    "branch": _Options(
        "dDmMfarvlqt",
        "u",
        _names(
            f"{_COMMON} delete move force all remotes list show-current track no-track"
            " unset-upstream"
        ),
        _names("set-upstream-to contains no-contains merged no-merged points-at sort format"),
    ),
    "checkout": _Options(
        "qftm",
        "bB",
        _names(f"{_COMMON} force detach ours theirs track no-track merge orphan"),
    ),
    "switch": _Options(
        "qfdt",
        "C",
        _names(f"{_COMMON} force detach track no-track discard-changes merge"),
        _names("create force-create orphan"),
    ),
    "restore": _Options(
        "qSW",
        "s",
        _names(f"{_COMMON} staged worktree ours theirs merge"),
        _names("source"),
    ),
    "commit": _Options(
        "aqvsn",
        "m",
        _names(
            f"{_COMMON} all amend no-edit signoff no-verify allow-empty allow-empty-message"
            " reset-author no-gpg-sign only include no-post-rewrite"
        ),
        _names("message author date fixup squash"),
    ),
    "cherry-pick": _Options(
        "nxs",
        "m",
        _names(f"{_COMMON} no-commit continue abort skip quit ff allow-empty signoff no-edit"),
        _names("mainline"),
    ),
    "revert": _Options(
        "ns",
        "m",
        _names(f"{_COMMON} no-commit continue abort skip quit signoff no-edit"),
        _names("mainline"),
    ),
    "merge": _Options("qvn", "m", _MERGING, _names("message")),
    "mv": _Options("fknv", "", _names(f"{_COMMON} force dry-run")),
    "rm": _Options("rfqn", "", _names(f"{_COMMON} cached force dry-run ignore-unmatch")),
    "reset": _Options("qN", "", _names(f"{_COMMON} soft mixed hard keep merge")),
    "stash": _Options(
        "uakq",
        "m",
        _names(f"{_COMMON} include-untracked all keep-index no-keep-index index staged"),
        _names("message"),
    ),
    "status": _Options(
        "sbvz",
        "u",
        _names(
            f"{_COMMON} short branch long porcelain ignored no-renames show-stash ignore-submodules"
        ),
        _names("untracked-files ignore-submodules"),
        {"--porcelain": frozenset({"v1", "v2"})},
    ),
    "tag": _Options(
        "adlfn",
        "m",
        _names(f"{_COMMON} annotate delete list force no-sign"),
        _names("message contains no-contains merged no-merged points-at sort format"),
    ),
    "fetch": _Options("qvfptP", "", _FETCHING, _names("depth deepen"), remote_first=True),
    "pull": _Options(
        "qvfrtp",
        "",
        _FETCHING | _MERGING | _names("rebase no-rebase"),
        _names("depth"),
        {"--rebase": frozenset({"true", "false", "merges"})},
        remote_first=True,
    ),
    "push": _Options(
        "qvnu",
        "",
        _names(
            f"{_COMMON} set-upstream tags follow-tags dry-run no-verify atomic porcelain"
            " no-recurse-submodules progress"
        ),
        remote_first=True,
    ),
    "diff": _Options("pqsuwbRzM", "U", _LOGGING, _LOGGING_VALUES),
    "log": _Options("pqsuwbRzM", "nU", _LOGGING, _LOGGING_VALUES, counts=True),
    "show": _Options("pqsuwbRzM", "nU", _LOGGING, _LOGGING_VALUES, counts=True),
}
_REMOTE_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]*$")
_HOOKS_PATH = re.compile(rb"^\s*hookspath\s*=\s*(.*?)\s*$", re.IGNORECASE | re.MULTILINE)
_INCLUDE = re.compile(rb"^\s*\[\s*include", re.IGNORECASE | re.MULTILINE)
_MAX_CONFIG_BYTES = 1 << 20
_COUNT = re.compile(r"^-[0-9]+$")


def _short_ok(spec: _Options, text: str, following: Word | None) -> int | None:
    """How many words a short cluster such as ``-am`` takes (1 or 2), or ``None``."""
    for pos, letter in enumerate(text[1:], start=1):
        if letter in spec.short_values:
            return 1 if text[pos + 1 :] else (2 if following is not None else None)
        if letter not in spec.short_flags:
            return None
    return 1


def _long_ok(spec: _Options, text: str, following: Word | None) -> int | None:
    """How many words a long option takes (1 or 2), or ``None`` if it is not allowed."""
    option, eq, value = text.partition("=")
    if option in spec.choices and eq:
        return 1 if value in spec.choices[option] else None
    if option in spec.flags and not eq:
        return 1
    if option in spec.values:
        return 1 if eq else (2 if following is not None else None)
    return None


def _arguments_ok(spec: _Options, args: Sequence[Word]) -> bool:
    """Every option allowed for the sub-command, spelled in full; a remote by name."""
    operands: list[Word] = []
    i = 0
    while i < len(args):
        w = args[i]
        t = w.text
        following = args[i + 1] if i + 1 < len(args) else None
        if t == "--":
            operands.extend(args[i + 1 :])
            break
        if not t.startswith("-") or t == "-":
            operands.append(w)
            i += 1
            continue
        if spec.counts and _COUNT.match(t):
            i += 1
            continue
        read = _long_ok if t.startswith("--") else _short_ok
        taken = read(spec, t, following)
        if taken is None:
            return False
        i += taken
    named = not operands or _REMOTE_NAME.match(operands[0].text) is not None
    return named or not spec.remote_first


def runs_outside_when_granted(
    command: str,
    cwd: Path,
    root: Path,
    parsed: ParsedCommand | None = None,
    path_env: str | None = None,
) -> bool:
    """Whether a granted ``command`` in ``cwd`` runs outside the sandbox (see module
    doc); ``parsed`` is the policy's parse of the same line, when it has one."""
    if parsed is None:
        parsed = parse_command(command)
    if not parsed.commands or parsed.issues or parsed.functions or parsed.redirects:
        return False
    real_root = Path(os.path.realpath(root))
    for cmd in parsed.commands:
        if cmd.assignments or cmd.redirects or cmd.in_substitution or len(cmd.argv) < 2:
            return False
        if not all(word.literal and not word.glob for word in cmd.argv):
            return False
        name, plain = effective_name(cmd.argv[0])
        if not plain or name != "git" or "/" in cmd.argv[0].text:
            return False
        spec = _SUBCOMMANDS.get(cmd.argv[1].text)
        if spec is None or not _arguments_ok(spec, cmd.argv[2:]):
            return False
    found = shutil.which("git", path=path_env if path_env is not None else os.environ.get("PATH"))
    if found is None:
        return False
    real_git = Path(os.path.realpath(found))
    if real_git == real_root or real_root in real_git.parents:
        return False
    return _repository_is_the_root(Path(os.path.realpath(cwd)), real_root)


def _repository_is_the_root(cwd: Path, root: Path) -> bool:
    """git in ``cwd`` would use ``root``'s own ``.git``, and ``root`` has one."""
    if not os.path.lexists(root / ".git"):
        return False
    return foreign_repository(str(cwd), str(root)) is None and _hooks_outside(root)


def _config_files(root: Path) -> list[Path]:
    """The files git reads its configuration from, as git picks them."""
    home = Path.home()
    xdg = Path(os.environ.get("XDG_CONFIG_HOME") or home / ".config")
    files = [root / ".git" / "config"]
    global_file = os.environ.get("GIT_CONFIG_GLOBAL")
    files += [Path(global_file)] if global_file else [home / ".gitconfig", xdg / "git" / "config"]
    if not os.environ.get("GIT_CONFIG_NOSYSTEM"):
        files.append(Path(os.environ.get("GIT_CONFIG_SYSTEM") or "/etc/gitconfig"))
    return files


def _hooks_outside(root: Path) -> bool:
    """Whether no configuration puts hooks (or more configuration) in the work tree.

    A relative ``core.hooksPath`` is taken from the work tree's top, so any relative
    one, or an absolute one inside the project, means hooks the agent could write.
    """
    for n, path in enumerate(_config_files(root)):
        try:
            with path.open("rb") as fh:
                data = fh.read(_MAX_CONFIG_BYTES)
        except OSError:
            continue
        if n == 0 and _INCLUDE.search(data):
            return False
        for m in _HOOKS_PATH.finditer(data):
            value = m.group(1).strip(b"\"'").decode("utf-8", "replace")
            hooks = Path(os.path.expanduser(value))
            if not hooks.is_absolute():
                return False
            real = Path(os.path.realpath(hooks))
            if real == root or root in real.parents:
                return False
    return True
