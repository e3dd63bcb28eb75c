"""``ask_user`` through the real transport: the question as a WAIT entry, the
client's answer (an option's number, its words, or free text) as the tool's result,
a refused free text, and the tool offered in ask mode."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from agent_rig import make_project, payload_of, running_rig, tool_messages
from conftest import EventStream

OPTIONS = ["选项一 one", "选项二 two", "选项三 three"]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return make_project(tmp_path / "proj", {"a.py": "x = 1\n"})


def _steps(free: bool = True) -> list[dict[str, Any]]:
    args = {"question": "用哪个方案？ Which approach?", "options": OPTIONS}
    if not free:
        args["allow_free_text"] = False
    return [{"tool_calls": [{"name": "ask_user", "arguments": args}]}, {"text": "好的 ok"}]


async def _turn(rig: Any, sid: str, reply: dict[str, Any], prompt: str = "decide") -> Any:
    asked: list[dict[str, Any]] = []

    async def answer(message: dict[str, Any], _stream: EventStream) -> None:
        if message.get("method") == "session/ask_user":
            asked.append(message["params"])
            body = {"jsonrpc": "2.0", "id": message["id"], "result": reply}
            assert (await rig.client.post_rpc(body)).status_code == 202

    turn = await rig.turn(sid, prompt, on_message=answer)
    return turn, asked


async def test_ask_user_answered_with_a_number_is_that_option(
    serve_app: Any, project: Path
) -> None:
    async with running_rig(serve_app, project, _steps()) as rig:
        sid = await rig.new_session()
        turn, asked = await _turn(rig, sid, {"text": "2"})
        assert asked[0]["options"] == OPTIONS and asked[0]["allowFreeText"] is True
        assert asked[0]["question"] == "用哪个方案？ Which approach?"
        result = payload_of(tool_messages(rig.requests[1])[-1])
        assert result == {"answer": "选项二 two", "option": 2}
        log = Path(rig.runtime.sessions[sid].state.log_path).read_text(encoding="utf-8")
        assert "DONE [" in log and "Question: 用哪个方案？ Which approach?" in log
        assert ":ANSWER: 选项二 two" in log and "1. 选项一 one\n2. 选项二 two" in log
        assert turn.end["stopReason"] == "end_turn"


async def test_ask_user_free_text_is_the_answer_and_can_be_refused(
    serve_app: Any, project: Path
) -> None:
    async with running_rig(serve_app, project, _steps() + _steps(free=False)) as rig:
        sid = await rig.new_session()
        await _turn(rig, sid, {"text": "都不要，用第四种 none of them"})
        result = payload_of(tool_messages(rig.requests[1])[-1])
        assert result == {"answer": "都不要，用第四种 none of them"}
        await _turn(rig, sid, {"text": "my own idea"}, prompt="again")
        refused = tool_messages(rig.requests[3])[-1]
        assert "status=failed" in refused and "free text was not allowed" in refused


async def test_ask_user_is_offered_in_ask_mode(serve_app: Any, project: Path) -> None:
    async with running_rig(serve_app, project, _steps()) as rig:
        sid = await rig.new_session(mode="ask")
        await _turn(rig, sid, {"option": 3})
        names = {t["function"]["name"] for t in rig.requests[0]["tools"]}
        assert "ask_user" in names and "write_file" not in names
        assert payload_of(tool_messages(rig.requests[1])[-1])["answer"] == "选项三 three"
