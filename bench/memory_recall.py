"""Memory: finding a lesson from the words a person uses later (the labelled corpus).

The corpus in ``tests/fixtures/memory/recall/`` holds 60 hand-written lessons and
450 generated distractors across three projects, and queries phrased as someone
would describe the same problem months later (a third share no content word with
their lesson). Each query runs in its project, as a task would.

Baseline, in the same run on the same index: a raw FTS5 ``MATCH`` of every word
of the query (no stop words dropped, no stems or synonyms), best rank first. Reported: recall@5, MRR
(reciprocal rank of the lesson within the first 10, 0 when absent) and the median
search time; the details split the figures into the tuning queries, the held-out
ones, the "fresh" ones (written after the synonym table was tuned on the other two,
so the only part no change has looked at: the honest estimate for new wording),
and into queries sharing a word with their lesson or not.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import sqlite3
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from agent_shell_bridge.memory.index import MemoryIndex

from .common import Figure, Scale, median
from .memory import raw_fts_search

__all__ = ["CORPUS", "load_queries", "run"]

CORPUS = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "memory" / "recall"
PROJECTS = ("shopfront", "ingest", "docs-cn")
K = 5
MRR_DEPTH = 10

Search = Callable[[dict[str, Any], int], list[str]]


def load_queries() -> list[dict[str, Any]]:
    data = json.loads((CORPUS / "queries.json").read_text(encoding="utf-8"))
    queries: list[dict[str, Any]] = data["queries"]
    return queries


def _copy_corpus(work: Path) -> dict[str, Path]:
    roots: dict[str, Path] = {}
    for project in PROJECTS:
        dest = work / project
        shutil.copytree(CORPUS / project, dest)
        roots[project] = dest.resolve()
    return roots


def _rank(found: list[str], want: str) -> int | None:
    for n, path in enumerate(found, start=1):
        if path == want:
            return n
    return None


def _score(
    search: Search, queries: list[dict[str, Any]], base: Path
) -> tuple[dict[str, dict[str, float]], list[str]]:
    """recall@K and MRR overall and per group; the queries missed at K."""
    groups: dict[str, list[int | None]] = {}
    misses: list[str] = []
    for q in queries:
        want = str((base / q["lesson"]).resolve())
        rank = _rank(search(q, MRR_DEPTH), want)
        if rank is None or rank > K:
            misses.append(q["query"])
        for g in (
            "all",
            q["split"],
            "shares_word" if q["shares_content_word"] else "no_shared_word",
        ):
            groups.setdefault(g, []).append(rank)
    out = {
        g: {
            "recall@5": round(sum(1 for r in ranks if r is not None and r <= K) / len(ranks), 4),
            "mrr": round(sum(1.0 / r for r in ranks if r is not None) / len(ranks), 4),
            "n": len(ranks),
        }
        for g, ranks in sorted(groups.items())
    }
    return out, misses


def _time(
    ours: Search, raw: Search, queries: list[dict[str, Any]], rounds: int
) -> tuple[list[float], list[float]]:
    """Milliseconds per query of both searches, taken in turns so that a change of
    load on the machine weighs on both alike."""
    samples: tuple[list[float], list[float]] = ([], [])
    for _ in range(rounds):
        for q in queries:
            for search, out in ((ours, samples[0]), (raw, samples[1])):
                started = time.perf_counter()
                search(q, K)
                out.append((time.perf_counter() - started) * 1000)
    return samples


async def run(scale: Scale, work: Path) -> list[Figure]:
    return await asyncio.to_thread(_measure, scale, work)


def _measure(scale: Scale, work: Path) -> list[Figure]:
    queries = load_queries()
    rounds = 1 if scale.name == "small" else 5
    work.mkdir(parents=True, exist_ok=True)
    roots = _copy_corpus(work / "projects")
    base = work / "projects"
    with MemoryIndex(work / "index") as index:
        for project, root in roots.items():
            index.sync_root(root, project)
        files = index.count()
        conn = sqlite3.connect(index.db_path)

        def ours(q: dict[str, Any], limit: int) -> list[str]:
            return [h.path for h in index.search(q["query"], project=q["project"], limit=limit)]

        def raw(q: dict[str, Any], limit: int) -> list[str]:
            return raw_fts_search(conn, q["query"], limit)

        try:
            ours(queries[0], K)  # warm the connection and caches alike
            raw(queries[0], K)
            ours_ms, raw_ms = _time(ours, raw, queries, rounds)
            ours_fig, ours_misses = _score(ours, queries, base)
            raw_fig, raw_misses = _score(raw, queries, base)
        finally:
            conn.close()
    details: dict[str, Any] = {
        "files": files,
        "queries": len(queries),
        "ours": ours_fig,
        "raw_fts": raw_fig,
        "missed": ours_misses,
        "raw_fts_missed": len(raw_misses),
    }
    return [
        Figure(
            key="memory_recall_corpus",
            title="Memory: recall@5, labelled corpus (people's words)",
            unit="",
            value=ours_fig["all"]["recall@5"],
            baseline=raw_fig["all"]["recall@5"],
            baseline_label="raw FTS5 MATCH on the same files",
            better="higher",
            details=details,
        ),
        Figure(
            key="memory_recall_mrr",
            title="Memory: MRR, labelled corpus",
            unit="",
            value=ours_fig["all"]["mrr"],
            baseline=raw_fig["all"]["mrr"],
            baseline_label="raw FTS5 MATCH on the same files",
            better="higher",
            details={"ours": ours_fig, "raw_fts": raw_fig},
        ),
        Figure(
            key="memory_recall_search_median",
            title="Memory: search median, labelled corpus",
            unit="ms",
            value=median(ours_ms),
            baseline=median(raw_ms),
            baseline_label="raw FTS5 MATCH on the same files",
            better="lower",
            details={"files": files, "samples": len(ours_ms)},
        ),
    ]
