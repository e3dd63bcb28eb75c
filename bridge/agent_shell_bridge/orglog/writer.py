"""The org-mode action log: the wire models and the bridge-side file writer.

The bridge is the only writer of ``<root>/.agent-shell/logs/<stamp>-<session>.org``.
It is also the only renderer: the ``log/entry`` / ``log/update`` notifications carry
the org text of the entry exactly as written to the file (``org``, ``org_head``,
``org_body_append``; see :func:`entry_params` and :func:`update_params`), and
``agent-shell-log.el`` inserts that text into the live buffer as is.
``tests/fixtures/orglog`` pins the rendering byte for byte.

Rendering rules:

* Header ``#+TITLE``, ``#+STARTUP: overview``, ``#+TODO: WAIT | APPROVED REJECTED
  DONE FAILED`` and a blank line.
* Heading ``<stars> [TODO ]<[YYYY-MM-DD Day HH:MM]> <title>``: the timestamp sits
  before the title so no title can pose as a TODO keyword, ``COMMENT`` or priority.
  Titles are collapsed to one line, stripped of control characters, capped, and a
  trailing ``:word:`` gets a zero-width space so org does not read it as tags.
* A properties drawer right after the heading: ``SOURCE``, ``LOG_ID``, then the
  entry's properties (keys reduced to ``[A-Z0-9_-]``, values to one line).
* Body blocks separated by one blank line.  ``src`` blocks are capped (200 head +
  100 tail lines, 500 characters a line) with org's comma escaping, followed by a
  ``[[file:…][full output]]`` link and the omitted-line count.  Text blocks are
  plain paragraphs unless a line could start org syntax (``*``, ``#``, ``:``), in
  which case they become an escaped example block.  Nothing in an entry can fake a
  heading, close a block or end the drawer.

A step is placed after the last entry of its parent's subtree, so steps stay under
their task even when tasks interleave.  Appending is one ``write`` followed by
``fsync``; an out-of-order insertion or an update rewrites the file atomically
(temporary file, ``fsync``, ``rename``), so a killed bridge leaves a valid file.
"""

from __future__ import annotations

import logging
import os
import re
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Annotated, Any, Literal, NamedTuple

from pydantic import BaseModel, ConfigDict, Field, field_validator

from ..limits import HEAD_LINES, TAIL_LINES
from ..model.types import UsageCounts
from ..types import Prices

__all__ = [
    "HEADER_NO_EVAL",
    "HEADER_TODO",
    "LogEntry",
    "LogUpdate",
    "OrgLogWriter",
    "Prices",
    "Rendered",
    "SrcBlock",
    "TaskUsage",
    "TextBlock",
    "TodoState",
    "entry_params",
    "log_path_for",
    "render_body",
    "render_entry",
    "render_head",
    "render_header",
    "summary_drawer_entry",
    "update_params",
]

logger = logging.getLogger(__name__)

TodoState = Literal["WAIT", "APPROVED", "REJECTED", "DONE", "FAILED"]
Source = Literal["model", "tool", "user", "memory", "bridge", "role"]
PropertyValue = str | int | float

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
_BAD_LINK = re.compile("[\\[\\]\x00-\x1f\x7f]")


# ---------------------------------------------------------------------------
# Wire models


class TextBlock(BaseModel):
    model_config = ConfigDict(extra="forbid")

    kind: Literal["text"] = "text"
    text: str


class SrcBlock(BaseModel):
    model_config = ConfigDict(extra="forbid")

    kind: Literal["src"] = "src"
    lang: str = "text"
    text: str
    link: str | None = None
    omitted_lines: int = Field(default=0, ge=0)


Block = Annotated[TextBlock | SrcBlock, Field(discriminator="kind")]


def _coerce_properties(value: Any) -> Any:
    """Booleans are not in the contract; render them the way JSON spells them."""
    if isinstance(value, dict):
        return {
            k: (("true" if v else "false") if isinstance(v, bool) else v) for k, v in value.items()
        }
    return value


