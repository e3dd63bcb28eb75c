"""Ask/act modes: a ``/ask `` or ``/act `` prefix runs one turn in that mode.

Through the real transport with the scripted model: the prefix is stripped before
the model sees the prompt, the tool set itself follows the turn's mode, and the
session's own mode comes back afterwards.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from agent_rig import make_project, running_rig, tool_messages
from agent_shell_bridge.methods.session import split_mode_prefix


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return make_project(tmp_path / "proj", {"calc.py": "def add(a, b):\n    return a + b\n"})


def last_user(request_body: dict[str, Any]) -> str:
    return [m["content"] for m in request_body["messages"] if m["role"] == "user"][-1]


def offered(request_body: dict[str, Any]) -> set[str]:
    return {t["function"]["name"] for t in request_body["tools"]}


async def test_modes_ask_prefix_refuses_writes_in_an_act_session(
    serve_app: Any, project: Path
) -> None:
    write = {"name": "write_file", "arguments": {"path": "new.py", "content": "x = 1\n"}}
    async with running_rig(
        serve_app,
        project,
        [{"tool_calls": [write]}, {"text": "calc.py:1-2 定义了 add"}, {"text": "下一轮"}],
    ) as rig:
        sid = await rig.new_session(mode="act")
        turn = await rig.turn(sid, "/ask 解释 add 是做什么的")
        assert last_user(rig.requests[0]) == "解释 add 是做什么的"
        assert "write_file" not in offered(rig.requests[0])
        assert "run_command" not in offered(rig.requests[0])
        assert "read_file" in offered(rig.requests[0])
        assert "Mode: ask." in rig.requests[0]["messages"][0]["content"]
        assert "ask mode" in tool_messages(rig.requests[1])[-1]
        assert not (project / "new.py").exists()
        assert turn.permission_requests == []
        # The next turn, without a prefix, is in the session's own mode again.
        await rig.turn(sid, "now act")
        assert "write_file" in offered(rig.requests[2])


async def test_modes_act_prefix_offers_writes_in_an_ask_session(
    serve_app: Any, project: Path
) -> None:
    async with running_rig(serve_app, project, [{"text": "ok"}, {"text": "again"}]) as rig:
        sid = await rig.new_session(mode="ask")
        turn = await rig.turn(sid, "/act\n改一下 calc.py")
        assert turn.end["stopReason"] == "end_turn"
        assert last_user(rig.requests[0]) == "改一下 calc.py"
        assert {"write_file", "run_command", "propose_plan"} <= offered(rig.requests[0])
        await rig.turn(sid, "and explain")
        assert "write_file" not in offered(rig.requests[1])
        listed = await rig.client.result("session/list", {"cwd": str(project)})
        assert [s["mode"] for s in listed["sessions"] if s["sessionId"] == sid] == ["ask"]


def test_modes_split_prefix() -> None:
    assert split_mode_prefix("/ask what is this?") == ("ask", "what is this?")
    assert split_mode_prefix("  /act\nfix it") == ("act", "fix it")
    assert split_mode_prefix("/ask") == ("ask", "")
    assert split_mode_prefix("/asking why") == (None, "/asking why")
    assert split_mode_prefix("please /ask me") == (None, "please /ask me")
    assert split_mode_prefix("/ACT x") == (None, "/ACT x")


async def test_modes_prefix_without_a_task_is_invalid(serve_app: Any, project: Path) -> None:
    async with running_rig(serve_app, project, []) as rig:
        sid = await rig.new_session()
        reply = await rig.client.rpc("session/prompt", {"sessionId": sid, "prompt": "/ask   "})
        assert reply["error"]["code"] == -32602
        assert "/ask" in reply["error"]["message"]
