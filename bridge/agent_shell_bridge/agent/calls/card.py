"""What a client shows of one call: its capped output and its diff with both texts.

A client builds a call's card from what the last update carries. The output is the
text the tool produced (a command's output, the lines read, the matches found), cut
to a head and a tail with the count of lines left out, small enough to keep in the
session's history so a resumed session shows the same card. A diff item carries the
unified diff our own client shows, and the old and new text other clients diff
themselves: the whole file when it is small, else the changed region.
"""

from __future__ import annotations

import difflib

from ...tools.outputs import clip_lines
from ...tools.results import ToolResult
from ...types import JSONObject

__all__ = ["CARD_HEAD_LINES", "CARD_TAIL_LINES", "card_output", "diff_item", "region"]

CARD_HEAD_LINES = 60
CARD_TAIL_LINES = 20
# A card is read, not searched: the action log keeps the whole output.
CARD_MAX_CHARS = 16_000
# Up to this size (old and new together) a diff item carries the whole file.
WHOLE_FILE_CHARS = 24_000
CONTEXT_LINES = 3


def _result_text(result: ToolResult) -> str | None:
    payload = result.payload
    if result.log_text:
        return result.log_text
    if isinstance(payload.get("text"), str):
        return str(payload["text"])
    entries = payload.get("entries")
    if isinstance(entries, list):
        return "\n".join(str(e) for e in entries) or "(empty)"
    matches = payload.get("matches")
    if isinstance(matches, list):
        lines = [
            f"{m.get('path')}:{m.get('line')}: {m.get('text')}"
            for m in matches
            if isinstance(m, dict)
        ]
        return "\n".join(lines) or "no matches"
    if isinstance(payload.get("report"), str):
        return str(payload["report"])
    return None


def card_output(result: ToolResult) -> JSONObject | None:
    """The output a card shows: ``{"text", "lines", "omitted"}``, or None when there is none."""
    text = _result_text(result)
    if text is None or not text.strip():
        return None
    clipped = clip_lines(text, head=CARD_HEAD_LINES, tail=CARD_TAIL_LINES)
    shown = clipped.text
    if len(shown) > CARD_MAX_CHARS:
        half = CARD_MAX_CHARS // 2
        cut = len(shown) - 2 * half
        shown = f"{shown[:half]}\n[... {cut} characters omitted ...]\n{shown[-half:]}"
    return {"text": shown, "lines": clipped.total_lines, "omitted": clipped.omitted_lines}


def region(old: str, new: str, context: int = CONTEXT_LINES) -> tuple[str, str, int, int]:
    """The changed part of ``old`` → ``new`` with ``context`` lines around it, the
    1-based line of ``new`` where that part starts, and the first changed line."""
    a = old.splitlines(keepends=True)
    b = new.splitlines(keepends=True)
    opcodes = difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes()
    changed = [op for op in opcodes if op[0] != "equal"]
    if not changed:
        return "", "", 1, 1
    first, last = changed[0], changed[-1]
    a0, b0 = max(first[1] - context, 0), max(first[3] - context, 0)
    a1, b1 = min(last[2] + context, len(a)), min(last[4] + context, len(b))
    return "".join(a[a0:a1]), "".join(b[b0:b1]), b0 + 1, first[3] + 1


def diff_item(display: str, diff: str, texts: tuple[str | None, str] | None) -> JSONObject:
    """A diff content item: the unified ``diff`` and, when ``texts`` (old, new) are
    known, ``oldText``/``newText`` (old None for a new file) and the first changed line.

    ``regionLine`` says the texts are a region of the file starting at that line.
    """
    item: JSONObject = {"type": "diff", "path": display, "diff": diff}
    if texts is None:
        return item
    old, new = texts
    if old is None:
        item.update(oldText=None, newText=new, line=1)
        return item
    old_part, new_part, start, line = region(old, new)
    if len(old) + len(new) <= WHOLE_FILE_CHARS:
        item.update(oldText=old, newText=new, line=line)
    else:
        item.update(oldText=old_part, newText=new_part, line=line, regionLine=start)
    return item
