"""A project's config.el turns its sandbox off only once the user trusts the file.

Real bridge on loopback (the rig), real files, the real trust record in the memory
directory. The project's own bytes are never enough: an untrusted ``config.el``
leaves the sandbox on and says so; trusting exactly the reviewed bytes turns it
off for live and new sessions; any change to the file needs trust again.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import pytest

from agent_rig import make_project, running_rig
from agent_shell_bridge.sandbox import SandboxKit, SandboxStatus
from agent_shell_bridge.sandbox.project_switch import wants_sandbox_off

# Run again with the sandbox forced off (make test): its path depends on the sandbox.
pytestmark = pytest.mark.sandbox_sensitive

OFF = ";; no sandbox here\n(setq agent-shell-max-steps 40\n      agent-shell-sandbox nil)\n"


@pytest.mark.parametrize(
    ("text", "off"),
    [
        (OFF, True),
        ("(setq agent-shell-sandbox 'off)\n", True),
        ("(setq agent-shell-sandbox t)\n", False),
        ("(setq agent-shell-sandbox nil)\n(setq agent-shell-sandbox t)\n", False),
        (";; (setq agent-shell-sandbox nil)\n", False),
        ("(setq agent-shell-sandbox #.(eval nil))\n", False),
        ("(progn (setq agent-shell-sandbox nil))\n", False),
        ("(setq agent-shell-sandbox", False),
    ],
)
def test_reading_the_setting(text: str, off: bool) -> None:
    assert wants_sandbox_off(text.encode("utf-8")) is off


async def test_config_turns_the_sandbox_off_only_when_trusted(
    serve_app: Any, tmp_path: Path
) -> None:
    root = make_project(tmp_path / "proj", {".agent-shell/config.el": OFF})
    available = SandboxStatus(True, "bubblewrap (as detected)", SandboxKit("/usr/bin/bwrap"))
    async with running_rig(serve_app, root, [], memory_dir=tmp_path / "memory") as rig:
        rig.runtime.sandbox = available
        first = await rig.client.result("session/new", {"cwd": str(root)})
        assert first["sandbox"]["available"] is True
        assert first["sandbox"]["projectSetting"] == "untrusted"
        live = rig.runtime.sessions[first["sessionId"]]
        log_text = Path(live.state.log_path or "").read_text(encoding="utf-8")
        assert "Sandbox stays on: config.el's setting is not trusted" in log_text

        # Trust refused for bytes other than the ones reviewed.
        stale = await rig.client.rpc("policy/trust_config", {"cwd": str(root), "sha256": "0" * 64})
        assert stale["error"]["code"] == -32602 and "changed after you reviewed" in str(stale)
        assert live.sandbox.available is True

        digest = hashlib.sha256(OFF.encode("utf-8")).hexdigest()
        trusted = await rig.client.result(
            "policy/trust_config", {"cwd": str(root), "sha256": digest}
        )
        assert trusted["sandbox"]["available"] is False
        assert live.sandbox.available is False and live.sandbox_setting == "off"
        second = await rig.client.result("session/new", {"cwd": str(root)})
        assert second["sandbox"]["projectSetting"] == "off"
        assert "config.el" in second["sandbox"]["detail"]

        # Any change to the file needs trust again.
        (root / ".agent-shell" / "config.el").write_text(OFF + ";; edited\n", encoding="utf-8")
        third = await rig.client.result("session/new", {"cwd": str(root)})
        assert third["sandbox"]["available"] is True
        assert third["sandbox"]["projectSetting"] == "untrusted"
    # The record lives with the user's data, not in the project.
    assert (tmp_path / "memory" / "trusted-configs.json").is_file()
    assert not any(p.name.startswith("trusted") for p in root.rglob("*"))
