"""The scripted mock model: step selection, recording, faults, and its CLI."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from agent_shell_bridge.errors import InvalidParams
from agent_shell_bridge.model.mock import EXHAUSTED_TEXT
from agent_shell_bridge.model.mock_script import MockScript, load_script
from agent_shell_bridge.model.mock_server import MockServer, check_loopback

BRIDGE = Path(sys.executable).with_name("agent-shell-bridge")


def body(*messages: tuple[str, str], usage: bool = True) -> dict[str, Any]:
    payload: dict[str, Any] = {
        "model": "m",
        "stream": True,
        "messages": [{"role": role, "content": text} for role, text in messages],
    }
    if usage:
        payload["stream_options"] = {"include_usage": True}
    return payload


def content_of(sse: str) -> str:
    out = []
    for line in sse.splitlines():
        if line.startswith("data: {"):
            for choice in json.loads(line[6:])["choices"]:
                out.append(choice["delta"].get("content") or "")
    return "".join(out)


@pytest.fixture
async def mock() -> AsyncIterator[MockServer]:
    script = MockScript.model_validate(
        {
            "steps": [
                {"text": "first plain"},
                {"match": {"system_contains": "Summarise"}, "text": "摘要"},
                {"match": {"last_user_contains": "记忆"}, "text": "memory"},
                {"text": "second plain"},
            ]
        }
    )
    async with MockServer(script) as server:
        yield server


async def test_matched_steps_win_and_plain_steps_go_in_order(mock: MockServer) -> None:
    async with httpx.AsyncClient(base_url=mock.api_base) as http:

        async def ask(*messages: tuple[str, str]) -> str:
            response = await http.post("/chat/completions", json=body(*messages))
            assert response.headers["content-type"].startswith("text/event-stream")
            return content_of(response.text)

        assert await ask(("user", "hi")) == "first plain"
        assert await ask(("system", "Summarise the history"), ("user", "x")) == "摘要"
        assert await ask(("user", "old 记忆"), ("user", "new")) == "second plain"
        assert await ask(("user", "提取记忆")) == "memory"
        assert await ask(("user", "more")) == EXHAUSTED_TEXT
    assert [r.step for r in mock.recorder.records] == [0, 1, 3, 2, None]


async def test_requests_are_recorded_over_http_without_the_key(mock: MockServer) -> None:
    async with httpx.AsyncClient() as http:
        await http.post(
            f"{mock.api_base}/chat/completions",
            json=body(("user", "中文")),
            headers={"Authorization": "Bearer sk-secret-xyz"},
        )
        await http.post(f"{mock.api_base}/chat/completions", json=body(("user", "b")))
        listing = (await http.get(f"http://127.0.0.1:{mock.port}/_mock/requests")).json()
    assert "sk-secret-xyz" not in json.dumps(listing)
    assert [r["auth_present"] for r in listing] == [True, False]
    assert listing[0]["body"]["messages"][0]["content"] == "中文"
    assert listing[0]["completed"] is True and listing[0]["disconnected"] is False


async def test_usage_chunk_only_when_asked(mock: MockServer) -> None:
    async with httpx.AsyncClient(base_url=mock.api_base) as http:
        with_usage = (await http.post("/chat/completions", json=body(("user", "a")))).text
        plain = (await http.post("/chat/completions", json=body(("user", "a"), usage=False))).text
    assert '"usage"' in with_usage and '"usage"' not in plain
    assert with_usage.endswith("data: [DONE]\n\n") and plain.endswith("data: [DONE]\n\n")


async def test_fault_with_times_fails_then_serves_the_step() -> None:
    script = MockScript.model_validate(
        {"steps": [{"text": "ok", "fault": "529", "times": 2, "retry_after": 3}]}
    )
    async with MockServer(script) as server, httpx.AsyncClient(base_url=server.api_base) as http:
        statuses = []
        for _ in range(3):
            response = await http.post("/chat/completions", json=body(("user", "a")))
            statuses.append(response.status_code)
            if response.status_code == 529:
                assert response.headers["retry-after"] == "3"
                assert response.json()["error"]["type"] == "overloaded_error"
        assert content_of(response.text) == "ok"
        first = server.recorder.records[0]
    assert statuses == [529, 529, 200]
    assert first.fault == "529"


async def test_bad_request_bodies_are_rejected_and_recorded(mock: MockServer) -> None:
    async with httpx.AsyncClient(base_url=mock.api_base) as http:
        response = await http.post("/chat/completions", content=b"not json")
    assert response.status_code == 400
    assert "messages" in response.json()["error"]["message"]
    assert mock.recorder.records[0].status == 400


def test_script_validation_names_the_problem(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"steps": [{"fault": "418"}]}), encoding="utf-8")
    with pytest.raises(InvalidParams, match="fault"):
        load_script(bad)
    typo = tmp_path / "typo.json"
    typo.write_text(json.dumps({"steps": [{"txt": "x"}]}), encoding="utf-8")
    with pytest.raises(InvalidParams, match="txt"):
        load_script(typo)


def test_only_loopback_hosts_are_accepted() -> None:
    assert check_loopback("localhost") == "127.0.0.1"
    assert check_loopback("::1") == "::1"
    for host in ("0.0.0.0", "192.168.1.5", "example.com"):
        with pytest.raises(InvalidParams):
            check_loopback(host)


# --- the mock-model command -----------------------------------------------------------


def write_script(tmp_path: Path) -> Path:
    path = tmp_path / "script.json"
    path.write_text(json.dumps({"steps": [{"text": "来自子进程"}]}), encoding="utf-8")
    return path


async def start_cli(script: Path) -> tuple[asyncio.subprocess.Process, dict[str, Any]]:
    proc = await asyncio.create_subprocess_exec(
        str(BRIDGE),
        "mock-model",
        "--script",
        str(script),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None
    async with asyncio.timeout(15):
        line = await proc.stdout.readline()
    return proc, json.loads(line)


async def test_cli_serves_and_exits_when_stdin_closes(tmp_path: Path) -> None:
    proc, ready = await start_cli(write_script(tmp_path))
    assert ready["ready"] is True and ready["pid"] == proc.pid
    assert ready["api_base"] == f"http://127.0.0.1:{ready['port']}/v1"
    async with httpx.AsyncClient(base_url=ready["api_base"]) as http:
        response = await http.post("/chat/completions", json=body(("user", "hi")))
        listing = (await http.get(f"http://127.0.0.1:{ready['port']}/_mock/requests")).json()
    assert content_of(response.text) == "来自子进程"
    assert len(listing) == 1
    assert proc.stdin is not None
    proc.stdin.close()
    async with asyncio.timeout(10):
        assert await proc.wait() == 0


async def test_cli_exits_cleanly_on_sigterm(tmp_path: Path) -> None:
    proc, ready = await start_cli(write_script(tmp_path))
    os.kill(ready["pid"], signal.SIGTERM)
    async with asyncio.timeout(10):
        assert await proc.wait() == 0


def test_cli_refuses_non_loopback_host(tmp_path: Path) -> None:
    result = subprocess.run(
        [str(BRIDGE), "mock-model", "--script", str(write_script(tmp_path)), "--host", "0.0.0.0"],
        capture_output=True,
        text=True,
        timeout=30,
        stdin=subprocess.DEVNULL,
    )
    assert result.returncode == 2
    assert "loopback" in result.stderr and result.stdout == ""
