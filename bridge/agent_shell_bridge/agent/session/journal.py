"""A session's checkpoint as a snapshot plus an append-only journal of its steps.

Why a journal of JSON lines and not SQLite: what a step changes is a few messages at
the end of the conversation and a handful of small fields. A JSON line holding just
that is written once, with one ``fsync``; an SQLite transaction would write whole
pages twice (journal or WAL, then the database) and the messages would need a schema
of their own while the snapshot stays the ``<id>.json`` that older bridges wrote and
read -- so existing checkpoints resume unchanged (a snapshot without a journal is
simply a checkpoint with no steps since).

Files, under ``<root>/.agent-shell/sessions/``:

* ``<id>.json`` -- the snapshot: ``SessionState.to_json()`` plus ``journal_seq``, the
  last journal line it already holds (0 or absent: none);
* ``<id>.journal.jsonl`` -- one line per saved step:
  ``{"seq": n, "set": {field: value, ...}, "lists": {"messages": [at, [items]]}}``.
  ``set`` replaces small fields; a list entry cuts the list to ``at`` items and
  appends ``items``.  Lines are applied in order, skipping those the snapshot holds;
  a torn last line (a kill in the middle of a write) is ignored.

Compaction writes a new snapshot (temporary file, ``fsync``, ``rename``) once the
journal outgrows twice the snapshot, then empties the journal; a kill between the two
leaves lines the snapshot's ``journal_seq`` already covers.

Finding what changed costs no serialising: the conversation replaces a message with a
new object rather than editing it (see ``agent/conversation/messages.py``), so the
lists are compared by identity against the objects saved last.  The small fields are
encoded on the caller's thread (they are small, and the loop may change them the next
moment); the new list items -- the bulk -- are encoded, and everything written, on a
worker thread.
"""

from __future__ import annotations

import json
import logging
import os
import tempfile
from collections.abc import Iterator
from dataclasses import asdict, dataclass, fields, is_dataclass
from pathlib import Path
from typing import Any

from ...types import JSONObject

__all__ = ["Delta", "SessionJournal", "apply_journal", "journal_path"]

log = logging.getLogger(__name__)

LISTS = ("messages", "visible")
# Compact when the journal passes this many times the snapshot (and this floor).
COMPACT_FACTOR = 2
COMPACT_FLOOR = 256 * 1024


def journal_path(snapshot: Path) -> Path:
    return snapshot.with_name(snapshot.name.removesuffix(".json") + ".journal.jsonl")


def _small_fields(state: Any) -> tuple[str, ...]:
    return tuple(f.name for f in fields(state) if f.name not in LISTS)


def _plain(value: Any) -> Any:
    """A dataclass inside a field (the totals of each model) as its dict."""
    if is_dataclass(value) and not isinstance(value, type):
        return asdict(value)
    raise TypeError(f"cannot journal a {type(value).__name__}")


def _encode_small(state: Any, name: str) -> str:
    return json.dumps(getattr(state, name), ensure_ascii=False, default=_plain)


@dataclass
class Delta:
    """What one save writes: changed small fields (encoded) and list tails (objects)."""

    small: dict[str, str]
    lists: dict[str, tuple[int, list[JSONObject]]]
    # The whole state, when this save writes a snapshot instead of a journal line.
    full_lists: dict[str, list[JSONObject]] | None = None


def _line(seq: int, delta: Delta) -> bytes:
    small = ", ".join(f"{json.dumps(k)}: {v}" for k, v in delta.small.items())
    lists = ", ".join(
        f"{json.dumps(k)}: [{at}, {json.dumps(items, ensure_ascii=False)}]"
        for k, (at, items) in delta.lists.items()
    )
    return f'{{"seq": {seq}, "set": {{{small}}}, "lists": {{{lists}}}}}\n'.encode()


def _snapshot(seq: int, small: dict[str, str], lists: dict[str, list[JSONObject]]) -> bytes:
    parts = [f"{json.dumps(k)}: {v}" for k, v in small.items()]
    parts += [f"{json.dumps(k)}: {json.dumps(v, ensure_ascii=False)}" for k, v in lists.items()]
    parts.append(f'"journal_seq": {seq}')
    return ("{" + ", ".join(parts) + "}").encode()


def _fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_atomic(path: Path, data: bytes) -> None:
    """Replace PATH with DATA: temporary file, ``fsync``, ``rename``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.stem}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    _fsync_dir(path.parent)


def _journal_lines(path: Path) -> Iterator[tuple[int, JSONObject]]:
    """The journal's complete lines with their end offsets; stops at a torn one."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return
    offset = 0
    for raw in data.splitlines(keepends=True):
        if not raw.endswith(b"\n"):
            return
        try:
            line = json.loads(raw)
        except ValueError:
            return
        if not isinstance(line, dict):
            return
        offset += len(raw)
        yield offset, line


