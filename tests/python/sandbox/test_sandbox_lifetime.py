"""Nothing the bridge started outlives it, even when it is killed with SIGKILL.

A real bridge subprocess runs ``make test`` (make → sh → sleep) through the agent,
once inside the sandbox (auto-allowed: bubblewrap's ``--die-with-parent`` and PID
namespace) and once outside it (sandbox forced off, so the command asks and is
approved: the guard's watchdog). The test collects every descendant of the bridge
while ``sleep`` runs, SIGKILLs the bridge, and polls the process table, with a
deadline, until none of them is left.
"""

from __future__ import annotations

import asyncio
import os
import signal
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from agent_rig import make_project
from agent_shell_bridge.model.mock_script import MockScript
from agent_shell_bridge.model.mock_server import MockServer
from agent_shell_bridge.sandbox import SANDBOX_ENV, detect_sandbox

# Run again with the sandbox forced off (make test): its path depends on the sandbox.
pytestmark = pytest.mark.sandbox_sensitive

GONE_DEADLINE_S = 15.0  # PID 1 here may reap orphans only every few seconds
START_DEADLINE_S = 30.0
MAKEFILE = "test:\n\tsh -c 'echo started; sleep 300; echo never'\n"


def _table() -> dict[int, tuple[int, str]]:
    """pid → (parent pid, state) for every process now."""
    table = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        table[int(entry)] = (int(fields[1]), fields[0])
    return table


def _descendants(pid: int) -> set[int]:
    table = _table()
    found: set[int] = set()
    frontier = {pid}
    while frontier:
        frontier = {p for p, (ppid, _) in table.items() if ppid in frontier} - found
        found |= frontier
    return found


def _alive(pids: set[int]) -> set[int]:
    table = _table()
    return {p for p in pids if p in table and table[p][1] != "Z"}


def _cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


@pytest.fixture
async def model() -> AsyncIterator[MockServer]:
    run = {"tool_calls": [{"name": "run_test", "arguments": {"command": "make test"}}]}
    async with MockServer(MockScript.model_validate({"steps": [run]})) as server:
        yield server


async def _start_make(bridge: Any, root: Path) -> tuple[dict[str, Any], set[int]]:
    """Start `make test` through the agent; return the session and the descendants."""
    async with bridge.client() as client:
        session = await client.result("session/new", {"cwd": str(root)})
        sid = session["sessionId"]
        async with client.events(from_now=True) as stream:
            await client.result("session/prompt", {"sessionId": sid, "prompt": "test"})
            async with asyncio.timeout(START_DEADLINE_S):
                while True:
                    message = (await stream.next_event(timeout=START_DEADLINE_S)).json()
                    if message.get("method") == "session/request_permission":
                        answer = {"outcome": {"outcome": "selected", "optionId": "allow_once"}}
                        await client.post_rpc(
                            {"jsonrpc": "2.0", "id": message["id"], "result": answer}
                        )
                    update = (message.get("params") or {}).get("update") or {}
                    if update.get("status") == "in_progress":
                        break
                while True:
                    kids = _alive(_descendants(bridge.pid))
                    if any(_cmdline(p).startswith(b"sleep\x00300") for p in kids):
                        return session, kids
                    await asyncio.sleep(0.02)  # polling /proc, within the deadline


@pytest.mark.parametrize("where", ["sandbox", "outside"])
async def test_sigkill_of_the_bridge_leaves_no_descendant(
    where: str, model: MockServer, start_bridge: Any, tmp_path: Path
) -> None:
    if where == "sandbox":
        status = detect_sandbox({k: v for k, v in os.environ.items() if k != SANDBOX_ENV})
        if not status.available:
            pytest.skip(f"bubblewrap cannot run on this machine: {status.detail}")
    root = make_project(tmp_path / "proj", {"Makefile": MAKEFILE})
    bridge = start_bridge(
        env={
            "AGENT_SHELL_API_BASE": model.api_base,
            "AGENT_SHELL_API_KEY": "sk-lifetime",
            "AGENT_SHELL_MEMORY_DIR": str(tmp_path / "memory"),
            SANDBOX_ENV: "" if where == "sandbox" else "off",
        }
    )
    session, kids = await _start_make(bridge, root)
    assert session["sandbox"]["available"] is (where == "sandbox")
    names = {_cmdline(p).split(b"\x00")[0].rsplit(b"/", 1)[-1] for p in kids}
    assert {b"make", b"sh", b"sleep"} <= names, names
    if where == "sandbox":
        assert b"bwrap" in names
    bridge.process.send_signal(signal.SIGKILL)
    await asyncio.to_thread(bridge.process.wait, 10)
    deadline = time.monotonic() + GONE_DEADLINE_S
    while left := _alive(kids):
        assert time.monotonic() < deadline, {p: _cmdline(p) for p in left}
        await asyncio.sleep(0.05)  # polling /proc, within the deadline
