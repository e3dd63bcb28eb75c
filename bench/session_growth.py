"""Session growth: what a turn costs early in a session and late in a long one.

A real bridge runs a long scripted session against the mock model, one event stream
for all turns; each turn reads a small file and answers. Two windows of turns are
measured, the first turns (after two that warm the bridge up) and the last ones:

* bytes written per turn, from the kernel's count for the bridge process
  (``/proc/<pid>/io`` ``write_bytes``: page-granular, what reaches the page cache
  for the disk), against what the turn adds to the files under ``.agent-shell/``
  (their total size after minus before) -- the baseline;
* the bridge's CPU time per turn (``utime + stime``) in the last window against the
  first;
* the p99 of ``ping`` round trips sent every few milliseconds while the last
  window's turns run, against ``ping`` p99 with the bridge idle.

The project, the session and its log are made in the run's temporary directory and
deleted with it. The model's context window is large so compaction stays out of the
figures (it is measured by the context benchmark).
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from agent_shell_bridge.model.mock_script import MockScript, MockStep, MockToolCall
from agent_shell_bridge.model.mock_server import MockServer

from .bridgeproc import Bridge, iter_sse, rpc, spawn_bridge
from .common import Figure, Scale, percentile

__all__ = ["run"]

TIMEOUT_S = 600.0
PING_GAP_S = 0.005
FILE_LINES = 60
WARMUP_TURNS = 2


@dataclass
class Sample:
    write_bytes: int
    cpu_s: float
    disk_bytes: int


def _proc_io(pid: int) -> int:
    for line in Path(f"/proc/{pid}/io").read_text(encoding="ascii").splitlines():
        key, _, value = line.partition(":")
        if key == "write_bytes":
            return int(value)
    raise RuntimeError(f"/proc/{pid}/io has no write_bytes")


def _proc_cpu(pid: int) -> float:
    stat = Path(f"/proc/{pid}/stat").read_text(encoding="ascii")
    fields = stat.rsplit(")", 1)[1].split()
    ticks = os.sysconf("SC_CLK_TCK")
    return (int(fields[11]) + int(fields[12])) / ticks


def _disk_bytes(records: Path) -> int:
    total = 0
    for path in records.rglob("*"):
        if path.is_file():
            total += path.stat().st_size
    return total


def _sample(pid: int, records: Path) -> Sample:
    return Sample(_proc_io(pid), _proc_cpu(pid), _disk_bytes(records))


def _make_project(root: Path) -> None:
    (root / "src").mkdir(parents=True)
    text = "".join(
        f"def handler_{n}(request):  # 处理 {n}\n    return render(request, 'p{n}.html')\n"
        for n in range(FILE_LINES // 2)
    )
    (root / "src" / "views.py").write_text(text, encoding="utf-8")
    git = ["git", "-c", "user.name=bench", "-c", "user.email=bench@example.invalid"]
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-q", "-m", "init"]):
        subprocess.run([*git, *args], cwd=root, check=True, capture_output=True)


def _script(turns: int) -> MockScript:
    steps: list[MockStep] = []
    for i in range(turns):
        call = MockToolCall(name="read_file", arguments={"path": "src/views.py"}, id=f"c{i}")
        steps.append(MockStep(text=f"Reading the views, turn {i}.", tool_calls=[call]))
        steps.append(MockStep(text=f"Turn {i}: the views render their templates. 完成。"))
    return MockScript(steps=steps)


class _Turns:
    """Prompts one turn at a time over a single event stream."""

    def __init__(self, client: httpx.AsyncClient, session_id: str) -> None:
        self.client = client
        self.session_id = session_id
        self._ends: asyncio.Queue[dict[str, Any]] = asyncio.Queue()

    async def follow(self, response: httpx.Response) -> None:
        async for data in iter_sse(response):
            message = json.loads(data)
            params = message.get("params") or {}
            update = params.get("update") or {}
            if params.get("sessionId") == self.session_id and (
                update.get("sessionUpdate") == "turn_end"
            ):
                await self._ends.put(dict(update))

    async def one(self, n: int) -> None:
        await rpc(
            self.client, "session/prompt", {"sessionId": self.session_id, "prompt": f"Turn {n}."}
        )
        end = await self._ends.get()
        if end.get("stopReason") != "end_turn":
            raise RuntimeError(f"turn {n} did not finish: {end}")


async def _pings(client: httpx.AsyncClient, stop: asyncio.Event, out: list[float]) -> None:
    while not stop.is_set():
        started = time.perf_counter()
        await rpc(client, "ping", {})
        out.append((time.perf_counter() - started) * 1000)
        try:
            await asyncio.wait_for(stop.wait(), PING_GAP_S)
        except TimeoutError:
            pass


async def _idle_pings(client: httpx.AsyncClient, count: int) -> list[float]:
    out: list[float] = []
    for _ in range(count):
        started = time.perf_counter()
        await rpc(client, "ping", {})
        out.append((time.perf_counter() - started) * 1000)
        await asyncio.sleep(PING_GAP_S)
    return out


async def _window(
    bridge: Bridge, turns: _Turns, records: Path, first: int, count: int, pinger: httpx.AsyncClient
) -> tuple[Sample, Sample, list[float]]:
    pid = bridge.process.pid
    before = await asyncio.to_thread(_sample, pid, records)
    stop = asyncio.Event()
    pings: list[float] = []
    task = asyncio.create_task(_pings(pinger, stop, pings))
    try:
        for n in range(first, first + count):
            await turns.one(n)
    finally:
        stop.set()
        await task
    after = await asyncio.to_thread(_sample, pid, records)
    return before, after, pings


async def _session(scale: Scale, work: Path) -> dict[str, Any]:
    total, window = scale.growth_turns, scale.growth_window
    if total < 2 * window + WARMUP_TURNS:
        raise ValueError("growth_turns must hold two windows and the warm-up")
    project = work / "project"
    await asyncio.to_thread(_make_project, project)
    records = project / ".agent-shell"
    async with MockServer(_script(total)) as mock:
        env = {
            "AGENT_SHELL_API_BASE": mock.api_base,
            "AGENT_SHELL_MODEL": "mock-model",
            "AGENT_SHELL_API_KEY": "sk-bench",
        }
        async with (
            spawn_bridge(work / "bridge", env) as bridge,
            bridge.client(TIMEOUT_S) as client,
            bridge.client(TIMEOUT_S) as pinger,
        ):
            model = {"context_window": 10_000_000}
            session = await rpc(client, "session/new", {"cwd": str(project), "model": model})
            turns = _Turns(client, str(session["sessionId"]))
            last = (await rpc(client, "ping", {}))["lastEventId"]
            headers = {"Last-Event-ID": str(last)}
            async with client.stream("GET", "/events", headers=headers) as response:
                response.raise_for_status()
                follower = asyncio.create_task(turns.follow(response))
                try:
                    async with asyncio.timeout(TIMEOUT_S):
                        for n in range(WARMUP_TURNS):  # first imports, first reads
                            await turns.one(n)
                        idle = await _idle_pings(pinger, max(50, 10 * window))
                        early = await _window(
                            bridge, turns, records, WARMUP_TURNS, window, pinger
                        )
                        for n in range(WARMUP_TURNS + window, total - window):
                            await turns.one(n)
                        late = await _window(
                            bridge, turns, records, total - window, window, pinger
                        )
                finally:
                    follower.cancel()
    return {"idle": idle, "early": early, "late": late}


def _per_turn(window: tuple[Sample, Sample, list[float]], count: int) -> dict[str, float]:
    before, after, _ = window
    return {
        "written": (after.write_bytes - before.write_bytes) / count,
        "added": max(1, after.disk_bytes - before.disk_bytes) / count,
        "cpu_ms": (after.cpu_s - before.cpu_s) * 1000 / count,
    }


async def run(scale: Scale, work: Path) -> list[Figure]:
    got = await _session(scale, work)
    window, total = scale.growth_window, scale.growth_turns
    early, late = _per_turn(got["early"], window), _per_turn(got["late"], window)
    idle_p99 = percentile(got["idle"], 99)
    busy = got["late"][2]
    details = {"turns": total, "window": window}
    figures = [
        Figure(
            key=f"session_growth_bytes_{label}",
            title=f"Session growth: KiB written per turn, turns {span}",
            unit="KiB",
            value=per["written"] / 1024,
            baseline=per["added"] / 1024,
            baseline_label="KiB the turn adds to .agent-shell/",
            better="lower",
            details=details,
        )
        for label, span, per in (
            ("early", f"{WARMUP_TURNS + 1}-{WARMUP_TURNS + window}", early),
            ("late", f"{total - window + 1}-{total}", late),
        )
    ]
    figures.append(
        Figure(
            key="session_growth_cpu",
            title=f"Session growth: bridge CPU per turn at turn {total}",
            unit="ms",
            value=late["cpu_ms"],
            baseline=early["cpu_ms"],
            baseline_label=f"CPU per turn in turns {WARMUP_TURNS + 1}-{WARMUP_TURNS + window}",
            better="lower",
            details=details,
        )
    )
    figures.append(
        Figure(
            key="session_growth_ping_p99",
            title=f"Session growth: ping p99 while turns run at turn {total}",
            unit="ms",
            value=percentile(busy, 99),
            baseline=idle_p99,
            baseline_label="ping p99, bridge idle",
            better="lower",
            details={**details, "pings": len(busy)},
        )
    )
    return figures
