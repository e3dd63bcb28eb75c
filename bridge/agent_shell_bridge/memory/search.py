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
import re
import sqlite3
from collections.abc import Sequence

from .hit import MemoryHit
from .migrations import SCHEMA_VERSION
from .query import CJK, QueryPlan, fts_string, plan_query
from .ranking import score_candidates

__all__ = ["CANDIDATES", "DB_NAME", "find", "normalise", "open_current"]

DB_NAME = "index.sqlite3"
CANDIDATES = 12
COMMON = 1000  # a term found in this many rows is too common to choose candidates
# title, tags, symbols, summary, body, search_terms: the lesson's own words count
# more than the words written for finding it.
_BM25 = "bm25(experiences_fts, 4.0, 3.0, 3.0, 2.0, 1.0, 0.6)"
WORDS = "experiences_words"
_BM25_WORDS = "bm25(experiences_words, 4.0, 3.0, 3.0, 2.0, 1.0, 0.6)"
_CJK_CHAR = re.compile(f"[{CJK}]")
EXPANSION_CANDIDATES = 15
EXPANSIONS_PER_TERM = 6  # of each query term, choosing candidates


def normalise(query: str, symbols: Sequence[str], limit: int) -> tuple[QueryPlan, list[str], int]:
    """The query's plan, the distinct symbols (at most 16) and the limit in 1..100."""
    plan = plan_query(query if isinstance(query, str) else "")
    syms = [s for s in dict.fromkeys(str(s).strip() for s in symbols) if s][:16]
    return plan, syms, max(1, min(int(limit), 100))


def _match(table: str, term: str) -> str:
    """``term`` as an FTS5 string for ``table``: a prefix in the word index, so that
    "slow" finds "slowly" (its porter stem keeps the "li") and a stem its words."""
    quoted = fts_string(term)
    return quoted + "*" if table == WORDS else quoted


def _any_of(table: str, terms: Sequence[str]) -> str:
    return " OR ".join(_match(table, t) for t in terms)


def _capped_count(conn: sqlite3.Connection, table: str, match: str) -> int:
    """How many rows ``match`` finds in ``table``, counting no further than COMMON."""
    sql = f"SELECT count(*) FROM (SELECT 1 FROM {table} WHERE {table} MATCH ? LIMIT ?)"  # noqa: S608
    return int(conn.execute(sql, (match, COMMON)).fetchone()[0])


def _ranked(
    conn: sqlite3.Connection,
    table: str,
    rank: str,
    terms: Sequence[str],
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
    found = _few(conn, table, rank, terms, project, n)
    if found is not None:
        return found  # usually: this one query is all
    counts = {t: _capped_count(conn, table, _match(table, t)) for t in terms}
    rare = [t for t in terms if 0 < counts[t] < COMMON]
    if rare:
        match = _any_of(table, rare)
    else:
        match = " AND ".join(_match(table, t) for t in terms if counts[t] >= COMMON)
    total = _capped_count(conn, table, match)
    if total < COMMON:
        return _best(conn, table, rank, match, project, n, None) or []
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
    terms: Sequence[str],
    project: str | None,
    n: int,
) -> list[tuple[int, float | None]] | None:
    """:func:`_ranked` when ``terms`` match fewer than COMMON rows, else None."""
    return _best(conn, table, rank, _any_of(table, terms), project, n, COMMON)


def _best(
    conn: sqlite3.Connection,
    table: str,
    rank: str,
    match: str,
    project: str | None,
    n: int,
    cap: int | None,
) -> list[tuple[int, float | None]] | None:
    """The best ``n`` rows ``match`` finds, and the best ``n`` of ``project``; None
    when it finds ``cap`` rows or more (then they are too many to rank here). Each
    row comes with whether it is the project's, in the same query."""
    sql = (
        f"SELECT {table}.rowid, {rank}, e.project = ? FROM {table} "  # noqa: S608 - fixed text
        f"JOIN experiences e ON e.id = {table}.rowid WHERE {table} MATCH ?"
    )
    args: tuple[object, ...] = (project or "", match)
    if cap is not None:
        sql += " LIMIT ?"
        args += (cap,)
    rows: list[tuple[int, float, int]] = conn.execute(sql, args).fetchall()
    if cap is not None and len(rows) >= cap:
        return None
    rows.sort(key=lambda r: r[1])
    out: list[tuple[int, float | None]] = [(r[0], r[1]) for r in rows[:n]]
    if project:
        out += [(r[0], r[1]) for r in rows[n:] if r[2]][:n]
    return out


