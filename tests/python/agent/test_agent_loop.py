"""The agent loop through the real transport: steps, guards, truncation, cancel.

Each test scripts the model, runs a real bridge on 127.0.0.1 and follows the SSE
stream as a client would; commands run as real subprocesses in a temp git project.
"""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest

from agent_rig import allow_once, make_project, reject, running_rig, start_rig, tool_messages
from agent_shell_bridge.agent.session.store import SessionStore

# Run again with the sandbox forced off (make test): its path depends on the sandbox.
pytestmark = pytest.mark.sandbox_sensitive


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return make_project(
        tmp_path / "proj",
        {
            "calc.py": "def add(a, b):\n    return a - b\n",
            "test_calc.py": (
                "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"
            ),
            "中文.py": "# 你好，世界\nGREETING = '早上好 🚀'\n",
            "README.md": "# demo\n",
        },
    )


async def test_agent_loop_runs_parallel_tool_calls_in_order(serve_app: Any, project: Path) -> None:
    """Two calls in one response both run, in order, each answered by its id."""
    async with running_rig(
        serve_app,
        project,
        [
            {
                "tool_calls": [
                    {"name": "read_file", "arguments": {"path": "中文.py"}, "id": "call_a"},
                    {"name": "list_directory", "arguments": {}, "id": "call_b"},
                ]
            },
            {"text": "文件里有问候语。"},
        ],
    ) as rig:
        sid = await rig.new_session()
        turn = await rig.turn(sid, "看看 中文.py")
        assert turn.end["stopReason"] == "end_turn"
        assert turn.text == "文件里有问候语。"
        second = rig.requests[1]["messages"]
        tools = [m for m in second if m["role"] == "tool"]
        assert [m["tool_call_id"] for m in tools] == ["call_a", "call_b"]
        assert "早上好 🚀" in tools[0]["content"]  # byte-exact Chinese and emoji
        assert "中文.py" in tools[1]["content"]
        assert tools[0]["content"].startswith(
            "[TOOL_RESULT name=read_file id=call_a status=completed]"
        )
        assert [u["status"] for u in turn.tool_results()] == ["completed", "completed"]


async def test_agent_loop_warns_after_three_identical_calls(serve_app: Any, project: Path) -> None:
    call = {"name": "list_directory", "arguments": {"path": "."}}
    async with running_rig(
        serve_app, project, [{"tool_calls": [call]}] * 3 + [{"text": "done"}]
    ) as rig:
        sid = await rig.new_session()
        await rig.turn(sid, "list")
        results = [tool_messages(r)[-1] for r in rig.requests[1:4]]
        assert "repeating yourself" not in results[0]
        assert "repeating yourself" not in results[1]
        assert "repeating yourself" in results[2]


async def test_agent_loop_demands_new_approach_after_two_failures(
    serve_app: Any, project: Path
) -> None:
    async with running_rig(
        serve_app,
        project,
        [
            {"tool_calls": [{"name": "read_file", "arguments": {"path": "missing-1.py"}}]},
            {"tool_calls": [{"name": "read_file", "arguments": {"path": "missing-2.py"}}]},
            {"text": "giving up"},
        ],
    ) as rig:
        sid = await rig.new_session()
        await rig.turn(sid, "read")
        first, second = tool_messages(rig.requests[1])[-1], tool_messages(rig.requests[2])[-1]
        assert "status=failed" in first and "change your approach" not in first
        assert "change your approach" in second


async def test_agent_loop_stops_at_the_step_limit(serve_app: Any, project: Path) -> None:
    step = {"tool_calls": [{"name": "project_status", "arguments": {}}]}
    async with running_rig(serve_app, project, [step] * 5, max_steps=2) as rig:
        sid = await rig.new_session()
        turn = await rig.turn(sid, "loop forever")
        assert turn.end["stopReason"] == "max_turn_requests"
        assert len(rig.requests) == 2


