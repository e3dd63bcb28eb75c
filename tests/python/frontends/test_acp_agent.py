"""``agent-shell-bridge acp`` driven by the official ACP SDK's client side.

The agent is a real subprocess on stdio; the project is a real git repository; the
model is the scripted server. What the client sees is what an editor would see.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from acp import PROTOCOL_VERSION, text_block

from acp_rig import API_KEY, RecordingClient, acp_agent, agent_env
from agent_rig import make_project
from agent_shell_bridge.model.mock_script import MockScript
from agent_shell_bridge.model.mock_server import MockServer
from conftest import bridge_command

BUGGY = "def add(a, b):\n    return a - b\n"
FIXED_LINE = "    return a + b"
TEST_FILE = (
    "import unittest\nfrom calc import add\n\n\nclass T(unittest.TestCase):\n"
    "    def test_add(self):\n        self.assertEqual(add(2, 3), 5)\n\n\n"
    "if __name__ == '__main__':\n    unittest.main()\n"
)

FIX_STEPS: list[dict[str, Any]] = [
    {
        "text": "先看看代码。",
        "tool_calls": [{"name": "read_file", "arguments": {"path": "calc.py"}}],
    },
    {"tool_calls": [{"name": "run_command", "arguments": {"command": "rm -rf ~"}}]},
    {
        "tool_calls": [
            {
                "name": "replace_region",
                "arguments": {
                    "path": "calc.py",
                    "start_line": 2,
                    "end_line": 2,
                    "new_text": FIXED_LINE,
                },
            }
        ]
    },
    {"text": "修好了：加法现在正确。Fixed."},
]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return make_project(tmp_path / "proj", {"calc.py": BUGGY, "test_calc.py": TEST_FILE})


async def start(rig: Any, project: Path) -> str:
    init = await rig.conn.initialize(protocol_version=PROTOCOL_VERSION)
    assert init.protocol_version == 1
    assert init.agent_capabilities.load_session is True
    assert init.agent_capabilities.prompt_capabilities.embedded_context is True
    session = await rig.conn.new_session(cwd=str(project), mcp_servers=[])
    assert {m.id for m in session.modes.available_modes} == {"act", "ask"}
    return str(session.session_id)


async def test_acp_fix_task_streams_asks_once_denies_rm_and_ends_turn(
    tmp_path: Path, project: Path
) -> None:
    async with acp_agent(tmp_path, FIX_STEPS) as rig:
        sid = await start(rig, project)
        reply = await rig.conn.prompt(session_id=sid, prompt=[text_block("修复 add 的错误")])
        assert reply.stop_reason == "end_turn"
        client = rig.client
        assert client.text == "先看看代码。修好了：加法现在正确。Fixed."
        # Exactly one question, for the edit; the rm -rf ~ was refused without one.
        assert [p["toolCall"]["title"] for p in client.permissions] == [
            client.permissions[0]["toolCall"]["title"]
        ]
        assert client.permissions[0]["toolCall"]["kind"] == "edit"
        kinds = {o["kind"] for o in client.permissions[0]["options"]}
        assert {"allow_once", "reject_once", "reject_always"} <= kinds
        starts = {u["toolCallId"]: u for u in client.of("tool_call")}
        ends = {
            u["toolCallId"]: u
            for u in client.of("tool_call_update")
            if u.get("status") in ("completed", "failed")
        }
        by_kind = {starts[i]["kind"]: ends[i] for i in starts}
        assert by_kind["execute"]["status"] == "failed"
        assert "rm -rf" in json.dumps(
            starts[next(i for i in starts if starts[i]["kind"] == "execute")]
        )
        edit = by_kind["edit"]
        assert edit["status"] == "completed"
        (diff,) = [c for c in edit["content"] if c["type"] == "diff"]
        assert diff["path"] == str(project / "calc.py")
        assert diff["oldText"] == BUGGY
        assert diff["newText"] == BUGGY.replace("    return a - b", FIXED_LINE)
        read_start = next(u for u in starts.values() if u["kind"] == "read")
        assert read_start["locations"] == [{"path": str(project / "calc.py")}]
        assert (project / "calc.py").read_text(encoding="utf-8") == diff["newText"]
        # The same core wrote its org log and checkpoint in the project.
        logs = list((project / ".agent-shell" / "logs").glob("*.org"))
        assert len(logs) == 1
        log_text = logs[0].read_text(encoding="utf-8")
        assert "修复 add 的错误" in log_text and "rm -rf ~" in log_text
        assert list((project / ".agent-shell" / "sessions").glob(f"{sid}*"))
    stderr = rig.stderr_path.read_text(encoding="utf-8", errors="replace")
    assert API_KEY not in stderr
    assert API_KEY not in log_text


async def test_acp_rejected_edit_leaves_the_file_untouched(tmp_path: Path, project: Path) -> None:
    client = RecordingClient(choose=lambda _r: "reject_once")
    async with acp_agent(tmp_path, FIX_STEPS, client) as rig:
        sid = await start(rig, project)
        reply = await rig.conn.prompt(session_id=sid, prompt=[text_block("fix it")])
        assert reply.stop_reason == "end_turn"
        assert len(client.permissions) == 1
        edit_end = [u for u in client.of("tool_call_update") if u.get("status") == "failed"]
        assert len(edit_end) == 2  # rm -rf ~ denied, the edit rejected
    assert (project / "calc.py").read_text(encoding="utf-8") == BUGGY


async def test_acp_reject_always_answers_the_same_request_without_asking(
    tmp_path: Path, project: Path
) -> None:
    read, edit = FIX_STEPS[0], FIX_STEPS[2]
    steps = [read, edit, edit, {"text": "gave up"}]
    client = RecordingClient(choose=lambda _r: "reject_always")
    async with acp_agent(tmp_path, steps, client) as rig:
        sid = await start(rig, project)
        reply = await rig.conn.prompt(session_id=sid, prompt=[text_block("fix")])
        assert reply.stop_reason == "end_turn"
        assert len(client.permissions) == 1
        failed = [u for u in client.of("tool_call_update") if u.get("status") == "failed"]
        assert len(failed) == 2
    assert (project / "calc.py").read_text(encoding="utf-8") == BUGGY


async def test_acp_cancel_during_a_slow_stream_ends_cancelled(
    tmp_path: Path, project: Path
) -> None:
    # Slow per chunk (400 chunks, 50 ms apart: 20 s in all), not slow to start: the
    # cancel lands mid-stream, just after the first text.
    steps = [{"text": "慢" * 400, "chunk_size": 1, "delay_ms": 50}]
    async with acp_agent(tmp_path, steps) as rig:
        sid = await start(rig, project)
        turn = asyncio.create_task(
            rig.conn.prompt(session_id=sid, prompt=[text_block("write a lot")])
        )
        await asyncio.wait_for(rig.client.first_text.wait(), 30)
        await rig.conn.cancel(session_id=sid)
        reply = await asyncio.wait_for(turn, 30)
        assert reply.stop_reason == "cancelled"
        assert 0 < len(rig.client.text) < 400  # it stopped mid-stream


async def test_acp_load_session_replays_history_in_a_new_process(
    tmp_path: Path, project: Path
) -> None:
    async with acp_agent(tmp_path, [{"text": "第一轮的回答"}]) as rig:
        sid = await start(rig, project)
        await rig.conn.prompt(session_id=sid, prompt=[text_block("第一轮：你好")])
    client = RecordingClient()
    async with acp_agent(tmp_path, [{"text": "unused"}], client) as rig:
        await rig.conn.initialize(protocol_version=PROTOCOL_VERSION)
        listed = await rig.conn.list_sessions(cwd=str(project))
        assert sid in [s.session_id for s in listed.sessions]
        await rig.conn.load_session(cwd=str(project), session_id=sid, mcp_servers=[])
        users = [u["content"]["text"] for u in client.of("user_message_chunk")]
        assert users == ["第一轮：你好"]
        assert client.text == "第一轮的回答"


async def test_acp_resources_and_links_reach_the_model(tmp_path: Path, project: Path) -> None:
    async with acp_agent(tmp_path, [{"text": "ok"}]) as rig:
        sid = await start(rig, project)
        blocks: list[Any] = [
            {"type": "text", "text": "解释这段"},
            {
                "type": "resource",
                "resource": {"uri": f"file://{project}/calc.py", "text": BUGGY},
            },
            {
                "type": "resource_link",
                "uri": f"file://{project}/test_calc.py",
                "name": "test_calc.py",
            },
        ]
        await rig.conn.prompt(session_id=sid, prompt=blocks)
        user = [m["content"] for m in rig.requests[0]["messages"] if m["role"] == "user"][-1]
        assert user.startswith("解释这段\n\n@calc.py\n\n@test_calc.py\n\n[ATTACHMENT ")
        # Framed as data like Emacs's attachments, labelled with their paths.
        assert f'[ATTACHMENT name="calc.py" kind=file path="{project}/calc.py"' in user
        assert f"]\n{BUGGY}" in user
        linked = (project / "test_calc.py").read_text(encoding="utf-8")
        assert f'name="test_calc.py" kind=file path="{project}/test_calc.py"' in user
        assert linked in user
        logs = list((project / ".agent-shell" / "logs").glob("*.org"))
        org = logs[0].read_text(encoding="utf-8")
        assert ":ATTACHMENTS: 2" in org and ":ATTACHMENT_2: test_calc.py (" in org


async def test_acp_resource_outside_the_project_is_refused(tmp_path: Path, project: Path) -> None:
    """An editor's block is not the user's explicit send: outside files stay out."""
    outside = tmp_path / "outside.txt"
    outside.write_text("秘密 outside\n", encoding="utf-8")
    async with acp_agent(tmp_path, [{"text": "ok"}]) as rig:
        sid = await start(rig, project)
        blocks: list[Any] = [
            {"type": "text", "text": "看看"},
            {"type": "resource_link", "uri": outside.as_uri(), "name": "outside.txt"},
        ]
        await rig.conn.prompt(session_id=sid, prompt=blocks)
        user = [m["content"] for m in rig.requests[0]["messages"] if m["role"] == "user"][-1]
        assert "秘密" not in user
        org = next((project / ".agent-shell" / "logs").glob("*.org")).read_text(encoding="utf-8")
        assert ":ATTACHMENT_REFUSED_1: outside.txt:" in org


async def test_acp_set_mode_to_ask_offers_read_tools_only(tmp_path: Path, project: Path) -> None:
    async with acp_agent(tmp_path, [{"text": "只读"}]) as rig:
        sid = await start(rig, project)
        await rig.conn.set_session_mode(session_id=sid, mode_id="ask")
        await rig.conn.prompt(session_id=sid, prompt=[text_block("what is add?")])
        offered = {t["function"]["name"] for t in rig.requests[0]["tools"]}
        assert "replace_region" not in offered and "run_command" not in offered
        assert "read_file" in offered


async def test_acp_stdout_carries_only_protocol_messages(tmp_path: Path, project: Path) -> None:
    """Raw stdio, no SDK: every line the agent writes is one JSON-RPC 2.0 message."""
    mock = MockServer(MockScript.model_validate({"steps": FIX_STEPS}))
    await mock.start()
    try:
        proc = await asyncio.create_subprocess_exec(
            *bridge_command(),
            "acp",
            env=agent_env(tmp_path, mock.api_base),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        assert proc.stdin is not None and proc.stdout is not None

        async def send(message: dict[str, Any]) -> None:
            assert proc.stdin is not None
            proc.stdin.write((json.dumps(message, ensure_ascii=False) + "\n").encode())
            await proc.stdin.drain()

        lines: list[dict[str, Any]] = []

        async def until(predicate: Any) -> dict[str, Any]:
            assert proc.stdout is not None
            while True:
                raw = await asyncio.wait_for(proc.stdout.readline(), 60)
                assert raw, "the agent closed stdout"
                message = json.loads(raw)
                assert message["jsonrpc"] == "2.0"
                lines.append(message)
                if message.get("method") == "session/request_permission":
                    await send(
                        {
                            "jsonrpc": "2.0",
                            "id": message["id"],
                            "result": {
                                "outcome": {"outcome": "selected", "optionId": "allow_once"}
                            },
                        }
                    )
                if predicate(message):
                    return message

        await send(
            {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}}
        )
        await until(lambda m: m.get("id") == 1)
        await send(
            {
                "jsonrpc": "2.0",
                "id": 2,
                "method": "session/new",
                "params": {"cwd": str(project), "mcpServers": []},
            }
        )
        sid = (await until(lambda m: m.get("id") == 2))["result"]["sessionId"]
        await send(
            {
                "jsonrpc": "2.0",
                "id": 3,
                "method": "session/prompt",
                "params": {"sessionId": sid, "prompt": [{"type": "text", "text": "修复"}]},
            }
        )
        done = await until(lambda m: m.get("id") == 3)
        assert done["result"]["stopReason"] == "end_turn"
        assert API_KEY not in json.dumps(lines, ensure_ascii=False)
        proc.stdin.close()
        assert await asyncio.wait_for(proc.wait(), 30) == 0
    finally:
        if proc.returncode is None:
            proc.kill()
        await mock.stop()


async def test_acp_reads_and_edits_go_through_the_editors_buffers(
    tmp_path: Path, project: Path
) -> None:
    """With fs capabilities the agent sees the unsaved buffer and edits it, not the disk."""
    from acp.schema import ClientCapabilities, FileSystemCapabilities

    unsaved = "def add(a, b):\n    # 未保存的修改 UNSAVED\n    return a - b\n"
    client = RecordingClient()
    client.buffers[str(project / "calc.py")] = unsaved
    edit = {
        "name": "replace_region",
        "arguments": {"path": "calc.py", "start_line": 3, "end_line": 3, "new_text": FIXED_LINE},
    }
    steps = [FIX_STEPS[0], {"tool_calls": [edit]}, {"text": "done"}]
    async with acp_agent(tmp_path, steps, client) as rig:
        caps = ClientCapabilities(
            fs=FileSystemCapabilities(read_text_file=True, write_text_file=True)
        )
        await rig.conn.initialize(protocol_version=PROTOCOL_VERSION, client_capabilities=caps)
        session = await rig.conn.new_session(cwd=str(project), mcp_servers=[])
        reply = await rig.conn.prompt(session_id=session.session_id, prompt=[text_block("fix")])
        assert reply.stop_reason == "end_turn"
        read_result = [m["content"] for m in rig.requests[1]["messages"] if m["role"] == "tool"]
        assert "UNSAVED" in read_result[-1]
        assert client.writes == [
            (str(project / "calc.py"), unsaved.replace("    return a - b", FIXED_LINE))
        ]
    # The disk still has the saved text: the editor decides when to save.
    assert (project / "calc.py").read_text(encoding="utf-8") == BUGGY


async def test_acp_passes_the_editors_mcp_servers_through(tmp_path: Path, project: Path) -> None:
    """The client's stdio MCP servers start for the session; their tools reach the model."""
    import sys

    from acp.schema import McpServerStdio

    time_server = str(Path(sys.executable).parent / "mcp-server-time")
    steps = [
        {
            "tool_calls": [
                {
                    "name": "mcp__time__get_current_time",
                    "arguments": {"timezone": "Asia/Shanghai"},
                }
            ]
        },
        {"text": "现在的时间已知。"},
    ]
    async with acp_agent(tmp_path, steps) as rig:
        await rig.conn.initialize(protocol_version=PROTOCOL_VERSION)
        server = McpServerStdio(name="time", command=time_server, args=[], env=[])
        session = await rig.conn.new_session(cwd=str(project), mcp_servers=[server])
        reply = await rig.conn.prompt(session_id=session.session_id, prompt=[text_block("几点?")])
        assert reply.stop_reason == "end_turn"
        offered = {t["function"]["name"] for t in rig.requests[0]["tools"]}
        assert "mcp__time__get_current_time" in offered
        result = [m["content"] for m in rig.requests[1]["messages"] if m["role"] == "tool"][-1]
        assert "Asia/Shanghai" in result and "status=completed" in result
        assert rig.client.permissions == []  # read-only annotated: no question


