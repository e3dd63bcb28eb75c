"""Rules for git: read-only sub-commands, configuration queries, pushes."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from types import MappingProxyType

from ..findings import Context, Finding, worst
from ..repository import foreign_repository
from ..shell_words import Word
from .common import Rule, _is_option
from .places import (
    _glob_matches,
    _GlobRefused,
    _outside_operand,
    _path_text,
    _physical_text,
    names_protected,
    reads_outside,
)


def _git(name: str, args: list[Word], ctx: Context) -> Finding:
    """git's global options, the repository it would use, then the sub-command."""
    i = 0
    start = str(ctx.cwd) if ctx.cwd is not None else None
    while i < len(args) and _is_option(args[i]):
        t = args[i].text
        if t in (
            "--no-pager",
            "-P",
            "--no-optional-locks",
            "--literal-pathspecs",
            "--no-replace-objects",
        ):
            i += 1
        elif t == "-C" and i + 1 < len(args):
            target = args[i + 1]
            # ~/x is known; anything else computed is not.
            expanded = target.text if target.literal else _path_text(target, ctx)
            if expanded is None:
                return Finding.write("git -C with a computed directory")
            if start is not None and expanded:
                start = os.path.join(start, expanded)  # an absolute one replaces it
            i += 2
        else:
            return Finding.write(f"git {t} can change configuration or run programs")
    if i >= len(args):
        return Finding.read("git help")
    sub = args[i].text
    result = _git_subcommand(sub, args[i + 1 :], ctx)
    elsewhere = None if sub in ("version", "help") else _other_repository(start, ctx)
    return result if elsewhere is None else worst([result, elsewhere])


def _git_subcommand(sub: str, rest: list[Word], ctx: Context) -> Finding:
    findings: list[Finding] = []
    texts = [w.text for w in rest]
    pathspecs = False
    for w in rest:
        t = w.text
        pathspecs = pathspecs or t == "--"
        if not w.literal and _is_option(w):
            return Finding.write("git with computed options")
        if not pathspecs and w.glob and not w.expansion and not w.substitution:
            planted = _option_named_match(w, ctx)
            if planted is not None:
                return Finding.write(f"git {sub} {t!r} {planted}")
        option = t.split("=", 1)[0]
        risky = next(
            (
                r
                for r in _GIT_RISKY_OPTIONS
                if t.startswith(r) or (len(option) >= 4 and r.startswith(option))
            ),
            None,
        )
        if risky is not None:
            if risky == "--output" and names_protected(w, ctx):
                return Finding.danger(f"git {sub} {t} writes into .git or the agent's records")
            return Finding.write(f"git {sub} {option} can write files or run programs")
    if sub == "push":
        return _git_push(texts)
    read_subs = {
        "status", "diff", "log", "show", "rev-parse", "ls-files", "ls-tree", "blame",
        "describe", "shortlog", "reflog", "cat-file", "rev-list", "name-rev", "merge-base",
        "for-each-ref", "show-ref", "count-objects", "check-ignore", "version", "whatchanged",
        "grep", "annotate", "show-branch", "var", "cherry",
    }  # fmt: skip
    hidden = _git_file_options(sub, rest, ctx)
    if hidden is not None:
        return hidden
    if sub == "var" and "-l" in texts:
        return Finding.write(
            "git var -l lists the user's and the system's configuration, which may hold credentials"
        )
    if sub == "reflog" and texts[:1] and texts[0] in ("expire", "delete"):
        return Finding.write("git reflog expire/delete rewrites history")
    if sub in read_subs:
        findings.append(Finding.read(f"git {sub} is read-only"))
        # git diff compares files outside the work tree even without --no-index
        # when a path points there; git grep --no-index searches anywhere.
        if (
            sub == "diff"
            or (sub == "grep" and "--no-index" in texts)
            or sub in ("blame", "annotate")
        ):
            outside = reads_outside(f"git {sub}", rest, ctx)
            if outside is not None:
                findings.append(outside)
    elif sub in ("branch", "tag"):
        listing = {
            "-l",
            "--list",
            "-a",
            "--all",
            "-r",
            "--remotes",
            "--contains",
            "--no-contains",
            "--merged",
            "--no-merged",
            "--points-at",
            "--show-current",
            "-v",
            "-vv",
            "--verbose",
        }
        writes = {
            "-d",
            "-D",
            "--delete",
            "-m",
            "-M",
            "--move",
            "-c",
            "-C",
            "--copy",
            "-u",
            "--set-upstream-to",
            "--unset-upstream",
            "--edit-description",
            "-f",
            "--force",
            "-a",
            "-s",
            "-F",
            "--annotate",
            "--sign",
        }
        if sub == "branch":
            writes -= {"-a"}
        if any(t in writes or t.startswith("--set-upstream-to=") for t in texts):
            return Finding.write(f"git {sub} changes refs")
        # git accepts abbreviations (--dele is --delete): any other option asks.
        unknown = [
            t
            for t in texts
            if t.startswith("-") and t not in listing and not t.startswith(_GIT_LISTING_PREFIXES)
        ]
        if unknown:
            return Finding.write(f"git {sub} {unknown[0]} is not known to only list refs")
        if any(not t.startswith("-") for t in texts) and not any(
            t in listing or t.startswith("--format") or t.startswith("--sort") for t in texts
        ):
            return Finding.write(f"git {sub} NAME creates a ref")
        findings.append(Finding.read(f"git {sub} lists refs"))
    elif sub == "remote" and (
        not texts
        or texts in (["-v"], ["--verbose"], ["show"])
        or texts[:1] == ["get-url"]
        or texts[:2] == ["show", "-n"]
    ):
        findings.append(Finding.read("git remote lists remotes"))
    elif sub == "remote" and texts[:1] == ["show"]:
        return Finding.write("git remote show NAME contacts the remote (network)")
    elif sub == "stash" and texts[:1] in (["list"], ["show"]):
        findings.append(Finding.read("git stash list/show"))
    elif sub == "worktree" and texts[:1] == ["list"]:
        findings.append(Finding.read("git worktree list"))
    elif sub == "config":
        findings.append(_git_config(rest, ctx))
    elif sub in ("fetch", "pull", "ls-remote", "clone", "remote-https"):
        findings.append(Finding.write(f"git {sub} contacts a remote (network)"))
    else:
        findings.append(Finding.write(f"git {sub} changes the repository or its remotes"))
        # Git maintains .git itself; a file it is told to write there is another matter
        # (git archive -o .git/hooks/pre-commit, git format-patch -o .git/hooks).
        for w in rest:
            if w.literal and names_protected(w, ctx):
                return Finding.danger(f"git {sub} names {w.text!r}: .git or the agent's records")
    return worst(findings)


