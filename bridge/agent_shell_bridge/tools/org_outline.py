"""The headings of an org file's text: what ``org_search`` answers without Emacs."""

from __future__ import annotations

import re

from ..types import JSONObject

__all__ = ["MAX_HEADINGS", "org_headings"]

MAX_HEADINGS = 300
_HEADING = re.compile(r"^(\*+)\s+(.*)$")


def org_headings(text: str, query: str | None) -> list[JSONObject]:
    """Each heading's level, title and line, those whose title holds QUERY
    (case-insensitively) when given; at most MAX_HEADINGS."""
    headings: list[JSONObject] = []
    needle = query.casefold() if query else None
    for number, line in enumerate(text.splitlines(), 1):
        m = _HEADING.match(line)
        if m and (needle is None or needle in m.group(2).casefold()):
            headings.append({"level": len(m.group(1)), "title": m.group(2), "line": number})
            if len(headings) >= MAX_HEADINGS:
                break
    return headings
