"""One batch Emacs running a bench file's form, and the JSON figures it prints.

Every Emacs bench prints its result as one line ``BENCH-JSON {...}`` on stdout; this
starts Emacs with the package and the bench file loaded, waits for it, and returns
that line's data (the last such line, so a form may print progress before it).
"""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
from typing import Any

from .common import emacs_args

__all__ = ["PREFIX", "bench_emacs", "run_batch"]

PREFIX = b"BENCH-JSON "


def bench_emacs() -> str:
    """The Emacs the benches run: ``$BENCH_EMACS``, else ``emacs`` from PATH."""
    return os.environ.get("BENCH_EMACS", "emacs")


async def run_batch(
    bench_file: str,
    *forms: str,
    cwd: Path,
    env: dict[str, str] | None = None,
    timeout_s: float | None = None,
) -> dict[str, Any]:
    """Run ``forms`` in a batch Emacs with ``bench_file`` loaded; its BENCH-JSON data."""
    process = await asyncio.create_subprocess_exec(
        *emacs_args(bench_emacs(), bench_file, *forms),
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        cwd=cwd,
        env=env,
    )
    try:
        out, err = await asyncio.wait_for(process.communicate(), timeout_s)
    except TimeoutError:
        process.kill()
        await process.wait()
        raise RuntimeError(f"emacs running {bench_file} did not finish in {timeout_s} s") from None
    lines = [line for line in out.splitlines() if line.startswith(PREFIX)]
    if process.returncode != 0 or not lines:
        raise RuntimeError(f"emacs failed ({process.returncode}): {err.decode(errors='replace')}")
    data: dict[str, Any] = json.loads(lines[-1][len(PREFIX) :])
    return data