async def test_agent_loop_ends_on_task_complete(serve_app: Any, project: Path) -> None:
    async with running_rig(
        serve_app,
        project,
        [{"tool_calls": [{"name": "task_complete", "arguments": {"summary": "全部完成"}}]}],
    ) as rig:
        sid = await rig.new_session()
        turn = await rig.turn(sid, "finish")
        assert turn.end["stopReason"] == "end_turn"
        assert turn.end["summary"] == "全部完成"
        assert len(rig.requests) == 1


async def test_long_output_is_cut_and_paged_with_request_log_view(
    serve_app: Any, project: Path
) -> None:
    async with running_rig(
        serve_app,
        project,
        [
            {"tool_calls": [{"name": "run_command", "arguments": {"command": "seq 1 1000"}}]},
            {
                "tool_calls": [
                    {
                        "name": "request_log_view",
                        "arguments": {"ref": "out-1", "offset": 500, "limit": 3},
                    }
                ]
            },
            {"text": "seen"},
        ],
    ) as rig:
        sid = await rig.new_session()
        turn = await rig.turn(sid, "count")
        assert turn.end["stopReason"] == "end_turn"
        cut = tool_messages(rig.requests[1])[-1]
        payload = json.loads(cut.split("\n", 1)[1].rsplit("\n", 1)[0])
        assert payload["truncated"] is True
        assert payload["log_ref"] == "out-1"
        lines = payload["stdout"].splitlines()
        assert lines[0] == "1" and lines[199] == "200"
        assert "700 lines omitted" in lines[200]
        assert lines[-1] == "1000"
        view = json.loads(tool_messages(rig.requests[2])[-1].split("\n", 1)[1].rsplit("\n", 1)[0])
        assert view["text"] == "501\n502\n503"
        assert view["total_lines"] == 1000


async def test_history_is_compacted_past_seventy_percent_of_the_window(
    serve_app: Any, project: Path
) -> None:
    """A small window forces a summarisation call; later requests shrink."""
    (project / "big.py").write_text("value = 1  # filler line\n" * 50, encoding="utf-8")
    reads = [
        {
            "tool_calls": [
                {
                    "name": "read_file",
                    "arguments": {"path": "big.py", "start_line": i, "end_line": i + 4},
                }
            ]
        }
        for i in range(1, 41)
    ]
    summary = {
        "match": {"system_contains": "Summarise the earlier part"},
        "text": "摘要：读了 big.py。",
    }
    async with running_rig(
        serve_app,
        project,
        # Steps with a match are served only to matching requests, wherever they stand.
        [summary] * 6 + [*reads, {"text": "done"}],
        # Room for the tools' schemas (about 4k tokens) and three steps after them.
        context_window=8_500,
        max_steps=60,
    ) as rig:
        sid = await rig.new_session()
        turn = await rig.turn(sid, "read a lot")
        assert turn.end["stopReason"] == "end_turn"
        bodies = rig.requests
        summary_calls = [
            i
            for i, b in enumerate(bodies)
            if "Summarise the earlier part" in b["messages"][0]["content"]
        ]
        assert summary_calls, "no compaction request reached the model"
        first = summary_calls[0]
        size = [len(json.dumps(b["messages"], ensure_ascii=False)) for b in bodies]
        assert size[first + 1] < size[first - 1]
        after = bodies[first + 1]["messages"]
        # The summary is framed data after the system prompt, never part of it.
        assert "摘要：读了 big.py。" not in after[0]["content"]
        assert after[1]["role"] == "user"
        assert after[1]["content"].startswith("[EARLIER_WORK summary]\n摘要：读了 big.py。")
        # The newest steps that fit half the window stay verbatim, the newest read too.
        kept = tool_messages(bodies[first + 1])
        assert len(kept) >= 3
        newest = json.loads(kept[-1].split("\n", 1)[1].rsplit("\n", 1)[0])
        assert "value = 1" in newest["text"]
        assert size[first + 1] // 4 <= 8_500 // 2
        assert any("Compacted" in e["title"] for e in turn.log_entries())


