"""Command names as the rules compare them."""

from __future__ import annotations

import re
import unicodedata

__all__ = ["normalise_name"]

_ZERO_WIDTH_RE = re.compile("[\u200b-\u200f\u2060-\u2064\ufeff\u00ad]")


def normalise_name(name: str) -> str:
    """Fold look-alike spellings of a command name (full-width, zero-width) to ASCII."""
    if name.isascii():
        return name  # NFKC leaves ASCII alone and zero-width characters are not ASCII
    return unicodedata.normalize("NFKC", _ZERO_WIDTH_RE.sub("", name))
