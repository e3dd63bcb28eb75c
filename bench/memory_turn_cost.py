"""Memory turn cost: a text-only turn and ``session/new`` with 0 and with N experiences.

A real bridge (``serve``) runs against the scripted model, once on a project with no
experiences and once on a project holding N experience files (50,000 at full scale)
indexed by the real ``MemoryIndex.reindex``. Each turn is a prompt whose words
occur in many of the experiences, answered with text only; its time runs from
``session/prompt`` to the turn's ``turn_end`` on the event stream. The baseline is
the same with no experiences, measured in the same run (the two bridges run side by
side and take turns, each request sent when its bridge is idle): what the memory's
size adds to every turn and new session. CPU time per request is reported too.

The files are written directly (no fsync) and deleted after the measurement.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

import httpx

from agent_shell_bridge.memory.index import MemoryIndex
from agent_shell_bridge.model.mock_script import MockScript, MockStep
from agent_shell_bridge.model.mock_server import MockServer

from .bridgeproc import iter_sse, rpc, spawn_bridge
from .common import Figure, Scale, median

__all__ = ["run", "write_experiences"]

TIMEOUT_S = 300.0
QUIET_TIMEOUT_S = 120.0
SIZES = {"small": 500, "full": 50_000}
TURNS = {"small": 3, "full": 11}  # timed turns per size, after one warm-up turn
SESSIONS = {"small": 2, "full": 9}  # timed session/new calls per size
PROMPT = "Why does the parser time out on 中文 input? Explain the retry logic."
ANSWER = "The parser waits for the retry budget before giving up."

_EN = [
    "parser",
    "cache",
    "timeout",
    "encoding",
    "migration",
    "deadlock",
    "logging",
    "retry",
    "config",
    "permission",
    "scheduler",
    "pagination",
    "websocket",
    "index",
    "transaction",
    "upload",
    "download",
    "compression",
    "certificate",
    "proxy",
    "locale",
    "queue",
    "template",
    "signal",
    "dependency",
    "packaging",
    "search",
    "session",
    "token",
    "keymap",
    "snapshot",
    "rollback",
    "checksum",
    "clipboard",
    "font",
    "benchmark",
]
_ZH = [
    "解析",
    "缓存",
    "超时",
    "编码",
    "迁移",
    "死锁",
    "日志",
    "重试",
    "配置",
    "权限",
    "调度",
    "分页",
    "长连接",
    "索引",
    "事务",
    "上传",
    "下载",
    "压缩",
    "证书",
    "代理",
    "本地化",
    "队列",
    "模板",
    "信号",
    "依赖",
    "打包",
    "搜索",
    "会话",
    "令牌",
    "键位",
    "快照",
    "回滚",
    "校验和",
    "剪贴板",
    "字体",
    "基准测试",
]


def write_experiences(root: Path, n: int) -> None:
    """``n`` experience files under ``root``'s memory directory, half of them Chinese."""
    directory = root / ".agent-shell" / "memory"
    directory.mkdir(parents=True, exist_ok=True)
    k = len(_EN)
    for i in range(n):
        a, b = i % k, (i // k + i) % k
        ea, eb, za, zb = _EN[a], _EN[b], _ZH[a], _ZH[b]
        date = f"20{20 + i % 6}-{1 + i % 12:02d}-{1 + i % 28:02d}"
        if i % 2:
            title, summary = (
                f"Fix {ea} under {eb} ({i})",
                f"{ea} broke under {eb}; fixed in {ea}_{i}.",
            )
        else:
            title, summary = (
                f"修复{za}与{zb}问题（{i}）",
                f"{za}在{zb}场景下出错，改 {ea}_{i} 后通过。",
            )
        text = (
            f"---\ntitle: {title}\ndate: {date}\nproject: {root.name}\ntask_type: bugfix\n"
            f"tags: [{ea}, {eb}]\nsymbols: [{ea}_{i}]\ntrigger: generated\n"
            f"summary: {summary}\n---\n\n## Goal\n\nMake {ea}_{i} handle {eb}.\n\n"
            f"## Steps\n\n1. Reproduce the {ea} failure\n2. Fix {ea}_{i}\n3. Tests pass\n\n"
            f"## Key decisions\n\n- Handle {ea} before {eb}\n\n"
            f"## Pitfalls\n\n- {zb}的行为与文档不同\n\n## Open issues\n\nNone\n"
        )
        (directory / f"{date}--exp-{i:06d}.md").write_bytes(text.encode("utf-8"))


def _project(root: Path, n: int) -> None:
    root.mkdir(parents=True)
    (root / "README.md").write_text("# bench\n", encoding="utf-8")
    write_experiences(root, n)
    (root / ".gitignore").write_text(".agent-shell/\n", encoding="utf-8")
    git = ["git", "-c", "user.name=bench", "-c", "user.email=bench@example.invalid"]
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-q", "-m", "init"]):
        subprocess.run([*git, *args], cwd=root, check=True, capture_output=True)


async def _turn(client: httpx.AsyncClient, session_id: str) -> float:
    """Seconds from ``session/prompt`` to this session's ``turn_end``."""
    last = (await rpc(client, "ping", {}))["lastEventId"]
    async with client.stream("GET", "/events", headers={"Last-Event-ID": str(last)}) as response:
        response.raise_for_status()
        started = time.perf_counter()
        await rpc(client, "session/prompt", {"sessionId": session_id, "prompt": PROMPT})
        async for data in iter_sse(response):
            message = json.loads(data)
            params = message.get("params") or {}
            update = params.get("update") or {}
            if params.get("sessionId") == session_id and update.get("sessionUpdate") == "turn_end":
                elapsed = time.perf_counter() - started
                if update.get("error") or update.get("stopReason") != "end_turn":
                    raise RuntimeError(f"the scripted turn did not finish: {update}")
                return elapsed
    raise RuntimeError("the event stream ended before the turn did")


async def _prepare(work: Path, n: int) -> dict[str, Any]:
    """A project with ``n`` experiences and the bridge's index of them, made current."""
    project = work / "project"
    started = time.perf_counter()
    await asyncio.to_thread(_project, project, n)
    generate_s = time.perf_counter() - started
    started = time.perf_counter()
    with MemoryIndex(work / "bridge" / "memory") as index:
        stats = await asyncio.to_thread(index.reindex, [project])
        indexed = index.count()
    reindex_s = time.perf_counter() - started
    if indexed != n:
        raise RuntimeError(f"indexed {indexed} of {n} experiences ({stats.to_dict()})")
    return {"generate_s": round(generate_s, 3), "reindex_s": round(reindex_s, 3)}


def _cpu_s(pid: int) -> float:
    """CPU seconds of process ``pid`` and its waited-for children (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text(encoding="utf-8").rsplit(")", 1)[1].split()
    ticks = sum(int(x) for x in fields[11:15])  # utime stime cutime cstime
    return ticks / os.sysconf("SC_CLK_TCK")


async def _quiet(pid: int) -> None:
    """Wait until the bridge is idle (under 5% of a core for 0.2 s): what a session
    left running in the background (the sandbox's first look at its trees) is not
    the next request's cost."""
    async with asyncio.timeout(QUIET_TIMEOUT_S):
        while True:
            before = _cpu_s(pid)
            await asyncio.sleep(0.2)
            if _cpu_s(pid) - before <= 0.01:
                return


async def _measure(works: list[Path], turns: int, sessions: int) -> list[dict[str, Any]]:
    """Median turn and session/new times of a bridge per work directory.

    The bridges run side by side and take turns, so that other work on the machine
    weighs on each size alike.
    """
    n = len(works)
    new_s: list[list[float]] = [[] for _ in works]
    turn_s: list[list[float]] = [[] for _ in works]
    async with contextlib.AsyncExitStack() as stack:
        clients: list[httpx.AsyncClient] = []
        pids: list[int] = []
        for work in works:
            mock = MockServer(MockScript(steps=[MockStep(text=ANSWER)] * (turns + 1)))
            await mock.start()
            stack.push_async_callback(mock.stop)
            env = {
                "AGENT_SHELL_API_BASE": mock.api_base,
                "AGENT_SHELL_MODEL": "mock-model",
                "AGENT_SHELL_API_KEY": "sk-bench",
            }
            bridge = await stack.enter_async_context(spawn_bridge(work / "bridge", env))
            pids.append(bridge.process.pid)
            clients.append(await stack.enter_async_context(bridge.client(TIMEOUT_S)))
        session_ids = [""] * n
        # CPU time is less swayed by other work on the machine than wall time.
        new_cpu = [0.0] * n
        turn_cpu = [0.0] * n
        for r in range(sessions + 1):  # the first loads the session code: not timed
            for i, client in enumerate(clients):
                await _quiet(pids[i])
                c0, t0 = _cpu_s(pids[i]), time.perf_counter()
                session = await rpc(client, "session/new", {"cwd": str(works[i] / "project")})
                new_s[i].append(time.perf_counter() - t0)
                new_cpu[i] += (_cpu_s(pids[i]) - c0) if r else 0.0
                session_ids[i] = str(session["sessionId"])
        async with asyncio.timeout(TIMEOUT_S):
            for r in range(turns + 1):  # the first warms the model client: not timed
                for i, client in enumerate(clients):
                    await _quiet(pids[i])
                    c0 = _cpu_s(pids[i])
                    turn_s[i].append(await _turn(client, session_ids[i]))
                    turn_cpu[i] += (_cpu_s(pids[i]) - c0) if r else 0.0
    return [
        {
            "turn_s": median(turn_s[i][1:]),
            "session_new_s": median(new_s[i][1:]),
            "first_session_new_s": new_s[i][0],
            "turn_cpu_ms": round(turn_cpu[i] / turns * 1000, 1),
            "session_new_cpu_ms": round(new_cpu[i] / sessions * 1000, 1),
        }
        for i in range(n)
    ]


async def run(scale: Scale, work: Path) -> list[Figure]:
    n = SIZES[scale.name]
    turns, sessions = TURNS[scale.name], SESSIONS[scale.name]
    works = [work / "empty", work / f"n{n}"]
    made = [await _prepare(works[0], 0), await _prepare(works[1], n)]
    try:
        measured = await _measure(works, turns, sessions)
    finally:
        for w in works:
            await asyncio.to_thread(shutil.rmtree, w, True)
    empty, full = ({**m, **p} for m, p in zip(measured, made, strict=True))
    details = {
        "experiences": n,
        "turns_timed": turns,
        "sessions_timed": sessions,
        "prompt": PROMPT,
        "with_experiences": full,
        "without": empty,
    }
    return [
        Figure(
            key="memory_turn_cost",
            title=f"Memory: text-only turn with {n:,} experiences",
            unit="ms",
            value=full["turn_s"] * 1000,
            baseline=empty["turn_s"] * 1000,
            baseline_label="the same turn with no experiences",
            better="lower",
            details=details,
        ),
        Figure(
            key="memory_session_new",
            title=f"Memory: session/new with {n:,} experiences",
            unit="ms",
            value=full["session_new_s"] * 1000,
            baseline=empty["session_new_s"] * 1000,
            baseline_label="session/new with no experiences",
            better="lower",
            details=details,
        ),
    ]