async def test_cancel_mid_stream_closes_the_model_connection(serve_app: Any, project: Path) -> None:
    async with running_rig(
        serve_app, project, [{"text": "slow answer " * 50, "chunk_size": 4, "delay_ms": 200}]
    ) as rig:
        sid = await rig.new_session()

        async def cancel_on_first_chunk(message: dict[str, Any], _stream: Any) -> None:
            update = (message.get("params") or {}).get("update") or {}
            if update.get("sessionUpdate") == "agent_message_chunk" and not cancelled:
                cancelled.append(True)
                await rig.client.result("session/cancel", {"sessionId": sid})

        cancelled: list[bool] = []
        turn = await rig.turn(sid, "talk", on_message=cancel_on_first_chunk)
        assert turn.end["stopReason"] == "cancelled"
        async with asyncio.timeout(5):
            await rig.mock.recorder.wait_for(lambda rs: rs and rs[0].disconnected)


async def test_cancel_mid_tool_kills_the_command(serve_app: Any, project: Path) -> None:
    marker = project / "survived.txt"
    command = f"sleep 30; touch {marker}"
    async with running_rig(
        serve_app,
        project,
        [{"tool_calls": [{"name": "run_command", "arguments": {"command": command}}]}],
    ) as rig:
        sid = await rig.new_session()

        async def cancel_when_running(message: dict[str, Any], _stream: Any) -> None:
            update = (message.get("params") or {}).get("update") or {}
            if (
                update.get("sessionUpdate") == "tool_call_update"
                and update["status"] == "in_progress"
            ):
                await rig.client.result("session/cancel", {"sessionId": sid})

        turn = await rig.turn(sid, "wait", on_message=cancel_when_running)
        assert turn.end["stopReason"] == "cancelled"
        assert turn.end["durationMs"] < 20_000
        assert not marker.exists()
        # The history stays valid: the cancelled call has a result message.
        state = SessionStore(project).read(sid)
        assert state["messages"][-1]["role"] == "tool"
        assert "cancelled" in state["messages"][-1]["content"]


async def test_rejected_edit_leaves_the_file_and_tells_the_model(
    serve_app: Any, project: Path
) -> None:
    async with running_rig(
        serve_app,
        project,
        [
            {"tool_calls": [{"name": "read_file", "arguments": {"path": "calc.py"}}]},
            {
                "tool_calls": [
                    {
                        "name": "write_file",
                        "arguments": {"path": "calc.py", "content": "print('gone')\n"},
                    }
                ]
            },
            {"text": "ok"},
        ],
    ) as rig:
        sid = await rig.new_session()
        turn = await rig.turn(sid, "rewrite", answer=reject("不要覆盖整个文件"))
        assert (project / "calc.py").read_text() == "def add(a, b):\n    return a - b\n"
        assert turn.permission_requests[0]["risk"] == "write"
        assert {o["optionId"] for o in turn.permission_requests[0]["options"]} == {
            "allow_once",
            "allow_session",
            "reject_once",
        }
        assert "-    return a - b" in turn.permission_requests[0]["diff"]
        result = tool_messages(rig.requests[2])[-1]
        assert "status=rejected" in result and "不要覆盖整个文件" in result


async def test_write_without_reading_first_is_refused(serve_app: Any, project: Path) -> None:
    async with running_rig(
        serve_app,
        project,
        [
            {
                "tool_calls": [
                    {"name": "write_file", "arguments": {"path": "calc.py", "content": "x\n"}}
                ]
            },
            {"text": "ok"},
        ],
    ) as rig:
        sid = await rig.new_session()
        turn = await rig.turn(sid, "overwrite")
        assert turn.permission_requests == []
        assert "has not been read" in tool_messages(rig.requests[1])[-1]
        assert (project / "calc.py").read_text().startswith("def add")


