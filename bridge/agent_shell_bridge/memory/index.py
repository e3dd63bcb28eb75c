"""The cross-project SQLite index of experience files.

The files are the truth; this index is a cache that can be thrown away.  It lives at
``memory_dir/index.sqlite3`` and remembers which project roots it has seen, both in
its ``roots`` table and in ``memory_dir/roots.json`` (written atomically), so that a
missing or damaged database is rebuilt from the files without losing anything.

Search (:mod:`.search`) never scans the table: words are looked up in the word FTS5
index, Chinese terms of three or more characters in the trigram FTS5 index, shorter
ones (two-character Chinese words, "go")
in the short-term FTS5 index, symbols through the indexed ``experience_symbols``
table.

Everything here is synchronous and serialised by a lock; async callers wrap calls in
``asyncio.to_thread``. sqlite-utils (for bulk writes) is loaded only when writing.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from ..errors import MemoryError_
from .experience import MEMORY_SUBDIR
from .files import atomic_write_bytes
from .hit import MemoryHit
from .migrations import apply_migrations
from .query import QueryPlan
from .rows import fill_aux, ids_of, record_of, write_aux
from .scan import FileStat, Listing, dir_stamp, list_files, list_names, stat_file
from .search import DB_NAME, find, normalise
from .vocabulary import Vocabulary, build_vocabulary

__all__ = ["MemoryHit", "MemoryIndex", "SyncStats"]

log = logging.getLogger(__name__)

ROOTS_NAME = "roots.json"
MAX_FILE_BYTES = 1 << 20  # an experience is a page of notes; skip anything huge
RACY_WINDOW_NS = 2_000_000_000  # re-hash files modified this close to their indexing
FULL_SCAN_EVERY_S = 300.0  # how often a turn starts a full scan in the background

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

    def __init__(self, memory_dir: Path, *, full_scan_every_s: float = FULL_SCAN_EVERY_S) -> None:
        self.memory_dir = Path(memory_dir)
        self.full_scan_every_s = full_scan_every_s
        self._scanning: set[str] = set()  # roots whose full scan has been claimed
        self.db_path = self.memory_dir / DB_NAME
        self.roots_path = self.memory_dir / ROOTS_NAME
        self._lock = threading.RLock()
        self._conn: sqlite3.Connection | None = None
        self._db: Any = None
        self._writes = 0  # write transactions committed here (vocabularies follow them)
        self._vocabularies: dict[str, tuple[tuple[int, int], Vocabulary]] = {}

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
            # No integrity check here: it reads the whole file (80 ms at 50,000
            # experiences) and would make every session pay. The full scan runs it
            # (off the turn); damage met while in use is caught by _guard.
            conn.execute("PRAGMA journal_mode = WAL")
            conn.execute("PRAGMA synchronous = NORMAL")
            before = apply_migrations(conn)
            if 0 < before < 2:
                fill_aux(conn)  # rows indexed before the short-term index existed
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
        if fresh:
            known = self._roots_from_file()
            if known:
                log.info("memory index: rebuilding from %d known root(s)", len(known))
                for root, project in known.items():
                    self._sync(Path(root), project)
        return conn

    def _database(self) -> Any:
        """The sqlite-utils view of the connection, for bulk writes (loaded on first use)."""
        if self._db is None:
            import sqlite_utils

            self._db = sqlite_utils.Database(self._open())
        return self._db

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
        self._writes += 1

    def _vocabulary(self, project: str) -> Vocabulary:
        """The project's vocabulary, learnt again after any change to the index."""
        conn = self._open()
        (version,) = conn.execute("PRAGMA data_version").fetchone()  # other processes
        stamp = (self._writes, int(version))
        cached = self._vocabularies.get(project)
        if cached is not None and cached[0] == stamp:
            return cached[1]
        vocabulary = build_vocabulary(conn, project)
        self._vocabularies[project] = (stamp, vocabulary)
        return vocabulary

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

    def _remember_root(self, root: str, project: str, listing: Listing) -> None:
        """Record a full scan of ``root``: its project, when, and its directory stamp."""
        conn = self._open()
        conn.execute(
            "INSERT INTO roots (path, project, last_sync, dir_mtime_ns, dir_listed_ns) "
            "VALUES (?, ?, ?, ?, ?) "
            "ON CONFLICT (path) DO UPDATE SET project = excluded.project, "
            "last_sync = excluded.last_sync, dir_mtime_ns = excluded.dir_mtime_ns, "
            "dir_listed_ns = excluded.dir_listed_ns",
            (root, project, time.time(), listing.stamp, listing.listed_ns),
        )
        on_file = self._roots_from_file()
        if on_file.get(root) != project:
            on_file[root] = project
            self._write_roots_file(on_file)

    # ----------------------------------------------------------------- sync

    def sync_root(self, root: Path, project: str | None = None) -> SyncStats:
        """The full scan: every experience file under ``root`` is ``stat``-ed; new and
        changed ones are indexed, deleted ones dropped, and the index file is checked.

        The files are listed before the index's lock is taken, so a scan in the
        background holds up a turn's search only while it writes what changed.
        """
        real = Path(root).resolve()
        name = project or real.name
        try:
            listing = list_files(real / MEMORY_SUBDIR)

            def run() -> SyncStats:
                (check,) = self._open().execute("PRAGMA quick_check").fetchone()
                if check != "ok":
                    raise sqlite3.DatabaseError(f"quick_check: {check}")
                return self._sync(real, name, listing)

            return self._guard(run)
        finally:
            with self._lock:
                self._scanning.discard(str(real))

    def refresh_root(self, root: Path, project: str | None = None) -> SyncStats:
        """What a turn runs: bring the index up to date for ``root`` at a cost that
        does not grow with the number of experiences when nothing changed.

        - The root seen for the first time (or under another project name): a full scan.
        - The directory's mtime as recorded (and recorded long enough after its last
          change that a change in the same clock tick cannot hide): nothing to do.
        - Otherwise the directory is listed without a ``stat`` per file; new names and
          names whose inode changed (saved by rename) are indexed, missing ones
          dropped. When the directory changed but no name or inode did (a file
          written in place while an editor's lock or temporary file came and went),
          every file is ``stat``-ed as in the full scan.

        A file rewritten in place with no other change in its directory is found by
        the full scan, which the caller runs in the background when
        :meth:`claim_full_scan` says one is due, or by ``memory reindex``. Files the
        bridge wrote itself are indexed at once (:meth:`index_file`) and noted in
        ``own_writes``, which explains the directory's change to the next listing.
        """
        real = Path(root).resolve()
        name = project or real.name
        return self._guard(lambda: self._refresh(real, name))

    def claim_full_scan(self, root: Path) -> bool:
        """True when ``root``'s last full scan is older than ``full_scan_every_s`` and
        no scan of it is running here; the caller then runs :meth:`sync_root`."""
        real = str(Path(root).resolve())

        def run() -> bool:
            if real in self._scanning:
                return False
            row = (
                self._open()
                .execute("SELECT last_sync FROM roots WHERE path = ?", (real,))
                .fetchone()
            )
            if row is not None and time.time() - float(row[0]) < self.full_scan_every_s:
                return False
            self._scanning.add(real)
            return True

        return self._guard(run)

    def index_file(self, root: Path, path: Path, project: str | None = None) -> SyncStats:
        """Index (or drop, when it is gone) one experience file our own writer just
        wrote under ``root``, without looking at the others."""
        real = Path(root).resolve()
        name = project or real.name
        full = str(real / MEMORY_SUBDIR / Path(path).name)

        def run() -> SyncStats:
            if self._root_row(real) is None:
                return self._sync(real, name)
            stats = SyncStats(roots=[str(real)])
            st = stat_file(full)
            with self._transaction() as conn:
                conn.execute(
                    "INSERT OR IGNORE INTO own_writes (path, root) VALUES (?, ?)", (full, str(real))
                )
                if st is None:
                    removed = conn.execute("DELETE FROM experiences WHERE path = ?", (full,))
                    stats.removed += max(removed.rowcount, 0)
                else:
                    self._update(conn, real, name, {full: st}, self._known(conn, [full]), stats)
            return stats

        return self._guard(run)

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
                conn.execute("DELETE FROM own_writes")
            self._write_roots_file(alive)
            stats = SyncStats()
            for path, proj in sorted(alive.items()):
                stats.merge(self._sync(Path(path), proj))
            return stats

        return self._guard(run)

    def _root_row(self, root: Path) -> tuple[str, int, int] | None:
        row = (
            self._open()
            .execute(
                "SELECT project, dir_mtime_ns, dir_listed_ns FROM roots WHERE path = ?",
                (str(root),),
            )
            .fetchone()
        )
        return None if row is None else (str(row[0]), int(row[1]), int(row[2]))

    def _sync(self, root: Path, project: str, listing: Listing | None = None) -> SyncStats:
        if listing is None:
            listing = list_files(root / MEMORY_SUBDIR)
        stats = SyncStats(roots=[str(root)], skipped=listing.skipped)
        on_disk = listing.files
        with self._transaction() as conn:
            known = {
                row[0]: row[1:]
                for row in conn.execute(
                    "SELECT path, mtime_ns, size, indexed_ns, file_hash, project, id, inode "
                    "FROM experiences WHERE root = ?",
                    (str(root),),
                )
            }
            gone = [(path,) for path in known.keys() - on_disk.keys()]
            conn.executemany("DELETE FROM experiences WHERE path = ?", gone)
            stats.removed += len(gone)
            self._update(conn, root, project, on_disk, known, stats)
            conn.execute("DELETE FROM own_writes WHERE root = ?", (str(root),))
            self._remember_root(str(root), project, listing)
        return stats

    def _refresh(self, root: Path, project: str) -> SyncStats:
        row = self._root_row(root)
        if row is None or row[0] != project:
            return self._sync(root, project)
        stats = SyncStats(roots=[str(root)])
        recorded, listed = row[1], row[2]
        directory = root / MEMORY_SUBDIR
        stamp = dir_stamp(directory)
        if stamp == recorded and listed - recorded > RACY_WINDOW_NS:
            return stats
        stamp, listed_ns, names = list_names(directory)
        with self._transaction() as conn:
            known = {
                r[0]: (int(r[1]), int(r[2]))
                for r in conn.execute(
                    "SELECT path, inode, id FROM experiences WHERE root = ?", (str(root),)
                )
            }
            gone = [(path,) for path in known.keys() - names.keys()]
            fresh = [p for p, ino in names.items() if p not in known or known[p][0] != ino]
            ours = conn.execute("DELETE FROM own_writes WHERE root = ?", (str(root),)).rowcount
            if gone or fresh or ours > 0 or stamp == recorded:
                conn.executemany("DELETE FROM experiences WHERE path = ?", gone)
                stats.removed += len(gone)
                files = {p: st for p in fresh if (st := stat_file(p)) is not None}
                stats.skipped += len(fresh) - len(files)
                self._update(conn, root, project, files, self._known(conn, list(files)), stats)
                conn.execute(
                    "UPDATE roots SET dir_mtime_ns = ?, dir_listed_ns = ? WHERE path = ?",
                    (stamp, listed_ns, str(root)),
                )
                return stats
        # The directory changed, yet no name or inode did: something may have been
        # written in place (an editor's lock file came and went): look at every file.
        return self._sync(root, project)

    def _known(self, conn: sqlite3.Connection, paths: list[str]) -> dict[str, tuple[Any, ...]]:
        """The index rows of ``paths`` as :meth:`_update` compares them."""
        out: dict[str, tuple[Any, ...]] = {}
        for start in range(0, len(paths), 500):
            chunk = paths[start : start + 500]
            marks = ",".join("?" * len(chunk))
            sql = (
                "SELECT path, mtime_ns, size, indexed_ns, file_hash, project, id, inode "  # noqa: S608
                f"FROM experiences WHERE path IN ({marks})"
            )
            out.update((r[0], r[1:]) for r in conn.execute(sql, chunk))
        return out

    def _update(
        self,
        conn: sqlite3.Connection,
        root: Path,
        project: str,
        on_disk: dict[str, FileStat],
        known: dict[str, tuple[Any, ...]],
        stats: SyncStats,
    ) -> None:
        """Index the files of ``on_disk`` that are new or differ from their ``known`` row."""
        import hashlib  # OpenSSL loads in milliseconds: only when indexing

        now = time.time_ns()
        new_records: list[dict[str, Any]] = []
        changed: list[tuple[int, dict[str, Any]]] = []
        for path, st in sorted(on_disk.items()):
            old = known.get(path)
            if (
                old is not None
                and old[0] == st.mtime_ns
                and old[1] == st.size
                and old[4] == project
                and old[6] == st.inode
                and old[2] - st.mtime_ns > RACY_WINDOW_NS
            ):
                stats.unchanged += 1
                continue
            if st.size > MAX_FILE_BYTES:
                log.warning("memory: skipping %s (%d bytes, too large)", path, st.size)
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
                    "UPDATE experiences SET mtime_ns = ?, size = ?, indexed_ns = ?, inode = ? "
                    "WHERE id = ?",
                    (st.mtime_ns, st.size, now, st.inode, old[5]),
                )
                stats.unchanged += 1
                continue
            record = record_of(Path(path), data, str(root), project)
            record.update(file_hash=digest, mtime_ns=st.mtime_ns, size=st.size, inode=st.inode)
            record["indexed_ns"] = now
            if old is None:
                new_records.append(record)
                stats.added += 1
            else:
                self._database()["experiences"].update(old[5], record)
                changed.append((old[5], record))
                stats.updated += 1
        if new_records:
            self._database()["experiences"].insert_all(new_records, batch_size=200)
            ids = ids_of(conn, [r["path"] for r in new_records])
            changed += [(ids[r["path"]], r) for r in new_records]
        write_aux(conn, changed)

    # ----------------------------------------------------------------- search

    def search(
        self,
        query: str,
        *,
        project: str | None = None,
        symbols: Sequence[str] = (),
        limit: int = 5,
        accepted_only: bool = False,
    ) -> list[MemoryHit]:
        """The best experiences for ``query``, favouring ``project``, ``symbols`` and recency.

        Any text is accepted; FTS syntax in it is treated as plain words. Rejected
        and forgotten experiences are never found; with ``accepted_only``, neither
        are new ones still waiting for review.
        """
        plan, syms, n = normalise(query, symbols, limit)
        return self._guard(lambda: self._search(plan, project, syms, n, accepted_only))

    def _search(
        self,
        plan: QueryPlan,
        project: str | None,
        symbols: list[str],
        limit: int,
        accepted_only: bool,
    ) -> list[MemoryHit]:
        if project and not plan.empty:
            plan = plan.expanded(self._vocabulary(project).expansions(plan))
        return find(self._open(), plan, project, symbols, limit, accepted_only=accepted_only)

    def count(self) -> int:
        """How many experience files are indexed."""
        return self._guard(
            lambda: int(self._open().execute("SELECT count(*) FROM experiences").fetchone()[0])
        )
