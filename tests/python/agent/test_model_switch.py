"""``session/set_model`` with two scripted model servers: the next request goes to
the second, a switch during a turn takes over at its next model call, totals are
kept per model and summed, and the first provider's reasoning never reaches the
second."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agent_rig import make_project, running_rig
from agent_shell_bridge.model.mock_script import MockScript
from agent_shell_bridge.model.mock_server import MockServer
from conftest import EventStream

SECRET_REASONING = "深度思考 A-only reasoning"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return make_project(tmp_path / "proj", {"a.py": "x = 1\n"})


def _second(api_base: str, **extra: Any) -> dict[str, Any]:
    return {
        "api_base": api_base,
        "model": "model-b",
        "echo_reasoning": True,  # it would take reasoning back: none of A's may come
        "price_input_per_mtok": 2.0,
        "price_output_per_mtok": 8.0,
        **extra,
    }


async def test_the_next_request_goes_to_the_chosen_model(serve_app: Any, project: Path) -> None:
    first = [
        {
            "reasoning": SECRET_REASONING,
            "tool_calls": [{"name": "read_file", "arguments": {"path": "a.py"}}],
        },
        {"text": "A done"},
    ]
    async with (
        MockServer(MockScript.model_validate({"steps": [{"text": "B 回答"}]})) as b,
        running_rig(serve_app, project, first, prices=(1.0, 4.0, 1.0)) as rig,
    ):
        sid = await rig.new_session()
        await rig.turn(sid, "first on A")
        switched = await rig.client.result(
            "session/set_model", {"sessionId": sid, "name": "B", "model": _second(b.api_base)}
        )
        assert switched["applied"] is True and switched["model"] == "model-b"
        turn = await rig.turn(sid, "then on B")
        assert len(rig.requests) == 2 and len(b.recorder.records) == 1
        body = b.recorder.records[0].body
        assert body["model"] == "model-b"
        sent = json.dumps(body, ensure_ascii=False)
        assert SECRET_REASONING not in sent and "_provider" not in sent
        assert "B 回答" in turn.text
        usage = turn.updates("usage")[-1]
        by_model = {m["model"]: m for m in usage["byModel"]}
        assert set(by_model) == {"mock-model", "B"} and usage["model"] == "B"
        assert sum(m["totalTokens"] for m in by_model.values()) == usage["totalTokens"]
        assert by_model["B"]["costUsd"] > 0
        log = Path(rig.runtime.sessions[sid].state.log_path).read_text(encoding="utf-8")
        assert "Model: switched from mock-model to B" in log


async def test_a_switch_during_a_turn_takes_the_next_call_and_prices_each(
    serve_app: Any, project: Path
) -> None:
    first = [
        {
            "reasoning": SECRET_REASONING,
            "tool_calls": [
                {"name": "write_file", "arguments": {"path": "new.txt", "content": "新\n"}}
            ],
        },
        {"text": "never on A"},
    ]
    async with (
        MockServer(MockScript.model_validate({"steps": [{"text": "B finished"}]})) as b,
        running_rig(serve_app, project, first, prices=(1.0, 4.0, 1.0)) as rig,
    ):
        sid = await rig.new_session()
        answers: list[dict[str, Any]] = []

        async def switch_while_waiting(message: dict[str, Any], _stream: EventStream) -> None:
            if message.get("method") == "session/request_permission":
                params = {"sessionId": sid, "name": "B", "model": _second(b.api_base)}
                answers.append(await rig.client.result("session/set_model", params))

        turn = await rig.turn(sid, "write it", on_message=switch_while_waiting)
        assert answers[0]["applied"] is False
        assert len(rig.requests) == 1 and len(b.recorder.records) == 1
        assert "B finished" in turn.text
        sent = json.dumps(b.recorder.records[0].body, ensure_ascii=False)
        assert SECRET_REASONING not in sent and "_provider" not in sent
        log = Path(rig.runtime.sessions[sid].state.log_path).read_text(encoding="utf-8")
        assert ":TOKENS_MODEL_MOCK_MODEL:" in log and ":TOKENS_MODEL_B:" in log
        assert ":COST_MODEL_MOCK_MODEL:" in log and ":COST_MODEL_B:" in log
        assert "over 2 models" in log


async def test_set_model_needs_a_base_and_a_model(serve_app: Any, project: Path) -> None:
    async with running_rig(serve_app, project, []) as rig:
        sid = await rig.new_session()
        bad = await rig.client.rpc(
            "session/set_model", {"sessionId": sid, "model": {"model": "only-a-name"}}
        )
        assert bad["error"]["code"] == -32602
