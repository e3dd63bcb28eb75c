"""ACP ``session/fork`` and the ``model`` config option, with the official SDK's
client against a real ``acp`` subprocess and the scripted model."""

from __future__ import annotations

from pathlib import Path

from acp import PROTOCOL_VERSION, text_block

from acp_rig import acp_agent
from agent_rig import make_project


async def test_acp_fork_keeps_the_history_and_the_model_option_switches(
    tmp_path: Path,
) -> None:
    project = make_project(tmp_path / "proj", {"a.py": "x = 1\n"})
    steps = [{"text": "第一 one"}, {"text": "在分支 in the fork"}, {"text": "换了模型"}]
    async with acp_agent(tmp_path, steps) as rig:
        init = await rig.conn.initialize(protocol_version=PROTOCOL_VERSION)
        assert init.agent_capabilities.session_capabilities.fork is not None
        sid = str((await rig.conn.new_session(cwd=str(project), mcp_servers=[])).session_id)
        await rig.conn.prompt(session_id=sid, prompt=[text_block("原来 original")])
        fork = await rig.conn.fork_session(session_id=sid, cwd=str(project))
        fid = str(fork.session_id)
        assert fid != sid
        await rig.conn.prompt(session_id=fid, prompt=[text_block("分支 fork")])
        users = [m["content"] for m in rig.requests[1]["messages"] if m["role"] == "user"]
        assert users == ["原来 original", "分支 fork"]
        answer = await rig.conn.set_config_option(
            config_id="model", session_id=fid, value="model-two"
        )
        assert answer.config_options[0].current_value == "model-two"
        await rig.conn.prompt(session_id=fid, prompt=[text_block("again")])
        assert rig.requests[2]["model"] == "model-two"
        assert rig.requests[0]["model"] == rig.requests[1]["model"] != "model-two"
