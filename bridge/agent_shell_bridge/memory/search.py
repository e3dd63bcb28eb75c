"""Searching the memory index: candidates from the FTS5 tables, then one ranking.

Shared by :class:`~.index.MemoryIndex` (the server, the agent loop) and the one-shot
``memory search`` command (:mod:`.one_shot`), which opens an index whose schema is
current with the standard library's ``sqlite3`` alone, without the writer, its
integrity check, migrations or sqlite-utils, and hands anything else (no index yet,
an old schema, a damaged file) to ``MemoryIndex``, which creates, migrates or
rebuilds it from the experience files.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Sequence
from typing import TYPE_CHECKING

from .hit import MemoryHit
from .migrations import SCHEMA_VERSION
from .query import QueryPlan, fts_string, plan_query
from .ranking import score_candidates

if TYPE_CHECKING:
    pass

__all__ = ["CANDIDATES", "DB_NAME", "find", "normalise", "open_current"]

DB_NAME = "index.sqlite3"
CANDIDATES = 200
_BM25 = "bm25(experiences_fts, 4.0, 3.0, 3.0, 2.0, 1.0)"


def normalise(query: str, symbols: Sequence[str], limit: int) -> tuple[QueryPlan, list[str], int]:
    """The query's plan, the distinct symbols (at most 16) and the limit in 1..100."""
    plan = plan_query(query if isinstance(query, str) else "")
    syms = [s for s in dict.fromkeys(str(s).strip() for s in symbols) if s][:16]
    return plan, syms, max(1, min(int(limit), 100))


def find(
    conn: sqlite3.Connection,
    plan: QueryPlan,
    project: str | None,
    symbols: list[str],
    limit: int,
) -> list[MemoryHit]:
    """The best ``limit`` experiences for ``plan`` in the index open on ``conn``.

    Never scans the table: terms of three or more characters are matched in the
    trigram FTS5 index, shorter ones in the short-term FTS5 index, symbols through
    the indexed ``experience_symbols`` table.
    """
    bm25: dict[int, float] = {}
    ids: set[int] = set()
    proj = project or ""
    # One MATCH per table returns every matching row with its rank (cheaper than
    # ORDER BY ... LIMIT twice, once per scope); the best rows overall and the
    # best of the current project become candidates.
    mine: set[int] | None = None

    def best(rows: list[tuple[int, float]], n: int) -> list[tuple[int, float]]:
        nonlocal mine
        rows.sort(key=lambda r: r[1])
        if not project or len(rows) <= n:
            return rows[:n]
        if mine is None:  # the project's rows, through the project index
            sql = "SELECT id FROM experiences WHERE project = ?"
            mine = {r[0] for r in conn.execute(sql, (project,))}
        return rows[:n] + [r for r in rows[n:] if r[0] in mine][:n]

    if plan.fts_terms:
        match = " OR ".join(fts_string(t) for t in plan.fts_terms)
        rows = conn.execute(
            f"SELECT rowid, {_BM25} FROM experiences_fts "  # noqa: S608 - fixed text only
            "WHERE experiences_fts MATCH ?",
            (match,),
        ).fetchall()
        for rid, rank in best(rows, CANDIDATES):
            bm25[rid] = -float(rank)
            ids.add(rid)
    if plan.like_terms:
        # BM25 over one-token-per-term rows ranks rows holding more (and rarer)
        # short terms first, so a common one ("go") cannot crowd the rows
        # matching all of them out of the limit.
        match = " OR ".join(fts_string(t) for t in plan.like_terms)
        rows = conn.execute(
            "SELECT rowid, rank FROM experiences_short WHERE experiences_short MATCH ?",
            (match,),
        ).fetchall()
        ids.update(rid for rid, _ in best(rows, CANDIDATES * 2))
    if symbols:
        folded = [s.casefold() for s in symbols]
        marks = ",".join("?" * len(folded))
        ids.update(
            r[0]
            for r in conn.execute(
                "SELECT s.experience_id FROM experience_symbols s "  # noqa: S608 - marks only
                f"JOIN experiences e ON e.id = s.experience_id WHERE s.symbol IN ({marks}) "
                "ORDER BY e.project = ? DESC, e.date DESC LIMIT ?",
                (*folded, proj, CANDIDATES),
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
    return score_candidates(conn, plan, ids, bm25, project, symbols, limit)


def open_current(db_path: str) -> sqlite3.Connection | None:
    """The index opened for reading when it exists and its schema is this bridge's."""
    if not os.path.isfile(db_path):
        return None  # connecting would create it
    try:
        conn = sqlite3.connect(db_path, timeout=10.0, isolation_level=None)
    except sqlite3.Error:
        return None
    try:
        (version,) = conn.execute("PRAGMA user_version").fetchone()
    except sqlite3.Error:
        conn.close()
        return None
    if version != SCHEMA_VERSION:
        conn.close()
        return None
    return conn
