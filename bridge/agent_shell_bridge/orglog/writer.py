"""The log file's one writer: append-only, one ``write`` and ``fsync`` per call.

Nothing already in the file is rewritten, so each call writes what it adds:

* An entry goes at the end, under its parent. When the parent's subtree is no longer
  the end of the file (tasks interleaved, or the file rotated), a *continuation*
  heading of the parent (``… (continued)``, ``CONTINUES`` naming its id) is written
  first at the parent's level, so the entry is still below its parent in the outline.
* An update that only adds to the body of the entry at the end of the file is
  appended to that body: the file then holds the entry as the live buffer shows it.
  Any other update (a new TODO state, new properties) is appended as an *update*
  heading one level below its entry (``↳ title``, ``LOG_UPDATE`` naming the entry,
  the new state as its TODO keyword, the changed properties, the added body).
* Before the file would pass ``limit`` bytes, the log goes on in ``<name>-2.org``
  (then ``-3`` …): the old file ends with a heading linking the new one, and the new
  one starts with a heading linking back. :attr:`OrgLogWriter.path` is the file in use.
* A writer opened on an existing file (a resumed session) first cuts off a torn last
  line and closes a drawer or block left open, then appends; a *Session resumed*
  heading goes in before its first entry, so a resume that runs no turn leaves the
  file as it was.

``kill -9`` cannot split one ``write`` to a regular file, so the file always ends
after a whole call's text: valid org with every drawer and block closed.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from .entries import LogEntry, LogUpdate
from .render import (
    Rendered,
    merge_properties,
    render_body,
    render_entry,
    render_head,
    render_header,
    render_note,
)

__all__ = [
    "DEFAULT_LIMIT",
    "OrgLogWriter",
    "log_path_for",
    "repair_tail",
]


logger = logging.getLogger(__name__)

#: Emacs asks before it opens a file over 10 MB (``large-file-warning-threshold``).
DEFAULT_LIMIT = 9 * 1024 * 1024

_HEADING = re.compile(rb"^\*+ ", re.MULTILINE)
_BEGIN = re.compile(rb"^[ \t]*#\+begin_(\S+)", re.IGNORECASE)
_END = re.compile(rb"^[ \t]*#\+end_(\S+)", re.IGNORECASE)
_SAFE = re.compile(r"[^A-Za-z0-9_.-]")


def log_path_for(root: Path, session_id: str, started: datetime) -> Path:
    """``<root>/.agent-shell/logs/<YYYY-MM-DD-HHMMSS>-<session>.org``."""
    safe = _SAFE.sub("_", session_id).lstrip(".") or "session"
    return root / ".agent-shell" / "logs" / f"{started:%Y-%m-%d-%H%M%S}-{safe}.org"


def _part_of(path: Path, session_id: str) -> tuple[str, int]:
    """PATH's base name (without ``-N``) and its part number (1 for the first file)."""
    stem = path.stem
    safe = _SAFE.sub("_", session_id).lstrip(".") or "session"
    match = re.fullmatch(rf"(.*{re.escape(safe)})-([0-9]+)", stem) if session_id else None
    if match is None:
        return stem, 1
    return match.group(1), int(match.group(2))


def repair_tail(data: bytes) -> tuple[int, bytes]:
    """How to make DATA (a log's bytes) end whole: the length to keep, the text to add.

    A torn last line is cut off; a properties drawer or block the last heading left
    open is closed.
    """
    keep = len(data) if data.endswith(b"\n") or not data else data.rfind(b"\n") + 1
    start = 0
    for match in _HEADING.finditer(data, 0, keep):
        start = match.start()
    drawer = False
    block: bytes | None = None
    for line in data[start:keep].splitlines():
        stripped = line.strip()
        if block is not None:
            end = _END.match(line)
            if end and end.group(1).lower() == block.lower():
                block = None
        elif stripped == b":PROPERTIES:":
            drawer = True
        elif stripped == b":END:":
            drawer = False
        elif (begin := _BEGIN.match(line)) is not None:
            block = begin.group(1)
    add = b""
    if block is not None:
        add += b"#+end_" + block + b"\n"
    if drawer:
        add += b":END:\n"
    return keep, add


