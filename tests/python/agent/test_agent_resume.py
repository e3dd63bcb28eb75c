"""Resume after a crash: a real bridge is SIGKILLed mid-turn and a new one takes over.

Both bridges are real ``agent-shell-bridge serve`` subprocesses talking to a mock
model that runs in this test; the project is a temp git repository. What a user gets
back after the crash (the session in ``session/list``, its visible history, a working
next prompt that carries the earlier conversation) and what the dead bridge left on
disk (a valid org action log) are checked.
"""

from __future__ import annotations

import asyncio
import os
import re
import signal
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agent_rig import make_project
from agent_shell_bridge.model.mock_script import MockScript
from agent_shell_bridge.model.mock_server import MockServer
from conftest import BridgeClient, BridgeProcess, EventStream

TIMEOUT_S = 30.0
KEY = "sk-resume-secret"

PROMPT_1 = "第一轮：解释 calc.py 🚀 e\u0301"
ANSWER_1 = "calc.py 定义了 add，返回 a + b。“引号”与 emoji 🧮 都应原样保留。"
PROMPT_2 = "第二轮：这一轮会被打断"
PROMPT_3 = "第三轮：我们刚才说到哪了？"
ANSWER_3 = "我们刚才在看 calc.py 的 add。"

_HEADING = re.compile(
    r"^\*+ (?:(?:WAIT|APPROVED|REJECTED|DONE|FAILED) )?"
    r"\[\d{4}-\d{2}-\d{2} [A-Z][a-z]{2} \d{2}:\d{2}\](?: \S.*)?$"
)
_PROPERTY = re.compile(r"^:[A-Za-z0-9_-]+:(?: .*)?$")


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return make_project(
        tmp_path / "项目 proj",
        {"calc.py": "def add(a, b):\n    return a + b\n", "README.md": "# 计算器\n"},
    )


def assert_valid_org_log(text: str) -> None:
    """Header present, every heading well formed with its drawer, src blocks balanced."""
    lines = text.split("\n")
    assert lines[0].startswith("#+TITLE: agent-shell: ")
    assert "#+TODO: WAIT | APPROVED REJECTED DONE FAILED" in lines[:4]
    assert text.endswith("\n")
    in_src = False
    headings = 0
    i = 0
    while i < len(lines):
        line = lines[i]
        if in_src:
            # Inside a block, org escapes anything that could end it or start a heading.
            assert not line.startswith("*"), line
            if line.strip().lower() == "#+end_src":
                in_src = False
        elif line.startswith("*"):
            assert _HEADING.match(line), f"malformed heading: {line!r}"
            headings += 1
            assert lines[i + 1] == ":PROPERTIES:", lines[i : i + 2]
            j = i + 2
            while lines[j] != ":END:":
                assert _PROPERTY.match(lines[j]), f"bad property line {lines[j]!r}"
                j += 1
            i = j
        elif line.strip().lower().startswith("#+begin_src"):
            in_src = True
        else:
            assert line.strip().lower() != "#+end_src", f"unopened #+end_src at line {i + 1}"
        i += 1
    assert not in_src, "a src block is left open"
    assert headings > 0


async def next_message(stream: EventStream) -> dict[str, Any]:
    message: dict[str, Any] = (await stream.next_event(timeout=TIMEOUT_S)).json()
    return message


def is_update(message: dict[str, Any], sid: str, kind: str) -> bool:
    params = message.get("params") or {}
    update = params.get("update") or {}
    return params.get("sessionId") == sid and update.get("sessionUpdate") == kind


async def run_turn(client: BridgeClient, sid: str, prompt: str) -> list[dict[str, Any]]:
    """Prompt and follow the stream to this session's turn_end; returns what arrived."""
    seen: list[dict[str, Any]] = []
    async with client.events(from_now=True) as stream:
        await client.result("session/prompt", {"sessionId": sid, "prompt": prompt})
        async with asyncio.timeout(TIMEOUT_S):
            while not (seen and is_update(seen[-1], sid, "turn_end")):
                seen.append(await next_message(stream))
    return seen


def answer_text(messages: list[dict[str, Any]], sid: str) -> str:
    return "".join(
        m["params"]["update"]["content"]["text"]
        for m in messages
        if is_update(m, sid, "agent_message_chunk")
    )


def sigkill(bridge: BridgeProcess) -> None:
    os.kill(bridge.pid, signal.SIGKILL)
    assert bridge.process.wait(timeout=10) == -signal.SIGKILL


def conversation(body: dict[str, Any]) -> list[tuple[str, str]]:
    return [(m["role"], str(m.get("content") or "")) for m in body["messages"][1:]]


