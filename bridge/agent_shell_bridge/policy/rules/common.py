"""Helpers every rule family shares: option words and command names."""

from __future__ import annotations

import re
from collections.abc import Sequence

from ..findings import Context, Finding
from ..shell_parse import SimpleCommand, Word, normalise_name

_PLAIN_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.+:-]*$")


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


def classify_argv(argv: Sequence[Word], ctx: Context, cmd: SimpleCommand) -> Finding:
    """Judge a command found inside another one with the full rules."""
    assert ctx.classify_argv is not None, "classify() sets the hook"
    return ctx.classify_argv(argv, ctx, cmd)