@dataclass(slots=True)
class _Node:
    entry: LogEntry
    level: int


@dataclass(slots=True)
class _Place:
    """Where the end of the file is in the outline."""

    # Entries whose subtree the file currently ends in, outermost first.
    open: list[str] = field(default_factory=list)
    # The entry whose own body ends the file (a body-only update goes straight in).
    tail: str | None = None


class OrgLogWriter:
    """Writes one session's action log; every call leaves a complete org file.

    Calls block on disk I/O (``fsync``); async callers run them in a thread.
    """

    def __init__(
        self,
        path: Path,
        *,
        title: str,
        session_id: str = "",
        resumed: bool = False,
        limit: int = DEFAULT_LIMIT,
        clock: Callable[[], datetime] | None = None,
    ) -> None:
        self._path = path
        self._clock = clock or (lambda: datetime.now().astimezone())
        self._title = title
        self._session_id = session_id
        self._limit = limit
        self._nodes: dict[str, _Node] = {}
        self._order: list[str] = []
        self._place = _Place()
        self._base, self._part = _part_of(path, session_id)
        path.parent.mkdir(parents=True, exist_ok=True)
        self._size = 0
        self._resume_note = False
        if path.exists() and path.stat().st_size > 0:
            self._reopen_file()
            self._resume_note = resumed
        else:
            self._write(render_header(title))
        # A file holding no more than this has nothing to rotate away from.
        self._header_size = self._size if not self._resume_note else 0

    @property
    def path(self) -> Path:
        """The file the log is written to now (it changes when the log rotates)."""
        return self._path

    def add(self, entry: LogEntry) -> None:
        """Append ENTRY under its parent and persist it."""
        if entry.id in self._nodes:
            raise ValueError(f"duplicate log entry id {entry.id!r}")
        parent = self._nodes.get(entry.parent_id) if entry.parent_id else None
        if entry.parent_id and parent is None:
            logger.warning("log entry %s names unknown parent %s", entry.id, entry.parent_id)
        level = parent.level + 1 if parent else 1
        self._nodes[entry.id] = _Node(entry, level)
        self._order.append(entry.id)
        pid = entry.parent_id if parent else None
        self._append(lambda: self._under(pid) + render_entry(entry, level))
        self._place.open.append(entry.id)
        self._place.tail = entry.id

    def update(self, upd: LogUpdate) -> LogEntry:
        """Apply UPD to its entry, append what changed, return the new entry."""
        node = self._nodes.get(upd.id)
        if node is None:
            raise KeyError(upd.id)
        before = node.entry
        changes: dict[str, Any] = {}
        if upd.todo is not None:
            changes["todo"] = upd.todo
        if upd.properties:
            changes["properties"] = merge_properties(
                merge_properties({}, before.properties), upd.properties
            )
        if upd.body_append:
            changes["body"] = [*before.body, *upd.body_append]
        node.entry = before.model_copy(update=changes)
        old_body = render_body(before.body)
        added = render_body(node.entry.body)[len(old_body) :]
        head_same = render_head(before, node.level) == render_head(node.entry, node.level)
        if head_same and not added:
            return node.entry
        if head_same and self._place.tail == upd.id:
            self._append(lambda: added)
            return node.entry
        props = merge_properties({}, upd.properties or {})
        stamp = self._stamp()

        def note() -> str:
            return self._under(upd.id) + render_note(
                node.level + 1,
                stamp,
                "↳ " + node.entry.title,
                {"LOG_UPDATE": upd.id, **props},
                todo=upd.todo,
                body=upd.body_append or (),
            )

        self._append(note)
        self._place.tail = None
        return node.entry

    def rendered(self, entry_id: str) -> Rendered:
        """ENTRY_ID's current text, as head and body; KeyError when unknown."""
        node = self._nodes[entry_id]
        return Rendered(render_head(node.entry, node.level), render_body(node.entry.body))

    def entries(self) -> list[LogEntry]:
        """The entries in outline order (each after its parent's earlier steps)."""
        return [self._nodes[i].entry for i in self._outline()]

    def render(self) -> str:
        """The log as the live buffer shows it: a header, then each entry in its
        current state, in outline order (the file holds the same as a history)."""
        return render_header(self._title) + "".join(
            render_entry(self._nodes[i].entry, self._nodes[i].level) for i in self._outline()
        )

    def _outline(self) -> list[str]:
        children: dict[str | None, list[str]] = {}
        for eid in self._order:
            pid = self._nodes[eid].entry.parent_id
            children.setdefault(pid if pid in self._nodes else None, []).append(eid)
        out: list[str] = []
        stack = list(reversed(children.get(None, [])))
        while stack:
            eid = stack.pop()
            out.append(eid)
            stack.extend(reversed(children.get(eid, [])))
        return out

    # -- placing -------------------------------------------------------------------

    def _under(self, parent_id: str | None) -> str:
        """Text that makes the end of the file lie in PARENT_ID's subtree (continuation
        headings where it does not), and the outline position updated to match."""
        place = self._place
        if parent_id is None:
            place.open = []
            return ""
        if parent_id in place.open:
            del place.open[place.open.index(parent_id) + 1 :]
            return ""
        node = self._nodes[parent_id]
        pid = node.entry.parent_id if node.entry.parent_id in self._nodes else None
        text = self._under(pid)
        stamp = self._stamp()
        text += render_note(
            node.level, stamp, f"{node.entry.title} (continued)", {"CONTINUES": parent_id}
        )
        place.open.append(parent_id)
        place.tail = None
        return text

    def _stamp(self) -> str:
        return self._clock().isoformat(timespec="seconds")

    # -- the file --------------------------------------------------------------------

    def _append(self, compose: Callable[[], str]) -> None:
        """Write the text COMPOSE() makes; rotate first when it would pass the limit.

        COMPOSE is called again after a rotation: the new file needs its own
        continuation headings.
        """
        saved = (list(self._place.open), self._place.tail)
        text = self._resume_text() + compose()
        data = text.encode("utf-8")
        try:
            if self._size + len(data) > self._limit and self._size > self._header_size:
                self._place.open, self._place.tail = saved
                self._rotate()
                data = compose().encode("utf-8")
            self._write_bytes(data)
        except OSError:
            self._place.open, self._place.tail = saved
            raise
        self._resume_note = False

    def _resume_text(self) -> str:
        if not self._resume_note:
            return ""
        stamp = self._stamp()
        return render_note(1, stamp, "Session resumed", {"RESUMED": self._session_id or "t"})

    def _next_path(self) -> Path:
        """The next part's file; one a rotation cut short by a kill left is skipped."""
        part = self._part + 1
        while (path := self._path.with_name(f"{self._base}-{part}.org")).exists():
            part += 1
        return path

    def _rotate(self) -> None:
        new = self._next_path()
        stamp = self._stamp()
        link = render_note(
            1, stamp, f"The log goes on in [[file:{new.name}][{new.name}]]", {"NEXT_LOG": new.name}
        )
        self._write_bytes(link.encode("utf-8"))
        old = self._path
        self._path, self._part, self._size = new, _part_of(new, self._session_id)[1], 0
        self._place = _Place()
        back = render_note(
            1, stamp, f"Continued from [[file:{old.name}][{old.name}]]", {"PREVIOUS_LOG": old.name}
        )
        self._write(render_header(f"{self._title} (part {self._part})") + back)
        self._header_size = self._size

    def _reopen_file(self) -> None:
        data = self._path.read_bytes()
        keep, add = repair_tail(data)
        if keep < len(data):
            os.truncate(self._path, keep)
        self._size = keep
        if add:
            self._write_bytes(add)

    def _write(self, text: str) -> None:
        self._write_bytes(text.encode("utf-8"))

    def _write_bytes(self, data: bytes) -> None:
        fd = os.open(self._path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            os.fsync(fd)
        except OSError:
            os.ftruncate(fd, self._size)  # a short write must not leave half a heading
            raise
        finally:
            os.close(fd)
        self._size += len(data)
