"""MCP configuration, naming, policy and result rendering, without processes."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agent_shell_bridge.errors import InvalidParams
from agent_shell_bridge.mcp.config import WireServer, from_claude_json, from_wire, merge, to_wire
from agent_shell_bridge.mcp.naming import ToolNames, sanitise
from agent_shell_bridge.mcp.policy import decide, is_read_only
from agent_shell_bridge.mcp.results import render
from agent_shell_bridge.types import Decision, Risk

VALID = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")

# -- configuration -------------------------------------------------------------------


def test_claude_shape_parses_with_env_and_cwd() -> None:
    text = json.dumps(
        {
            "mcpServers": {
                "git": {"command": "uvx", "args": ["mcp-server-git"], "env": {"K": "值"}},
                "web": {"type": "http", "url": "https://example.invalid/mcp"},
            }
        },
        ensure_ascii=False,
    )
    git, web = from_claude_json(text, "x.json")
    assert (git.name, git.command, git.args, git.env) == (
        "git",
        "uvx",
        ("mcp-server-git",),
        (("K", "值"),),
    )
    assert git.unsupported is None and git.transport == "stdio"
    assert (web.transport, web.url) == ("http", "https://example.invalid/mcp")
    assert web.unsupported is None


def test_claude_and_acp_shapes_agree_through_the_wire() -> None:
    servers = from_claude_json(
        '{"mcpServers": {"t": {"command": "c", "args": ["a"], "env": {"A": "1"}, "cwd": "sub"}}}',
        "f",
    )
    wire = [WireServer.model_validate(item) for item in to_wire(servers)]
    assert wire[0].env[0].name == "A" and wire[0].env[0].value == "1"
    assert from_wire(wire, origin="f") == servers


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{not json", "not valid JSON"),
        ('{"mcpServers": []}', "expected"),
        ('{"mcpServers": {"a": {"args": ["x"]}}}', "'command' is required"),
        ('{"mcpServers": {"a": {"command": "x", "args": "notalist"}}}', "args"),
        ('{"mcpServers": {"a": {"command": "x\\u0000y"}}}', "NUL"),
    ],
)
def test_bad_configuration_is_a_clear_error(text: str, message: str) -> None:
    with pytest.raises(InvalidParams) as info:
        from_claude_json(text, "proj/.mcp.json")
    assert message in info.value.message
    assert "proj/.mcp.json" in info.value.message or "'a'" in info.value.message


def test_variables_expand_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MCP_TEST_TOKEN", "令牌")
    monkeypatch.delenv("MCP_TEST_UNSET", raising=False)
    text = json.dumps(
        {
            "mcpServers": {
                "a": {
                    "command": "${MCP_TEST_BIN:-uvx}",
                    "args": ["--token=${MCP_TEST_TOKEN}"],
                    "env": {"T": "${MCP_TEST_TOKEN}", "LITERAL": "$MCP_TEST_TOKEN"},
                },
                "b": {"command": "x", "env": {"T": "${MCP_TEST_UNSET}"}},
            }
        }
    )
    a, b = from_claude_json(text, "f")
    assert a.command == "uvx"
    assert a.args == ("--token=令牌",)
    assert dict(a.env) == {"T": "令牌", "LITERAL": "$MCP_TEST_TOKEN"}
    assert b.unsupported == "environment variable MCP_TEST_UNSET is not set"


def test_duplicate_names_in_the_acp_list_are_refused() -> None:
    wire = [WireServer(name="a", command="x"), WireServer(name="a", command="y")]
    with pytest.raises(InvalidParams, match="appears twice"):
        from_wire(wire)


def test_merge_keeps_the_first_list_s_server_of_a_name() -> None:
    mine = from_claude_json('{"mcpServers": {"a": {"command": "mine"}}}', "user")
    theirs = from_claude_json(
        '{"mcpServers": {"a": {"command": "theirs"}, "b": {"command": "b"}}}', "project"
    )
    assert [(s.name, s.command) for s in merge(mine, theirs)] == [("a", "mine"), ("b", "b")]


# -- naming ----------------------------------------------------------------------------


def test_names_are_prefixed_sanitised_and_stable() -> None:
    names = ToolNames()
    assert names.name_for("time", "get_current_time") == "mcp__time__get_current_time"
    assert names.name_for("my server.v2", "读/写") == "mcp__my_server_v2_____"
    assert names.lookup("mcp__time__get_current_time") == ("time", "get_current_time")
    assert names.name_for("time", "get_current_time") == "mcp__time__get_current_time"


def test_clashing_names_get_distinct_valid_names() -> None:
    names = ToolNames()
    first = names.name_for("a.b", "t")
    second = names.name_for("a_b", "t")
    third = names.name_for("a b", "t")
    assert len({first, second, third}) == 3
    assert all(VALID.match(n) for n in (first, second, third))
    assert names.lookup(second) == ("a_b", "t")


@given(st.text(min_size=0, max_size=200), st.text(min_size=0, max_size=200))
def test_every_name_fits_the_provider_pattern(server: str, tool: str) -> None:
    names = ToolNames()
    name = names.name_for(server, tool)
    assert VALID.match(name), name
    assert name.startswith("mcp__")
    assert names.lookup(name) == (server, tool)


def test_sanitise_keeps_allowed_characters() -> None:
    assert sanitise("ok-Name_9") == "ok-Name_9"
    assert sanitise("") == "_"


# -- policy ----------------------------------------------------------------------------

READ_ONLY = {"readOnlyHint": True, "openWorldHint": False}


@pytest.mark.parametrize(
    ("annotations", "policy", "decision", "risk"),
    [
        (READ_ONLY, "default", Decision.ALLOW, Risk.READ),
        ({"readOnlyHint": True}, "default", Decision.ALLOW, Risk.READ),
        ({"readOnlyHint": True, "openWorldHint": True}, "default", Decision.CONFIRM, Risk.WRITE),
        ({"readOnlyHint": False}, "default", Decision.CONFIRM, Risk.WRITE),
        ({"readOnlyHint": "true"}, "default", Decision.CONFIRM, Risk.WRITE),
        ({"destructiveHint": False}, "default", Decision.CONFIRM, Risk.WRITE),
        (None, "default", Decision.CONFIRM, Risk.WRITE),
        (None, "trusted", Decision.ALLOW, Risk.WRITE),
        (READ_ONLY, "denied", Decision.DENY, Risk.READ),
    ],
)
def test_policy_table(
    annotations: dict[str, object] | None, policy: str, decision: Decision, risk: Risk
) -> None:
    verdict = decide("srv", "tool", annotations, policy)  # type: ignore[arg-type]
    assert (verdict.decision, verdict.risk) == (decision, risk)
    assert "srv" in verdict.reason


def test_only_a_literal_true_read_only_hint_counts() -> None:
    assert is_read_only({"readOnlyHint": True})
    assert not is_read_only({"readOnlyHint": 1})
    assert not is_read_only({})


# -- results ---------------------------------------------------------------------------


def test_text_and_distinct_structured_content() -> None:
    rendered = render(
        {
            "content": [{"type": "text", "text": "第一段"}, {"type": "text", "text": "second"}],
            "structuredContent": {"温度": 21},
        }
    )
    assert rendered.text.startswith("第一段\nsecond\n[structuredContent]\n")
    assert '"温度": 21' in rendered.text
    assert rendered.structured == {"温度": 21}
    assert not rendered.is_error


def test_structured_content_equal_to_the_text_is_not_repeated() -> None:
    body = {"a": [1, 2]}
    rendered = render(
        {"content": [{"type": "text", "text": json.dumps(body)}], "structuredContent": body}
    )
    assert rendered.text == json.dumps(body)


def test_a_result_wrapper_repeating_the_text_is_not_repeated() -> None:
    rendered = render(
        {
            "content": [{"type": "text", "text": "行一\n行二"}],
            "structuredContent": {"result": "行一\n行二"},
        }
    )
    assert rendered.text == "行一\n行二"
    assert rendered.structured == {"result": "行一\n行二"}


def test_media_and_resources_are_described_not_inlined() -> None:
    blob = "QUJD" * 100
    rendered = render(
        {
            "content": [
                {"type": "image", "data": blob, "mimeType": "image/jpeg"},
                {"type": "audio", "data": "QUI=", "mimeType": "audio/wav"},
                {"type": "resource_link", "uri": "file:///x", "name": "x"},
                {"type": "resource", "resource": {"uri": "file:///t", "text": "内文"}},
                {"type": "resource", "resource": {"uri": "file:///b", "blob": blob}},
            ],
            "isError": True,
        }
    )
    assert blob not in rendered.text
    assert "[image: image/jpeg, 300 bytes; not shown]" in rendered.text
    assert "[audio: audio/wav, 2 bytes; not shown]" in rendered.text
    assert "[resource link: x file:///x]" in rendered.text
    assert "[resource file:///t]\n内文" in rendered.text
    assert rendered.images == 1
    assert rendered.is_error


def test_importing_the_bridge_does_not_import_the_sdk() -> None:
    """The SDK costs most of a second to import; only sessions with servers pay it."""
    code = (
        "import sys, agent_shell_bridge.cli, agent_shell_bridge.methods, "
        "agent_shell_bridge.agent.session.mcp_servers; "
        "print(any(m == 'mcp' or m.startswith('mcp.') for m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