_GIT_RISKY_OPTIONS = (
    "--output",
    "--exec",
    "--upload-pack",
    "--receive-pack",
    "--ext-diff",
    "--open-files-in-pager",
    "--config-env",
    "--textconv",
)


_GIT_LISTING_PREFIXES = (
    "--format",
    "--sort",
    "--contains=",
    "--no-contains=",
    "--merged=",
    "--no-merged=",
    "--points-at=",
    "--color",
    "--no-color",
    "--column",
    "--no-column",
    "--abbrev",
    "--no-abbrev",
    "--ignore-case",
    "-i",
    "-n",
    "--omit-empty",
)
_GIT_CONFIG_QUERIES = frozenset({"--get", "--get-all", "--get-regexp", "--list", "-l"})


# Reads of one file of the project's: its .git/config, its worktree's, or a file named.
_GIT_CONFIG_SCOPES = frozenset({"--local", "--worktree"})


_GIT_CONFIG_HARMLESS = frozenset(
    {
        "--show-origin", "--show-scope", "--null", "-z",
        "--name-only", "--bool", "--int", "--path", "--bool-or-int", "--no-includes",
    }
)  # fmt: skip


def _git_config(rest: Sequence[Word], ctx: Context) -> Finding:
    """``git config`` queries of the project's own configuration are read-only.

    Only a query scoped to one file of the project's is: ``--local``, ``--worktree``
    or ``--file`` naming a file inside it. Without a scope git reads the user's and
    the system's files too (``sendemail.smtppass``, credential helpers' settings);
    ``--global``, ``--system``, ``--blob`` and every form that sets something ask.
    """
    texts = [w.text for w in rest]
    if not any(t in _GIT_CONFIG_QUERIES for t in texts):
        return Finding.write("git config changes settings")
    operands = 0
    scoped = False
    i = 0
    while i < len(rest):
        w = rest[i]
        t = w.text
        i += 1
        if t in _GIT_CONFIG_SCOPES:
            scoped = True
            continue
        if t in _GIT_CONFIG_QUERIES or t in _GIT_CONFIG_HARMLESS:
            continue
        if t.startswith(("--type=", "--default=")):
            continue
        if t in ("-f", "--file") or t.startswith("--file="):
            target = Word(t.split("=", 1)[1], literal=w.literal) if "=" in t else None
            if target is None:
                if i >= len(rest):
                    return Finding.write("git config --file without a file")
                target = rest[i]
                i += 1
            outside = _outside_operand("git config --file", target, ctx)
            if outside is not None:
                return outside
            scoped = True
            continue
        if t.startswith("-"):
            return Finding.write(f"git config {t} reads or changes other configuration")
        operands += 1
    if operands > 2:
        return Finding.write("git config with these operands may set a value")
    if not scoped:
        return Finding.write(
            "git config without --local also reads the user's and the system's "
            "configuration, which may hold credentials"
        )
    return Finding.read("git config query of the project's settings")


