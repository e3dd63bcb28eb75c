"""Memory: reindexing 10,000 experience files, search latency and recall@5.

Baselines: for reindexing, reading the same files without indexing them (the I/O
floor); for search latency and recall, a raw FTS5 ``MATCH`` on the same index: every
word of the query (no stop words dropped, no stems, no synonyms) matched in the
trigram table and the short-term table, each ``ORDER BY rank LIMIT 5``, with no
candidate scoring, no project, symbol or recency ranking. Recall is also reported
per query set (query language, with or without a symbol) for both, and for a naive
``LIKE`` substring scan. ``memory_search_cli`` times one ``agent-shell-bridge memory
search`` process on the same index against ``python -c pass``.
"""

from __future__ import annotations

import asyncio
import re
import sqlite3
import sys
import time
import unicodedata
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path

from agent_shell_bridge.memory.index import MemoryIndex
from agent_shell_bridge.memory.query import fts_string
from agent_shell_bridge.memory.synthetic import (
    LabelledQuery,
    SyntheticCorpus,
    generate,
    write_corpus,
)

from .common import (
    Figure,
    Scale,
    bridge_command,
    clean_env,
    compile_bridge,
    median,
    percentile,
)

__all__ = ["run"]

K = 5
ROUNDS = 3  # each labelled query is timed this many times
CLI_RUNS = 5
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


_CJK_RUN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff]+")
_WORD = re.compile(r"[^\W\u3400-\u4dbf\u4e00-\u9fff]+")


def plain_terms(query: str) -> tuple[list[str], list[str]]:
    """Every word of the query, as plain FTS5 would take it: no stop words dropped,
    no stems, no synonyms. Words of three or more characters (and Chinese
    trigrams) for the trigram table; shorter ones (Chinese pairs) for the other."""
    norm = unicodedata.normalize("NFKC", query).casefold()
    long_terms: list[str] = []
    short_terms: list[str] = []
    for word in _WORD.findall(norm):
        word = word.strip("_")
        if len(word) >= 3:
            long_terms.append(word)
        elif len(word) == 2:
            short_terms.append(word)
    for run in _CJK_RUN.findall(norm):
        if len(run) <= 2:
            short_terms.append(run)
            continue
        long_terms += [run[i : i + 3] for i in range(len(run) - 2)]
        short_terms += [run[i : i + 2] for i in range(len(run) - 1)]
    return list(dict.fromkeys(long_terms)), list(dict.fromkeys(short_terms))


def raw_fts_search(conn: sqlite3.Connection, query: str, limit: int = K) -> list[str]:
    """The baseline: raw FTS5 MATCH of the query's words on the same tables, best
    rank first; no candidate scoring, project, symbol or recency ranking."""
    found: list[str] = []
    for table, terms in zip(
        ("experiences_fts", "experiences_short"), plain_terms(query), strict=True
    ):
        if not terms:
            continue
        match = " OR ".join(fts_string(t) for t in terms)
        sql = (
            f"SELECT e.path FROM {table} JOIN experiences e ON e.id = {table}.rowid "  # noqa: S608
            f"WHERE {table} MATCH ? ORDER BY rank LIMIT ?"
        )
        found += [row[0] for row in conn.execute(sql, (match, limit))]
    return list(dict.fromkeys(found))[:limit]


def _query_set(lq: LabelledQuery) -> str:
    words = lq.query.split()
    cjk = sum(1 for w in words[:2] if any("\u4e00" <= ch <= "\u9fff" for ch in w))
    lang = ("english", "mixed", "chinese")[cjk]
    return f"{lang}+{'symbol' if lq.symbols else 'stack'}"


def _recalls(
    search: Callable[[LabelledQuery], list[str]], corpus: SyntheticCorpus, paths: list[Path]
) -> tuple[float, dict[str, float]]:
    """Overall recall@K and recall@K per query set."""
    hits: dict[str, list[bool]] = defaultdict(list)
    for lq in corpus.queries:
        want = {str(paths[i].resolve()) for i in lq.relevant}
        hits[_query_set(lq)].append(bool(want & set(search(lq))))
    every = [h for group in hits.values() for h in group]
    overall = sum(every) / len(every) if every else 0.0
    return overall, {k: round(sum(v) / len(v), 4) for k, v in sorted(hits.items())}


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


async def _process_s(*argv: str) -> float:
    started = time.perf_counter()
    process = await asyncio.create_subprocess_exec(
        *argv,
        env=clean_env(),
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.DEVNULL,
    )
    if await process.wait() != 0:
        raise RuntimeError(f"{' '.join(argv)} failed")
    return time.perf_counter() - started


async def _cli_search(index_dir: Path, lq: LabelledQuery) -> tuple[float, float]:
    """Median wall time of one-shot ``memory search`` and of ``python -c pass``."""
    search = [
        *bridge_command(),
        "memory",
        "search",
        "--memory-dir",
        str(index_dir),
        "--project",
        lq.project,
        lq.query,
    ]
    await _process_s(*search)  # warm caches
    cli = [await _process_s(*search) for _ in range(CLI_RUNS)]
    bare = [await _process_s(sys.executable, "-c", "pass") for _ in range(CLI_RUNS)]
    return median(cli), median(bare)


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

        def ours(lq: LabelledQuery) -> list[str]:
            hits = index.search(lq.query, project=lq.project, symbols=lq.symbols, limit=K)
            return [h.path for h in hits]

        try:
            search_ms = _time_queries(ours, corpus.queries)
            raw_ms = _time_queries(lambda lq: raw_fts_search(conn, lq.query), corpus.queries)
            recall, recall_sets = _recalls(ours, corpus, paths)
            raw_recall, raw_sets = _recalls(
                lambda lq: raw_fts_search(conn, lq.query), corpus, paths
            )
            naive_recall, naive_sets = _recalls(
                lambda lq: naive_search(conn, lq.query), corpus, paths
            )
        finally:
            conn.close()
    await asyncio.to_thread(compile_bridge)
    cli_s, bare_s = await _cli_search(work / "index", corpus.queries[0])
    details = {"files": len(paths), "bytes": total, "queries": len(corpus.queries)}
    recall_details = {
        **details,
        "by_query_set": recall_sets,
        "raw_fts_by_query_set": raw_sets,
        "naive_like": naive_recall,
        "naive_like_by_query_set": naive_sets,
        "below_raw_fts": sorted(k for k, v in recall_sets.items() if v < raw_sets.get(k, 0.0)),
    }
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
            baseline=median(raw_ms),
            baseline_label="raw FTS5 MATCH on the same index",
            better="lower",
            details=details,
        ),
        Figure(
            key="memory_search_p95",
            title="Memory: search latency, p95",
            unit="ms",
            value=percentile(search_ms, 95),
            baseline=percentile(raw_ms, 95),
            baseline_label="raw FTS5 MATCH on the same index",
            better="lower",
            details=details,
        ),
        Figure(
            key="memory_recall",
            title="Memory: recall@5 on labelled queries",
            unit="",
            value=recall,
            baseline=raw_recall,
            baseline_label="raw FTS5 MATCH on the same index",
            better="higher",
            details=recall_details,
        ),
        Figure(
            key="memory_search_cli",
            title="Memory: one-shot `memory search` command",
            unit="ms",
            value=cli_s * 1000,
            baseline=bare_s * 1000,
            baseline_label="python -c pass",
            better="lower",
            details={**details, "runs": CLI_RUNS},
        ),
    ]
