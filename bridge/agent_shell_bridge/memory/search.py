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

from .hit import MemoryHit
from .migrations import SCHEMA_VERSION
from .query import QueryPlan, fts_string, plan_query
from .ranking import score_candidates

__all__ = ["CANDIDATES", "DB_NAME", "find", "normalise", "open_current"]

DB_NAME = "index.sqlite3"
CANDIDATES = 25
COMMON = 1000  # a term found in this many rows is too common to choose candidates
# title, tags, symbols, summary, body, search_terms: the lesson's own words count
# more than the words written for finding it.
_BM25 = "bm25(experiences_fts, 4.0, 3.0, 3.0, 2.0, 1.0, 0.6)"
EXPANSION_CANDIDATES = 30
EXPANSIONS_PER_TERM = 6  # of each query term, choosing candidates


def normalise(query: str, symbols: Sequence[str], limit: int) -> tuple[QueryPlan, list[str], int]:
    """The query's plan, the distinct symbols (at most 16) and the limit in 1..100."""
    plan = plan_query(query if isinstance(query, str) else "")
    syms = [s for s in dict.fromkeys(str(s).strip() for s in symbols) if s][:16]
    return plan, syms, max(1, min(int(limit), 100))


def _capped_count(conn: sqlite3.Connection, table: str, match: str) -> int:
    """How many rows ``match`` finds in ``table``, counting no further than COMMON."""
    sql = f"SELECT count(*) FROM (SELECT 1 FROM {table} WHERE {table} MATCH ? LIMIT ?)"  # noqa: S608
    return int(conn.execute(sql, (match, COMMON)).fetchone()[0])


def _ranked(
    conn: sqlite3.Connection,
    table: str,
    rank: str,
    terms: tuple[str, ...],
    project: str | None,
    n: int,
) -> list[tuple[int, float | None]]:
    """The best ``n`` rows of ``table`` for ``terms``, and the best ``n`` of ``project``.

    SQLite ranks every row a MATCH finds, so a term found in thousands of rows (a
    word every experience has) would cost in proportion to the memory's size while
    telling the rows apart hardly at all (its BM25 weight is near zero). Such common
    terms choose no candidates when a rarer term can; when none can, rows holding
    all the common terms are taken, ranked while they are few, else the newest.
    Common terms still count in the candidates' scores (ranking.py). Fewer than
    COMMON rows are fetched whole and chosen here; more, through ORDER BY ... LIMIT.
    """
    rare = list(terms)
    match = " OR ".join(fts_string(t) for t in rare)
    # Usually the MATCH finds fewer than COMMON rows: then this one query is all.
    sql = f"SELECT rowid, {rank} FROM {table} WHERE {table} MATCH ? LIMIT ?"  # noqa: S608
    found = conn.execute(sql, (match, COMMON)).fetchall()
    if len(found) < COMMON:
        return _best(conn, found, project, n)
    counts = {t: _capped_count(conn, table, fts_string(t)) for t in terms}
    rare = [t for t in terms if 0 < counts[t] < COMMON]
    if rare:
        match = " OR ".join(fts_string(t) for t in rare)
    else:
        match = " AND ".join(fts_string(t) for t in terms if counts[t] >= COMMON)
    total = _capped_count(conn, table, match)
    if total < COMMON:
        sql = f"SELECT rowid, {rank} FROM {table} WHERE {table} MATCH ?"  # noqa: S608
        return _best(conn, conn.execute(sql, (match,)).fetchall(), project, n)
    order = "r"  # the alias: BM25 is computed once per row, not twice
    if not rare:
        # Too many to rank: the newest, whose ranks would mean nothing (left out).
        rank, order = "NULL", f"{table}.rowid DESC"
    sql = (
        f"SELECT {table}.rowid, {rank} AS r FROM {table} "  # noqa: S608 - fixed text only
        f"WHERE {table} MATCH ? ORDER BY {order} LIMIT ?"
    )
    rows: list[tuple[int, float | None]] = conn.execute(sql, (match, n)).fetchall()
    if project and len(rows) == n and not _all_of(conn, project, [r[0] for r in rows]):
        # The project's own best, in case others crowd them out.
        mine = (
            f"SELECT {table}.rowid, {rank} AS r FROM {table} "  # noqa: S608 - fixed text only
            f"JOIN experiences e ON e.id = {table}.rowid "
            f"WHERE {table} MATCH ? AND e.project = ? ORDER BY {order} LIMIT ?"
        )
        rows += conn.execute(mine, (match, project, n)).fetchall()
    return rows


