"""Provider differences seen through a whole turn: refusals and the reasoning echo.

A real bridge on 127.0.0.1, a client following its SSE stream, and the scripted
model answering as the provider in question does (raw chunks in OpenAI's refusal
format; Groq's 400 for an echoed ``reasoning_content``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from agent_rig import make_project, running_rig

REFUSAL = "抱歉，我不能帮助完成这个请求。"


def _chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {
        "id": "chatcmpl-r",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "gpt-4o",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return make_project(tmp_path / "proj", {"a.py": "print('你好')\n"})


async def test_refusal_is_shown_marked_and_ends_the_turn_as_refusal(
    serve_app: Any, project: Path
) -> None:
    """Regression: a refusal streamed as delta.refusal showed nothing and ended normally."""
    raw = [
        _chunk({"role": "assistant", "content": None, "refusal": ""}),
        _chunk({"refusal": REFUSAL[:3]}),
        _chunk({"refusal": REFUSAL[3:]}),
        _chunk({}, "stop"),
        "data: [DONE]\n\n",
    ]
    async with running_rig(serve_app, project, [{"raw_chunks": raw}]) as rig:
        sid = await rig.new_session()
        turn = await rig.turn(sid, "帮我做点坏事")
        assert turn.end["stopReason"] == "refusal"
        chunks = turn.updates("agent_message_chunk")
        assert "".join(c["content"]["text"] for c in chunks) == REFUSAL
        assert chunks and all(c.get("refusal") is True for c in chunks)
        titles = [e.get("title") for e in turn.log_entries()]
        assert "Model: refusal" in titles, titles
        log = Path(rig.runtime.sessions[sid].state.log_path).read_text(encoding="utf-8")
        assert REFUSAL in log and ":STOP_REASON: refusal" in log


async def test_tool_turn_with_reasoning_survives_a_provider_rejecting_the_echo(
    serve_app: Any, project: Path
) -> None:
    """Regression: reasoning went back to every provider; Groq's 400 ended step 2."""
    steps = [
        {"reasoning": "先看目录。", "tool_calls": [{"name": "list_directory", "id": "c1"}]},
        {"text": "目录里有 a.py。"},
    ]
    rules = {"reject_message_fields": ["reasoning_content", "reasoning"]}
    async with running_rig(serve_app, project, steps, provider_rules=rules) as rig:
        sid = await rig.new_session()
        turn = await rig.turn(sid, "列出文件")
        assert turn.end["stopReason"] == "end_turn", turn.end
        assert [r.status for r in rig.mock.recorder.records] == [200, 200]
        assistant = [m for m in rig.requests[1]["messages"] if m["role"] == "assistant"]
        assert assistant and "reasoning_content" not in assistant[0]


async def test_session_setting_forces_the_echo_and_the_400_flips_it_back(
    serve_app: Any, project: Path
) -> None:
    steps = [
        {"reasoning": "先看目录。", "tool_calls": [{"name": "list_directory", "id": "c1"}]},
        {"text": "好了"},
    ]
    rules = {"reject_message_fields": ["reasoning_content"]}
    async with running_rig(serve_app, project, steps, provider_rules=rules) as rig:
        sid = await rig.new_session(model={"echo_reasoning": True})
        turn = await rig.turn(sid, "列出文件")
        assert turn.end["stopReason"] == "end_turn", turn.end
        assert [r.status for r in rig.mock.recorder.records] == [200, 400, 200]
        rejected, accepted = rig.requests[1]["messages"], rig.requests[2]["messages"]
        assert next(m for m in rejected if m["role"] == "assistant")["reasoning_content"]
        assert all("reasoning_content" not in m for m in accepted)