def _all_of(conn: sqlite3.Connection, project: str, ids: list[int]) -> bool:
    """Whether every row of ``ids`` belongs to ``project`` (then they are its best too)."""
    marks = ",".join("?" * len(ids))
    sql = f"SELECT count(*) FROM experiences WHERE project = ? AND id IN ({marks})"  # noqa: S608
    return int(conn.execute(sql, (project, *ids)).fetchone()[0]) == len(ids)


def _relevance(rows: list[tuple[int, float | None]], into: dict[int, float]) -> None:
    """Add ``rows``' BM25 to ``into`` as a share of their best (0..1), keeping the
    higher share of a row two searches found: BM25 of different tables and
    different terms is not on one scale, its share of the best is."""
    ranks = {rid: -float(rank) for rid, rank in rows if rank is not None}
    top = max(ranks.values(), default=0.0)
    if top <= 0:
        return
    for rid, value in ranks.items():
        share = max(value, 0.0) / top
        if share > into.get(rid, 0.0):
            into[rid] = share


def _split(terms: Sequence[str]) -> tuple[list[str], list[str]]:
    """Terms the word index can find, and those only the trigram index can (Chinese
    runs, which unicode61 would keep as one token)."""
    words: list[str] = []
    cjk: list[str] = []
    for t in terms:
        (cjk if _CJK_CHAR.search(t) else words).append(t)
    return words, cjk


def _choose(
    conn: sqlite3.Connection,
    table: str,
    rank: str,
    own: Sequence[str],
    wider: Sequence[str],
    project: str | None,
    ids: set[int],
    relevance: dict[int, float],
) -> None:
    """Candidates from ``table``: the best for the words and their stand-ins
    together while they match fewer than COMMON rows (in a big memory, common
    synonyms would cost more than they find), else the best for the words alone.

    In the one query the task's own words are written twice: FTS5's BM25 sums over
    the phrases of the query, so they weigh double, and rare synonyms cannot push
    the rows holding them out of the candidates (a second query for the words
    alone would cost as much again for the same guarantee)."""
    widened = _few(conn, table, rank, (*own, *own, *wider), project, CANDIDATES) if wider else None
    if widened is not None:
        ids.update(rid for rid, _ in widened)
        _relevance(widened, relevance)
    elif own:
        alone = _ranked(conn, table, rank, own, project, CANDIDATES)
        ids.update(rid for rid, _ in alone)
        _relevance(alone, relevance)


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

    Never scans the table, and reads only the rows it ranks: words and their
    stand-ins are looked up in the word index, Chinese terms of three or more
    characters in the trigram index, shorter ones in the short-term index, symbols
    through the indexed ``experience_symbols`` table, each with a LIMIT; the
    candidates' text is then read by id and scored (ranking.py: coverage decides,
    weighing the words above their stand-ins; BM25 refines).
    """
    relevance: dict[int, float] = {}
    ids: set[int] = set()
    proj = project or ""
    exp_fts, exp_short = plan.expansion_terms(EXPANSIONS_PER_TERM)
    own_words, own_cjk = _split(plan.fts_terms)
    more_words, more_cjk = _split([t for t in exp_fts if t not in plan.fts_terms])
    _choose(conn, WORDS, _BM25_WORDS, own_words, more_words, project, ids, relevance)
    # A task mixing Chinese and other words ("长连接 parser java"): the trigram index
    # holds both, so its BM25 over all of them prefers the rows holding several,
    # which neither index alone would rank first.
    mixed = [*own_cjk, *own_words] if own_cjk and own_words else own_cjk
    _choose(conn, "experiences_fts", _BM25, mixed, more_cjk, project, ids, relevance)
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
        conn, plan, ids, relevance, project, symbols, limit, accepted_only=accepted_only
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
