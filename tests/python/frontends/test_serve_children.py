"""A bridge that loses its Emacs (stdin closes) or gets SIGTERM takes its children along.

Real bridge subprocess, real scripted model on loopback, a real ``sleep`` started
through ``run_command``; the test finds that child in /proc and checks it is gone.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from agent_rig import make_project
from agent_shell_bridge.model.mock_script import MockScript
from agent_shell_bridge.model.mock_server import MockServer

# Run again with the sandbox forced off (make test): its path depends on the sandbox.
pytestmark = pytest.mark.sandbox_sensitive

EXIT_DEADLINE_S = 2.0
REAP_DEADLINE_S = 15.0  # PID 1 here may reap orphans only every few seconds


def _children(pid: int) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        if int(fields[1]) == pid:
            found.append(int(entry))
    return found


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


async def _start_sleep(bridge: Any, root: Path) -> int:
    """Run `sleep 300` through the agent and return its pid once it runs."""
    async with bridge.client() as client:
        sid = (await client.result("session/new", {"cwd": str(root)}))["sessionId"]
        async with client.events(from_now=True) as stream:
            await client.result("session/prompt", {"sessionId": sid, "prompt": "wait"})
            async with asyncio.timeout(20):
                while True:
                    message = (await stream.next_event(timeout=20)).json()
                    if message.get("method") == "session/request_permission":
                        answer = {"outcome": {"outcome": "selected", "optionId": "allow_once"}}
                        await client.post_rpc(
                            {"jsonrpc": "2.0", "id": message["id"], "result": answer}
                        )
                    update = (message.get("params") or {}).get("update") or {}
                    if update.get("status") == "in_progress":
                        break
                while True:
                    kids = [p for p in _children(bridge.pid) if _alive(p)]
                    sleeping = [
                        p for p in kids if b"sleep" in Path(f"/proc/{p}/cmdline").read_bytes()
                    ]
                    if sleeping:
                        return sleeping[0]
                    await asyncio.sleep(0.02)  # polling /proc for the child, with a deadline


async def _wait_gone(pid: int) -> None:
    deadline = time.monotonic() + REAP_DEADLINE_S
    while _alive(pid):
        assert time.monotonic() < deadline, f"child {pid} outlived the bridge"
        await asyncio.sleep(0.05)


@pytest.fixture
async def model() -> Any:
    script = MockScript.model_validate(
        {
            "steps": [
                {"tool_calls": [{"name": "run_command", "arguments": {"command": "sleep 300"}}]}
            ]
        }
    )
    async with MockServer(script) as server:
        yield server


@pytest.mark.parametrize("how", ["stdin", "sigterm"])
async def test_serve_exit_kills_child_process_groups(
    how: str, model: Any, start_bridge: Any, tmp_path: Path
) -> None:
    root = make_project(tmp_path / "proj", {"a.txt": "a\n"})
    bridge = start_bridge(
        env={
            "AGENT_SHELL_API_BASE": model.api_base,
            "AGENT_SHELL_API_KEY": "sk-children",
            "AGENT_SHELL_MEMORY_DIR": str(tmp_path / "memory"),
        }
    )
    child = await _start_sleep(bridge, root)
    assert _alive(child)
    started = time.monotonic()
    if how == "stdin":
        bridge.close_stdin()
    else:
        bridge.process.send_signal(signal.SIGTERM)
    try:
        await asyncio.to_thread(bridge.process.wait, EXIT_DEADLINE_S)
    except subprocess.TimeoutExpired:
        pytest.fail(f"the bridge did not exit within {EXIT_DEADLINE_S} s of {how}")
    assert time.monotonic() - started < EXIT_DEADLINE_S
    await _wait_gone(child)