async def test_resume_after_sigkill_mid_model_step(
    start_bridge: Callable[..., BridgeProcess], project: Path
) -> None:
    script = MockScript.model_validate(
        {
            "steps": [
                {"text": ANSWER_1, "chunk_size": 7},
                {"text": "此回答永远不会到达", "delay_ms": 60_000},
                {"text": ANSWER_3},
            ]
        }
    )
    async with MockServer(script) as mock:
        env = {"AGENT_SHELL_API_BASE": mock.api_base, "AGENT_SHELL_API_KEY": KEY}
        first = start_bridge(env=env)
        async with first.client() as client:
            session = await client.result("session/new", {"cwd": str(project)})
            sid = session["sessionId"]
            done = await run_turn(client, sid, PROMPT_1)
            assert done[-1]["params"]["update"]["stopReason"] == "end_turn"
            assert answer_text(done, sid) == ANSWER_1
            await client.result("session/prompt", {"sessionId": sid, "prompt": PROMPT_2})
            async with asyncio.timeout(TIMEOUT_S):
                await mock.recorder.wait_for(lambda rs: len(rs) >= 2)
        sigkill(first)
        async with asyncio.timeout(TIMEOUT_S):
            await mock.recorder.wait_for(lambda rs: rs[1].disconnected)

        # The dead bridge's log is complete org, the interrupted task included.
        old_log = Path(session["logPath"])
        killed_text = old_log.read_text(encoding="utf-8")
        assert_valid_org_log(killed_text)
        assert PROMPT_1 in killed_text and PROMPT_2 in killed_text
        assert KEY not in killed_text

        second = start_bridge(env=env)
        async with second.client() as client:
            listed = await client.result("session/list", {"cwd": str(project)})
            [entry] = [s for s in listed["sessions"] if s["sessionId"] == sid]
            assert entry["live"] is False
            assert entry["turns"] == 2
            assert entry["title"] == PROMPT_1

            resumed = await client.result("session/resume", {"sessionId": sid, "cwd": str(project)})
            assert resumed["sessionId"] == sid
            history = resumed["history"]
            assert [(h["role"], h["text"]) for h in history[:3]] == [
                ("user", PROMPT_1),
                ("assistant", ANSWER_1),
                ("user", PROMPT_2),
            ]
            interrupted = history[3:]
            assert len(interrupted) == 1 and "interrupted" in interrupted[0]["text"]
            assert history[2]["turnId"] in interrupted[0]["text"]

            listed = await client.result("session/list", {"cwd": str(project)})
            assert [s["live"] for s in listed["sessions"] if s["sessionId"] == sid] == [True]

            done = await run_turn(client, sid, PROMPT_3)
            assert done[-1]["params"]["update"]["stopReason"] == "end_turn"
            assert answer_text(done, sid) == ANSWER_3
        second.stop()

    # The new request carries the whole earlier conversation, Chinese intact.
    assert len(mock.recorder.records) == 3
    body = mock.recorder.records[2].body
    assert isinstance(body, dict)
    assert conversation(body) == [
        ("user", PROMPT_1),
        ("assistant", ANSWER_1),
        ("user", PROMPT_2),
        ("user", PROMPT_3),
    ]
    # The killed bridge's log was not damaged by the bridge that took over.
    text = old_log.read_text(encoding="utf-8")
    assert text.startswith(killed_text)
    assert_valid_org_log(text)


async def test_resume_after_sigkill_while_waiting_for_approval_keeps_history_valid(
    start_bridge: Callable[..., BridgeProcess], project: Path
) -> None:
    """A crash between a tool call and its result must not leave a dangling call.

    Regression: the checkpoint held the assistant's ``tool_calls`` with no ``tool``
    answer, and every later request repeated that invalid history (OpenAI-style APIs
    reject it with HTTP 400), so a resumed session could never talk to the model again.
    """
    write = {"name": "write_file", "arguments": {"path": "新.txt", "content": "你好\n"}}
    script = MockScript.model_validate(
        {
            "steps": [
                {"tool_calls": [{**write, "id": "call_w1"}]},
                {"text": ANSWER_3},
            ]
        }
    )
    async with MockServer(script) as mock:
        env = {"AGENT_SHELL_API_BASE": mock.api_base, "AGENT_SHELL_API_KEY": KEY}
        first = start_bridge(env=env)
        async with first.client() as client:
            sid = (await client.result("session/new", {"cwd": str(project)}))["sessionId"]
            async with client.events(from_now=True) as stream:
                await client.result("session/prompt", {"sessionId": sid, "prompt": PROMPT_2})
                async with asyncio.timeout(TIMEOUT_S):
                    while (await next_message(stream)).get("method") != (
                        "session/request_permission"
                    ):
                        pass
        sigkill(first)
        assert not (project / "新.txt").exists()

        second = start_bridge(env=env)
        async with second.client() as client:
            resumed = await client.result("session/resume", {"sessionId": sid, "cwd": str(project)})
            assert "interrupted" in resumed["history"][-1]["text"]
            done = await run_turn(client, sid, PROMPT_3)
            assert done[-1]["params"]["update"]["stopReason"] == "end_turn"
        second.stop()

    assert not (project / "新.txt").exists()
    body = mock.recorder.records[-1].body
    assert isinstance(body, dict)
    messages = body["messages"]
    for i, message in enumerate(messages):
        for tool_call in message.get("tool_calls") or []:
            answers = [
                m
                for m in messages[i + 1 :]
                if m["role"] == "tool" and m.get("tool_call_id") == tool_call["id"]
            ]
            assert len(answers) == 1, f"tool call {tool_call['id']} has no result"
            assert "status=failed" in answers[0]["content"]
            assert "interrupted" in answers[0]["content"]
    assert messages[-1] == {"role": "user", "content": PROMPT_3}
