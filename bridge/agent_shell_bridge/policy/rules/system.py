"""Rules for file-system and process tools: find, cd, rm, chmod, dd, kill."""

from __future__ import annotations

import re
from collections.abc import Mapping
from types import MappingProxyType

from ...types import Risk
from ..findings import Context, Finding, worst
from ..options import _fixed_prefix
from ..shell_words import SimpleCommand, Word
from .common import Rule, _is_option, classify_argv
from .places import _physical, _within_roots, locate

RM_NAMES = frozenset({"rm", "shred", "unlink", "rmdir", "srm"})


DEVICE_TOOLS_RE = re.compile(
    r"^(mkfs(\..+)?|mke2fs|mkswap|wipefs|fdisk|sfdisk|cfdisk|parted|gdisk|sgdisk|mkdosfs|blkdiscard"
    r"|mdadm|cryptsetup|shutdown|reboot|halt|poweroff|init|telinit|systemctl|kexec)$"
)


def _find(name: str, args: list[Word], ctx: Context) -> Finding:
    starts: list[Word] = []
    i = 0
    while i < len(args) and not args[i].text.startswith(("-", "(", "!")):
        if not args[i].literal and not _fixed_prefix(args[i]):
            # "$x" may be -delete or -exec: find reads it as an expression.
            return Finding.write(f"find with a computed starting point {args[i].text!r}")
        starts.append(args[i])
        i += 1
    wide = False
    for s in starts or [Word(".")]:
        where, path = locate(s, ctx)
        if where in ("wide", "outside", "unknown", "protected") and path not in (
            ctx.root,
            *ctx.extra,
        ):
            wide = True
    findings: list[Finding] = []
    exprs = args[i:]
    j = 0
    while j < len(exprs):
        w = exprs[j]
        t = w.text
        if not w.literal and not w.quoted:
            findings.append(Finding.write("find with unquoted computed arguments"))
        if t in ("-exec", "-execdir", "-ok", "-okdir"):
            k = j + 1
            inner: list[Word] = []
            while k < len(exprs) and exprs[k].text not in (";", "+"):
                inner.append(exprs[k])
                k += 1
            findings.append(Finding.write(f"find {t} runs a command on each match"))
            if inner:
                inner = [
                    Word(w.text, literal=False, expansion=True) if w.text == "{}" else w
                    for w in inner
                ]
                sub = classify_argv(inner, ctx, SimpleCommand(argv=inner))
                findings.append(sub)
                if wide and sub.risk is not Risk.READ:
                    findings.append(
                        Finding.danger(
                            f"find {t} over a wide tree with a command that changes files"
                        )
                    )
            j = k + 1
            continue
        if t == "-delete":
            findings.append(
                Finding.danger("find -delete over a wide or outside tree")
                if wide
                else Finding.write("find -delete removes files")
            )
        elif t in ("-fprint", "-fprint0", "-fprintf", "-fls"):
            findings.append(Finding.write(f"find {t} writes a file"))
        elif t == "-files0-from":
            findings.append(Finding.write("find -files0-from takes where to look from a file"))
        j += 1
    return worst(findings) if findings else Finding.read("find without actions is read-only")


def _cd(name: str, args: list[Word], ctx: Context) -> Finding:
    targets = [w for w in args if not _is_option(w)]
    if not targets:
        ctx.cwd = None
        return Finding.write(f"{name} leaves the project")
    if targets[0].text == "-":
        ctx.cwd = None
        return Finding.write(f"{name} - goes to $OLDPWD, which is not known in advance")
    where, path = locate(targets[0], ctx)
    if name in ("pushd", "popd") or path is None:
        ctx.cwd = None
        return Finding.write(f"{name} to an unknown directory")
    real = _physical(targets[0], ctx)
    ctx.cwd = path
    if where in ("inside", "protected", "wide") and real is not None and _within_roots(real, ctx):
        return Finding.read(f"{name} within the project")
    return Finding.write(f"{name} leaves the project")


