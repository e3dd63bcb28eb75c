"""Helpers every rule family shares: option words and command names."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from ..findings import Context, Finding
from ..shell_parse import SimpleCommand, Word, normalise_name

_PLAIN_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.+:-]*$")

# Other names of programs that have rules, each given its program's rules: other awk
# implementations, and the GNU tools as installed next to BSD ones (the "g" prefix).
PROGRAM_ALIASES: dict[str, str] = {
    **dict.fromkeys(("gawk", "mawk", "nawk", "original-awk", "onetrue-awk"), "awk"),
    **{
        "g" + name: name
        for name in (
            "sed", "grep", "egrep", "fgrep", "find", "xargs", "sort", "uniq", "tee", "cp",
            "mv", "install", "ln", "dd", "split", "csplit", "head", "tail", "cat", "wc",
            "cut", "tr", "ls", "stat", "du", "df", "date", "readlink", "realpath",
            "basename", "dirname", "md5sum", "sha1sum", "sha256sum", "sha512sum", "base64",
            "tac", "nl", "od", "fold", "paste", "join", "comm", "seq", "expr", "printf",
            "echo", "env", "nice", "nohup", "timeout", "stdbuf", "chroot", "rm", "rmdir",
            "shred", "chmod", "chown", "chgrp", "touch", "mkdir", "truncate",
        )
    },
}  # fmt: skip
# Multi-call binaries: "busybox APPLET ARGS" runs APPLET with ARGS.
MULTI_CALL = frozenset({"busybox", "toybox"})


def _is_option(word: Word) -> bool:
    return word.text.startswith("-") and word.text != "-"


def effective_name(word: Word) -> tuple[str, bool]:
    """Return the name rules should use and whether it was written plainly."""
    raw = word.text
    folded = normalise_name(raw)
    base = folded.rsplit("/", 1)[-1] if "/" in folded and not folded.endswith("/") else folded
    plain = (
        word.literal
        and not word.quoted
        and raw == folded
        and (_PLAIN_NAME.match(raw) is not None or raw in ("[", "[["))
    )
    return base.lower() if not plain else base, plain


def program_name(argv: Sequence[Word]) -> tuple[str, bool, int]:
    """The program whose rules apply to ``argv``, whether it was written plainly, and
    how many words name it (2 for ``busybox awk``: the rest are its arguments)."""
    name, plain = effective_name(argv[0])
    name = PROGRAM_ALIASES.get(name, name)
    if name in MULTI_CALL and len(argv) > 1 and not _is_option(argv[1]):
        applet, applet_plain = effective_name(argv[1])
        return PROGRAM_ALIASES.get(applet, applet), plain and applet_plain, 2
    return name, plain, 1


def operands(args: Sequence[Word]) -> list[Word]:
    """The positional operands of raw ``args`` as getopt sees them: every word after
    ``--`` counts, even one that looks like an option."""
    out: list[Word] = []
    for i, w in enumerate(args):
        if w.text == "--":
            return out + list(args[i + 1 :])
        if not _is_option(w):
            out.append(w)
    return out


def classify_argv(argv: Sequence[Word], ctx: Context, cmd: SimpleCommand) -> Finding:
    """Judge a command found inside another one with the full rules."""
    assert ctx.classify_argv is not None, "classify() sets the hook"
    return ctx.classify_argv(argv, ctx, cmd)


# A family's judgement of one program: its name, its words, the context.
Rule = Callable[[str, list[Word], Context], Finding]
