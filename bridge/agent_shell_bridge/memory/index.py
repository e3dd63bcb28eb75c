"""The cross-project SQLite index of experience files.

The files are the truth; this index is a cache that can be thrown away.  It lives at
``memory_dir/index.sqlite3`` and remembers which project roots it has seen, both in
its ``roots`` table and in ``memory_dir/roots.json`` (written atomically), so that a
missing or damaged database is rebuilt from the files without losing anything.

Everything here is synchronous and serialised by a lock; async callers wrap calls in
``asyncio.to_thread``.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import re
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import sqlite_utils

from ..errors import MemoryError_
from .experience import MEMORY_SUBDIR, clamp_text, parse_experience
from .files import atomic_write_bytes
from .frontmatter import split_front_matter
from .hit import MemoryHit
from .migrations import apply_migrations
from .query import QueryPlan, fts_string, like_pattern, plan_query
from .ranking import score_candidates

__all__ = ["MemoryHit", "MemoryIndex", "SyncStats"]

log = logging.getLogger(__name__)

DB_NAME = "index.sqlite3"
ROOTS_NAME = "roots.json"
MAX_FILE_BYTES = 1 << 20  # an experience is a page of notes; skip anything huge
RACY_WINDOW_NS = 2_000_000_000  # re-hash files modified this close to their indexing
CANDIDATES = 200
_BM25 = "bm25(experiences_fts, 4.0, 3.0, 3.0, 2.0, 1.0)"
_DATE_PREFIX = re.compile(r"^(\d{4}-\d{2}-\d{2})--(.*)$")

T = TypeVar("T")


@dataclass
class SyncStats:
    """What a sync or rebuild changed."""

    added: int = 0
    updated: int = 0
    removed: int = 0
    unchanged: int = 0
    skipped: int = 0
    roots: list[str] = field(default_factory=list)

    def merge(self, other: SyncStats) -> None:
        self.added += other.added
        self.updated += other.updated
        self.removed += other.removed
        self.unchanged += other.unchanged
        self.skipped += other.skipped
        self.roots.extend(r for r in other.roots if r not in self.roots)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _is_corruption(exc: sqlite3.Error) -> bool:
    """True for a damaged file, False for transient trouble such as a held lock."""
    if not isinstance(exc, sqlite3.DatabaseError):
        return False
    msg = str(exc).lower()
    if any(w in msg for w in ("locked", "busy", "readonly", "read-only", "unable to open")):
        return False
    return isinstance(exc, sqlite3.DatabaseError) and (
        type(exc) is sqlite3.DatabaseError
        or "malformed" in msg
        or "not a database" in msg
        or "corrupt" in msg
        or "disk image" in msg
    )


class MemoryIndex:
    """SQLite FTS5 index over experience files from any number of project roots."""

    def __init__(self, memory_dir: Path) -> None:
        self.memory_dir = Path(memory_dir)
        self.db_path = self.memory_dir / DB_NAME
        self.roots_path = self.memory_dir / ROOTS_NAME
        self._lock = threading.RLock()
        self._conn: sqlite3.Connection | None = None
        self._db: Any = None

    # ----------------------------------------------------------------- lifecycle

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                with contextlib.suppress(sqlite3.Error):
                    self._conn.close()
            self._conn = None
            self._db = None

    def __enter__(self) -> MemoryIndex:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _connect(self) -> sqlite3.Connection:
        conn = sqlite3.connect(
            self.db_path, timeout=10.0, isolation_level=None, check_same_thread=False
        )
        try:
            conn.execute("PRAGMA busy_timeout = 10000")
            (check,) = conn.execute("PRAGMA quick_check").fetchone()
            if check != "ok":
                raise sqlite3.DatabaseError(f"quick_check: {check}")
            conn.execute("PRAGMA journal_mode = WAL")
            conn.execute("PRAGMA synchronous = NORMAL")
            apply_migrations(conn)
        except BaseException:
            conn.close()
            raise
        return conn

    def _open(self) -> sqlite3.Connection:
        """Open (creating, migrating or rebuilding as needed) and return the connection."""
        if self._conn is not None:
            return self._conn
        try:
            self.memory_dir.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise MemoryError_(f"cannot create memory dir {self.memory_dir}: {exc}") from exc
        fresh = not self.db_path.exists() or self.db_path.stat().st_size == 0
        try:
            conn = self._connect()
        except sqlite3.Error as exc:
            if not _is_corruption(exc):
                raise MemoryError_(f"cannot open memory index {self.db_path}: {exc}") from exc
            log.warning("memory index %s is damaged (%s); rebuilding from files", self.db_path, exc)
            self._quarantine()
            fresh = True
            try:
                conn = self._connect()
            except sqlite3.Error as exc2:
                raise MemoryError_(f"cannot recreate memory index: {exc2}") from exc2
        self._conn = conn
        self._db = sqlite_utils.Database(conn)
        if fresh:
            known = self._roots_from_file()
            if known:
                log.info("memory index: rebuilding from %d known root(s)", len(known))
                for root, project in known.items():
                    self._sync(Path(root), project)
        return conn

    def _quarantine(self) -> None:
        """Move a damaged database aside (kept once for inspection) with its WAL files."""
        for suffix in ("-wal", "-shm", "-journal"):
            with contextlib.suppress(OSError):
                os.unlink(f"{self.db_path}{suffix}")
        try:
            os.replace(self.db_path, f"{self.db_path}.damaged")
        except OSError:
            with contextlib.suppress(OSError):
                os.unlink(self.db_path)

    def _guard(self, fn: Callable[[], T]) -> T:
        """Run ``fn``; on corruption found mid-way, rebuild once and run it again."""
        with self._lock:
            try:
                self._open()
                return fn()
            except sqlite3.Error as exc:
                if not _is_corruption(exc):
                    raise MemoryError_(f"memory index error: {exc}") from exc
                log.warning("memory index damaged during use (%s); rebuilding", exc)
                self.close()
                self._quarantine()
            try:
                self._open()
                return fn()
            except sqlite3.Error as exc:
                raise MemoryError_(f"memory index error after rebuild: {exc}") from exc

    @contextlib.contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        conn = self._open()
        conn.execute("BEGIN IMMEDIATE")
        try:
            yield conn
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")

    # ----------------------------------------------------------------- roots

    def _roots_from_file(self) -> dict[str, str]:
        try:
            data = json.loads(self.roots_path.read_text(encoding="utf-8"))
            entries = data.get("roots", []) if isinstance(data, dict) else []
            return {
                str(e["path"]): str(e.get("project") or Path(e["path"]).name)
                for e in entries
                if isinstance(e, dict) and isinstance(e.get("path"), str)
            }
        except (OSError, ValueError) as exc:
            if self.roots_path.exists():
                log.warning("cannot read %s: %s", self.roots_path, exc)
            return {}

    def _write_roots_file(self, roots: dict[str, str]) -> None:
        data = {
            "version": 1,
            "roots": [{"path": p, "project": roots[p]} for p in sorted(roots)],
        }
        text = json.dumps(data, ensure_ascii=False, indent=2) + "\n"
        try:
            atomic_write_bytes(self.roots_path, text.encode("utf-8"))
        except OSError as exc:
            log.warning("cannot write %s: %s", self.roots_path, exc)

    def known_roots(self) -> dict[str, str]:
        """Every root this index knows, ``{path: project}``."""

        def run() -> dict[str, str]:
            roots = self._roots_from_file()
            for row in self._open().execute("SELECT path, project FROM roots"):
                roots[row[0]] = row[1]
            return roots

        return self._guard(run)

    def _remember_root(self, root: str, project: str) -> None:
        conn = self._open()
        conn.execute(
            "INSERT INTO roots (path, project, last_sync) VALUES (?, ?, ?) "
            "ON CONFLICT (path) DO UPDATE SET project = excluded.project, "
            "last_sync = excluded.last_sync",
            (root, project, time.time()),
        )
        on_file = self._roots_from_file()
        if on_file.get(root) != project:
            on_file[root] = project
            self._write_roots_file(on_file)

    # ----------------------------------------------------------------- sync

    def sync_root(self, root: Path, project: str | None = None) -> SyncStats:
        """Index new and changed experience files under ``root``; drop deleted ones."""
        real = Path(root).resolve()
        name = project or real.name
        return self._guard(lambda: self._sync(real, name))

    def reindex(self, roots: Sequence[Path] = ()) -> SyncStats:
        """Drop the index and rebuild it from the files of ``roots`` and all known roots.

        Known roots that no longer exist are forgotten.
        """

        def run() -> SyncStats:
            known = {**self._roots_from_file()}
            for row in self._open().execute("SELECT path, project FROM roots"):
                known[row[0]] = row[1]
            for r in roots:
                real = Path(r).resolve()
                known.setdefault(str(real), real.name)
            alive = {p: proj for p, proj in known.items() if Path(p).is_dir()}
            with self._transaction() as conn:
                conn.execute("DELETE FROM experiences")
                conn.execute("DELETE FROM roots")
            self._write_roots_file(alive)
            stats = SyncStats()
            for path, proj in sorted(alive.items()):
                stats.merge(self._sync(Path(path), proj))
            return stats

        return self._guard(run)

    def _sync(self, root: Path, project: str) -> SyncStats:
        stats = SyncStats(roots=[str(root)])
        directory = root / MEMORY_SUBDIR
        on_disk: dict[str, os.stat_result] = {}
        if directory.is_dir() and not directory.is_symlink():
            try:
                entries = list(os.scandir(directory))
            except OSError as exc:
                raise MemoryError_(f"cannot list {directory}: {exc}") from exc
            for entry in entries:
                if entry.name.startswith(".") or not entry.name.endswith(".md"):
                    continue
                try:
                    if not entry.is_file(follow_symlinks=False):
                        continue  # symlinks could pull any file into prompts
                    on_disk[str(Path(entry.path))] = entry.stat(follow_symlinks=False)
                except OSError:
                    stats.skipped += 1
        with self._transaction() as conn:
            known = {
                row[0]: row[1:]
                for row in conn.execute(
                    "SELECT path, mtime_ns, size, indexed_ns, file_hash, project, id "
                    "FROM experiences WHERE root = ?",
                    (str(root),),
                )
            }
            for path in known.keys() - on_disk.keys():
                conn.execute("DELETE FROM experiences WHERE path = ?", (path,))
                stats.removed += 1
            now = time.time_ns()
            new_records: list[dict[str, Any]] = []
            for path, st in sorted(on_disk.items()):
                old = known.get(path)
                if (
                    old is not None
                    and old[0] == st.st_mtime_ns
                    and old[1] == st.st_size
                    and old[4] == project
                    and old[2] - st.st_mtime_ns > RACY_WINDOW_NS
                ):
                    stats.unchanged += 1
                    continue
                if st.st_size > MAX_FILE_BYTES:
                    log.warning("memory: skipping %s (%d bytes, too large)", path, st.st_size)
                    stats.skipped += 1
                    continue
                try:
                    data = Path(path).read_bytes()
                except OSError as exc:
                    log.warning("memory: cannot read %s: %s", path, exc)
                    stats.skipped += 1
                    continue
                digest = hashlib.sha256(data).hexdigest()
                if old is not None and old[3] == digest and old[4] == project:
                    conn.execute(
                        "UPDATE experiences SET mtime_ns = ?, size = ?, indexed_ns = ? "
                        "WHERE id = ?",
                        (st.st_mtime_ns, st.st_size, now, old[5]),
                    )
                    stats.unchanged += 1
                    continue
                record = _record(Path(path), data, str(root), project)
                record.update(file_hash=digest, mtime_ns=st.st_mtime_ns, size=st.st_size)
                record["indexed_ns"] = now
                if old is None:
                    new_records.append(record)
                    stats.added += 1
                else:
                    self._db["experiences"].update(old[5], record)
                    stats.updated += 1
            if new_records:
                self._db["experiences"].insert_all(new_records, batch_size=200)
            self._remember_root(str(root), project)
        return stats

    # ----------------------------------------------------------------- search

    def search(
        self,
        query: str,
        *,
        project: str | None = None,
        symbols: Sequence[str] = (),
        limit: int = 5,
    ) -> list[MemoryHit]:
        """The best experiences for ``query``, favouring ``project``, ``symbols`` and recency.

        Any text is accepted; FTS syntax in it is treated as plain words.
        """
        plan = plan_query(query if isinstance(query, str) else "")
        syms = [s for s in dict.fromkeys(str(s).strip() for s in symbols) if s][:16]
        limit = max(1, min(int(limit), 100))
        return self._guard(lambda: self._search(plan, project, syms, limit))

    def _search(
        self, plan: QueryPlan, project: str | None, symbols: list[str], limit: int
    ) -> list[MemoryHit]:
        conn = self._open()
        bm25: dict[int, float] = {}
        ids: set[int] = set()
        proj = project or ""
        if plan.fts_terms:
            match = " OR ".join(fts_string(t) for t in plan.fts_terms)
            sql = (
                f"SELECT e.id, {_BM25} FROM experiences_fts "  # noqa: S608 - fixed text only
                "JOIN experiences e ON e.id = experiences_fts.rowid "
                "WHERE experiences_fts MATCH ? {extra} ORDER BY 2 LIMIT ?"
            )
            rows = list(conn.execute(sql.format(extra=""), (match, CANDIDATES)))
            if project:
                rows += conn.execute(
                    sql.format(extra="AND e.project = ?"), (match, project, CANDIDATES)
                ).fetchall()
            for rid, rank in rows:
                bm25[rid] = -float(rank)
                ids.add(rid)
        if plan.like_terms:
            # Rank LIKE matches by how many short terms each row contains, so a common
            # term ("go") cannot crowd the rows matching all of them out of the limit.
            cols = ("title", "tags", "symbols", "summary", "body")
            one = "(" + " OR ".join(f"{c} LIKE ? ESCAPE '\\'" for c in cols) + ")"
            matched = " + ".join(one for _ in plan.like_terms)
            params: list[Any] = [like_pattern(t) for t in plan.like_terms for _ in cols]
            sql = (
                f"SELECT id FROM (SELECT id, project, date, {matched} AS n "  # noqa: S608
                "FROM experiences) WHERE n > 0 "
                "ORDER BY n DESC, project = ? DESC, date DESC LIMIT ?"
            )
            ids.update(r[0] for r in conn.execute(sql, (*params, proj, CANDIDATES * 2)))
        if symbols:
            conds = " OR ".join("symbols LIKE ? ESCAPE '\\'" for _ in symbols)
            ids.update(
                r[0]
                for r in conn.execute(
                    f"SELECT id FROM experiences WHERE {conds} "  # noqa: S608 - placeholders only
                    "ORDER BY project = ? DESC, date DESC LIMIT ?",
                    (*[like_pattern(s) for s in symbols], proj, CANDIDATES),
                )
            )
        if plan.empty and not symbols:
            ids.update(
                r[0]
                for r in conn.execute(
                    "SELECT id FROM experiences ORDER BY project = ? DESC, date DESC LIMIT ?",
                    (proj, limit * 4),
                )
            )
        if not ids:
            return []
        hits = score_candidates(conn, plan, ids, bm25, project, symbols)
        hits.sort(key=lambda h: (-h.score, h.path))
        return hits[:limit]

    def count(self) -> int:
        """How many experience files are indexed."""
        return self._guard(
            lambda: int(self._open().execute("SELECT count(*) FROM experiences").fetchone()[0])
        )


def _record(path: Path, data: bytes, root: str, project: str) -> dict[str, Any]:
    """The index row for one file; a file that does not parse is still indexed as text."""
    text = data.decode("utf-8", errors="replace")
    stem = path.name.removesuffix(".md")
    m = _DATE_PREFIX.match(stem)
    file_date, file_title = (m.group(1), m.group(2)) if m else ("", stem)
    try:
        exp = parse_experience(text)
    except MemoryError_ as exc:
        _, body = split_front_matter(text.replace("\r\n", "\n"))
        return {
            "path": str(path),
            "root": root,
            "project": project,
            "title": file_title,
            "date": file_date,
            "task_type": "",
            "tags": "",
            "symbols": "",
            "trigger_reason": "",
            "summary": clamp_text(body, 300),
            "body": body,
            "parse_error": exc.message,
        }
    _, body = split_front_matter(text.removeprefix("\ufeff").replace("\r\n", "\n"))
    return {
        "path": str(path),
        "root": root,
        "project": project,
        "title": exp.title,
        "date": exp.date or file_date,
        "task_type": exp.task_type,
        "tags": "\n".join(exp.tags),
        "symbols": "\n".join(exp.symbols),
        "trigger_reason": exp.trigger,
        "summary": exp.summary,
        "body": body,
        "parse_error": None,
    }
