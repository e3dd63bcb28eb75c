"""Memory: reindexing 10,000 experience files, search latency and recall@5.

Baselines: for reindexing, reading the same files without indexing them (the I/O
floor); for search latency and for recall, a naive substring search — a ``LIKE``
scan over the same SQLite table ranking rows by how many query words they contain.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable
from pathlib import Path

from agent_shell_bridge.memory.index import MemoryIndex
from agent_shell_bridge.memory.synthetic import (
    LabelledQuery,
    SyntheticCorpus,
    generate,
    recall_at_k,
    write_corpus,
)

from .common import Figure, Scale, median, percentile

__all__ = ["run"]

K = 5
ROUNDS = 3  # each labelled query is timed this many times
_COLUMNS = ("title", "tags", "symbols", "summary", "body")


def _like(term: str) -> str:
    escaped = term.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


def naive_search(conn: sqlite3.Connection, query: str, limit: int = K) -> list[str]:
    """Rows ranked by how many of the query's words they contain as substrings."""
    words = [w for w in query.split() if w]
    if not words:
        return []
    one = "(" + " OR ".join(f"{c} LIKE ? ESCAPE '\\'" for c in _COLUMNS) + ")"
    matched = " + ".join(one for _ in words)
    params = [_like(w) for w in words for _ in _COLUMNS]
    sql = (
        f"SELECT path FROM (SELECT path, id, {matched} AS n FROM experiences) "  # noqa: S608
        "WHERE n > 0 ORDER BY n DESC, id LIMIT ?"
    )
    return [row[0] for row in conn.execute(sql, (*params, limit))]


def _naive_recall(conn: sqlite3.Connection, corpus: SyntheticCorpus, paths: list[Path]) -> float:
    found = 0
    for lq in corpus.queries:
        want = {str(paths[i].resolve()) for i in lq.relevant}
        if want & set(naive_search(conn, lq.query)):
            found += 1
    return found / len(corpus.queries) if corpus.queries else 0.0


def _time_queries(
    run_one: Callable[[LabelledQuery], object], queries: list[LabelledQuery]
) -> list[float]:
    samples: list[float] = []
    for _ in range(ROUNDS):
        for lq in queries:
            started = time.perf_counter()
            run_one(lq)
            samples.append((time.perf_counter() - started) * 1000)
    return samples


async def run(scale: Scale, work: Path) -> list[Figure]:
    corpus = generate(scale.memory_files, seed=7, n_queries=scale.memory_queries)
    base = work / "projects"
    paths = write_corpus(base, corpus)
    roots = sorted({p.parent.parent.parent for p in paths})

    started = time.perf_counter()
    total = sum(len(p.read_bytes()) for p in paths)
    read_s = time.perf_counter() - started

    with MemoryIndex(work / "index") as index:
        started = time.perf_counter()
        stats = index.reindex(roots)
        reindex_s = time.perf_counter() - started
        indexed = index.count()
        if indexed != len(paths):
            raise RuntimeError(f"indexed {indexed} of {len(paths)} files ({stats.to_dict()})")
        conn = sqlite3.connect(index.db_path)
        try:
            search_ms = _time_queries(
                lambda lq: index.search(lq.query, project=lq.project, symbols=lq.symbols, limit=K),
                corpus.queries,
            )
            naive_ms = _time_queries(lambda lq: naive_search(conn, lq.query), corpus.queries)
            recall = recall_at_k(index, corpus, paths, k=K)
            naive_recall = _naive_recall(conn, corpus, paths)
        finally:
            conn.close()
    details = {"files": len(paths), "bytes": total, "queries": len(corpus.queries)}
    return [
        Figure(
            key="memory_reindex",
            title=f"Memory: reindex {len(paths):,} files",
            unit="s",
            value=reindex_s,
            baseline=read_s,
            baseline_label="reading the same files",
            better="lower",
            details=details,
        ),
        Figure(
            key="memory_search_median",
            title="Memory: search latency, median",
            unit="ms",
            value=median(search_ms),
            baseline=median(naive_ms),
            baseline_label="LIKE scan over the same table",
            better="lower",
            details=details,
        ),
        Figure(
            key="memory_search_p95",
            title="Memory: search latency, p95",
            unit="ms",
            value=percentile(search_ms, 95),
            baseline=percentile(naive_ms, 95),
            baseline_label="LIKE scan over the same table",
            better="lower",
            details=details,
        ),
        Figure(
            key="memory_recall",
            title="Memory: recall@5 on labelled queries",
            unit="",
            value=recall,
            baseline=naive_recall,
            baseline_label="naive substring match",
            better="higher",
            details=details,
        ),
    ]
