"""Start-up: the bridge to its ready line, and the command line to ``--version``.

``bridge_start``: the baseline is the floor any Python bridge pays (interpreter start
plus importing httpx, starlette, uvicorn, sse-starlette, pydantic, sqlite-utils and
tree-sitter); the ratio shows what the bridge adds on top of it.

``cli_start``: ``agent-shell-bridge --version`` against ``python -c pass``; a
sub-command imports only its own modules, so this stays near the interpreter's start.
"""

from __future__ import annotations

import asyncio
import sys
import time
from pathlib import Path

from .bridgeproc import spawn_bridge
from .common import Figure, Scale, bridge_command, clean_env, median

__all__ = ["run"]

IMPORTS = (
    "import httpx, starlette.applications, uvicorn, sse_starlette, pydantic, "
    "sqlite_utils, tree_sitter, tree_sitter_bash"
)


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


async def _bare_import() -> float:
    return await _timed(sys.executable, "-c", IMPORTS)


async def _cli_start(runs: int) -> Figure:
    version = [*bridge_command(), "--version"]
    bare = [sys.executable, "-c", "pass"]
    await _timed(*version)  # warm the page cache for both sides
    await _timed(*bare)
    cli_s = [await _timed(*version) for _ in range(runs)]
    bare_s = [await _timed(*bare) for _ in range(runs)]
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


async def run(scale: Scale, work: Path) -> list[Figure]:
    bridge_s: list[float] = []
    bare_s: list[float] = []
    await _bare_import()  # warm the page cache for both sides
    for i in range(scale.startup_runs + 1):
        async with spawn_bridge(work / f"start-{i}") as bridge:
            ready = bridge.ready_s
        if i:  # the first run only warms caches
            bridge_s.append(ready)
        bare_s.append(await _bare_import())
    return [
        Figure(
            key="bridge_start",
            title="Bridge start (spawn → ready line)",
            unit="ms",
            value=median(bridge_s) * 1000,
            baseline=median(bare_s[1:] or bare_s) * 1000,
            baseline_label="python -c 'import <same deps>'",
            better="lower",
            details={"runs": len(bridge_s)},
        ),
        await _cli_start(max(3, scale.startup_runs)),
    ]
