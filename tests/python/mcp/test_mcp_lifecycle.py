"""An MCP server's life inside a session: crash and restart, tool-list refresh,
cancellation, results, and the project's own ``.mcp.json``.

The bridge runs in-process on 127.0.0.1 (the agent rig) with the scripted model;
the MCP servers are real processes: ``mcp_fixture_server.py`` (built on the official
SDK) where a test needs a server to crash or change its tools on demand, and
``mcp-server-time`` elsewhere.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from agent_rig import make_project, running_rig, tool_messages
from agent_shell_bridge.agent.session.store import SessionState, SessionStore
from agent_shell_bridge.mcp.hub import McpHub
from conftest import EventStream

FIXTURE = str(Path(__file__).resolve().parents[1] / "mcp_fixture_server.py")
TIME_SERVER = str(Path(sys.executable).parent / "mcp-server-time")


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return make_project(tmp_path / "proj", {"README.md": "hi\n"})


def _fixture(record: Path, policy: str = "trusted") -> dict[str, Any]:
    return {
        "mcpServers": [{"name": "fx", "command": sys.executable, "args": [FIXTURE, str(record)]}],
        "mcpServerPolicy": {"fx": policy},
    }


def _call(tool: str, args: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"tool_calls": [{"name": f"mcp__fx__{tool}", "arguments": args or {}}]}


def _tools(request: dict[str, Any]) -> list[str]:
    return [t["function"]["name"] for t in request.get("tools", [])]


async def _until(predicate: Any, what: str, timeout: float = 20) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for {what}")
        await asyncio.sleep(0.02)


async def test_a_crashed_server_is_restarted_once(
    serve_app: Any, project: Path, tmp_path: Path
) -> None:
    steps = [_call("crash"), _call("echo", {"text": "还活着"}), {"text": "ok"}]
    async with running_rig(serve_app, project, steps) as rig:
        sid = await rig.new_session(**_fixture(tmp_path / "rec.txt"))
        turn = await rig.turn(sid, "crash it")
        results = turn.tool_results()
        assert [r["status"] for r in results] == ["failed", "completed"]
        assert "stopped during the call" in results[0]["rawOutput"]["error"]
        answer = tool_messages(rig.requests[2])[-1]
        assert "status=completed" in answer and "还活着" in answer
        notices = [u.get("notice") for u in turn.updates("mcp_servers")]
        assert "MCP server fx stopped unexpectedly; restarting it once" in notices
        log = Path(rig.runtime.sessions[sid].state.log_path).read_text(encoding="utf-8")
        assert "MCP server fx stopped unexpectedly; restarting it once" in log


async def test_a_second_crash_leaves_the_server_stopped(
    serve_app: Any, project: Path, tmp_path: Path
) -> None:
    steps = [_call("crash"), _call("crash"), _call("echo", {"text": "x"}), {"text": "ok"}]
    async with running_rig(serve_app, project, steps) as rig:
        sid = await rig.new_session(**_fixture(tmp_path / "rec.txt"))
        turn = await rig.turn(sid, "crash twice")
        assert [r["status"] for r in turn.tool_results()] == ["failed", "failed", "failed"]
        assert "not running" in turn.tool_results()[2]["rawOutput"]["error"]
        last = turn.updates("mcp_servers")[-1]
        assert last["connected"] == 0
        assert "stopped again after a restart" in last["notice"]


async def test_tools_list_changed_refreshes_the_model_s_tools(
    serve_app: Any, project: Path, tmp_path: Path
) -> None:
    steps = [_call("grow"), _call("added_later"), {"text": "ok"}]
    async with running_rig(serve_app, project, steps) as rig:
        sid = await rig.new_session(**_fixture(tmp_path / "rec.txt"))
        turn = await rig.turn(sid, "grow")
        assert "mcp__fx__added_later" not in _tools(rig.requests[0])
        assert "mcp__fx__added_later" in _tools(rig.requests[1])
        # The names already given out keep their place.
        assert _tools(rig.requests[1])[: len(_tools(rig.requests[0]))] == _tools(rig.requests[0])
        assert [r["status"] for r in turn.tool_results()] == ["completed", "completed"]
        assert "I was added later" in tool_messages(rig.requests[2])[-1]


async def test_cancelling_a_turn_cancels_the_call_on_the_server(
    serve_app: Any, project: Path, tmp_path: Path
) -> None:
    record = tmp_path / "rec.txt"
    steps = [_call("slow"), {"text": "never"}]

    def lines() -> list[str]:
        return record.read_text().split() if record.exists() else []

    async with running_rig(serve_app, project, steps) as rig:
        sid = await rig.new_session(**_fixture(record))

        async def on_message(message: dict[str, Any], _stream: EventStream) -> None:
            update = (message.get("params") or {}).get("update") or {}
            if update.get("status") == "in_progress":
                await _until(lambda: "started" in lines(), "the slow tool to start")
                await rig.client.result("session/cancel", {"sessionId": sid})

        turn = await rig.turn(sid, "slow", on_message=on_message)
        assert turn.end["stopReason"] == "cancelled"
        # notifications/cancelled reached the server, which stopped the handler.
        await _until(lambda: "cancelled" in lines(), "the server to see the cancel")


async def test_images_are_described_and_is_error_fails_the_step(
    serve_app: Any, project: Path, tmp_path: Path
) -> None:
    steps = [_call("picture"), _call("fail"), {"text": "ok"}]
    async with running_rig(serve_app, project, steps) as rig:
        sid = await rig.new_session(**_fixture(tmp_path / "rec.txt"))
        turn = await rig.turn(sid, "picture")
        picture = tool_messages(rig.requests[1])[-1]
        assert "图：一个像素" in picture
        assert "[image: image/png, 8 bytes; not shown]" in picture
        assert "iVBORw0KGgo" not in picture
        assert [r["status"] for r in turn.tool_results()] == ["completed", "failed"]
        failed = tool_messages(rig.requests[2])[-1]
        assert "status=failed" in failed and "失败了：on purpose" in failed


async def test_long_results_are_cut_and_kept_whole_in_the_log(
    serve_app: Any, project: Path, tmp_path: Path
) -> None:
    steps = [
        _call("lines", {"count": 1000}),
        {
            "tool_calls": [
                {
                    "name": "request_log_view",
                    "arguments": {"ref": "out-1", "offset": 499, "limit": 2},
                }
            ]
        },
        {"text": "ok"},
    ]
    async with running_rig(serve_app, project, steps) as rig:
        sid = await rig.new_session(**_fixture(tmp_path / "rec.txt", policy="default"))
        await rig.turn(sid, "lines")
        clipped = json.loads(tool_messages(rig.requests[1])[-1].split("\n")[1])
        assert clipped["truncated"] is True and clipped["omitted_lines"] == 700
        assert clipped["log_ref"] == "out-1"
        assert "行 1\n" in clipped["content"] and "行 1000" in clipped["content"]
        assert "行 500" not in clipped["content"]
        page = tool_messages(rig.requests[2])[-1]
        assert "行 500" in page and "行 501" in page


async def test_default_policy_asks_for_unannotated_tools_and_denied_servers_never_start(
    serve_app: Any, project: Path, tmp_path: Path
) -> None:
    steps = [_call("echo", {"text": "a"}), _call("grow"), {"text": "ok"}]
    async with running_rig(serve_app, project, steps) as rig:
        sid = await rig.new_session(**_fixture(tmp_path / "rec.txt", policy="default"))
        turn = await rig.turn(sid, "go")
        # echo is annotated read-only: no question; grow is not: one question.
        assert len(turn.permission_requests) == 1
        asked = turn.permission_requests[0]
        assert asked["toolCall"]["title"] == "mcp__fx__grow"
        assert asked["risk"] == "write"
        result = await rig.client.result(
            "session/new",
            {"cwd": str(project), **_fixture(tmp_path / "rec2.txt", policy="denied")},
        )
        assert result["mcp"]["connected"] == 0
        assert result["mcp"]["servers"][0]["status"] == "skipped"


async def test_allow_for_this_session_on_an_mcp_tool_says_it_covers_every_call(
    serve_app: Any, project: Path, tmp_path: Path
) -> None:
    """An MCP tool's grant covers the tool, whatever its arguments; the offer says so.

    A tool whose arguments hold a ``command`` was offered "Allow `ls` for this
    session", while the grant then let ``rm -rf ~`` through the same tool unasked.
    """
    record = tmp_path / "rec.txt"
    steps = [_call("run", {"command": "ls"}), _call("run", {"command": "rm -rf ~"}), {"text": "ok"}]

    def allow_session(_params: dict[str, Any]) -> dict[str, Any]:
        return {"outcome": {"outcome": "selected", "optionId": "allow_session"}}

    async with running_rig(serve_app, project, steps) as rig:
        sid = await rig.new_session(**_fixture(record, policy="default"))
        turn = await rig.turn(sid, "go", answer=allow_session)
        [asked] = turn.permission_requests
        names = {o["optionId"]: o["name"] for o in asked["options"]}
        assert "`ls`" not in names["allow_session"]
        assert names["allow_session"] == "Allow every mcp__fx__run call for this session"
        grants = await rig.client.result("session/grants", {"sessionId": sid})
        [grant] = grants["grants"]
        assert "every mcp__fx__run call" in grant["description"]
        assert "edit" not in grant["description"]
    # As described: the second call ran without a question.
    assert record.read_text(encoding="utf-8").splitlines() == ["run ls", "run rm -rf ~"]


async def test_an_mcp_grant_does_not_pass_to_another_server_resumed_under_its_name(
    serve_app: Any, project: Path, tmp_path: Path
) -> None:
    """A grant covers the server the user saw: ``fx`` resumed with other arguments asks
    again; resumed as it was, the grant holds."""
    first, other = tmp_path / "第一.txt", tmp_path / "other.txt"
    steps = [_call("run", {"command": "ls"}), {"text": "ok"}]
    steps += [_call("run", {"command": "pwd"}), {"text": "ok"}]
    steps += [_call("run", {"command": "date"}), {"text": "ok"}]

    def allow_session(_params: dict[str, Any]) -> dict[str, Any]:
        return {"outcome": {"outcome": "selected", "optionId": "allow_session"}}

    async def resume(rig: Any, sid: str, record: Path) -> None:
        await rig.runtime.sessions.pop(sid).aclose()
        params = {"sessionId": sid, "cwd": str(project), **_fixture(record, policy="default")}
        await rig.client.result("session/resume", params)

    async with running_rig(serve_app, project, steps) as rig:
        sid = await rig.new_session(**_fixture(first, policy="default"))
        granted = await rig.turn(sid, "go", answer=allow_session)
        assert len(granted.permission_requests) == 1
        await resume(rig, sid, other)
        elsewhere = await rig.turn(sid, "again")
        assert len(elsewhere.permission_requests) == 1
        await resume(rig, sid, first)
        back = await rig.turn(sid, "once more")
        assert back.permission_requests == []
    assert first.read_text(encoding="utf-8").splitlines() == ["run ls", "run date"]
    assert other.read_text(encoding="utf-8").splitlines() == ["run pwd"]


async def test_an_mcp_grant_saved_before_grants_named_their_server_is_dropped_on_resume(
    serve_app: Any, project: Path, tmp_path: Path
) -> None:
    """A checkpoint from before MCP grants carried their server's identity holds
    ``write:mcp__fx__run`` (no ``@scope``). It matches no call any more, so it must
    not be listed as active either: resumed, it is gone and the tool asks again,
    while the session's other grants stay."""
    record = tmp_path / "rec.txt"
    steps = [_call("run", {"command": "ls"}), {"text": "ok"}]
    old_keys = ["write:mcp__fx__run", "write:write_file"]
    async with running_rig(serve_app, project, steps) as rig:
        sid = await rig.new_session(**_fixture(record, policy="default"))
        await rig.runtime.sessions.pop(sid).aclose()
        store = SessionStore(project)
        saved = store.read(sid)
        saved["session_allow"] = old_keys
        saved["grant_details"] = {
            key: {"tool": key.removeprefix("write:"), "command": None, "cwd": None}
            for key in old_keys
        }
        store.save(SessionState.from_json(saved))
        params = {"sessionId": sid, "cwd": str(project), **_fixture(record, policy="default")}
        await rig.client.result("session/resume", params)
        grants = (await rig.client.result("session/grants", {"sessionId": sid}))["grants"]
        assert [(g["kind"], g["tool"]) for g in grants] == [("edit", "write_file")]
        turn = await rig.turn(sid, "go")
        [asked] = turn.permission_requests
        assert asked["toolCall"]["title"].startswith("mcp__fx__run")
    assert record.read_text(encoding="utf-8").splitlines() == ["run ls"]  # asked, then ran
    after = store.read(sid)
    assert after["session_allow"] == ["write:write_file"]
    assert list(after["grant_details"]) == ["write:write_file"]