def rm_rule(name: str, args: list[Word], ctx: Context) -> Finding:
    recursive = False
    targets: list[Word] = []
    options_done = False
    for w in args:
        t = w.text
        if not options_done and t == "--":
            options_done = True
            continue
        if not options_done and _is_option(w):
            if t == "--no-preserve-root":
                return Finding.danger(f"{name} --no-preserve-root")
            if t in ("--recursive", "-R", "-r") or (
                not t.startswith("--") and set(t[1:]) & {"r", "R"}
            ):
                recursive = True
            continue
        targets.append(w)
    if name == "shred":
        recursive = True
    findings = [Finding.write(f"{name} removes files")]
    for w in targets:
        if w.glob and w.literal is False and not w.expansion and not w.substitution:
            head, _, base = w.text.rpartition("/")
            dir_word = Word(head or ("/" if w.text.startswith("/") else "."))
            where, dir_path = locate(dir_word, ctx)
            at_root = dir_path in (ctx.root, *ctx.extra)
            starts_wild = re.match(r"^\.?[*?\[]", base) is not None
            if (where not in ("inside", "temp") and not at_root) or (
                recursive and starts_wild and at_root
            ):
                findings.append(Finding.danger(f"{name} {w.text} matches a wide set of files"))
            continue
        where, path = locate(w, ctx)
        if where == "unknown" and recursive:
            findings.append(Finding.danger(f"{name} -r on a computed target {w.text!r}"))
        elif where == "unknown":
            findings.append(Finding.write(f"{name} of a computed target"))
        elif where == "wide":
            findings.append(
                Finding.danger(f"{name} of {w.text!r} would remove a wide tree ({path})")
            )
        elif where == "protected":
            findings.append(
                Finding.danger(f"{name} of {w.text!r} touches .git or the agent's own settings")
            )
        elif where == "outside":
            findings.append(Finding.danger(f"{name} of {w.text!r} reaches outside the project"))
    return worst(findings)


def _chmod(name: str, args: list[Word], ctx: Context) -> Finding:
    recursive = any(
        w.text in ("-R", "--recursive")
        or (w.text.startswith("-") and not w.text.startswith("--") and "R" in w.text)
        for w in args
    )
    positional = [w for w in args if not _is_option(w) or re.match(r"^-[rwxXst]+$", w.text)]
    targets = (
        positional[1:] if not any(w.text.startswith("--reference") for w in args) else positional
    )
    findings = [Finding.write(f"{name} changes permissions or ownership")]
    for w in targets:
        where, _ = locate(w, ctx)
        if where in ("wide", "outside") or (where == "unknown" and recursive):
            findings.append(
                Finding.danger(
                    f"{name} {'-R ' if recursive else ''}on {w.text!r} reaches beyond the project"
                )
            )
    return worst(findings)


def _dd(name: str, args: list[Word], ctx: Context) -> Finding:
    for w in args:
        if w.text.startswith("of="):
            target = w.text[3:]
            if target.startswith("/dev/") and target not in (
                "/dev/null",
                "/dev/stdout",
                "/dev/stderr",
            ):
                return Finding.danger("dd onto a device")
            if not w.literal:
                return Finding.danger("dd onto a computed target")
            reason = ctx.write_check(target, ctx.cwd or ctx.root)
            if reason is not None:
                return Finding.danger(f"dd writes {target}: {reason}")
    return Finding.write("dd copies raw data")


def _kill(name: str, args: list[Word], ctx: Context) -> Finding:
    if args and args[-1].text in ("-1", "1"):
        return Finding.danger(f"{name} {args[-1].text} signals every process")
    return Finding.write(f"{name} signals processes")


# The programs this family judges, by name (the dispatcher merges the families).
RULES: Mapping[str, Rule] = MappingProxyType(
    {
        "find": _find,
        "cd": _cd,
        "pushd": _cd,
        "popd": _cd,
        "chmod": _chmod,
        "chown": _chmod,
        "chgrp": _chmod,
        "dd": _dd,
        "kill": _kill,
        "pkill": _kill,
        "killall": _kill,
    }
)
