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

from .experience import clamp_text
from .hit import MemoryHit
from .query import QueryPlan

__all__ = ["score_candidates"]

PROJECT_BOOST = 0.3
SYMBOL_WEIGHT = 0.5
RECENCY_WEIGHT = 0.1
RECENCY_HALF_LIFE_DAYS = 180.0

_ASCII_WORD = re.compile(r"^[a-z0-9_]+$")


def _present(unit: str, text: str) -> bool:
    if len(unit) < 3 and _ASCII_WORD.match(unit):
        # Short ASCII words ("go", "ci") count only as whole words.
        return re.search(rf"(?<![a-z0-9]){re.escape(unit)}(?![a-z0-9])", text) is not None
    return unit in text


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
) -> list[MemoryHit]:
    """Blend term coverage, BM25, project, symbols and recency into one score."""
    top = max(bm25.values(), default=0.0)
    today = dt.date.today()
    want_syms = [s.casefold() for s in symbols]
    hits: list[MemoryHit] = []
    id_list = sorted(ids)
    for start in range(0, len(id_list), 500):
        chunk = id_list[start : start + 500]
        marks = ",".join("?" * len(chunk))
        cols = "id, path, title, project, summary, date, task_type, tags, symbols, body"
        sql = f"SELECT {cols} FROM experiences WHERE id IN ({marks})"  # noqa: S608
        for row in conn.execute(sql, chunk):
            rid, path, title, proj, summary, date, task_type, tags, syms, body = row
            head = f"{title}\n{tags}\n{syms}".casefold()
            summ = summary.casefold()
            text_body = body.casefold()
            coverage = 0.0
            for unit in plan.units:
                if _present(unit, head):
                    coverage += 1.0
                elif _present(unit, summ):
                    coverage += 0.8
                elif _present(unit, text_body):
                    coverage += 0.6
            coverage = coverage / len(plan.units) if plan.units else 0.0
            rel = bm25.get(rid, 0.0) / top if top > 0 else 0.0
            text = 0.7 * coverage + 0.3 * rel
            sym = 0.0
            if want_syms:
                doc_syms = {s.casefold() for s in syms.split("\n") if s}
                for s in want_syms:
                    if s in doc_syms:
                        sym += 1.0
                    elif s in text_body:
                        sym += 0.4
                sym /= len(want_syms)
            if not plan.empty and text <= 0.0 and sym <= 0.0:
                continue
            score = text + SYMBOL_WEIGHT * sym + RECENCY_WEIGHT * _recency(date, today)
            if project and proj == project:
                score += PROJECT_BOOST
            hits.append(
                MemoryHit(
                    path=path,
                    title=title,
                    project=proj,
                    score=round(score, 6),
                    summary=clamp_text(summary, 300),
                    date=date,
                    task_type=task_type,
                )
            )
    return hits