@pytest.mark.parametrize("planted", ["file", "directory"])
async def test_a_planted_symlink_does_not_redirect_a_server_s_stderr_log(
    serve_app: Any, project: Path, tmp_path: Path, planted: str
) -> None:
    """``.agent-shell/logs/mcp/NAME.stderr.log`` is a predictable path in a cloned
    project: a link there must not make the user's server append to ``~/.bashrc``."""
    victim = tmp_path / "home" / ".bashrc"
    victim.parent.mkdir(parents=True)
    victim.write_text("export PS1='$ '\n", encoding="utf-8")
    logs = project / ".agent-shell" / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    if planted == "file":
        (logs / "mcp").mkdir()
        (logs / "mcp" / "fx.stderr.log").symlink_to(victim)
    else:
        (logs / "mcp").symlink_to(victim.parent)
        (victim.parent / "fx.stderr.log").symlink_to(victim)
    steps = [_call("echo", {"text": "你好"}), {"text": "ok"}]
    async with running_rig(serve_app, project, steps) as rig:
        sid = await rig.new_session(**_fixture(tmp_path / "rec.txt"))
        turn = await rig.turn(sid, "echo")
        assert [r["status"] for r in turn.tool_results()] == ["completed"]
    assert victim.read_text(encoding="utf-8") == "export PS1='$ '\n"


