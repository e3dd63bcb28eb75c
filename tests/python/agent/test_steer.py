"""Steering a running turn (``session/steer``) through the real transport.

The user's words reach the model at the next model-call boundary, get a STEER entry
in the log, make one more round after a final answer, and are never dropped: a steer
the turn had no model call left for comes back in ``turn_end``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from agent_rig import make_project, running_rig
from conftest import EventStream

STEER = "也请保留中文注释 — keep the Chinese comment"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return make_project(
        tmp_path / "proj", {"calc.py": "# 你好\ndef add(a, b):\n    return a - b\n"}
    )


def _user_texts(body: dict[str, Any]) -> list[str]:
    return [str(m["content"]) for m in body["messages"] if m["role"] == "user"]


async def test_a_steer_mid_turn_is_in_the_next_request_and_the_log(
    serve_app: Any, project: Path
) -> None:
    """Sent while a step waits for the user, the steer follows that step's result."""
    steps = [
        {"tool_calls": [{"name": "read_file", "arguments": {"path": "calc.py"}}]},
        {
            "tool_calls": [
                {"name": "write_file", "arguments": {"path": "made.txt", "content": "新\n"}}
            ]
        },
        {"text": "ok"},
    ]
    async with running_rig(serve_app, project, steps) as rig:
        sid = await rig.new_session()
        answers: list[dict[str, Any]] = []

        async def steer_while_waiting(message: dict[str, Any], _stream: EventStream) -> None:
            if message.get("method") == "session/request_permission":
                answers.append(
                    await rig.client.result("session/steer", {"sessionId": sid, "text": STEER})
                )

        turn = await rig.turn(sid, "make the file", on_message=steer_while_waiting)
        assert answers[0]["accepted"] is True and answers[0]["queued"] == 1
        assert turn.end["stopReason"] == "end_turn" and "steers" not in turn.end
        assert len(rig.requests) == 3
        assert STEER not in " ".join(_user_texts(rig.requests[1]))
        last = rig.requests[2]["messages"][-1]
        assert last == {"role": "user", "content": STEER}
        assert any("STEER: 也请保留中文注释" in str(e) for e in turn.log_entries())
        log_text = Path(rig.runtime.sessions[sid].state.log_path).read_text(encoding="utf-8")
        assert "STEER: " + STEER in log_text
        history = (
            await rig.client.result("session/resume", {"sessionId": sid, "cwd": str(project)})
        )["history"]
        assert {
            "role": "user",
            "text": STEER,
            "steer": True,
            "turnId": turn.end["turnId"],
        } in history


async def test_a_steer_after_the_final_answer_makes_one_more_round(
    serve_app: Any, project: Path
) -> None:
    """The model was already answering when the user spoke: it gets one more request."""
    slow = {"text": "答" * 120, "chunk_size": 2, "delay_ms": 15}
    async with running_rig(serve_app, project, [slow, {"text": "again, steered"}]) as rig:
        sid = await rig.new_session()
        answers: list[dict[str, Any]] = []

        async def steer_on_first_chunk(message: dict[str, Any], _stream: EventStream) -> None:
            update = (message.get("params") or {}).get("update") or {}
            if update.get("sessionUpdate") == "agent_message_chunk" and not answers:
                answers.append(
                    await rig.client.result("session/steer", {"sessionId": sid, "text": STEER})
                )

        turn = await rig.turn(sid, "answer me", on_message=steer_on_first_chunk)
        assert answers[0]["accepted"] is True
        assert turn.end["stopReason"] == "end_turn"
        assert len(rig.requests) == 2
        assert rig.requests[1]["messages"][-1] == {"role": "user", "content": STEER}
        assert "again, steered" in turn.text


async def test_a_steer_before_a_cancel_comes_back_in_turn_end(
    serve_app: Any, project: Path
) -> None:
    """Cancelled before the next model call, the steer is returned, not lost."""
    steps = [{"text": "slow " * 200, "chunk_size": 4, "delay_ms": 50}]
    async with running_rig(serve_app, project, steps) as rig:
        sid = await rig.new_session()
        done: list[bool] = []

        async def steer_then_cancel(message: dict[str, Any], _stream: EventStream) -> None:
            update = (message.get("params") or {}).get("update") or {}
            if update.get("sessionUpdate") == "agent_message_chunk" and not done:
                done.append(True)
                await rig.client.result("session/steer", {"sessionId": sid, "text": STEER})
                await rig.client.result("session/cancel", {"sessionId": sid})

        turn = await rig.turn(sid, "go", on_message=steer_then_cancel)
        assert turn.end["stopReason"] == "cancelled"
        assert turn.end["steers"] == [STEER]
        assert rig.runtime.sessions[sid].state.pending_steers == []


async def test_a_steer_without_a_turn_is_not_taken(serve_app: Any, project: Path) -> None:
    async with running_rig(serve_app, project, []) as rig:
        sid = await rig.new_session()
        answer = await rig.client.result("session/steer", {"sessionId": sid, "text": STEER})
        assert answer == {"accepted": False, "reason": "no turn is running"}
        bad = await rig.client.rpc("session/steer", {"sessionId": sid, "text": "  \n"})
        assert bad["error"]["code"] == -32602
