"""Rendering log entries as org text, the one renderer of both the file and Emacs's
live buffer (see the package's docstring for the rules).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable
from datetime import datetime
from typing import Any, NamedTuple

from ..limits import HEAD_LINES, TAIL_LINES
from .entries import DrawerBlock, LogEntry, LogUpdate, PropertyValue, SrcBlock, TextBlock

__all__ = [
    "HEADER_NO_EVAL",
    "HEADER_TODO",
    "MAX_LINE_CHARS",
    "MAX_TITLE_CHARS",
    "Rendered",
    "entry_params",
    "merge_properties",
    "render_body",
    "render_entry",
    "render_head",
    "render_header",
    "render_note",
    "update_params",
]

logger = logging.getLogger(__name__)

HEADER_TODO = "#+TODO: WAIT | APPROVED REJECTED DONE FAILED"
# The log holds text the model chose (commands, answers): an inline src_lang{…} or
# call_name() in it would run when the log is exported. Nothing in a log is code.
HEADER_NO_EVAL = "#+PROPERTY: header-args :eval never"

#: Caps shared with agent-shell-log.el.
MAX_TITLE_CHARS = 300
MAX_LINE_CHARS = 500

_DAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")
_RESERVED_KEYS = frozenset({"SOURCE", "LOG_ID"})
_ONE_LINE_SPACE = re.compile("[ \t\n\r\v\f\x85\u2028\u2029]+")
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f]")
_TAG_LIKE = re.compile(r"(?:^| ):[\w@#%:]+:$")
_KEY_CHARS = re.compile(r"[^A-Za-z0-9_-]")
_LANG = re.compile(r"[A-Za-z0-9_+-]+")
_UNSAFE_TEXT_LINE = re.compile(r"^[ \t]*[*#:]", re.MULTILINE)
_ESCAPE = re.compile(r"^([ \t]*)(,*(?:\*|#\+))", re.MULTILINE)
_DRAWER_END = re.compile(r"^([ \t]*)(,*:END:[ \t]*)$", re.IGNORECASE)
_BAD_LINK = re.compile("[\\[\\]\x00-\x1f\x7f]")


def _one_line(text: str, cap: int) -> str:
    text = _ONE_LINE_SPACE.sub(" ", text)
    text = _CONTROL.sub("", text).strip(" ")
    if len(text) > cap:
        text = text[:cap] + "…"
    return text


def _clean_title(title: str) -> str:
    text = _one_line(title, MAX_TITLE_CHARS)
    if _TAG_LIKE.search(text):
        text += "\u200b"
    return text


def _org_timestamp(iso: str) -> str:
    parsed = datetime.fromisoformat(iso)
    return parsed.strftime(f"[%Y-%m-%d {_DAYS[parsed.weekday()]} %H:%M]")


def _format_value(value: PropertyValue) -> str:
    if isinstance(value, float):
        return _one_line(repr(value), MAX_TITLE_CHARS)
    return _one_line(str(value), MAX_TITLE_CHARS)


def _clean_key(key: str) -> str:
    return _KEY_CHARS.sub("_", key).upper()


def merge_properties(
    base: dict[str, PropertyValue], extra: dict[str, PropertyValue]
) -> dict[str, PropertyValue]:

    merged = dict(base)
    for key, value in extra.items():
        clean = _clean_key(key)
        if clean and clean not in _RESERVED_KEYS:
            merged[clean] = value
    return merged


def _normalise_text(text: str) -> str:
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    text = _CONTROL.sub("", text)
    return text.removesuffix("\n")


def _bounded_lines(text: str, marked: int = 0) -> tuple[list[str], int]:
    """Split, cap line width and line count; return lines and how many were cut.

    MARKED lines of TEXT are markers of lines cut before (they do not count): text
    clipped once is not clipped again.
    """
    if not text:
        return [], 0
    lines = [
        ln[:MAX_LINE_CHARS] + "…" if len(ln) > MAX_LINE_CHARS else ln for ln in text.split("\n")
    ]
    cut = len(lines) - HEAD_LINES - TAIL_LINES - marked
    if cut > 0:
        lines = [*lines[:HEAD_LINES], f"[… {cut} lines omitted …]", *lines[-TAIL_LINES:]]
        return lines, cut
    return lines, 0


def _escape(lines: list[str]) -> str:
    return "".join(_ESCAPE.sub(r"\1,\2", ln) + "\n" for ln in lines)


def _render_drawer(block: DrawerBlock) -> str:
    """A named drawer holding a title line and a src block; org folds drawers, and no
    line of the text can end the drawer or the block."""
    name = _clean_key(block.name) or "DATA"
    lines, cut = _bounded_lines(_normalise_text(block.text))
    lines = [_DRAWER_END.sub(r"\1,\2", ln) for ln in lines]
    lang = block.lang if _LANG.fullmatch(block.lang) else "text"
    title = _DRAWER_END.sub(r"\1,\2", _one_line(block.title, MAX_TITLE_CHARS))
    out = f":{name}:\n" + (_escape([title]) if title else "")
    out += f"#+begin_src {lang}\n{_escape(lines)}#+end_src\n"
    if cut:
        out += f"({cut} lines omitted)\n"
    return out + ":END:\n"


def _render_block(block: TextBlock | SrcBlock | DrawerBlock) -> str:
    if isinstance(block, DrawerBlock):
        return _render_drawer(block)
    text = _normalise_text(block.text)
    already = isinstance(block, SrcBlock) and block.omitted_lines > 0
    lines, cut = _bounded_lines(text, 1 if already else 0)
    if isinstance(block, TextBlock):
        if not lines:
            return ""
        if _UNSAFE_TEXT_LINE.search("\n".join(lines)):
            return f"#+begin_example\n{_escape(lines)}#+end_example\n"
        return "".join(ln + "\n" for ln in lines)
    lang = block.lang if _LANG.fullmatch(block.lang) else "text"
    out = f"#+begin_src {lang}\n{_escape(lines)}#+end_src\n"
    omitted = block.omitted_lines + cut
    link = block.link if block.link and not _BAD_LINK.search(block.link) else None
    if block.link and link is None:
        logger.warning("dropping an output link that org cannot represent")
    note = f"({omitted} lines omitted)" if omitted else ""
    if link:
        out += f"[[file:{link}][full output]]" + (f" {note}" if note else "") + "\n"
    elif note:
        out += note + "\n"
    return out


def render_body(blocks: Iterable[TextBlock | SrcBlock | DrawerBlock]) -> str:
    """Render body blocks, one blank line between non-empty ones."""
    return "\n".join(r for r in (_render_block(b) for b in blocks) if r)


def render_header(title: str) -> str:
    title = _one_line(title, MAX_TITLE_CHARS)
    return f"#+TITLE: {title}\n#+STARTUP: overview\n{HEADER_TODO}\n{HEADER_NO_EVAL}\n\n"


def render_head(entry: LogEntry, level: int) -> str:
    """The heading line and properties drawer of ENTRY at outline LEVEL."""
    head = "*" * max(1, level) + " "
    if entry.todo:
        head += entry.todo + " "
    head += _org_timestamp(entry.timestamp)
    title = _clean_title(entry.title)
    if title:
        head += " " + title
    props = merge_properties({}, entry.properties)
    drawer = [":PROPERTIES:", f":SOURCE: {entry.source}", f":LOG_ID: {_one_line(entry.id, 200)}"]
    drawer += [f":{k}: {_format_value(v)}".rstrip(" ") for k, v in props.items()]
    drawer.append(":END:")
    return head + "\n" + "\n".join(drawer) + "\n"


def render_note(
    level: int,
    timestamp: str,
    title: str,
    properties: dict[str, PropertyValue],
    *,
    todo: str | None = None,
    body: Iterable[TextBlock | SrcBlock | DrawerBlock] = (),
) -> str:
    """A heading the log file holds besides the entries (an update, a continuation,
    a link to the next file): no ``LOG_ID``, so nothing takes it for an entry."""
    head = "*" * max(1, level) + " " + (f"{todo} " if todo else "") + _org_timestamp(timestamp)
    title = _clean_title(title)
    if title:
        head += " " + title
    props = merge_properties({}, properties)
    drawer = [":PROPERTIES:", ":SOURCE: bridge"]
    drawer += [f":{k}: {_format_value(v)}".rstrip(" ") for k, v in props.items()]
    drawer.append(":END:")
    return head + "\n" + "\n".join(drawer) + "\n" + render_body(body)


def render_entry(entry: LogEntry, level: int) -> str:
    """The org text of one entry (heading, drawer, body) at outline LEVEL."""
    return render_head(entry, level) + render_body(entry.body)


class Rendered(NamedTuple):
    """An entry's text in the file, split where an update may change it."""

    head: str
    body: str


def entry_params(entry: LogEntry, rendered: Rendered) -> dict[str, Any]:
    """The params of ``log/entry``: ENTRY plus ``org``, its text in the file."""
    return {**entry.model_dump(mode="json"), "org": rendered.head + rendered.body}


def update_params(upd: LogUpdate, before: Rendered, after: Rendered) -> dict[str, Any]:
    """The params of ``log/update``: UPD plus the text it changed in the file.

    ``org_head`` (the new heading line and drawer) is there when they changed;
    ``org_body_append`` (what now follows the old body, with the blank line between
    blocks) when the body grew.  Old head + old body became new head + old body +
    appended text: the live buffer stays equal to the entry in the file.
    """
    params = upd.model_dump(mode="json", exclude_none=True)
    if after.head != before.head:
        params["org_head"] = after.head
    if after.body != before.body:
        if not after.body.startswith(before.body):
            raise ValueError(f"log entry {upd.id!r}: an update may only append to the body")
        params["org_body_append"] = after.body[len(before.body) :]
    return params