async def test_an_mcp_call_naming_a_secret_asks_even_when_read_only_or_trusted(
    serve_app: Any, project: Path, tmp_path: Path
) -> None:
    """The secrets rule holds for MCP tools too: a read-only tool (or a trusted
    server, or a session grant) handed ``~/.ssh/id_rsa`` asks first, without an
    "allow for this session"; other arguments still run unasked."""
    record = tmp_path / "rec.txt"
    key = str(Path.home() / ".ssh" / "id_rsa")

    def allow_session_if_offered(params: dict[str, Any]) -> dict[str, Any]:
        ids = [o["optionId"] for o in params["options"]]
        chosen = "allow_session" if "allow_session" in ids else "reject_once"
        return {"outcome": {"outcome": "selected", "optionId": chosen}, "reason": "秘密"}

    steps = [
        _call("echo", {"text": "~/.ssh/id_rsa"}),
        _call("echo", {"text": "src/main.py"}),
        _call("run", {"command": "ls"}),
        _call("run", {"command": f"cat {key}"}),
        _call("run", {"command": "cat --file=$HOME/.aws/credentials"}),
        {"text": "ok"},
    ]
    async with running_rig(serve_app, project, steps) as rig:
        sid = await rig.new_session(**_fixture(record, policy="default"))
        turn = await rig.turn(sid, "go", answer=allow_session_if_offered)
        asked = turn.permission_requests
        assert [a["toolCall"]["rawInput"] for a in asked] == [
            {"text": "~/.ssh/id_rsa"},
            {"command": "ls"},
            {"command": f"cat {key}"},
            {"command": "cat --file=$HOME/.aws/credentials"},
        ]
        for question in (asked[0], asked[2], asked[3]):
            assert "secret" in question["reason"]
            assert "allow_session" not in [o["optionId"] for o in question["options"]]
    assert record.read_text(encoding="utf-8").splitlines() == ["run ls"]


