"""ACP: the model's ``ask_user`` becomes a permission request whose options are the
answers; the option the editor's user picks is the tool's result. Driven by the
official ACP SDK's client against a real ``acp`` subprocess."""

from __future__ import annotations

from pathlib import Path

from acp import PROTOCOL_VERSION, text_block

from acp_rig import RecordingClient, acp_agent
from agent_rig import make_project, payload_of, tool_messages


async def test_acp_ask_user_is_a_permission_request_with_the_answers(tmp_path: Path) -> None:
    project = make_project(tmp_path / "proj", {"a.py": "x = 1\n"})
    question = {"question": "哪个？ Which?", "options": ["甲 A", "乙 B", "丙 C"]}
    steps = [{"tool_calls": [{"name": "ask_user", "arguments": question}]}, {"text": "ok"}]
    client = RecordingClient(choose=lambda _request: "answer_3")
    async with acp_agent(tmp_path, steps, client) as rig:
        await rig.conn.initialize(protocol_version=PROTOCOL_VERSION)
        sid = str((await rig.conn.new_session(cwd=str(project), mcp_servers=[])).session_id)
        reply = await rig.conn.prompt(session_id=sid, prompt=[text_block("choose")])
        assert reply.stop_reason == "end_turn"
        asked = client.permissions[0]
        assert [o["name"] for o in asked["options"]] == question["options"]
        assert [o["optionId"] for o in asked["options"]] == ["answer_1", "answer_2", "answer_3"]
        assert asked["toolCall"]["title"] == "Question: 哪个？ Which?"
        assert payload_of(tool_messages(rig.requests[1])[-1]) == {"answer": "丙 C", "option": 3}