async def test_acp_load_session_starts_the_editors_mcp_servers(
    tmp_path: Path, project: Path
) -> None:
    """A loaded session gets the client's MCP servers as a new one does."""
    import sys

    from acp.schema import McpServerStdio

    time_server = str(Path(sys.executable).parent / "mcp-server-time")
    async with acp_agent(tmp_path, [{"text": "第一轮"}]) as rig:
        sid = await start(rig, project)
        await rig.conn.prompt(session_id=sid, prompt=[text_block("你好")])
    async with acp_agent(tmp_path, [{"text": "第二轮"}]) as rig:
        await rig.conn.initialize(protocol_version=PROTOCOL_VERSION)
        server = McpServerStdio(name="time", command=time_server, args=[], env=[])
        await rig.conn.load_session(cwd=str(project), session_id=sid, mcp_servers=[server])
        await rig.conn.prompt(session_id=sid, prompt=[text_block("几点?")])
        offered = {t["function"]["name"] for t in rig.requests[0]["tools"]}
        assert "mcp__time__get_current_time" in offered


async def test_acp_advertises_and_passes_remote_mcp_servers_through(
    tmp_path: Path, project: Path
) -> None:
    """An editor's http MCP server: advertised in initialize, connected with its
    headers, its tools reach the model, Chinese round-trips, the token stays out."""
    from acp.schema import HttpHeader, HttpMcpServer

    from mcp_remote import remote_fixture

    token = "Bearer acp-令牌-SECRET"
    steps = [
        {"tool_calls": [{"name": "mcp__web__echo", "arguments": {"text": "编辑器的远程服务器"}}]},
        {"text": "收到。"},
    ]
    with remote_fixture(tmp_path / "rec.txt") as remote:
        async with acp_agent(tmp_path, steps) as rig:
            init = await rig.conn.initialize(protocol_version=PROTOCOL_VERSION)
            caps = init.agent_capabilities.mcp_capabilities
            assert (caps.http, caps.sse) == (True, True)
            server = HttpMcpServer(
                type="http",
                name="web",
                url=remote.url,
                headers=[HttpHeader(name="Authorization", value=token)],
            )
            session = await rig.conn.new_session(cwd=str(project), mcp_servers=[server])
            reply = await rig.conn.prompt(
                session_id=session.session_id, prompt=[text_block("试试")]
            )
            assert reply.stop_reason == "end_turn"
            assert "mcp__web__echo" in {t["function"]["name"] for t in rig.requests[0]["tools"]}
            result = [m["content"] for m in rig.requests[1]["messages"] if m["role"] == "tool"]
            assert "编辑器的远程服务器" in result[-1] and "status=completed" in result[-1]
            assert rig.client.permissions == []  # echo is annotated read-only
            seen = json.dumps(rig.client.updates, ensure_ascii=False)
        assert f"authorization: {token}" in remote.headers_seen()
        assert "SECRET" not in seen
        assert "SECRET" not in rig.stderr_path.read_text(encoding="utf-8", errors="replace")
