"""Remote MCP servers (streamable HTTP and HTTP+SSE) inside a session.

The bridge runs in-process on 127.0.0.1 (the agent rig) with the scripted model; the
MCP server is ``mcp_fixture_server.py`` (built on the official SDK) as a real
subprocess serving HTTP on 127.0.0.1, which records the headers it receives.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from agent_rig import make_project, running_rig, tool_messages
from conftest import bridge_command
from mcp_remote import Remote, refusing_port, remote_fixture

# Secrets placed where users put tokens: a header value and the URL's query.
HEADER_SECRET = "Bearer 令牌-HSECRET-4417"
QUERY_SECRET = "QSECRET-9031"
CHINESE = "你好，世界：远程服务器 🌏"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return make_project(tmp_path / "proj", {"README.md": "hi\n"})


def _server(remote: Remote, name: str = "web", **extra: Any) -> dict[str, Any]:
    return {
        "type": remote.transport,
        "name": name,
        "url": f"{remote.url}?key={QUERY_SECRET}",
        "headers": [
            {"name": "Authorization", "value": HEADER_SECRET},
            {"name": "X-Fixture-Tenant", "value": "${MCP_TEST_TENANT:-无}"},
        ],
        **extra,
    }


def _call(tool: str, args: dict[str, Any] | None = None, server: str = "web") -> dict[str, Any]:
    return {"tool_calls": [{"name": f"mcp__{server}__{tool}", "arguments": args or {}}]}


def _tools(request: dict[str, Any]) -> list[str]:
    return [t["function"]["name"] for t in request.get("tools", [])]


def _assert_no_secret(where: str, text: str) -> None:
    for secret in (HEADER_SECRET, "HSECRET", QUERY_SECRET, "令牌"):
        assert secret not in text, f"{secret!r} leaked into {where}"


@pytest.mark.parametrize("transport", ["http", "sse"])
async def test_remote_tools_reach_the_model_headers_reach_the_server_and_nowhere_else(
    serve_app: Any,
    project: Path,
    tmp_path: Path,
    transport: str,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    monkeypatch.setenv("MCP_TEST_TENANT", "租户甲")
    steps = [_call("echo", {"text": CHINESE}), _call("fail"), {"text": "好的"}]
    with remote_fixture(tmp_path / "rec.txt", transport) as remote:
        async with running_rig(serve_app, project, steps) as rig:
            new = await rig.client.result(
                "session/new",
                {
                    "cwd": str(project),
                    "mcpServers": [_server(remote)],
                    "mcpServerPolicy": {"web": "trusted"},
                },
            )
            sid = str(new["sessionId"])
            status = new["mcp"]
            assert status["connected"] == 1
            item = status["servers"][0]
            assert (item["status"], item["transport"]) == ("connected", transport)
            assert item["url"] == remote.url  # shown without its query
            assert "stderrLog" not in item  # no process of ours, no stderr
            turn = await rig.turn(sid, "远程调用")
            assert "mcp__web__echo" in _tools(rig.requests[0])
            echoed = tool_messages(rig.requests[1])[-1]
            assert "status=completed" in echoed and CHINESE in echoed
            assert [r["status"] for r in turn.tool_results()] == ["completed", "failed"]
            assert "失败了：on purpose" in tool_messages(rig.requests[2])[-1]
            log_text = Path(rig.runtime.sessions[sid].state.log_path).read_text(encoding="utf-8")
        seen = remote.headers_seen()
    # The headers reached the server, the variable expanded from the environment ...
    assert f"authorization: {HEADER_SECRET}" in seen
    assert "x-fixture-tenant: 租户甲" in seen
    # ... and were never written anywhere the user or the model reads.
    assert ":SERVER: web" in log_text and ":TOOL: echo" in log_text
    _assert_no_secret("the org log", log_text)
    _assert_no_secret("the session/new result", json.dumps(new, ensure_ascii=False))
    _assert_no_secret("the events", json.dumps(turn.messages, ensure_ascii=False))
    _assert_no_secret("the model's requests", json.dumps(rig.requests, ensure_ascii=False))
    _assert_no_secret("the bridge log", caplog.text)


@pytest.mark.parametrize("transport", ["http", "sse"])
async def test_user_info_in_the_url_reaches_no_log_event_or_request(
    serve_app: Any,
    project: Path,
    tmp_path: Path,
    transport: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """``https://user:password@host/mcp``: the HTTP client logs every request's URL
    at INFO, the SDK its endpoints at DEBUG; none may show the password."""
    caplog.set_level(logging.DEBUG)
    password = "UPASS-令牌-6620"
    steps = [_call("echo", {"text": CHINESE}), _call("fail"), {"text": "好的"}]
    with remote_fixture(tmp_path / "rec.txt", transport) as remote:
        scheme, _, rest = remote.url.partition("://")
        server = {
            **_server(remote),
            "url": f"{scheme}://alice:{password}@{rest}?key={QUERY_SECRET}",
        }
        async with running_rig(serve_app, project, steps) as rig:
            new = await rig.client.result(
                "session/new",
                {
                    "cwd": str(project),
                    "mcpServers": [server],
                    "mcpServerPolicy": {"web": "trusted"},
                },
            )
            sid = str(new["sessionId"])
            assert new["mcp"]["servers"][0]["url"] == remote.url
            turn = await rig.turn(sid, "远程调用")
            assert [r["status"] for r in turn.tool_results()] == ["completed", "failed"]
            log_text = Path(rig.runtime.sessions[sid].state.log_path).read_text(encoding="utf-8")
    # The password is nowhere, nor the user info as a whole ...
    for where, text in (
        ("the bridge log", caplog.text),
        ("the org log", log_text),
        ("the session/new result", json.dumps(new, ensure_ascii=False)),
        ("the events and notices", json.dumps(turn.messages, ensure_ascii=False)),
        ("the model's requests", json.dumps(rig.requests, ensure_ascii=False)),
    ):
        for secret in (password, "UPASS", "alice:", QUERY_SECRET):
            assert secret not in text, f"{secret!r} leaked into {where}"
    # ... though the requests were logged, with the URL in its public form.
    assert f' {remote.url} "HTTP/1.1 200 OK"' in caplog.text


async def test_unreachable_server_fails_by_name_while_the_other_works(
    serve_app: Any, project: Path, tmp_path: Path
) -> None:
    steps = [
        _call("echo", {"text": "仍然可用"}),
        _call("echo", {"text": "x"}, "down"),
        {"text": "ok"},
    ]
    with remote_fixture(tmp_path / "rec.txt") as remote, refusing_port() as port:
        down = {
            "type": "http",
            "name": "down",
            "url": f"http://127.0.0.1:{port}/mcp?key={QUERY_SECRET}",
            "headers": [{"name": "Authorization", "value": HEADER_SECRET}],
        }
        async with running_rig(serve_app, project, steps) as rig:
            new = await rig.client.result(
                "session/new",
                {
                    "cwd": str(project),
                    "mcpServers": [down, _server(remote, type="http")],
                    "mcpServerPolicy": {"web": "trusted", "down": "trusted"},
                },
            )
            sid = str(new["sessionId"])
            status = new["mcp"]
            assert (status["connected"], status["configured"]) == (1, 2)
            by_name = {s["name"]: s for s in status["servers"]}
            assert by_name["down"]["status"] == "failed"
            assert by_name["web"]["status"] == "connected"
            notice = next(n for n in status["notices"] if "down" in n)
            # The server's name, its URL without the query, and the reason.
            assert notice.startswith(
                f"MCP server down could not start: http://127.0.0.1:{port}/mcp: "
            ), notice
            assert "connection" in notice.lower()
            turn = await rig.turn(sid, "go")
            assert [r["status"] for r in turn.tool_results()] == ["completed", "failed"]
            assert "仍然可用" in tool_messages(rig.requests[1])[-1]
            log_text = Path(rig.runtime.sessions[sid].state.log_path).read_text(encoding="utf-8")
    assert "down" in log_text
    _assert_no_secret("the session/new result", json.dumps(new, ensure_ascii=False))
    _assert_no_secret("the org log", log_text)


async def test_a_bad_url_is_refused_naming_server_and_field(serve_app: Any, project: Path) -> None:
    async with running_rig(serve_app, project, [{"text": "never"}]) as rig:
        bad = {"type": "http", "name": "files", "url": "file:///etc/passwd", "headers": []}
        reply = await rig.client.rpc("session/new", {"cwd": str(project), "mcpServers": [bad]})
        error = reply["error"]
        assert error["code"] == -32602
        assert "'files'" in error["message"] and "'url'" in error["message"]
        assert "http://" in error["message"]
        assert rig.runtime.sessions == {}


@pytest.mark.parametrize("transport", ["http", "sse"])
async def test_a_server_killed_mid_session_is_reconnected_once(
    serve_app: Any, project: Path, tmp_path: Path, transport: str
) -> None:
    """``crash`` ends the serving process mid-call; the fixture serves the same socket
    from a new process, so the one reconnect succeeds and the next call works."""
    steps = [_call("crash"), _call("echo", {"text": "重连成功"}), {"text": "ok"}]
    with remote_fixture(tmp_path / "rec.txt", transport) as remote:
        async with running_rig(serve_app, project, steps) as rig:
            sid = await rig.new_session(
                mcpServers=[_server(remote)], mcpServerPolicy={"web": "trusted"}
            )
            turn = await rig.turn(sid, "crash it")
            results = turn.tool_results()
            assert [r["status"] for r in results] == ["failed", "completed"]
            assert "lost its connection during the call" in results[0]["rawOutput"]["error"]
            assert "重连成功" in tool_messages(rig.requests[2])[-1]
            notices = [u.get("notice") for u in turn.updates("mcp_servers")]
            expected = f"MCP server web ({remote.url}) lost its connection; reconnecting once"
            assert expected in notices
            assert turn.updates("mcp_servers")[-1]["connected"] == 1


async def test_a_server_gone_for_good_fails_after_one_reconnect(
    serve_app: Any, project: Path, tmp_path: Path
) -> None:
    steps = [_call("echo", {"text": "a"}), _call("echo", {"text": "b"}), {"text": "ok"}]
    with remote_fixture(tmp_path / "rec.txt") as remote:
        async with running_rig(serve_app, project, steps) as rig:
            sid = await rig.new_session(
                mcpServers=[_server(remote)], mcpServerPolicy={"web": "trusted"}
            )
            remote.kill()
            turn = await rig.turn(sid, "call a dead server")
            results = turn.tool_results()
            assert [r["status"] for r in results] == ["failed", "failed"]
            assert "lost its connection during the call" in results[0]["rawOutput"]["error"]
            assert "not running" in results[1]["rawOutput"]["error"]
            last = turn.updates("mcp_servers")[-1]
            assert last["connected"] == 0
            assert last["servers"][0]["status"] == "failed"
            _assert_no_secret("the events", json.dumps(turn.messages, ensure_ascii=False))


async def test_tools_list_changed_over_http_refreshes_the_model_s_tools(
    serve_app: Any, project: Path, tmp_path: Path
) -> None:
    steps = [_call("grow"), _call("added_later"), {"text": "ok"}]
    with remote_fixture(tmp_path / "rec.txt") as remote:
        async with running_rig(serve_app, project, steps) as rig:
            sid = await rig.new_session(
                mcpServers=[_server(remote)], mcpServerPolicy={"web": "trusted"}
            )
            turn = await rig.turn(sid, "grow")
            assert "mcp__web__added_later" not in _tools(rig.requests[0])
            assert "mcp__web__added_later" in _tools(rig.requests[1])
            assert [r["status"] for r in turn.tool_results()] == ["completed", "completed"]
            assert "I was added later" in tool_messages(rig.requests[2])[-1]


async def test_cancelling_a_turn_cancels_the_call_on_the_remote_server(
    serve_app: Any, project: Path, tmp_path: Path
) -> None:
    record = tmp_path / "rec.txt"
    steps = [_call("slow"), {"text": "never"}]

    def lines() -> list[str]:
        return record.read_text(encoding="utf-8").splitlines() if record.exists() else []

    with remote_fixture(record) as remote:
        async with running_rig(serve_app, project, steps) as rig:
            sid = await rig.new_session(
                mcpServers=[_server(remote)], mcpServerPolicy={"web": "trusted"}
            )

            async def on_message(message: dict[str, Any], _stream: Any) -> None:
                update = (message.get("params") or {}).get("update") or {}
                if update.get("status") == "in_progress":
                    await _until(lambda: "started" in lines(), "the slow tool to start")
                    await rig.client.result("session/cancel", {"sessionId": sid})

            turn = await rig.turn(sid, "slow", on_message=on_message)
            assert turn.end["stopReason"] == "cancelled"
            await _until(lambda: "cancelled" in lines(), "the server to see the cancel")


async def _until(predicate: Any, what: str, timeout: float = 20) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for {what}")
        await asyncio.sleep(0.02)


def test_headless_run_with_an_mcp_json_http_entry(
    tmp_path: Path, project: Path, mock_model_process: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``run --mcp-config`` with Claude Code's http entry: ``${VAR}`` in the header is
    filled in by the bridge, the call works, and the token is in no output."""
    config = tmp_path / "mcp.json"
    with remote_fixture(tmp_path / "rec.txt") as remote:
        entry = {
            "type": "http",
            "url": f"{remote.url}?key={QUERY_SECRET}",
            "headers": {"Authorization": "Bearer ${MCP_TEST_REMOTE_TOKEN}"},
        }
        config.write_text(json.dumps({"mcpServers": {"web": entry}}), encoding="utf-8")
        steps = [_call("echo", {"text": CHINESE}), {"text": "完成"}]
        api_base = mock_model_process(steps)
        env = {k: v for k, v in os.environ.items() if not k.startswith("AGENT_SHELL_")}
        env.update(
            {
                "AGENT_SHELL_API_KEY": "sk-remote-test",
                "AGENT_SHELL_MEMORY_DIR": str(tmp_path / "memory"),
                "MCP_TEST_REMOTE_TOKEN": "令牌-HSECRET-7",
            }
        )
        result = subprocess.run(
            [
                *bridge_command(),
                "run",
                "--root",
                str(project),
                "--api-base",
                api_base,
                "--mcp-config",
                str(config),
                "说你好",
            ],
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        seen = remote.headers_seen()
    assert result.returncode == 0, result.stderr
    assert "完成" in result.stdout
    assert "authorization: Bearer 令牌-HSECRET-7" in seen
    log = next((project / ".agent-shell" / "logs").glob("*.org")).read_text(encoding="utf-8")
    assert CHINESE in log and ":SERVER: web" in log
    for where, text in (("stdout", result.stdout), ("stderr", result.stderr), ("log", log)):
        _assert_no_secret(where, text)