def _git_push(texts: list[str]) -> Finding:
    for t in texts:
        if t in (
            "--force",
            "--force-with-lease",
            "--force-if-includes",
            "--mirror",
            "--delete",
            "--prune",
        ) or t.startswith(("--force-with-lease=", "--force-if-includes=")):
            return Finding.danger(f"git push {t} rewrites or deletes remote history")
        if re.match(r"^-[a-zA-Z]*[fd][a-zA-Z]*$", t):
            return Finding.danger(f"git push {t} forces or deletes remote refs")
        if not t.startswith("-") and (
            t.startswith("+")
            or (":" in t and t.split(":", 1)[0] == "" and not t.startswith(("http", "git@", "ssh")))
        ):
            return Finding.danger(f"git push {t} forces or deletes a remote ref")
        if ":+" in t or t.startswith(":"):
            return Finding.danger(f"git push {t} forces or deletes a remote ref")
    return Finding.write("git push publishes commits")


def _other_repository(start: str | None, ctx: Context) -> Finding | None:
    """A finding when git would not use the project root's own ``.git`` (see
    :mod:`..repository`): its configuration and hooks are the only ones kept from
    the agent."""
    if start is None:
        return Finding.write("git runs in a directory not known in advance")
    root = ctx.roots_text[0]
    real = start if start == root else _physical_text(Word(start), ctx)  # the root is real
    if real is None:
        return Finding.write(f"git would start in {start}, which cannot be resolved")
    reason = foreign_repository(real, root)
    return Finding.write(reason) if reason is not None else None


# Per read-only sub-command: short options whose value is a file git reads, and the
# long ones (git takes any unambiguous abbreviation of those).
_GIT_FILE_OPTIONS: dict[str, tuple[str, tuple[str, ...]]] = {
    "grep": ("f", ("--file",)),
    "blame": ("S", ("--contents", "--ignore-revs-file")),
    "annotate": ("S", ("--contents", "--ignore-revs-file")),
    "ls-files": ("X", ("--exclude-from", "--exclude-per-directory")),
}
# Short options of those sub-commands that take a value (so later letters are not options).
_GIT_SHORT_VALUES: dict[str, str] = {"grep": "eABCmO", "blame": "LCM", "annotate": "LCM"}


def _git_file_options(sub: str, rest: Sequence[Word], ctx: Context) -> Finding | None:
    """Files named by options (``git grep -f FILE``) are reads like any operand, and
    ``git grep -O`` opens a pager program, in whatever cluster it is spelled."""
    letters, longs = _GIT_FILE_OPTIONS.get(sub, ("", ()))
    values = _GIT_SHORT_VALUES.get(sub, "")
    i = 0
    while i < len(rest):
        w = rest[i]
        t = w.text
        following = rest[i + 1] if i + 1 < len(rest) else None
        i += 1
        if t == "--":
            break
        if not t.startswith("-") or t == "-":
            continue
        named: Word | None = None
        if t.startswith("--"):
            option, eq, value = t.partition("=")
            if sub == "grep" and len(option) > 3 and "--open-files-in-pager".startswith(option):
                return Finding.write("git grep --open-files-in-pager runs a pager program")
            if any(len(option) > 3 and full.startswith(option) for full in longs):
                named = Word(value, literal=w.literal) if eq else following
                i += 0 if eq else 1
        else:
            for pos, letter in enumerate(t[1:], start=1):
                if sub == "grep" and letter == "O":
                    return Finding.write("git grep -O opens a pager program")
                if letter in letters:
                    attached = t[pos + 1 :]
                    named = Word(attached, literal=w.literal) if attached else following
                    if named is None:
                        return Finding.write(f"git {sub} {t} needs a file name")
                    i += 0 if attached else 1
                    break
                if letter in values:
                    i += 0 if t[pos + 1 :] else 1
                    break
        if named is None:
            continue
        outside = _outside_operand(f"git {sub} {t.split('=', 1)[0]}", named, ctx)
        if outside is not None:
            return outside
    return None


def _option_named_match(word: Word, ctx: Context) -> str | None:
    """Why a glob before ``--`` may hand git an option (a planted ``--output=x``)."""
    try:
        matches = _glob_matches(word, ctx)
    except _GlobRefused as exc:
        return str(exc)
    named = next((m.name for m in matches if m.name.startswith("-")), None)
    return None if named is None else f"matches {named!r}, read as an option"


# The programs this family judges, by name (the dispatcher merges the families).
RULES: Mapping[str, Rule] = MappingProxyType({"git": _git})
