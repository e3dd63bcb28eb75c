"""Session growth: what a turn costs early in a session and late in a long one.

A real bridge runs a long scripted session against the mock model, one event stream
for all turns; each turn reads a small file and answers. Two windows of turns are
measured, the first turns (after two that warm the bridge up) and the last ones:

* bytes written to files per turn, against what the turn adds to the files under
  ``.agent-shell/`` (their total size after minus before) -- the baseline. The
  files are sampled after every turn (inode and size): a file kept grew by what was
  appended, a file new or replaced by a rename was written whole;
* the same from the kernel's count for the bridge process (``/proc/<pid>/io``
  ``write_bytes``), which counts a whole page each time an ``fsync``-ed page is
  dirtied again, so small appends weigh 4 KiB each;
* the bridge's CPU time per turn (``utime + stime``) in the last window against the
  first;
* the p99 of ``ping`` round trips sent every few milliseconds while the last
  window's turns run, against ``ping`` p99 with the bridge idle (from another
  process, one connection per ping as Emacs does).

The project, the session and its log are made in the run's temporary directory and
deleted with it. The model's context window is large so compaction stays out of the
figures (it is measured by the context benchmark).
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from agent_shell_bridge.model.mock_script import MockScript, MockStep, MockToolCall
from agent_shell_bridge.model.mock_server import MockServer

from .bridgeproc import Bridge, iter_sse, rpc, spawn_bridge
from .common import Figure, Scale, median, percentile

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
    # (inode, size) of each file under .agent-shell/.
    files: dict[str, tuple[int, int]]


def _files(records: Path) -> dict[str, tuple[int, int]]:
    out: dict[str, tuple[int, int]] = {}
    for path in records.rglob("*"):
        try:
            st = path.stat()
        except FileNotFoundError:  # replaced meanwhile
            continue
        if path.is_file():
            out[str(path)] = (st.st_ino, st.st_size)
    return out


def written_between(before: dict[str, tuple[int, int]], after: dict[str, tuple[int, int]]) -> int:
    """Bytes written to files between two samples: the growth of a file kept (same
    inode), the whole of a file new, replaced (a rename over it) or cut shorter."""
    total = 0
    for name, (inode, size) in after.items():
        old = before.get(name)
        if old is not None and old[0] == inode:
            # Cut and written again (a journal after compaction): what is there now.
            total += size - old[1] if size >= old[1] else size
        else:
            total += size
    return total


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


def _sample(pid: int, records: Path) -> Sample:
    files = _files(records)
    return Sample(_proc_io(pid), _proc_cpu(pid), sum(s for _, s in files.values()), files)


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


# Pings come from their own process: in this one they would wait for the mock model
# and the event stream, which share its loop.
PINGER = """
import http.client, json, sys, time
port, token, gap = int(sys.argv[1]), sys.argv[2], float(sys.argv[3])
count = int(sys.argv[4])
body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {}})
headers = {"Authorization": "Bearer " + token, "Content-Type": "application/json"}
out = []
while count < 0 or len(out) < count:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    started = time.perf_counter()
    conn.request("POST", "/rpc", body, headers)
    conn.getresponse().read()
    out.append((time.perf_counter() - started) * 1000)
    conn.close()
    print(out[-1], flush=True)
    time.sleep(gap)
