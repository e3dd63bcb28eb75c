"""The first minutes without a working key: a warning at start, errors that say why.

A real bridge on 127.0.0.1 and the scripted model; an unreachable API is a closed
loopback port. The key itself must never appear in any of these messages.
"""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from agent_rig import make_project, running_rig
from agent_shell_bridge.config import BridgeConfig
from agent_shell_bridge.wire import ModelConfig


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return make_project(tmp_path / "proj", {"README.md": "# 演示\n"})


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def test_session_without_a_key_says_how_to_set_one(serve_app: Any, project: Path) -> None:
    async with running_rig(serve_app, project, []) as rig:
        rig.runtime.config = BridgeConfig(api_base="https://api.deepseek.com/v1")
        result = await rig.client.result("session/new", {"cwd": str(project)})
        (notice,) = result["notices"]
        assert notice.startswith("No API key found for https://api.deepseek.com/v1")
        ways = (
            "agent-shell-api-key",
            "auth-source",
            "machine api.deepseek.com",
            "DEEPSEEK_API_KEY",
        )
        assert all(way in notice for way in ways), notice
        log = Path(result["logPath"]).read_text(encoding="utf-8")
        assert "No API key found" in log and "agent-shell-api-key" in log


async def test_session_with_a_key_or_a_local_server_has_no_warning(
    serve_app: Any, project: Path
) -> None:
    async with running_rig(serve_app, project, []) as rig:
        with_key = await rig.client.result("session/new", {"cwd": str(project)})
        assert with_key["notices"] == []
        rig.runtime.config = BridgeConfig(api_base="http://127.0.0.1:11434/v1")
        local = await rig.client.result("session/new", {"cwd": str(project)})
        assert local["notices"] == []


async def test_401_names_api_base_key_source_and_proxy(serve_app: Any, project: Path) -> None:
    async with running_rig(serve_app, project, [{"fault": "401"}]) as rig:
        init = await rig.client.result(
            "initialize",
            {"model": {"api_key": "sk-wrong-key-123", "api_key_source": "auth-source"}},
        )
        assert init["model"]["key_source"] == "auth-source"
        sid = await rig.new_session()
        turn = await rig.turn(sid, "hi")
        message = turn.end["error"]["message"]
        assert "HTTP 401" in message
        assert f"api-base {rig.mock.api_base}" in message
        assert "key from auth-source" in message
        assert "agent-shell-trust-env is off" in message
        assert "sk-wrong" not in message
        assert rig.mock.recorder.records[0].auth_present


async def test_unreachable_api_names_where_and_how(serve_app: Any, project: Path) -> None:
    base = f"http://127.0.0.1:{closed_port()}/v1"
    async with running_rig(serve_app, project, []) as rig:
        rig.runtime.config = BridgeConfig(api_base=base, api_key=None, trust_env=False)
        sid = await rig.new_session()
        turn = await rig.turn(sid, "hi")
        message = turn.end["error"]["message"]
        assert "unreachable" in message
        assert f"api-base {base}" in message
        assert "key from nowhere: no key was found" in message
        assert "agent-shell-trust-env" in message


def test_key_source_must_be_a_label_not_a_key() -> None:
    assert ModelConfig(api_key_source="env:DEEPSEEK_API_KEY").api_key_source
    with pytest.raises(ValidationError):
        ModelConfig(api_key_source="sk-1234567890")
    env = {"DEEPSEEK_API_KEY": "sk-env"}
    config = BridgeConfig.from_env(env)
    assert config.api_key_source == "env:DEEPSEEK_API_KEY"
    assert BridgeConfig.from_env({}).api_key_source == "none"