def _few(
    conn: sqlite3.Connection,
    table: str,
    rank: str,
    terms: tuple[str, ...],
    project: str | None,
    n: int,
) -> list[tuple[int, float | None]] | None:
    """:func:`_ranked` when ``terms`` match fewer than COMMON rows, else None."""
    match = " OR ".join(fts_string(t) for t in terms)
    sql = f"SELECT rowid, {rank} FROM {table} WHERE {table} MATCH ? LIMIT ?"  # noqa: S608
    found = conn.execute(sql, (match, COMMON)).fetchall()
    return _best(conn, found, project, n) if len(found) < COMMON else None


def _best(
    conn: sqlite3.Connection, rows: list[tuple[int, float]], project: str | None, n: int
) -> list[tuple[int, float | None]]:
    """The best ``n`` of ``rows`` (fewer than COMMON), and the best ``n`` of ``project``."""
    rows.sort(key=lambda r: r[1])
    out: list[tuple[int, float | None]] = list(rows[:n])
    rest = rows[n:]
    if project and rest:
        marks = ",".join("?" * len(rest))
        sql = f"SELECT id FROM experiences WHERE project = ? AND id IN ({marks})"  # noqa: S608
        mine = {r[0] for r in conn.execute(sql, (project, *(r[0] for r in rest)))}
        out += [r for r in rest if r[0] in mine][:n]
    return out


def _all_of(conn: sqlite3.Connection, project: str, ids: list[int]) -> bool:
    """Whether every row of ``ids`` belongs to ``project`` (then they are its best too)."""
    marks = ",".join("?" * len(ids))
    sql = f"SELECT count(*) FROM experiences WHERE project = ? AND id IN ({marks})"  # noqa: S608
    return int(conn.execute(sql, (project, *ids)).fetchone()[0]) == len(ids)


def find(
    conn: sqlite3.Connection,
    plan: QueryPlan,
    project: str | None,
    symbols: list[str],
    limit: int,
    *,
    accepted_only: bool = False,
) -> list[MemoryHit]:
    """The best ``limit`` experiences for ``plan`` in the index open on ``conn``.

    Never scans the table, and reads only the rows it ranks: terms of three or more
    characters are matched in the trigram FTS5 index, shorter ones in the short-term
    FTS5 index, symbols through the indexed ``experience_symbols`` table, each with
    a LIMIT; the candidates' text is then read by id and scored.
    """
    bm25: dict[int, float] = {}
    ids: set[int] = set()
    proj = project or ""
    exp_fts, exp_short = plan.expansion_terms(EXPANSIONS_PER_TERM)
    wide = (*plan.fts_terms, *(t for t in exp_fts if t not in plan.fts_terms))
    widened = None
    if exp_fts:
        # The words and their expansions together: candidates, and the BM25 that
        # refines the score (coverage, which weighs the words above their stand-ins,
        # decides; ranking.py). Only while they match fewer than COMMON rows: in a
        # big memory, common synonyms would cost more than they find.
        widened = _few(conn, "experiences_fts", _BM25, wide, project, CANDIDATES)
    if widened is not None:
        for rid, rank in widened:
            if rank is not None:
                bm25[rid] = -float(rank)
            ids.add(rid)
    if plan.fts_terms:
        # The best rows for the words alone, so that rare synonyms cannot push the
        # rows holding the task's own words out of the candidates.
        for rid, rank in _ranked(
            conn, "experiences_fts", _BM25, plan.fts_terms, project, CANDIDATES
        ):
            if widened is None and rank is not None:
                bm25[rid] = -float(rank)
            ids.add(rid)
    if exp_short:
        rows = _ranked(conn, "experiences_short", "rank", exp_short, project, EXPANSION_CANDIDATES)
        ids.update(rid for rid, _ in rows)
    if plan.like_terms:
        # BM25 over one-token-per-term rows ranks rows holding more (and rarer)
        # short terms first, so a common one ("go") cannot crowd the rows
        # matching all of them out of the limit.
        rows = _ranked(conn, "experiences_short", "rank", plan.like_terms, project, CANDIDATES * 2)
        ids.update(rid for rid, _ in rows)
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
        # The newest, of this project and overall, each through its date index.
        newest = "SELECT id FROM experiences ORDER BY date DESC LIMIT ?"
        ids.update(r[0] for r in conn.execute(newest, (limit * 4,)))
        if project:
            own = "SELECT id FROM experiences WHERE project = ? ORDER BY date DESC LIMIT ?"
            ids.update(r[0] for r in conn.execute(own, (project, limit * 4)))
    if not ids:
        return []
    return score_candidates(
        conn, plan, ids, bm25, project, symbols, limit, accepted_only=accepted_only
    )


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
