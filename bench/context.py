"""Context: bytes sent to the model over a multi-step session with large tool outputs.

A real bridge runs a scripted session against the mock model: each step reads a
file or runs a command with thousands of lines of output. The mock records every
request body; their total size is the value. The baseline is a naive agent that
puts every output whole into the conversation and never compacts, computed from the
same first request and the same outputs.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
from pathlib import Path
from typing import Any

import httpx

from agent_shell_bridge.model.mock_script import MockMatch, MockScript, MockStep, MockToolCall
from agent_shell_bridge.model.mock_server import MockServer

from .bridgeproc import iter_sse, rpc, spawn_bridge
from .common import Figure, Scale

__all__ = ["naive_bytes", "run"]

TIMEOUT_S = 300.0
COMPACTION_MARK = "Summarise the earlier part"


def _size(body: Any) -> int:
    return len(json.dumps(body, ensure_ascii=False).encode("utf-8"))


def _file_text(step: int, lines: int) -> str:
    return "".join(
        f"{step:02d}:{n:05d} def handler_{n}(request): return render(request, 'page_{n}.html')\n"
        for n in range(1, lines + 1)
    )


def _make_project(root: Path, steps: int, lines: int) -> list[str]:
    """A git repository with one large file per step; returns their texts."""
    texts = []
    data = root / "data"
    data.mkdir(parents=True)
    for i in range(steps):
        text = _file_text(i, lines)
        (data / f"file-{i:02d}.py").write_text(text, encoding="utf-8")
        texts.append(text)
    git = ["git", "-c", "user.name=bench", "-c", "user.email=bench@example.invalid"]
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-q", "-m", "init"]):
        subprocess.run([*git, *args], cwd=root, check=True, capture_output=True)
    return texts


def _calls(steps: int) -> list[MockToolCall]:
    """Alternate reading a file and running a command that prints one."""
    calls = []
    for i in range(steps):
        path = f"data/file-{i:02d}.py"
        if i % 2 == 0:
            calls.append(MockToolCall(name="read_file", arguments={"path": path}, id=f"call_{i}"))
        else:
            calls.append(
                MockToolCall(
                    name="run_command", arguments={"command": f"cat {path}"}, id=f"call_{i}"
                )
            )
    return calls


def naive_bytes(first: dict[str, Any], calls: list[MockToolCall], outputs: list[str]) -> int:
    """Total request bytes of an agent that keeps every output whole, forever."""
    history: list[Any] = list(first["messages"])
    total = _size(first)
    for call, output in zip(calls, outputs, strict=True):
        function = {"name": call.name, "arguments": call.arguments_text()}
        history.append(
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [{"id": call.id, "type": "function", "function": function}],
            }
        )
        history.append({"role": "tool", "tool_call_id": call.id, "content": output})
        total += _size({**first, "messages": history})
    return total


async def _answer_permission(client: httpx.AsyncClient, message: dict[str, Any]) -> None:
    result = {"outcome": {"outcome": "selected", "optionId": "allow_once"}}
    reply = {"jsonrpc": "2.0", "id": message["id"], "result": result}
    response = await client.post("/rpc", content=json.dumps(reply).encode())
    response.raise_for_status()


async def _turn(client: httpx.AsyncClient, session_id: str) -> dict[str, Any]:
    last = (await rpc(client, "ping", {}))["lastEventId"]
    async with client.stream("GET", "/events", headers={"Last-Event-ID": str(last)}) as response:
        response.raise_for_status()
        await rpc(client, "session/prompt", {"sessionId": session_id, "prompt": "Survey data/."})
        async for data in iter_sse(response):
            message = json.loads(data)
            if message.get("method") == "session/request_permission":
                await _answer_permission(client, message)
                continue
            params = message.get("params") or {}
            update = params.get("update") or {}
            if params.get("sessionId") == session_id and update.get("sessionUpdate") == "turn_end":
                return dict(update)
    raise RuntimeError("the event stream ended before the turn did")


async def run(scale: Scale, work: Path) -> list[Figure]:
    project = work / "project"
    texts = _make_project(project, scale.context_steps, scale.context_lines)
    calls = _calls(scale.context_steps)
    # One answer per possible compaction (each compaction request uses one up).
    summary = MockStep(
        match=MockMatch(system_contains=COMPACTION_MARK),
        text="Summary: the agent read and printed the data files one by one.",
    )
    steps = [
        *([summary] * scale.context_steps),
        *(MockStep(text=f"Looking at step {i}.", tool_calls=[c]) for i, c in enumerate(calls)),
        MockStep(text="Every data file holds request handlers; nothing is broken."),
    ]
    mock = MockServer(MockScript(steps=steps))
    await mock.start()
    try:
        env = {
            "AGENT_SHELL_API_BASE": mock.api_base,
            "AGENT_SHELL_MODEL": "mock-model",
            "AGENT_SHELL_API_KEY": "sk-bench",
        }
        async with spawn_bridge(work / "bridge", env) as bridge, bridge.client(TIMEOUT_S) as client:
            session = await rpc(client, "session/new", {"cwd": str(project)})
            async with asyncio.timeout(TIMEOUT_S):
                end = await _turn(client, str(session["sessionId"]))
        records = list(mock.recorder.records)
    finally:
        await mock.stop()
    if end.get("error") or end.get("stopReason") != "end_turn":
        raise RuntimeError(f"the scripted session did not finish: {end}")
    bodies = [r.body for r in records if isinstance(r.body, dict)]
    compactions = sum(
        1 for b in bodies if COMPACTION_MARK in json.dumps(b["messages"][:1], ensure_ascii=False)
    )
    agent = [b for b in bodies if COMPACTION_MARK not in json.dumps(b["messages"][:1])]
    if len(agent) != scale.context_steps + 1:
        raise RuntimeError(f"expected {scale.context_steps + 1} model calls, saw {len(agent)}")
    sent = sum(_size(b) for b in bodies)
    naive = naive_bytes(agent[0], calls, texts)
    return [
        Figure(
            key="context_bytes",
            title=f"Context: bytes sent to the model, {scale.context_steps} steps",
            unit="KiB",
            value=sent / 1024,
            baseline=naive / 1024,
            baseline_label="naive agent: every output whole, no compaction",
            better="lower",
            details={
                "steps": scale.context_steps,
                "lines_per_output": scale.context_lines,
                "requests": len(bodies),
                "compactions": compactions,
                "largest_request_bytes": max(_size(b) for b in bodies),
            },
        )
    ]