def apply_journal(data: JSONObject, journal: Path) -> tuple[JSONObject, int, int]:
    """DATA (a snapshot) with JOURNAL's steps applied; also the last seq and the
    length of the journal's valid part."""
    seq = int(data.get("journal_seq") or 0)
    valid = 0
    out = dict(data)
    for offset, line in _journal_lines(journal):
        valid = offset
        line_seq = int(line.get("seq", 0))
        if line_seq <= seq:
            continue
        seq = line_seq
        for key, value in (line.get("set") or {}).items():
            out[key] = value
        for key, (at, items) in (line.get("lists") or {}).items():
            out[key] = [*list(out.get(key) or [])[: int(at)], *items]
    return out, seq, valid


class SessionJournal:
    """Saves one live session's steps; one writer, its calls serialised by the caller.

    STATE is the session's ``SessionState`` (a dataclass whose ``messages`` and
    ``visible`` lists are the long ones); ``on_disk`` says it was loaded from SNAPSHOT.
    """

    def __init__(self, snapshot: Path, state: Any, *, on_disk: bool) -> None:
        self.snapshot = snapshot
        self.journal = journal_path(snapshot)
        self._names = _small_fields(state)
        # The baseline: what is on disk now (a loaded state) or nothing (a new one).
        self._saved_small: dict[str, str] = {}
        self._saved_lists: dict[str, list[JSONObject]] = {k: [] for k in LISTS}
        self._seq, self._journal_bytes, self._snapshot_bytes, found = self._scan()
        # Without a baseline the first save is a whole snapshot.
        self._has_snapshot = found and on_disk
        if self._has_snapshot:
            self._saved_small = {n: _encode_small(state, n) for n in self._names}
            self._saved_lists = {k: list(getattr(state, k)) for k in LISTS}

    def _scan(self) -> tuple[int, int, int, bool]:
        """Where the files stand: the last seq, the journal's valid length, the
        snapshot's size, whether there is one. A torn journal line is cut off."""
        try:
            raw = self.snapshot.read_bytes()
            data: Any = json.loads(raw)
        except (OSError, ValueError):
            return 0, 0, 0, False
        if not isinstance(data, dict):
            return 0, 0, 0, False
        _, seq, valid = apply_journal(data, self.journal)
        try:
            if self.journal.stat().st_size > valid:  # a torn line from a kill
                os.truncate(self.journal, valid)
        except FileNotFoundError:
            pass
        return seq, valid, len(raw), True

    def delta(self, state: Any) -> Delta | None:
        """What changed since the last save (None: nothing but ``updated``); call it on
        the loop, then :meth:`write` the result before the next call."""
        small: dict[str, str] = {}
        for name in self._names:
            encoded = _encode_small(state, name)
            if self._saved_small.get(name) != encoded:
                small[name] = encoded
        lists: dict[str, tuple[int, list[JSONObject]]] = {}
        current = {k: list(getattr(state, k)) for k in LISTS}
        for key, items in current.items():
            saved = self._saved_lists[key]
            at = 0
            limit = min(len(saved), len(items))
            while at < limit and saved[at] is items[at]:
                at += 1
            if at < len(saved) or at < len(items):
                lists[key] = (at, items[at:])
        if not lists and set(small) <= {"updated"}:
            return None
        self._saved_small.update(small)
        self._saved_lists = current
        delta = Delta(small, lists)
        if not self._has_snapshot or self._journal_bytes > max(
            COMPACT_FLOOR, COMPACT_FACTOR * self._snapshot_bytes
        ):
            delta.full_lists = current
            delta.small = dict(self._saved_small)
        return delta

    def write(self, delta: Delta) -> None:
        """Persist DELTA (blocking: call it off the event loop)."""
        self._seq += 1
        if delta.full_lists is not None:
            data = _snapshot(self._seq, delta.small, delta.full_lists)
            try:
                write_atomic(self.snapshot, data)
            except OSError:
                self._has_snapshot = False
                raise
            self._has_snapshot = True
            self._snapshot_bytes = len(data)
            # The snapshot's journal_seq already covers every line left behind.
            if self._journal_bytes or self.journal.exists():
                os.truncate(self.journal, 0)
            self._journal_bytes = 0
            return
        data = _line(self._seq, delta)
        fd = os.open(self.journal, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            os.fsync(fd)
        except OSError:
            # A short write (a full disk) must not leave a torn line the next one
            # would follow: cut it off, and write a snapshot next time.
            os.ftruncate(fd, self._journal_bytes)
            self._has_snapshot = False
            raise
        finally:
            os.close(fd)
        self._journal_bytes += len(data)
