"""Ranking of search candidates: one score from several signals.

Term coverage (field-weighted: title, tags and symbols count most, then the summary,
then the body) carries most weight and works for terms of any length; BM25 from the
trigram index refines it; the current project, matching symbols and recency add
fixed boosts so that a close match from elsewhere can still beat a weak local one.
"""

from __future__ import annotations

import datetime as dt
import math
import re
import sqlite3
from collections.abc import Callable

from .hit import MemoryHit, clamp_text
from .query import QueryPlan

__all__ = ["score_candidates"]

PROJECT_BOOST = 0.3
SYMBOL_WEIGHT = 0.5
RECENCY_WEIGHT = 0.1
RECENCY_HALF_LIFE_DAYS = 180.0

_ASCII_WORD = re.compile(r"^[a-z0-9_]+$")
_Test = Callable[[str], bool]


def _tester(unit: str) -> _Test:
    """How to tell whether ``unit`` occurs in a (case-folded) text."""
    if len(unit) < 3 and _ASCII_WORD.match(unit):
        # Short ASCII words ("go", "ci") count only as whole words.
        pattern = re.compile(rf"(?<![a-z0-9]){re.escape(unit)}(?![a-z0-9])")
        return lambda text: pattern.search(text) is not None
    return lambda text: unit in text


def _recency(date: str, today: dt.date) -> float:
    try:
        age = (today - dt.date.fromisoformat(date)).days
    except ValueError:
        return 0.0
    return math.pow(0.5, max(age, 0) / RECENCY_HALF_LIFE_DAYS)


def score_candidates(
    conn: sqlite3.Connection,
    plan: QueryPlan,
    ids: set[int],
    bm25: dict[int, float],
    project: str | None,
    symbols: list[str],
    limit: int | None = None,
) -> list[MemoryHit]:
    """Blend term coverage, BM25, project, symbols and recency into one score.

    Returns the best ``limit`` hits (all when None), best first, ties by path.
    """
    top = max(bm25.values(), default=0.0)
    today = dt.date.today()
    want_syms = [s.casefold() for s in symbols]
    tests = [_tester(unit) for unit in plan.units]
    n_units = len(tests)
    recency: dict[str, float] = {}
    scored: list[tuple[float, str, tuple[object, ...]]] = []
    id_list = sorted(ids)
    for start in range(0, len(id_list), 500):
        chunk = id_list[start : start + 500]
        marks = ",".join("?" * len(chunk))
        cols = "id, path, title, project, summary, date, task_type, tags, symbols, body"
        sql = f"SELECT {cols} FROM experiences WHERE id IN ({marks})"  # noqa: S608
        for row in conn.execute(sql, chunk):
            rid, path, title, proj, summary, date, task_type, tags, syms, body = row
            head = f"{title}\n{tags}\n{syms}".casefold()
            summ: str | None = None
            text_body: str | None = None
            coverage = 0.0
            for test in tests:
                if test(head):
                    coverage += 1.0
                    continue
                if summ is None:
                    summ = summary.casefold()
                if test(summ):
                    coverage += 0.8
                    continue
                if text_body is None:
                    text_body = body.casefold()
                if test(text_body):
                    coverage += 0.6
            coverage = coverage / n_units if n_units else 0.0
            rel = bm25.get(rid, 0.0) / top if top > 0 else 0.0
            text = 0.7 * coverage + 0.3 * rel
            sym = 0.0
            if want_syms:
                doc_syms = {s.casefold() for s in syms.split("\n") if s}
                for s in want_syms:
                    if s in doc_syms:
                        sym += 1.0
                    else:
                        if text_body is None:
                            text_body = body.casefold()
                        if s in text_body:
                            sym += 0.4
                sym /= len(want_syms)
            if not plan.empty and text <= 0.0 and sym <= 0.0:
                continue
            if date not in recency:
                recency[date] = _recency(date, today)
            score = text + SYMBOL_WEIGHT * sym + RECENCY_WEIGHT * recency[date]
            if project and proj == project:
                score += PROJECT_BOOST
            scored.append((round(score, 6), path, (title, proj, summary, date, task_type)))
    scored.sort(key=lambda item: (-item[0], item[1]))
    if limit is not None:
        scored = scored[:limit]
    hits: list[MemoryHit] = []
    for score, path, (title, proj, summary, date, task_type) in scored:
        hits.append(
            MemoryHit(
                path=path,
                title=str(title),
                project=str(proj),
                score=score,
                summary=clamp_text(str(summary), 300),
                date=str(date),
                task_type=str(task_type),
            )
        )
    return hits
