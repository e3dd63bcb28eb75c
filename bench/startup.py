"""Bridge start: spawn to ready line, against a bare interpreter importing the same libraries.

The baseline is the floor any Python bridge pays (interpreter start plus importing
httpx, starlette, uvicorn, sse-starlette, pydantic, sqlite-utils and tree-sitter);
the ratio shows what the bridge adds on top of it.
"""

from __future__ import annotations

import asyncio
import sys
import time
from pathlib import Path

from .bridgeproc import spawn_bridge
from .common import Figure, Scale, clean_env, median

__all__ = ["run"]

IMPORTS = (
    "import httpx, starlette.applications, uvicorn, sse_starlette, pydantic, "
    "sqlite_utils, tree_sitter, tree_sitter_bash"
)


async def _bare_import() -> float:
    started = time.perf_counter()
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-c", IMPORTS, env=clean_env(), stdin=asyncio.subprocess.DEVNULL
    )
    code = await process.wait()
    if code != 0:
        raise RuntimeError(f"python -c {IMPORTS!r} failed with {code}")
    return time.perf_counter() - started


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
        )
    ]
