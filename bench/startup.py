"""Start-up: the bridge to its ready line, ``--version``, and a one-shot memory search.

``bridge_start``: the baseline is the floor any Python bridge of this kind pays
(interpreter start plus importing httpx, starlette, uvicorn, sse-starlette, pydantic,
sqlite-utils and tree-sitter). The bridge loads only the web server before its ready
line (the method areas, pydantic, httpx, tree-sitter and sqlite-utils load with the
first call that needs them), so it can come in under that floor; the details give
what it is measured against too: ``python -c`` importing only the web server's
packages, and the time from spawn to the answer of the first ``initialize``.

``cli_start``: ``agent-shell-bridge --version`` against ``python -c pass``; a
sub-command imports only its own modules, so this stays near the interpreter's start.

``memory_search_oneshot``: ``agent-shell-bridge memory search`` on an index of 430
experience files against a fresh ``python -c`` that imports ``sqlite3`` and runs the
raw FTS5 ``MATCH`` queries of the same search terms on the same index (the memory
benchmark's baseline), i.e. the least any one-shot search process pays.

The bridge package is byte-compiled first (:func:`~bench.common.compile_bridge`).
Runs of a figure and of its baseline alternate, so load from other work on the
machine falls on both.
"""

from __future__ import annotations

import asyncio
import sys
import time
from pathlib import Path

from agent_shell_bridge.memory.index import MemoryIndex
from agent_shell_bridge.memory.query import fts_string, plan_query
from agent_shell_bridge.memory.synthetic import generate, write_corpus

from .bridgeproc import rpc, spawn_bridge
from .common import Figure, Scale, bridge_command, clean_env, compile_bridge, median

__all__ = ["run"]

IMPORTS = (
    "import httpx, starlette.applications, uvicorn, sse_starlette, pydantic, "
    "sqlite_utils, tree_sitter, tree_sitter_bash"
)
SERVER_IMPORTS = "import starlette.applications, uvicorn, sse_starlette"
ONESHOT_FILES = 430
ONESHOT_MIN_RUNS = 5

# The baseline process of ``memory_search_oneshot``: argv is the database, then one
# (table, MATCH string) pair per index the query's terms go to.
RAW_FTS = """\
import sqlite3, sys
conn = sqlite3.connect(sys.argv[1])
args = sys.argv[2:]
for table, match in zip(args[::2], args[1::2]):
    conn.execute(
        f"SELECT e.path FROM {table} JOIN experiences e ON e.id = {table}.rowid "
        f"WHERE {table} MATCH ? ORDER BY rank LIMIT 5",
        (match,),
    ).fetchall()
"""


async def _timed(*argv: str) -> float:
    started = time.perf_counter()
    process = await asyncio.create_subprocess_exec(
        *argv,
        env=clean_env(),
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.DEVNULL,
    )
    code = await process.wait()
    if code != 0:
        raise RuntimeError(f"{' '.join(argv)} failed with {code}")
    return time.perf_counter() - started


async def _alternate(runs: int, *commands: list[str]) -> list[list[float]]:
    """Wall times of each command, run in turn ``runs`` times after one warm-up each."""
    for argv in commands:
        await _timed(*argv)  # warm the page cache
    times: list[list[float]] = [[] for _ in commands]
    for _ in range(runs):
        for argv, out in zip(commands, times, strict=True):
            out.append(await _timed(*argv))
    return times


async def _cli_start(runs: int) -> Figure:
    version = [*bridge_command(), "--version"]
    bare = [sys.executable, "-c", "pass"]
    cli_s, bare_s = await _alternate(runs, version, bare)
    return Figure(
        key="cli_start",
        title="CLI start (agent-shell-bridge --version)",
        unit="ms",
        value=median(cli_s) * 1000,
        baseline=median(bare_s) * 1000,
        baseline_label="python -c pass",
        better="lower",
        details={"runs": runs},
    )


async def _bridge_start(scale: Scale, work: Path) -> Figure:
    bridge_s: list[float] = []
    first_call_s: list[float] = []
    bare_s: list[float] = []
    server_s: list[float] = []
    await _timed(sys.executable, "-c", IMPORTS)  # warm the page cache for both sides
    await _timed(sys.executable, "-c", SERVER_IMPORTS)
    for i in range(scale.startup_runs + 1):
        started = time.perf_counter()
        async with spawn_bridge(work / f"start-{i}") as bridge:
            ready = bridge.ready_s
            async with bridge.client() as client:
                await rpc(client, "initialize", {"clientInfo": {"name": "bench"}})
            answered = time.perf_counter() - started
        if i:  # the first run only warms caches
            bridge_s.append(ready)
            first_call_s.append(answered)
        bare_s.append(await _timed(sys.executable, "-c", IMPORTS))
        server_s.append(await _timed(sys.executable, "-c", SERVER_IMPORTS))
    server_ms = median(server_s[1:] or server_s) * 1000
    value = median(bridge_s) * 1000
    return Figure(
        key="bridge_start",
        title="Bridge start (spawn → ready line)",
        unit="ms",
        value=value,
        baseline=median(bare_s[1:] or bare_s) * 1000,
        baseline_label="python -c 'import <same deps>'",
        better="lower",
        details={
            "runs": len(bridge_s),
            "server_deps_only_ms": round(server_ms, 1),
            "ratio_to_server_deps_only": round(value / server_ms, 3) if server_ms else None,
            "spawn_to_first_initialize_answered_ms": round(median(first_call_s) * 1000, 1),
        },
    )


async def _memory_search_oneshot(scale: Scale, work: Path) -> Figure:
    corpus = generate(ONESHOT_FILES, seed=7, n_queries=20)
    paths = await asyncio.to_thread(write_corpus, work / "projects", corpus)
    roots = sorted({p.parent.parent.parent for p in paths})
    index_dir = work / "index"
    with MemoryIndex(index_dir) as index:
        await asyncio.to_thread(index.reindex, roots)
        if index.count() != len(paths):
            raise RuntimeError(f"indexed {index.count()} of {len(paths)} files")
        db = str(index.db_path)
    lq = corpus.queries[0]
    plan = plan_query(lq.query)
    raw: list[str] = []
    for table, terms in (
        ("experiences_fts", plan.fts_terms),
        ("experiences_short", plan.like_terms),
    ):
        if terms:
            raw += [table, " OR ".join(fts_string(t) for t in terms)]
    search = [
        *bridge_command(),
        *("memory", "search", "--memory-dir", str(index_dir), "--project", lq.project),
        lq.query,
    ]
    runs = max(ONESHOT_MIN_RUNS, scale.startup_runs)
    cli_s, bare_s = await _alternate(runs, search, [sys.executable, "-c", RAW_FTS, db, *raw])
    return Figure(
        key="memory_search_oneshot",
        title=f"Memory: one-shot `memory search`, {len(paths)} files",
        unit="ms",
        value=median(cli_s) * 1000,
        baseline=median(bare_s) * 1000,
        baseline_label="python -c: import sqlite3 + the raw FTS5 MATCH queries",
        better="lower",
        details={"files": len(paths), "runs": runs, "max_ms": round(max(cli_s) * 1000, 1)},
    )


async def run(scale: Scale, work: Path) -> list[Figure]:
    await asyncio.to_thread(compile_bridge)
    return [
        await _bridge_start(scale, work),
        await _cli_start(max(3, scale.startup_runs)),
        await _memory_search_oneshot(scale, work / "oneshot"),
    ]
