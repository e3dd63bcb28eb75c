"""The sessions dashboard's cost while many sessions stream at once.

Twenty real sessions (three at the small scale) on one real bridge get a turn at the
same moment: the scripted model calls ``read_file`` a few times (each call a state
change the dashboard redraws: running, then thinking) and streams a reply. A batch
Emacs (see ``agent-shell-dashboard-bench.el``) measures how late a timer ticking
every 10 ms runs meanwhile, with the dashboard and its mode line open, against the
same rounds with both closed, alternating. Batch Emacs does no redisplay, so the
figure covers the Lisp side: the hook, the coalescing and the row redraws. A second
figure is the dashboard's own time (its redraws, garbage collections aside) against
the whole round. The details give the garbage collection time of each round: with
twenty sessions streaming it, not the dashboard, sets how late the timer runs.
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import sys
from pathlib import Path
from typing import Any

from agent_shell_bridge.model.mock_script import MockScript, MockStep
from agent_shell_bridge.model.mock_server import MockServer

from .common import Figure, Scale, clean_env, emacs_args
from .stream import _project

__all__ = ["run"]

PREFIX = b"BENCH-JSON "
REPLY = "仪表盘 dashboard rows redraw while every session streams. 中文 ASCII 混排。\n"

# sessions, tool calls per turn, characters of the reply, rounds
SIZES: dict[str, tuple[int, int, int, int]] = {
    "small": (3, 1, 200, 1),
    "full": (20, 4, 2_000, 3),
}


def _steps(label: str, tools: int, chars: int) -> list[MockStep]:
    match = {"last_user_contains": f"[{label}]"}
    calls = [
        MockStep.model_validate(
            {
                "match": match,
                "tool_calls": [{"name": "read_file", "arguments": {"path": "README.md"}}],
            }
        )
        for _ in range(tools)
    ]
    text = (REPLY * (chars // len(REPLY) + 1))[:chars]
    reply = MockStep.model_validate({"match": match, "text": text, "chunk_size": 4, "delay_ms": 5})
    return [*calls, reply]


def _script(sessions: int, tools: int, chars: int, reps: int) -> MockScript:
    steps: list[MockStep] = []
    for r in range(reps):
        for kind in ("closed", "open", "gcclosed", "gcopen"):
            for n in range(1, sessions + 1):
                steps += _steps(f"{kind}-{r}-{n}", tools, chars)
    return MockScript(steps=steps)


def _median(runs: list[dict[str, Any]], key: str) -> float:
    return float(statistics.median(float(run[key]) for run in runs))


async def run(scale: Scale, work: Path) -> list[Figure]:
    emacs = os.environ.get("BENCH_EMACS", "emacs")
    sessions, tools, chars, reps = SIZES.get(scale.name, SIZES["full"])
    mock = MockServer(_script(sessions, tools, chars, reps))
    projects = [await asyncio.to_thread(_project, work / f"dashboard-{i}") for i in range(sessions)]
    home = work / "home-dashboard"
    home.mkdir(parents=True)
    memory = json.dumps(str(work / "memory-dashboard"))
    settings = f"(setq agent-shell-memory-dir {memory} agent-shell-context-window 10000000)"
    await mock.start()
    try:
        form = (
            f"(agent-shell-dashboard-bench-batch {json.dumps(mock.api_base)}"
            f" '({' '.join(json.dumps(str(p) + '/') for p in projects)}) {reps})"
        )
        env = clean_env(
            HOME=str(home),
            AGENT_SHELL_API_KEY="sk-bench",
            AGENT_SHELL_MODEL="mock-model",
            AGENT_SHELL_TEST_BRIDGE=str(Path(sys.executable).parent / "agent-shell-bridge"),
        )
        process = await asyncio.create_subprocess_exec(
            *emacs_args(emacs, "agent-shell-dashboard-bench.el", settings, form),
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            cwd=projects[0],
            env=env,
        )
        async with asyncio.timeout(600):
            out, err = await process.communicate()
    finally:
        await mock.stop()
    lines = [line for line in out.splitlines() if line.startswith(PREFIX)]
    if process.returncode != 0 or not lines:
        raise RuntimeError(f"emacs failed ({process.returncode}): {err.decode(errors='replace')}")
    data = json.loads(lines[-1][len(PREFIX) :])
    closed, opened = data["closed"], data["open"]
    closed_gc, opened_gc = data["closed_large_gc"], data["open_large_gc"]
    if not all(run["rows"] > 0 for run in opened):
        raise RuntimeError("the open dashboard redrew no row: it did not follow the sessions")
    details = {
        "sessions": sessions,
        "tools_per_turn": tools,
        "reply_chars": chars,
        "rounds": reps,
        "rows_redrawn": [run["rows"] for run in opened],
        "open": opened,
        "closed": closed,
        "target_ms": 25,
        # Garbage collection in the rounds, open and closed alike: what sets the lag.
        "gc_ms_per_round": [round(run["gc_ms"]) for run in closed + opened],
    }
    mib = data["gc_threshold"] // (1024 * 1024)
    large_gc = {
        "gc_cons_threshold": data["gc_threshold"],
        "open": opened_gc,
        "closed": closed_gc,
        "target_ms": 25,
        "gc_ms_per_round": [round(run["gc_ms"]) for run in closed_gc + opened_gc],
    }
    return [
        Figure(
            key="dashboard_timer_lag_p99_large_gc",
            title=(
                f"Dashboard: how late a 10 ms timer runs (p99), {sessions} sessions streaming,"
                f" gc-cons-threshold {mib} MiB"
            ),
            unit="ms",
            value=_median(opened_gc, "p99_ms"),
            baseline=max(_median(closed_gc, "p99_ms"), 0.001),
            baseline_label="the same turns with the dashboard closed",
            better="lower",
            details=large_gc,
        ),
        Figure(
            key="dashboard_timer_lag_p99",
            title=f"Dashboard: how late a 10 ms timer runs (p99), {sessions} sessions streaming",
            unit="ms",
            value=_median(opened, "p99_ms"),
            baseline=max(_median(closed, "p99_ms"), 0.001),
            baseline_label="the same turns with the dashboard closed",
            better="lower",
            details=details,
        ),
        Figure(
            key="dashboard_redraw_share",
            title=f"Dashboard: time in its row redraws, {sessions} sessions streaming",
            unit="s",
            value=_median(opened, "flush_ms") / 1000,
            baseline=_median(opened, "seconds"),
            baseline_label="the whole round (all turns, start to end)",
            better="lower",
            details={
                "flush_max_ms": max(run["flush_max_ms"] for run in opened),
                "note": "garbage collections during a redraw are not counted in it",
            },
        ),
    ]