async def test_ask_mode_offers_only_read_only_mcp_tools(
    serve_app: Any, project: Path, tmp_path: Path
) -> None:
    async with running_rig(serve_app, project, [{"text": "看过了"}]) as rig:
        sid = await rig.new_session(mode="ask", **_fixture(tmp_path / "rec.txt"))
        await rig.turn(sid, "look")
        offered = [n for n in _tools(rig.requests[0]) if n.startswith("mcp__")]
        assert sorted(offered) == ["mcp__fx__echo", "mcp__fx__lines"]


def _project_config(root: Path) -> bytes:
    content = json.dumps(
        {"mcpServers": {"clock": {"command": TIME_SERVER, "env": {"NOTE": "项目"}}}},
        ensure_ascii=False,
    ).encode("utf-8")
    (root / ".mcp.json").write_bytes(content)
    return content


async def test_project_mcp_json_is_used_only_after_trust(
    serve_app: Any, project: Path, tmp_path: Path
) -> None:
    _project_config(project)
    async with running_rig(serve_app, project, [], memory_dir=tmp_path / "mem") as rig:
        first = await rig.client.result("session/new", {"cwd": str(project)})
        assert first["mcp"]["projectConfig"] == "untrusted"
        assert first["mcp"]["connected"] == 0
        assert any("found and ignored" in n and "clock" in n for n in first["mcp"]["notices"])
        log = Path(first["logPath"]).read_text(encoding="utf-8")
        assert "was found and ignored" in log

        trusted = await rig.client.result("mcp/trust", {"cwd": str(project)})
        assert trusted["servers"] == ["clock"]
        second = await rig.client.result("session/new", {"cwd": str(project)})
        assert second["mcp"]["projectConfig"] == "trusted"
        assert second["mcp"]["servers"][0]["status"] == "connected"

        # Any change to the file needs trust again.
        (project / ".mcp.json").write_bytes(_project_config(project) + b"\n")
        third = await rig.client.result("session/new", {"cwd": str(project)})
        assert third["mcp"]["projectConfig"] == "untrusted"


