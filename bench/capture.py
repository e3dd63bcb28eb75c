"""Output capture: a command printing a gigabyte, through ``ProcessRunner.run_shell``.

Throughput is compared with the same command piped to ``cat > /dev/null`` (what the
pipe itself costs); the runner also writes the full output to its log file and keeps
head and tail lines, so the ratio shows what capturing costs. Peak memory growth is
measured in a fresh interpreter (VmHWM after minus VmRSS before) and set against the
number of bytes printed: it should be a tiny, constant fraction. Three interleaved
pairs are run and the medians compared (the largest growth is reported); every
pair's ratio is in the details.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import sys
import time
from pathlib import Path

from .common import Figure, Scale, clean_env, median

__all__ = ["command_for", "run"]

ROOT = Path(__file__).resolve().parent.parent
LINE = "a" * 99  # with its newline, 100 bytes a line
_PAIRS = 3


def command_for(size: int) -> str:
    return f"yes {LINE} | head -c {size}"


async def _baseline(command: str) -> float:
    started = time.perf_counter()
    process = await asyncio.create_subprocess_exec(
        "bash",
        "--noprofile",
        "--norc",
        "-c",
        f"{command} | cat > /dev/null",
        stdin=asyncio.subprocess.DEVNULL,
    )
    if await process.wait() != 0:
        raise RuntimeError("the baseline pipeline failed")
    return time.perf_counter() - started


async def _captured(command: str, work: Path) -> dict[str, float]:
    await asyncio.to_thread(work.mkdir, parents=True, exist_ok=True)
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "bench.capture_child",
        command,
        str(work),
        stdout=asyncio.subprocess.PIPE,
        stdin=asyncio.subprocess.DEVNULL,
        env=clean_env(),
        cwd=ROOT,
    )
    out, _ = await process.communicate()
    if process.returncode != 0:
        raise RuntimeError(f"the capture child failed with {process.returncode}")
    report: dict[str, float] = json.loads(out)
    return report


async def run(scale: Scale, work: Path) -> list[Figure]:
    size = scale.capture_bytes
    command = command_for(size)
    # Interleaved pairs, medians of each side: on a shared machine one pair alone
    # swings by a factor of two either way.
    baselines: list[float] = []
    reports: list[dict[str, float]] = []
    for n in range(_PAIRS):
        baselines.append(await _baseline(command))
        report = await _captured(command, work / f"run-{n}")
        if report["exit_code"] != 0 or report["log_bytes"] != size:
            raise RuntimeError(f"the captured run went wrong: {report}")
        # Each run starts as the first did: no earlier gigabyte still being written back.
        await asyncio.to_thread(shutil.rmtree, work / f"run-{n}")
        reports.append(report)
    growth = max(max(0.0, (r["hwm_after_kib"] - r["rss_before_kib"]) * 1024) for r in reports)
    seconds = median([r["seconds"] for r in reports])
    baseline_s = median(baselines)
    mib = size / 1024**2
    details = {
        "bytes": size,
        "pairs": _PAIRS,
        "seconds": [r["seconds"] for r in reports],
        "baseline_seconds": baselines,
        "pair_ratios": [b / r["seconds"] for b, r in zip(baselines, reports, strict=True)],
        **reports[-1],
    }
    return [
        Figure(
            key="capture_throughput",
            title=f"Output capture: {mib:,.0f} MiB through run_shell",
            unit="MiB/s",
            value=mib / seconds,
            baseline=mib / baseline_s,
            baseline_label=f"same command piped to cat > /dev/null (medians of {_PAIRS} pairs)",
            better="higher",
            details=details,
        ),
        Figure(
            key="capture_peak_memory",
            title="Output capture: peak RSS growth",
            unit="MiB",
            value=growth / 1024**2,
            baseline=mib,
            baseline_label="bytes printed",
            better="lower",
            details=details,
        ),
    ]