async def test_edit_refused_when_the_user_changed_the_file_after_the_read(
    serve_app: Any, project: Path
) -> None:
    async with running_rig(
        serve_app,
        project,
        [
            {"tool_calls": [{"name": "read_file", "arguments": {"path": "calc.py"}}]},
            {
                "tool_calls": [
                    {
                        "name": "replace_region",
                        "arguments": {
                            "path": "calc.py",
                            "start_line": 2,
                            "end_line": 2,
                            "new_text": "    return a + b",
                        },
                    }
                ],
                # Answering the second request (after the read) waits a little: the
                # user's edit, made when that request arrives, lands before the edit.
                "delay_ms": 200,
            },
            {"text": "ok"},
        ],
    ) as rig:
        sid = await rig.new_session()

        async def user_edits_after_the_read() -> None:
            await rig.mock.recorder.wait_for(lambda records: len(records) >= 2)
            (project / "calc.py").write_text("# the user's edit\n", encoding="utf-8")

        async with asyncio.timeout(30):
            editor = asyncio.create_task(user_edits_after_the_read())
            await rig.turn(sid, "fix")
            await editor
        assert (project / "calc.py").read_text() == "# the user's edit\n"
        assert "changed since you read it" in tool_messages(rig.requests[2])[-1]


async def test_approved_edit_is_snapshotted_and_applied(serve_app: Any, project: Path) -> None:
    async with running_rig(
        serve_app,
        project,
        [
            {"tool_calls": [{"name": "read_file", "arguments": {"path": "calc.py"}}]},
            {
                "tool_calls": [
                    {
                        "name": "replace_region",
                        "arguments": {
                            "path": "calc.py",
                            "start_line": 2,
                            "end_line": 2,
                            "new_text": "    return a + b  # 修复",
                            "expected_text": "    return a - b",
                        },
                    }
                ]
            },
            {"text": "fixed"},
        ],
    ) as rig:
        sid = await rig.new_session()
        turn = await rig.turn(sid, "fix", answer=allow_once)
        assert (project / "calc.py").read_text() == "def add(a, b):\n    return a + b  # 修复\n"
        index = (project / ".agent-shell" / "snapshots" / "index.jsonl").read_text().splitlines()
        record = json.loads(index[-1])
        snap = project / ".agent-shell" / "snapshots" / record["snapshot"]
        assert snap.read_text() == "def add(a, b):\n    return a - b\n"
        diffs = [
            c for u in turn.tool_results() for c in u.get("content", []) if c["type"] == "diff"
        ]
        assert diffs and "+    return a + b  # 修复" in diffs[0]["diff"]


async def test_ask_mode_offers_no_write_tools_and_refuses_writes(
    serve_app: Any, project: Path
) -> None:
    async with running_rig(
        serve_app,
        project,
        [
            {
                "tool_calls": [
                    {"name": "write_file", "arguments": {"path": "new.py", "content": "x"}}
                ]
            },
            {"text": "calc.py:1-2 defines add"},
        ],
    ) as rig:
        sid = await rig.new_session(mode="ask")
        turn = await rig.turn(sid, "what does add do?")
        offered = {t["function"]["name"] for t in rig.requests[0]["tools"]}
        assert "write_file" not in offered and "run_command" not in offered
        assert "read_file" in offered
        assert not (project / "new.py").exists()
        assert "ask mode" in tool_messages(rig.requests[1])[-1]
        assert turn.permission_requests == []


async def test_dry_run_records_commands_without_running_them(serve_app: Any, project: Path) -> None:
    async with running_rig(
        serve_app,
        project,
        [
            {"tool_calls": [{"name": "run_command", "arguments": {"command": "touch made.txt"}}]},
            {"text": "ok"},
        ],
    ) as rig:
        sid = await rig.new_session(dry_run=True)
        turn = await rig.turn(sid, "make a file")
        assert not (project / "made.txt").exists()
        assert "dry-run" in tool_messages(rig.requests[1])[-1]
        assert any(e["title"].startswith("[dry-run]") for e in turn.log_entries())