"""


class _Pinger:
    """A process pinging the bridge every few milliseconds until stopped."""

    def __init__(self, bridge: Bridge, count: int = -1) -> None:
        self._args = [str(bridge.port), bridge.token, str(PING_GAP_S), str(count)]
        self._proc: asyncio.subprocess.Process | None = None

    async def start(self) -> None:
        self._proc = await asyncio.create_subprocess_exec(
            sys.executable, "-c", PINGER, *self._args, stdout=asyncio.subprocess.PIPE
        )

    async def stop(self, *, wait: bool = False) -> list[float]:
        proc = self._proc
        assert proc is not None and proc.stdout is not None
        if not wait:
            proc.terminate()
        out, _ = await proc.communicate()
        return [float(x) for x in out.decode().split()]


@dataclass
class Window:
    before: Sample
    after: Sample
    # Bytes written to files, summed over the turns (sampled after each).
    logical: int
    pings: list[float]


async def _window(bridge: Bridge, turns: _Turns, records: Path, first: int, count: int) -> Window:
    pid = bridge.process.pid
    before = await asyncio.to_thread(_sample, pid, records)
    pinger = _Pinger(bridge)
    await pinger.start()
    logical = 0
    files = before.files
    try:
        for n in range(first, first + count):
            await turns.one(n)
            now = await asyncio.to_thread(_files, records)
            logical += written_between(files, now)
            files = now
    finally:
        pings = await pinger.stop()
    after = await asyncio.to_thread(_sample, pid, records)
    return Window(before, after, logical, pings)


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
        async with spawn_bridge(work / "bridge", env) as bridge, bridge.client(TIMEOUT_S) as client:
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
                        idle_pinger = _Pinger(bridge, max(100, 20 * window))
                        await idle_pinger.start()
                        idle = await idle_pinger.stop(wait=True)
                        start = await asyncio.to_thread(_files, records)
                        early = await _window(bridge, turns, records, WARMUP_TURNS, window)
                        middle, files = 0, early.after.files
                        for n in range(WARMUP_TURNS + window, total - window):
                            await turns.one(n)
                            now = await asyncio.to_thread(_files, records)
                            middle, files = middle + written_between(files, now), now
                        late = await _window(bridge, turns, records, total - window, window)
                        middle += written_between(files, late.before.files)
                finally:
                    follower.cancel()
    # Every turn after the warm-up: what was written, what the files grew by.
    written = early.logical + middle + late.logical
    added = sum(s for _, s in late.after.files.values()) - sum(s for _, s in start.values())
    return {"idle": idle, "early": early, "late": late, "all": (written, added)}


def _per_turn(window: Window, count: int) -> dict[str, float]:
    before, after = window.before, window.after
    return {
        "written": window.logical / count,
        "disk": (after.write_bytes - before.write_bytes) / count,
        "added": max(1, after.disk_bytes - before.disk_bytes) / count,
        "cpu_ms": (after.cpu_s - before.cpu_s) * 1000 / count,
    }


async def run(scale: Scale, work: Path) -> list[Figure]:
    got = await _session(scale, work)
    window, total = scale.growth_window, scale.growth_turns
    early, late = _per_turn(got["early"], window), _per_turn(got["late"], window)
    idle_p99 = percentile(got["idle"], 99)
    busy = got["late"].pings
    details = {"turns": total, "window": window}
    spans = (
        ("early", f"{WARMUP_TURNS + 1}-{WARMUP_TURNS + window}", early),
        ("late", f"{total - window + 1}-{total}", late),
    )
    figures = [
        Figure(
            key=f"session_growth_bytes_{label}",
            title=f"Session growth: KiB written to files per turn, turns {span}",
            unit="KiB",
            value=per["written"] / 1024,
            baseline=per["added"] / 1024,
            baseline_label="KiB the turn adds to .agent-shell/",
            better="lower",
            details=details,
        )
        for label, span, per in spans
    ]
    written, added = got["all"]
    measured = total - WARMUP_TURNS
    figures.append(
        Figure(
            key="session_growth_bytes_all",
            title=f"Session growth: KiB written to files per turn, all {measured} turns",
            unit="KiB",
            value=written / measured / 1024,
            baseline=max(1, added) / measured / 1024,
            baseline_label="KiB a turn adds, on average (checkpoint compactions included)",
            better="lower",
            details=details,
        )
    )
    figures += [
        Figure(
            key=f"session_growth_disk_{label}",
            title=f"Session growth: KiB the kernel wrote per turn, turns {span}",
            unit="KiB",
            value=per["disk"] / 1024,
            baseline=per["added"] / 1024,
            baseline_label="KiB the turn adds (write_bytes counts whole pages per fsync)",
            better="lower",
            details=details,
        )
        for label, span, per in spans
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
            details={
                **details,
                "pings": len(busy),
                "median_ms": median(busy),
                "early_p99_ms": percentile(got["early"].pings, 99),
                "idle_median_ms": median(got["idle"]),
            },
        )
    )
    return figures
