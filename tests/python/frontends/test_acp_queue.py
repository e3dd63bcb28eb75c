"""ACP: a prompt sent while a turn runs is queued, then runs as its own turn.

Driven by the official ACP SDK's client against a real ``acp`` subprocess; the model
is the scripted server.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from acp import PROTOCOL_VERSION, text_block

from acp_rig import acp_agent
from agent_rig import make_project


async def test_acp_a_prompt_during_a_turn_waits_and_runs_next(tmp_path: Path) -> None:
    project = make_project(tmp_path / "proj", {"a.py": "x = 1\n"})
    steps = [
        {"text": "第一" * 40, "chunk_size": 2, "delay_ms": 10},
        {"text": "second answer"},
    ]
    async with acp_agent(tmp_path, steps) as rig:
        await rig.conn.initialize(protocol_version=PROTOCOL_VERSION)
        sid = str((await rig.conn.new_session(cwd=str(project), mcp_servers=[])).session_id)
        first = asyncio.create_task(rig.conn.prompt(session_id=sid, prompt=[text_block("一")]))
        await asyncio.wait_for(rig.client.first_text.wait(), 30)
        second = asyncio.create_task(rig.conn.prompt(session_id=sid, prompt=[text_block("二")]))
        one, two = await asyncio.wait_for(asyncio.gather(first, second), 30)
        assert one.stop_reason == "end_turn" and two.stop_reason == "end_turn"
        assert len(rig.requests) == 2
        assert rig.requests[1]["messages"][-1] == {"role": "user", "content": "二"}
        assert rig.client.text.endswith("second answer")


async def test_acp_cancel_also_ends_the_prompts_waiting_behind_the_turn(tmp_path: Path) -> None:
    """A cancel answers the running prompt and those queued behind it "cancelled";
    none of the queued ones reaches the model, and the next prompt runs as usual."""
    project = make_project(tmp_path / "proj", {"a.py": "x = 1\n"})
    steps = [
        {"text": "长" * 400, "chunk_size": 2, "delay_ms": 20},
        {"match": {"last_user_contains": "三 after"}, "text": "third answer 第三"},
        {"text": "never: the queued prompt was cancelled"},
    ]
    async with acp_agent(tmp_path, steps) as rig:
        await rig.conn.initialize(protocol_version=PROTOCOL_VERSION)
        sid = str((await rig.conn.new_session(cwd=str(project), mcp_servers=[])).session_id)
        first = asyncio.create_task(rig.conn.prompt(session_id=sid, prompt=[text_block("一")]))
        await asyncio.wait_for(rig.client.first_text.wait(), 30)
        queued = asyncio.create_task(rig.conn.prompt(session_id=sid, prompt=[text_block("二")]))
        # Tasks start in the order made, and both write through the one connection:
        # the prompt is on the wire before the cancel.
        await asyncio.create_task(rig.conn.cancel(session_id=sid))
        one, two = await asyncio.wait_for(asyncio.gather(first, queued), 30)
        assert (one.stop_reason, two.stop_reason) == ("cancelled", "cancelled")
        third = await asyncio.wait_for(
            rig.conn.prompt(session_id=sid, prompt=[text_block("三 after")]), 30
        )
        assert third.stop_reason == "end_turn"
        assert [r["messages"][-1]["content"] for r in rig.requests] == ["一", "三 after"]
        assert rig.client.text.endswith("third answer 第三")
