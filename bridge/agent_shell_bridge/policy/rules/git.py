"""Rules for git: read-only sub-commands, configuration queries, pushes."""

from __future__ import annotations

import re
from collections.abc import Sequence

from ..findings import Context, Finding, worst
from ..shell_parse import Word
from .common import _is_option
from .places import _names_protected, _outside_operand, _physical, _reads_outside, _within_roots


def _git(name: str, args: list[Word], ctx: Context) -> Finding:
    i = 0
    findings: list[Finding] = []
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
            real = _physical(args[i + 1], ctx)
            if real is None or _within_roots(real, ctx) is None:
                findings.append(Finding.write("git -C into a directory outside the project"))
            i += 2
        else:
            return Finding.write(f"git {t} can change configuration or run programs")
    if i >= len(args):
        return Finding.read("git help")
    sub = args[i].text
    rest = args[i + 1 :]
    texts = [w.text for w in rest]
    for w in rest:
        t = w.text
        if not w.literal and _is_option(w):
            return Finding.write("git with computed options")
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
            if risky == "--output" and _names_protected(w, ctx):
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
    if sub == "grep" and any(t.startswith("-O") for t in texts):
        return Finding.write("git grep -O opens a pager program")
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
            outside = _reads_outside(f"git {sub}", rest, ctx)
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
            if w.literal and _names_protected(w, ctx):
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


_GIT_CONFIG_HARMLESS = frozenset(
    {
        "--local", "--worktree", "--show-origin", "--show-scope", "--null", "-z",
        "--name-only", "--bool", "--int", "--path", "--bool-or-int", "--no-includes",
    }
)  # fmt: skip


def _git_config(rest: Sequence[Word], ctx: Context) -> Finding:
    """``git config`` queries of the project's own configuration are read-only.

    Another file (``--file``, ``--blob``), the user's or the system's (``--global``,
    ``--system``, which may hold tokens) and every form that sets something ask.
    """
    texts = [w.text for w in rest]
    if not any(t in _GIT_CONFIG_QUERIES for t in texts):
        return Finding.write("git config changes settings")
    operands = 0
    i = 0
    while i < len(rest):
        w = rest[i]
        t = w.text
        i += 1
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
            continue
        if t.startswith("-"):
            return Finding.write(f"git config {t} reads or changes other configuration")
        operands += 1
    if operands > 2:
        return Finding.write("git config with these operands may set a value")
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