async def test_model_api_key_never_reaches_a_child_process(serve_app: Any, project: Path) -> None:
    async with running_rig(
        serve_app,
        project,
        [
            {"tool_calls": [{"name": "run_command", "arguments": {"command": "env"}}]},
            {"text": "ok"},
        ],
    ) as rig:
        sid = await rig.new_session()
        await rig.turn(sid, "env")
        output = tool_messages(rig.requests[1])[-1]
        assert "PATH=" in output
        assert "sk-rig-secret" not in output
        logs = list((project / ".agent-shell").rglob("*"))
        for path in logs:
            if path.is_file():
                assert b"sk-rig-secret" not in path.read_bytes(), path


async def test_task_failure_is_posted_to_the_webhook(serve_app: Any, project: Path) -> None:
    """A failed task reaches a local receiver with the task, failed step and log path."""
    received: list[dict[str, Any]] = []
    arrived = asyncio.Event()

    async def receive(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        length = next(
            int(line.split(b":", 1)[1])
            for line in head.split(b"\r\n")
            if line.lower().startswith(b"content-length:")
        )
        received.append(json.loads(await reader.readexactly(length)))
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")
        await writer.drain()
        writer.close()
        arrived.set()

    receiver = await asyncio.start_server(receive, "127.0.0.1", 0)
    port = receiver.sockets[0].getsockname()[1]
    rig, stop = await start_rig(
        serve_app,
        project,
        [
            {"tool_calls": [{"name": "read_file", "arguments": {"path": "nope.py"}}]},
            {"fault": "400", "error_message": "context too long"},
        ],
    )
    try:
        await rig.client.result(
            "initialize",
            {"notify": {"webhook": f"http://127.0.0.1:{port}/hook", "kind": "generic"}},
        )
        sid = await rig.new_session()
        turn = await rig.turn(sid, "任务：读一个不存在的文件")
        assert turn.end["stopReason"] == "error"
        async with asyncio.timeout(10):
            await arrived.wait()
        payload = json.dumps(received[0], ensure_ascii=False)
        assert "任务：读一个不存在的文件" in payload
        assert "read_file" in payload  # the failed step
        assert ".agent-shell/logs/" in payload
    finally:
        receiver.close()
        await stop()


async def test_rereading_an_unchanged_file_is_not_sent_twice(serve_app: Any, project: Path) -> None:
    read = {"tool_calls": [{"name": "read_file", "arguments": {"path": "中文.py"}}]}
    # The third read is the answer to the third request; that answer waits a little,
    # so the user's edit, made when the request arrives (after the second read), is
    # on disk before the third read runs: the mock and this test share the loop.
    third = {**read, "delay_ms": 200}
    async with running_rig(serve_app, project, [read, read, third, {"text": "ok"}]) as rig:
        sid = await rig.new_session()

        async def user_edits_after_second_read() -> None:
            await rig.mock.recorder.wait_for(lambda records: len(records) >= 3)
            (project / "中文.py").write_text("# 改过了\n", encoding="utf-8")

        async with asyncio.timeout(30):
            editor = asyncio.create_task(user_edits_after_second_read())
            await rig.turn(sid, "read thrice")
            await editor
        first, second, third_result = (tool_messages(rig.requests[i])[-1] for i in (1, 2, 3))
        assert "早上好 🚀" in first
        assert '"unchanged": true' in second and "早上好" not in second
        assert "改过了" in third_result  # changed on disk: sent again in full


async def test_whole_read_of_a_long_file_keeps_head_and_tail(serve_app: Any, project: Path) -> None:
    (project / "long.txt").write_text(
        "".join(f"行 {i}\n" for i in range(1, 1001)), encoding="utf-8"
    )
    async with running_rig(
        serve_app,
        project,
        [
            {"tool_calls": [{"name": "read_file", "arguments": {"path": "long.txt"}}]},
            {
                "tool_calls": [
                    {
                        "name": "read_file",
                        "arguments": {"path": "long.txt", "start_line": 500, "end_line": 502},
                    }
                ]
            },
            {"text": "ok"},
        ],
    ) as rig:
        sid = await rig.new_session()
        await rig.turn(sid, "read long")
        whole = tool_messages(rig.requests[1])[-1]
        assert "行 200\\n" in whole and "行 901\\n" in whole and "行 1000" in whole
        assert "行 201\\n" not in whole and "lines 201-900 (700 lines) omitted" in whole
        ranged = tool_messages(rig.requests[2])[-1]
        assert "行 500" in ranged and "行 502" in ranged and "行 503" not in ranged


async def test_allow_for_the_session_covers_that_exact_command_only(
    serve_app: Any, project: Path
) -> None:
    """Regression: one "allow for this session" let every later write command through."""

    def run(command: str) -> dict[str, Any]:
        return {"tool_calls": [{"name": "run_command", "arguments": {"command": command}}]}

    async with running_rig(
        serve_app,
        project,
        [run("mkdir build"), run("touch build/x.txt"), run("mkdir  build"), {"text": "ok"}],
    ) as rig:
        sid = await rig.new_session()

        def answer(params: dict[str, Any]) -> dict[str, Any]:
            option = "allow_session" if "mkdir" in params["toolCall"]["title"] else "reject_once"
            return {"outcome": {"outcome": "selected", "optionId": option}}

        turn = await rig.turn(sid, "make dirs", answer=answer)
        asked = [p["toolCall"]["rawInput"]["command"] for p in turn.permission_requests]
        assert asked == ["mkdir build", "touch build/x.txt"]  # the repeat ran unasked
        assert "Allow `mkdir build` for this session" in {
            o["name"] for o in turn.permission_requests[0]["options"]
        }
        assert not (project / "build" / "x.txt").exists()


async def test_dry_run_runs_no_tests_and_survives_resume(serve_app: Any, project: Path) -> None:
    """Regression: dry-run ran "read-only" test commands, and a resume dropped dry-run."""
    marker = project / "RAN"
    run = {"tool_calls": [{"name": "run_test", "arguments": {"command": f"touch {marker}; true"}}]}
    async with running_rig(serve_app, project, [run, {"text": "ok"}, run, {"text": "ok"}]) as rig:
        sid = await rig.new_session(dry_run=True)
        await rig.turn(sid, "test")
        assert not marker.exists()
        # Resuming the checkpoint in a fresh runtime keeps the session dry.
        await rig.runtime.sessions.pop(sid).aclose()
        resumed = await rig.client.result("session/resume", {"sessionId": sid, "cwd": str(project)})
        assert resumed["dryRun"] is True
        await rig.turn(sid, "test again")
        assert not marker.exists()


async def test_a_refused_prompt_changes_nothing(serve_app: Any, project: Path) -> None:
    """Regression: a prompt refused as busy still switched the running turn's mode."""
    async with running_rig(
        serve_app, project, [{"text": "slow " * 40, "chunk_size": 5, "delay_ms": 100}]
    ) as rig:
        sid = await rig.new_session()
        await rig.client.result("session/prompt", {"sessionId": sid, "prompt": "talk"})
        reply = await rig.client.rpc(
            "session/prompt", {"sessionId": sid, "prompt": "other", "mode": "ask"}
        )
        assert reply["error"]["code"] == -32002
        assert rig.runtime.sessions[sid].state.mode == "act"
        await rig.client.result("session/cancel", {"sessionId": sid})


async def test_cancel_while_waiting_for_approval_closes_the_wait_step(
    serve_app: Any, project: Path
) -> None:
    """Regression: a cancel during a permission request left a WAIT step forever."""
    async with running_rig(
        serve_app,
        project,
        [{"tool_calls": [{"name": "run_command", "arguments": {"command": "mkdir build"}}]}],
    ) as rig:
        sid = await rig.new_session()

        async def cancel_instead_of_answering(message: dict[str, Any], _stream: Any) -> None:
            if message.get("method") == "session/request_permission":
                await rig.client.result("session/cancel", {"sessionId": sid})

        turn = await rig.turn(
            sid, "build", on_message=cancel_instead_of_answering, answer=lambda _p: {}
        )
        assert turn.end["stopReason"] == "cancelled"
        failed = [u for u in turn.tool_results() if u["status"] == "failed"]
        assert failed and "cancelled" in failed[0]["rawOutput"]["error"]
        writer = rig.runtime.sessions[sid].reporter.writer
        log = Path(rig.runtime.sessions[sid].state.log_path).read_text(encoding="utf-8")
        assert "** WAIT" not in writer.render()
        # The file keeps the step's history: the wait, then its outcome below it.
        assert re.search(r"^\*\* WAIT .*\n(?:.*\n)*?\*\*\* REJECTED .*↳ run_command", log, re.M)
        assert "Cancelled before a decision was made." in log
        assert not (project / "build").exists()


async def test_next_prompt_is_accepted_right_after_turn_end(serve_app: Any, project: Path) -> None:
    """Regression: a slow webhook kept the session busy after turn_end."""
    hold = asyncio.Event()

    async def slow_receiver(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await hold.wait()
        writer.close()
        await writer.wait_closed()

    receiver = await asyncio.start_server(slow_receiver, "127.0.0.1", 0)
    port = receiver.sockets[0].getsockname()[1]
    rig, stop = await start_rig(serve_app, project, [{"text": "one"}, {"text": "two"}])
    try:
        await rig.client.result(
            "initialize", {"notify": {"webhook": f"http://127.0.0.1:{port}/", "kind": "slack"}}
        )
        sid = await rig.new_session()
        first = await rig.turn(sid, "first")
        assert first.end["stopReason"] == "end_turn"
        second = await rig.turn(sid, "second")  # would be -32002 while the webhook hangs
        assert second.text == "two"
    finally:
        hold.set()
        await stop()
        receiver.close()
        await receiver.wait_closed()


async def test_an_unparsable_webhook_url_is_refused_at_initialize(
    serve_app: Any, project: Path
) -> None:
    async with running_rig(serve_app, project, []) as rig:
        reply = await rig.client.rpc("initialize", {"notify": {"webhook": "http://[::1"}})
        assert reply["error"]["code"] == -32602


async def test_a_prompt_right_after_a_prefixed_turn_cannot_start_two_turns(
    serve_app: Any, project: Path
) -> None:
    """Regression: after a /ask turn, two quick prompts both started turns at once."""
    slow = {"text": "slow " * 30, "chunk_size": 5, "delay_ms": 50}
    async with running_rig(serve_app, project, [{"text": "answer"}, slow, slow]) as rig:
        sid = await rig.new_session()
        replies: list[dict[str, Any]] = []

        async def race_on_turn_end(message: dict[str, Any], _stream: Any) -> None:
            update = (message.get("params") or {}).get("update") or {}
            if update.get("sessionUpdate") == "turn_end":
                for text in ("second", "third"):
                    replies.append(
                        await rig.client.rpc("session/prompt", {"sessionId": sid, "prompt": text})
                    )

        first = await rig.turn(sid, "/ask what is add?", on_message=race_on_turn_end)
        assert first.end["stopReason"] == "end_turn"
        assert "result" in replies[0]
        assert replies[1]["error"]["code"] == -32002  # one turn at a time
        live = rig.runtime.sessions[sid]
        assert live.busy and live.state.mode == "act"  # the session's own mode is back
        await rig.client.result("session/cancel", {"sessionId": sid})
        assert not live.busy


async def test_allow_for_the_session_is_per_directory(serve_app: Any, project: Path) -> None:
    """Regression: a command allowed in build/ also ran unasked at the project root."""
    (project / "build").mkdir()

    def run(cwd: str | None) -> dict[str, Any]:
        args: dict[str, Any] = {"command": "touch made.txt"}
        if cwd:
            args["cwd"] = cwd
        return {"tool_calls": [{"name": "run_command", "arguments": args}]}

    async with running_rig(serve_app, project, [run("build"), run(None), {"text": "ok"}]) as rig:
        sid = await rig.new_session()

        def answer(params: dict[str, Any]) -> dict[str, Any]:
            first = not asked
            asked.append(params)
            option = "allow_session" if first else "reject_once"
            return {"outcome": {"outcome": "selected", "optionId": option}}

        asked: list[dict[str, Any]] = []
        await rig.turn(sid, "touch twice", answer=answer)
        assert len(asked) == 2  # the root run asked again
        assert (project / "build" / "made.txt").exists()
        assert not (project / "made.txt").exists()


async def test_cancel_during_memory_extraction_does_not_wait_for_it(
    serve_app: Any, project: Path, tmp_path: Path
) -> None:
    """Regression: a cancel while the experience was being extracted waited for the model."""

    def test_run() -> dict[str, Any]:
        return {"tool_calls": [{"name": "run_test", "arguments": {"command": "test -e ok.txt"}}]}

    slow_extraction = {
        "match": {"system_contains": "experience"},
        "text": "x" * 400,
        "chunk_size": 1,
        "delay_ms": 100,
    }
    async with running_rig(
        serve_app,
        project,
        [
            slow_extraction,
            test_run(),
            {
                "tool_calls": [
                    {"name": "write_file", "arguments": {"path": "ok.txt", "content": "ok"}}
                ]
            },
            test_run(),
            {"tool_calls": [{"name": "task_complete", "arguments": {"summary": "done"}}]},
        ],
        memory_dir=tmp_path / "memory",
    ) as rig:
        sid = await rig.new_session()

        async def cancel_when_extracting(message: dict[str, Any], _stream: Any) -> None:
            params = message.get("params") or {}
            if message.get("method") == "log/entry" and "extracting" in params.get("title", ""):
                async with asyncio.timeout(10):  # until the extraction call is under way
                    await rig.mock.recorder.wait_for(lambda rs: any(r.step == 0 for r in rs))
                replies.append(await rig.client.result("session/cancel", {"sessionId": sid}))

        replies: list[dict[str, Any]] = []
        turn = await rig.turn(sid, "fix", on_message=cancel_when_extracting)
        assert turn.end["stopReason"] == "end_turn"
        assert replies == [{"cancelled": True}]
        # The extraction stream was abandoned, not waited for.
        extraction = [r for r in rig.mock.recorder.records if r.step == 0]
        assert extraction and extraction[0].disconnected and not extraction[0].completed
        assert any("Memory: skipped" in e["title"] for e in turn.log_entries())


async def test_agent_records_are_ignored_by_git(serve_app: Any, project: Path) -> None:
    """Logs, snapshots, outputs and checkpoints never show up as untracked files."""
    async with running_rig(
        serve_app,
        project,
        [
            {"tool_calls": [{"name": "run_command", "arguments": {"command": "seq 1 500"}}]},
            {"text": "ok"},
        ],
    ) as rig:
        sid = await rig.new_session()
        await rig.turn(sid, "count")
        status = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=all"],
            cwd=project,
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        assert ".agent-shell/logs" not in status
        assert ".agent-shell/outputs" not in status
        assert ".agent-shell/sessions" not in status
        assert ".agent-shell/.gitignore" in status  # the one file it adds, yours to commit
