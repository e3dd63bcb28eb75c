"""Remote MCP servers' configuration and grant identity, without processes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agent_shell_bridge.errors import InvalidParams, ToolFailed
from agent_shell_bridge.mcp.client.lifecycle import (
    McpTool,
    ServerConnection,
    describe_error,
    scrub,
)
from agent_shell_bridge.mcp.config import (
    ServerConfig,
    WireServer,
    from_claude_json,
    from_wire,
    public_url,
    to_wire,
)
from agent_shell_bridge.mcp.hub import McpHub, _Binding

TOKEN = "Bearer tok-SECRET-值"


def _claude(servers: dict[str, Any]) -> str:
    return json.dumps({"mcpServers": servers}, ensure_ascii=False)


def test_claude_code_http_and_sse_entries_parse(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MCP_TEST_TOKEN", "tok-值")
    monkeypatch.delenv("MCP_TEST_UNSET", raising=False)
    text = _claude(
        {
            "api": {
                "type": "http",
                "url": "https://${MCP_TEST_HOST:-mcp.example.com}/mcp",
                "headers": {"Authorization": "Bearer ${MCP_TEST_TOKEN}"},
            },
            "plain": {"url": "http://127.0.0.1:8931/mcp"},  # no type: http
            "old": {"type": "sse", "url": "https://old.example.com/sse"},
            "later": {"type": "http", "url": "https://${MCP_TEST_UNSET}/mcp"},
            "local": {"command": "uvx", "args": ["mcp-server-time"]},
        }
    )
    api, plain, old, later, local = from_claude_json(text, ".mcp.json")
    assert (api.transport, api.url) == ("http", "https://mcp.example.com/mcp")
    assert api.headers == (("Authorization", "Bearer tok-值"),)
    assert api.remote and not local.remote
    assert (plain.transport, plain.url, plain.headers) == ("http", "http://127.0.0.1:8931/mcp", ())
    assert (old.transport, old.url) == ("sse", "https://old.example.com/sse")
    assert later.unsupported == "environment variable MCP_TEST_UNSET is not set"
    assert local.transport == "stdio" and local.command == "uvx"


def test_acp_http_entries_and_the_wire_round_trip() -> None:
    wire = [
        WireServer.model_validate(
            {
                "type": "http",
                "name": "api",
                "url": "https://mcp.example.com/mcp",
                "headers": [{"name": "Authorization", "value": TOKEN}],
            }
        ),
        WireServer.model_validate(
            {"type": "sse", "name": "old", "url": "http://[::1]:9000/sse", "headers": []}
        ),
    ]
    servers = from_wire(wire)
    assert [(s.transport, s.url) for s in servers] == [
        ("http", "https://mcp.example.com/mcp"),
        ("sse", "http://[::1]:9000/sse"),
    ]
    assert servers[0].headers == (("Authorization", TOKEN),)
    again = [WireServer.model_validate(item) for item in to_wire(servers)]
    assert from_wire(again) == servers
    # Headless --mcp-config keeps ${VAR} for the bridge to expand.
    kept = from_claude_json(
        _claude({"a": {"url": "https://${HOST}/mcp", "headers": {"K": "${TOKEN}"}}}),
        "f",
        expand=False,
    )
    assert to_wire(kept) == [
        {
            "type": "http",
            "name": "a",
            "url": "https://${HOST}/mcp",
            "headers": [{"name": "K", "value": "${TOKEN}"}],
        }
    ]


@pytest.mark.parametrize(
    ("server", "field"),
    [
        ({"type": "http", "url": "file:///etc/passwd"}, "'url'"),
        ({"type": "sse", "url": "ws://example.com/mcp"}, "'url'"),
        ({"url": "example.com/mcp"}, "'url'"),
        ({"type": "http", "url": "http:///nohost"}, "'url'"),
        ({"type": "http", "url": "http://a b/"}, "'url'"),
        ({"type": "http"}, "'url'"),
        ({"type": "websocket", "url": "https://x/"}, "'type'"),
        ({"url": "https://x/", "headers": {"Bad Name": "v"}}, "'headers'"),
        ({"url": "https://x/", "headers": {"K": f"{TOKEN}\r\nX-Evil: 1"}}, "header 'K'"),
    ],
)
def test_bad_remote_entries_are_refused_naming_server_and_field(
    server: dict[str, Any], field: str
) -> None:
    with pytest.raises(InvalidParams) as info:
        from_claude_json(_claude({"srv": server}), ".mcp.json")
    message = info.value.message
    assert "'srv'" in message and field in message
    assert "SECRET" not in message  # a header's value is never repeated


def test_a_variable_cannot_smuggle_a_header_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MCP_TEST_EVIL", "SECRET\r\nX-Evil: 1")
    text = _claude({"srv": {"url": "https://x/", "headers": {"K": "${MCP_TEST_EVIL}"}}})
    with pytest.raises(InvalidParams) as info:
        from_claude_json(text, ".mcp.json")
    assert "header 'K'" in info.value.message and "SECRET" not in info.value.message


def test_public_url_drops_user_info_query_and_fragment() -> None:
    assert public_url("https://u:p@Host.example:8443/mcp/v1?key=SECRET#frag") == (
        "https://host.example:8443/mcp/v1"
    )
    assert public_url("http://[::1]:9000/sse?t=1") == "http://[::1]:9000/sse"
    config = ServerConfig(
        "api", "", transport="http", url="https://h/mcp?key=Q-SECRET", headers=(("A", TOKEN),)
    )
    assert config.where == "https://h/mcp"
    assert "SECRET" not in repr(config) and "SECRET" not in str(config)


def test_errors_from_remote_servers_lose_the_query_and_header_values() -> None:
    import httpx2

    config = ServerConfig(
        "api", "", transport="http", url="https://h/mcp?key=Q-SECRET", headers=(("A", TOKEN),)
    )
    request = httpx2.Request("POST", config.url or "")
    response = httpx2.Response(401, request=request)
    status = httpx2.HTTPStatusError(f"401 for {config.url}", request=request, response=response)
    assert describe_error(status, config) == "HTTP 401 Unauthorized"
    echoed = RuntimeError(f"bad token {TOKEN} at {config.url}")
    assert describe_error(echoed, config) == "bad token [header value] at https://h/mcp"


USER_URL = "https://alice:PW-SECRET-77@h.example/mcp?key=Q-SECRET#F-SECRET"


def _assert_no_url_secret(text: str) -> None:
    for secret in ("PW-SECRET", "Q-SECRET", "F-SECRET", "alice:"):
        assert secret not in text, f"{secret!r} leaked into {text!r}"


def test_scrub_removes_user_info_query_and_fragment_even_when_quoted_apart() -> None:
    config = ServerConfig("api", "", transport="http", url=USER_URL, headers=(("A", TOKEN),))
    text = (
        f"Invalid structured content returned by tool t: {{'src': '{USER_URL}'}}; "
        "user alice:PW-SECRET-77, query key=Q-SECRET, fragment F-SECRET, 令牌 stays"
    )
    scrubbed = scrub(text, config)
    _assert_no_url_secret(scrubbed)
    assert "'src': 'https://h.example/mcp'" in scrubbed and "令牌 stays" in scrubbed


async def test_a_result_breaking_its_schema_fails_without_the_url_s_secrets(
    tmp_path: Path,
) -> None:
    """The SDK rejects a result that breaks the tool's output schema with a
    RuntimeError quoting the result; the failure the model and log see is scrubbed."""
    config = ServerConfig("api", "", transport="http", url=USER_URL, headers=(("A", TOKEN),))

    async def nothing(*_: Any) -> None:
        return None

    class _SchemaBreakingSession:  # the SDK's ClientSession at its validation step
        async def call_tool(self, *_: Any, **__: Any) -> Any:
            raise RuntimeError(
                "Invalid structured content returned by tool t: "
                f"{{'src': '{USER_URL}'}} is not of type 'integer'"
            )

    connection = ServerConnection(
        config,
        root=tmp_path,
        stderr_path=tmp_path / "api.stderr.log",
        start_timeout_s=5,
        on_event=nothing,
        on_tools_changed=nothing,
    )
    connection._session = _SchemaBreakingSession()  # type: ignore[assignment]
    connection.state = "connected"
    with pytest.raises(ToolFailed) as failed:
        await connection.call("t", {}, 5)
    message = str(failed.value)
    assert message.startswith("MCP server api: Invalid structured content")
    assert "https://h.example/mcp" in message
    _assert_no_url_secret(message)


def test_http_client_log_records_show_urls_only_in_their_public_form() -> None:
    """The filter on the HTTP client's logger rewrites URLs in the message and in
    its arguments, however many, and leaves other text as it was."""
    import logging

    from agent_shell_bridge.mcp.client.transports import _PublicUrls

    record = logging.LogRecord(
        "httpx2",
        logging.INFO,
        __file__,
        1,
        'HTTP Request: %s %s "%s" 令牌 %s',
        ("POST", USER_URL, "HTTP/1.1 200 OK", "see <http://bob:B-SECRET@h2/sse?x=Q-SECRET>"),
        None,
    )
    assert _PublicUrls().filter(record)
    assert record.getMessage() == (
        'HTTP Request: POST https://h.example/mcp "HTTP/1.1 200 OK" 令牌 see <http://h2/sse>'
    )
    plain = logging.LogRecord("httpx2", logging.INFO, __file__, 1, "GET %s", ("http://h/x",), None)
    assert _PublicUrls().filter(plain) and (plain.msg, plain.args) == ("GET %s", ("http://h/x",))


def _identity(config: ServerConfig, tmp_path: Path) -> str:
    async def save(_body: str) -> tuple[str, Path]:
        raise AssertionError("not called")

    async def nothing(*_: Any) -> None:
        return None

    hub = McpHub(
        [config],
        root=tmp_path,
        log_dir=tmp_path,
        policies={},
        save_output=save,
        on_event=nothing,
        on_change=nothing,
    )
    tool = McpTool(name="t", description="", input_schema={}, annotations=None)
    return _Binding(hub, config.name, tool).identity()


def test_a_remote_grant_is_bound_to_transport_url_and_header_names(tmp_path: Path) -> None:
    def remote(**kw: Any) -> ServerConfig:
        base: dict[str, Any] = {
            "transport": "http",
            "url": "https://h/mcp",
            "headers": (("Authorization", "Bearer one"),),
        }
        return ServerConfig("api", "", **{**base, **kw})

    first = _identity(remote(), tmp_path)
    # A rotated token keeps the grant: values are not part of the identity.
    assert _identity(remote(headers=(("authorization", "Bearer two"),)), tmp_path) == first
    # Another endpoint, transport or set of header names under the same name asks again.
    assert _identity(remote(url="https://other/mcp"), tmp_path) != first
    assert _identity(remote(transport="sse"), tmp_path) != first
    more = (("Authorization", "Bearer one"), ("X-Scope", "all"))
    assert _identity(remote(headers=more), tmp_path) != first
    assert _identity(ServerConfig("api", "https://h/mcp"), tmp_path) != first