class LogEntry(BaseModel):
    """One heading of the action log; also the params of ``log/entry``."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(min_length=1)
    session_id: str
    parent_id: str | None = None
    todo: TodoState | None = None
    title: str
    timestamp: str
    source: Source
    properties: dict[str, PropertyValue] = Field(default_factory=dict)
    body: list[Block] = Field(default_factory=list)

    @field_validator("timestamp")
    @classmethod
    def _iso_with_offset(cls, value: str) -> str:
        try:
            parsed = datetime.fromisoformat(value)
        except ValueError as exc:
            raise ValueError(f"not an ISO-8601 timestamp: {value!r}") from exc
        if parsed.tzinfo is None:
            raise ValueError("timestamp needs a UTC offset")
        return value

    @field_validator("properties", mode="before")
    @classmethod
    def _no_bools(cls, value: Any) -> Any:
        return _coerce_properties(value)


class LogUpdate(BaseModel):
    """A change to an existing entry; the params of ``log/update``."""

    model_config = ConfigDict(extra="forbid")

    session_id: str
    id: str
    todo: TodoState | None = None
    properties: dict[str, PropertyValue] | None = None
    body_append: list[Block] | None = None

    @field_validator("properties", mode="before")
    @classmethod
    def _no_bools(cls, value: Any) -> Any:
        return _coerce_properties(value)


# ---------------------------------------------------------------------------
# Rendering


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


def _merge_properties(
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


def _bounded_lines(text: str) -> tuple[list[str], int]:
    """Split, cap line width and line count; return lines and how many were cut."""
    if not text:
        return [], 0
    lines = [
        ln[:MAX_LINE_CHARS] + "…" if len(ln) > MAX_LINE_CHARS else ln for ln in text.split("\n")
    ]
    cut = len(lines) - HEAD_LINES - TAIL_LINES
    if cut > 0:
        lines = [*lines[:HEAD_LINES], f"[… {cut} lines omitted …]", *lines[-TAIL_LINES:]]
        return lines, cut
    return lines, 0


def _escape(lines: list[str]) -> str:
    return "".join(_ESCAPE.sub(r"\1,\2", ln) + "\n" for ln in lines)


def _render_block(block: TextBlock | SrcBlock) -> str:
    text = _normalise_text(block.text)
    lines, cut = _bounded_lines(text)
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


def render_body(blocks: Iterable[TextBlock | SrcBlock]) -> str:
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
    props = _merge_properties({}, entry.properties)
    drawer = [":PROPERTIES:", f":SOURCE: {entry.source}", f":LOG_ID: {_one_line(entry.id, 200)}"]
    drawer += [f":{k}: {_format_value(v)}".rstrip(" ") for k, v in props.items()]
    drawer.append(":END:")
    return head + "\n" + "\n".join(drawer) + "\n"


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


# ---------------------------------------------------------------------------
# Writer


def log_path_for(root: Path, session_id: str, started: datetime) -> Path:
    """``<root>/.agent-shell/logs/<YYYY-MM-DD-HHMMSS>-<session>.org``."""
    safe = re.sub(r"[^A-Za-z0-9_.-]", "_", session_id).lstrip(".") or "session"
    return root / ".agent-shell" / "logs" / f"{started:%Y-%m-%d-%H%M%S}-{safe}.org"


@dataclass(slots=True)
class _Node:
    entry: LogEntry
    level: int
    text: str
    last_descendant: str


@dataclass(slots=True)
class _State:
    order: list[str] = field(default_factory=list)
    nodes: dict[str, _Node] = field(default_factory=dict)


class OrgLogWriter:
    """Writes one session's action log; every call leaves a complete org file.

    Calls block on disk I/O (``fsync``); async callers run them in a thread.  A file
    that already exists (a resumed session) is kept as a prefix and only appended to.
    """

    def __init__(self, path: Path, *, title: str) -> None:
        self._path = path
        self._state = _State()
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.exists() and path.stat().st_size > 0:
            self._prefix = path.read_text(encoding="utf-8")
            if not self._prefix.endswith("\n"):
                self._prefix += "\n"
                self._append_raw("\n")
        else:
            self._prefix = render_header(title)
            self._rewrite()

    @property
    def path(self) -> Path:
        return self._path

    def add(self, entry: LogEntry) -> None:
        """Place ENTRY after its parent's subtree (or at the end) and persist it."""
        state = self._state
        if entry.id in state.nodes:
            raise ValueError(f"duplicate log entry id {entry.id!r}")
        parent = state.nodes.get(entry.parent_id) if entry.parent_id else None
        if entry.parent_id and parent is None:
            logger.warning("log entry %s names unknown parent %s", entry.id, entry.parent_id)
        level = parent.level + 1 if parent else 1
        node = _Node(entry, level, render_entry(entry, level), entry.id)
        if parent is None:
            index = len(state.order)
        else:
            after = parent.last_descendant
            index = state.order.index(after) + 1
            # Ancestors whose subtree ended where the entry went now end with it.
            ancestor: _Node | None = parent
            while ancestor is not None and ancestor.last_descendant == after:
                ancestor.last_descendant = entry.id
                pid = ancestor.entry.parent_id
                ancestor = state.nodes.get(pid) if pid else None
        state.nodes[entry.id] = node
        state.order.insert(index, entry.id)
        if index == len(state.order) - 1:
            self._append_raw(node.text)
        else:
            self._rewrite()

    def update(self, upd: LogUpdate) -> LogEntry:
        """Apply UPD to its entry, rewrite the file atomically, return the new entry."""
        node = self._state.nodes.get(upd.id)
        if node is None:
            raise KeyError(upd.id)
        changes: dict[str, Any] = {}
        if upd.todo is not None:
            changes["todo"] = upd.todo
        if upd.properties:
            changes["properties"] = _merge_properties(
                _merge_properties({}, node.entry.properties), upd.properties
            )
        if upd.body_append:
            changes["body"] = [*node.entry.body, *upd.body_append]
        node.entry = node.entry.model_copy(update=changes)
        node.text = render_entry(node.entry, node.level)
        self._rewrite()
        return node.entry

    def rendered(self, entry_id: str) -> Rendered:
        """ENTRY_ID's text in the file, as head and body; KeyError when unknown."""
        node = self._state.nodes[entry_id]
        return Rendered(render_head(node.entry, node.level), render_body(node.entry.body))

    def entries(self) -> list[LogEntry]:
        """The entries in document order."""
        return [self._state.nodes[i].entry for i in self._state.order]

    def render(self) -> str:
        return self._prefix + "".join(self._state.nodes[i].text for i in self._state.order)

    def _append_raw(self, text: str) -> None:
        data = text.encode("utf-8")
        fd = os.open(self._path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            view = memoryview(data)
            while view:
                written = os.write(fd, view)
                view = view[written:]
            os.fsync(fd)
        finally:
            os.close(fd)

    def _rewrite(self) -> None:
        directory = self._path.parent
        fd, tmp = tempfile.mkstemp(prefix=f".{self._path.name}.", suffix=".tmp", dir=directory)
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(self.render().encode("utf-8"))
                handle.flush()
                os.fsync(handle.fileno())
            os.chmod(tmp, 0o644)
            os.replace(tmp, self._path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        dir_fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)


# ---------------------------------------------------------------------------
# End-of-task summary


@dataclass(slots=True)
class TaskUsage(UsageCounts):
    """What one task consumed (the API's reported usage) and how long it took."""

    duration_ms: int = 0

    @classmethod
    def of(cls, counts: UsageCounts, duration_ms: int) -> TaskUsage:
        c = counts
        return cls(
            c.model_calls,
            c.tool_calls,
            c.input_tokens,
            c.output_tokens,
            c.cached_tokens,
            duration_ms,
        )


def _duration_text(ms: int) -> str:
    seconds = ms // 1000
    if seconds < 60:
        return f"{ms / 1000:.1f}s"
    minutes, seconds = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes}m{seconds:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m"


def summary_drawer_entry(
    *,
    entry_id: str,
    session_id: str,
    task_id: str,
    usage: TaskUsage,
    timestamp: datetime,
    prices: Prices | None = None,
    model: str | None = None,
    by_role: dict[str, UsageCounts] | None = None,
) -> LogEntry:
    """The step closing a task: usage in the drawer, a one-line account as title.

    ``by_role`` splits the usage between the lead and the roles it ran; each gets
    ``TOKENS_<ROLE>`` and, with prices, ``COST_<ROLE>`` (they add up to the total).
    """
    props: dict[str, PropertyValue] = {
        "MODEL_CALLS": usage.model_calls,
        "TOOL_CALLS": usage.tool_calls,
        "TOKENS_IN": usage.input_tokens,
        "TOKENS_OUT": usage.output_tokens,
        "TOKENS_CACHED": usage.cached_tokens,
        "DURATION_MS": usage.duration_ms,
    }
    if model:
        props["MODEL"] = model
    title = (
        f"Summary: {usage.model_calls} model calls, {usage.tool_calls} tool calls, "
        f"{usage.input_tokens} in / {usage.output_tokens} out tokens "
        f"({usage.cached_tokens} cached), {_duration_text(usage.duration_ms)}"
    )
    if prices is not None:
        cost = usage.cost_at(prices)
        props["COST"] = cost
        props["CURRENCY"] = prices.currency
        title += f", cost {cost:.4f} {prices.currency}"
    for name, part in (by_role or {}).items():
        key = name.upper().replace("-", "_")
        props[f"TOKENS_{key}"] = part.total_tokens
        if prices is not None:
            props[f"COST_{key}"] = part.cost_at(prices)
    return LogEntry(
        id=entry_id,
        session_id=session_id,
        parent_id=task_id,
        todo=None,
        title=title,
        timestamp=timestamp.isoformat(timespec="seconds"),
        source="bridge",
        properties=props,
    )
