"""Ranking of search candidates: one score from several signals.

Term coverage (field-weighted: title, tags and symbols count most, then the summary,
then the body) carries most weight and works for terms of any length; BM25 from the
full-text indexes refines it; the current project, matching symbols and recency add
fixed boosts so that a close match from elsewhere can still beat a weak local one.
"""

from __future__ import annotations

import bisect
import datetime as dt
import math
import re
import sqlite3

from .hit import MemoryHit, clamp_text
from .query import QueryPlan

__all__ = ["score_candidates"]

PROJECT_BOOST = 0.3
SYMBOL_WEIGHT = 0.5
RECENCY_WEIGHT = 0.1
RECENCY_HALF_LIFE_DAYS = 180.0

_ASCII_WORD = re.compile(r"^[a-z0-9_]+$")

#: Where a term counts most: title, tags and symbols; the summary; the body; the
#: search terms (how someone might describe the problem, written for the lesson).
FIELD_WEIGHTS = (1.0, 0.8, 0.6, 0.5)


def _bounded(term: str) -> re.Pattern[str] | None:
    """Short ASCII words ("go", "ci") count only as whole words: their pattern."""
    if len(term) < 3 and _ASCII_WORD.match(term):
        return re.compile(rf"(?<![a-z0-9]){re.escape(term)}(?![a-z0-9])")
    return None


class _Weigher:
    """The weight of the best field each of the query's terms occurs in.

    A candidate's fields are joined best first, so a term's first occurrence is in
    the best field it occurs in: one ``str.find`` per term and candidate.
    """

    def __init__(self, terms: list[str]) -> None:
        self._terms = terms
        self._bounded = [(i, p) for i, t in enumerate(terms) if (p := _bounded(t)) is not None]

    def weights(self, fields: tuple[str, ...]) -> list[float]:
        folded = [f.casefold() for f in fields]
        text = "\0".join(folded)
        ends: list[int] = []
        end = -1
        for f in folded:
            end += len(f) + 1
            ends.append(end)
        found = list(map(text.find, self._terms))
        for i, pattern in self._bounded:
            m = pattern.search(text)
            found[i] = m.start() if m is not None else -1
        cut = bisect.bisect_left
        return [FIELD_WEIGHTS[cut(ends, at)] if at >= 0 else 0.0 for at in found]


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
    relevance: dict[int, float],
    project: str | None,
    symbols: list[str],
    limit: int | None = None,
    *,
    accepted_only: bool = False,
) -> list[MemoryHit]:
    """Blend term coverage, BM25, project, symbols and recency into one score.

    ``relevance`` holds each candidate's BM25 as a share (0..1) of the best found.

    Returns the best ``limit`` hits (all when None), best first, ties by path.
    """
    today = dt.date.today()
    want_syms = [s.casefold() for s in symbols]
    # Every term once: the units first, then their stand-ins (stems, synonyms, the
    # project's words) as (weight, term index) per unit, best weight first.
    terms: list[str] = list(plan.units)
    where = {t: i for i, t in enumerate(terms)}
    alternatives: list[list[tuple[float, int]]] = [[] for _ in plan.units]
    for e in sorted(plan.expansions, key=lambda e: -e.weight):
        if 0 <= e.unit < len(alternatives):
            if e.term not in where:
                where[e.term] = len(terms)
                terms.append(e.term)
            alternatives[e.unit].append((e.weight, where[e.term]))
    weigher = _Weigher(terms)
    n_units = len(plan.units)
    recency: dict[str, float] = {}
    scored: list[tuple[float, str, tuple[object, ...]]] = []
    id_list = sorted(ids)
    shown = (
        "status IN ('accepted', '')" if accepted_only else "status NOT IN ('rejected', 'forgotten')"
    )
    for start in range(0, len(id_list), 500):
        chunk = id_list[start : start + 500]
        marks = ",".join("?" * len(chunk))
        cols = (
            "id, path, title, project, summary, date, task_type, tags, symbols, body, "
            "search_terms, status"
        )
        sql = f"SELECT {cols} FROM experiences WHERE id IN ({marks}) AND {shown}"  # noqa: S608
        for row in conn.execute(sql, chunk):
            (
                rid,
                path,
                title,
                proj,
                summary,
                date,
                task_type,
                tags,
                syms,
                body,
                terms_text,
                status,
            ) = row
            weight = weigher.weights((f"{title}\n{tags}\n{syms}", summary, body, terms_text))
            coverage = 0.0
            for u in range(n_units):
                got = weight[u]
                for w, alt in alternatives[u]:
                    if w <= got:
                        break  # an exact match is never outweighed; the rest weigh less
                    got = max(got, w * weight[alt])
                coverage += got
            coverage = coverage / n_units if n_units else 0.0
            rel = relevance.get(rid, 0.0)
            text = 0.7 * coverage + 0.3 * rel
            sym = 0.0
            if want_syms:
                doc_syms = {s.casefold() for s in syms.split("\n") if s}
                for s in want_syms:
                    if s in doc_syms:
                        sym += 1.0
                    elif s in body.casefold():
                        sym += 0.4
                sym /= len(want_syms)
            if not plan.empty and text <= 0.0 and sym <= 0.0:
                continue
            if date not in recency:
                recency[date] = _recency(date, today)
            score = text + SYMBOL_WEIGHT * sym + RECENCY_WEIGHT * recency[date]
            if project and proj == project:
                score += PROJECT_BOOST
            scored.append((round(score, 6), path, (title, proj, summary, date, task_type, status)))
    scored.sort(key=lambda item: (-item[0], item[1]))
    if limit is not None:
        scored = scored[:limit]
    hits: list[MemoryHit] = []
    for score, path, (title, proj, summary, date, task_type, status) in scored:
        hits.append(
            MemoryHit(
                path=path,
                title=str(title),
                project=str(proj),
                score=score,
                summary=clamp_text(str(summary), 300),
                date=str(date),
                task_type=str(task_type),
                status=str(status),
            )
        )
    return hits