async def test_trust_refuses_bytes_other_than_the_reviewed_ones(
    serve_app: Any, project: Path, tmp_path: Path
) -> None:
    _project_config(project)
    async with running_rig(serve_app, project, [], memory_dir=tmp_path / "mem") as rig:
        reply = await rig.client.rpc("mcp/trust", {"cwd": str(project), "sha256": "0" * 64})
        assert reply["error"]["code"] == -32602
        assert "changed after you reviewed it" in reply["error"]["message"]
        session = await rig.client.result("session/new", {"cwd": str(project)})
        assert session["mcp"]["projectConfig"] == "untrusted"


async def test_a_bad_server_list_is_invalid_params(serve_app: Any, project: Path) -> None:
    async with running_rig(serve_app, project, []) as rig:
        reply = await rig.client.rpc(
            "session/new",
            {
                "cwd": str(project),
                "mcpServers": [{"name": "a", "command": "x"}, {"name": "a", "command": "y"}],
            },
        )
        assert reply["error"]["code"] == -32602
        assert "appears twice" in reply["error"]["message"]
        assert rig.runtime.sessions == {}


async def test_a_fork_starts_the_servers_it_is_given(
    serve_app: Any, project: Path, tmp_path: Path
) -> None:
    """``session/fork`` with the client's servers: the fork has its own connected
    server, whose tools it calls; the parent's server is untouched."""
    steps = [
        {"match": {"last_user_contains": "before the fork"}, "text": "ok"},
        {"match": {"last_user_contains": "in the fork"}, **_call("echo", {"text": "分叉"})},
        {"text": "done"},
    ]
    async with running_rig(serve_app, project, steps) as rig:
        sid = await rig.new_session(**_fixture(tmp_path / "rec.txt"))
        await rig.turn(sid, "before the fork")
        fork = await rig.client.result(
            "session/fork", {"sessionId": sid, **_fixture(tmp_path / "fork-rec.txt")}
        )
        assert fork["mcp"]["connected"] == 1, fork["mcp"]
        turn = await rig.turn(fork["sessionId"], "in the fork")
        results = turn.tool_results()
        assert [r["status"] for r in results] == ["completed"]
        assert "分叉" in tool_messages(rig.requests[-1])[-1]
        hubs = [
            [s for s in rig.runtime.sessions[x].tool_sources if isinstance(s, McpHub)]
            for x in (sid, fork["sessionId"])
        ]
        assert [len(h) for h in hubs] == [1, 1] and hubs[0][0] is not hubs[1][0]
        bad = await rig.client.rpc(
            "session/fork", {"sessionId": sid, "mcpServers": [{"name": "a"}]}
        )
        assert bad["error"]["code"] == -32602
