"""The log file's one writer: entries placed under their parent's subtree, appended
with ``fsync``, rewritten atomically when placed out of order or updated.
"""

from __future__ import annotations

import logging
import os
import re
import tempfile
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
)

__all__ = [
    "OrgLogWriter",
    "log_path_for",
]


logger = logging.getLogger(__name__)


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
            changes["properties"] = merge_properties(
                merge_properties({}, node.entry.properties), upd.properties
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
