"""A project's allowlist applies to agent sessions only once the user trusted it.

Regression for a repository that ships ``.agent-shell/allowlist.el`` allowing a
dangerous command: cloning it must not be enough to run that command unasked.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from agent_shell_bridge.config import BridgeConfig
from agent_shell_bridge.policy import AllowlistError, PolicyEngine
from agent_shell_bridge.project.trust import AllowlistTrust
from agent_shell_bridge.transport.server import create_app
from agent_shell_bridge.types import Decision
from conftest import BridgeClient, make_runtime

PUSH = "git push --force origin main"


@pytest.fixture
async def client(tmp_path: Path, server_settings: Any) -> AsyncIterator[BridgeClient]:
    rt = make_runtime()
    rt.config = BridgeConfig(memory_dir=tmp_path / "memory")
    app = create_app(server_settings, rt)
    async with BridgeClient(
        transport=httpx.ASGITransport(app=app),
        base_url=f"http://127.0.0.1:{server_settings.port}",
        headers={"Authorization": f"Bearer {server_settings.token}"},
    ) as c:
        yield c
    await rt.aclose()


def make_root(tmp_path: Path) -> Path:
    root = tmp_path / "cloned-项目"
    (root / ".agent-shell").mkdir(parents=True)
    (root / ".agent-shell" / "allowlist.el").write_text(
        f'(setq agent-shell-allowlist \'((command . "{PUSH}")))\n', encoding="utf-8"
    )
    return root


async def test_untrusted_allowlist_is_not_applied(client: BridgeClient, tmp_path: Path) -> None:
    root = make_root(tmp_path)
    session = await client.result("session/new", {"cwd": str(root)})
    assert session["allowlist"] == "untrusted"
    verdict = await client.result("policy/check", {"cwd": str(root), "command": PUSH})
    assert verdict["decision"] == "deny"


async def test_trusted_allowlist_applies_until_it_changes(
    client: BridgeClient, tmp_path: Path
) -> None:
    root = make_root(tmp_path)
    trusted = await client.result("policy/trust_allowlist", {"cwd": str(root)})
    assert trusted["commands"] == [PUSH]
    verdict = await client.result("policy/check", {"cwd": str(root), "command": PUSH})
    assert verdict["decision"] == "allow"
    session = await client.result("session/new", {"cwd": str(root)})
    assert session["allowlist"] == "trusted"
    # Any change to the file needs trust again.
    path = root / ".agent-shell" / "allowlist.el"
    path.write_text(path.read_text() + ";; edited\n", encoding="utf-8")
    verdict = await client.result("policy/check", {"cwd": str(root), "command": PUSH})
    assert verdict["decision"] == "deny"
    # The trust record lives with the user's data, not in the project.
    assert (tmp_path / "memory" / "trusted-allowlists.json").is_file()
    assert not any(p.name.startswith("trusted") for p in root.rglob("*"))


async def test_trusting_a_missing_allowlist_is_a_clear_error(
    client: BridgeClient, tmp_path: Path
) -> None:
    root = tmp_path / "empty"
    root.mkdir()
    reply = await client.rpc("policy/trust_allowlist", {"cwd": str(root)})
    assert reply["error"]["code"] == -32602
    assert "does not exist" in reply["error"]["message"]


async def test_symlinked_allowlist_is_never_trusted(client: BridgeClient, tmp_path: Path) -> None:
    root = tmp_path / "proj"
    (root / ".agent-shell").mkdir(parents=True)
    outside = tmp_path / "elsewhere.el"
    outside.write_text(f'(setq agent-shell-allowlist \'((command . "{PUSH}")))\n')
    (root / ".agent-shell" / "allowlist.el").symlink_to(outside)
    reply = await client.rpc("policy/trust_allowlist", {"cwd": str(root)})
    assert "error" in reply
    verdict = await client.result("policy/check", {"cwd": str(root), "command": PUSH})
    assert verdict["decision"] == "deny"


async def test_an_allowlist_of_comments_needs_no_trust(
    client: BridgeClient, tmp_path: Path
) -> None:
    """The scaffold's commented example must not nag about trust on every project."""
    root = tmp_path / "fresh"
    (root / ".agent-shell").mkdir(parents=True)
    (root / ".agent-shell" / "allowlist.el").write_text(
        ';; (setq agent-shell-allowlist \'((command . "make test")))\n', encoding="utf-8"
    )
    session = await client.result("session/new", {"cwd": str(root)})
    assert session["allowlist"] == "none"


async def test_a_malformed_allowlist_does_not_stop_a_session(
    client: BridgeClient, tmp_path: Path
) -> None:
    root = tmp_path / "broken"
    (root / ".agent-shell").mkdir(parents=True)
    (root / ".agent-shell" / "allowlist.el").write_text(
        "(setq agent-shell-allowlist '((", encoding="utf-8"
    )
    session = await client.result("session/new", {"cwd": str(root)})
    assert session["allowlist"] == "invalid"
    verdict = await client.result("policy/check", {"cwd": str(root), "command": PUSH})
    assert verdict["decision"] == "deny"


async def test_trust_refuses_content_changed_after_review(
    client: BridgeClient, tmp_path: Path
) -> None:
    """Regression: trust hashed whatever was on disk, not what the user reviewed."""
    import hashlib

    root = make_root(tmp_path)
    path = root / ".agent-shell" / "allowlist.el"
    reviewed = hashlib.sha256(path.read_bytes()).hexdigest()
    path.write_text(
        path.read_text() + '(setq agent-shell-allowlist \'((command . "rm -rf build")))\n'
    )
    reply = await client.rpc("policy/trust_allowlist", {"cwd": str(root), "sha256": reviewed})
    assert reply["error"]["code"] == -32602
    assert "changed after you reviewed it" in reply["error"]["message"]
    verdict = await client.result("policy/check", {"cwd": str(root), "command": PUSH})
    assert verdict["decision"] == "deny"
    # Reviewing the current bytes works.
    current = hashlib.sha256(path.read_bytes()).hexdigest()
    ok = await client.result("policy/trust_allowlist", {"cwd": str(root), "sha256": current})
    assert ok["sha256"] == current
    verdict = await client.result("policy/check", {"cwd": str(root), "command": PUSH})
    assert verdict["decision"] == "allow"


class _SwappingTrust(AllowlistTrust):
    """Puts the trusted bytes back on disk while the trust record is being looked up.

    This is the race an attacker would aim for: parse the malicious file, then show
    the benign one to the hash. The engine must hash the very bytes it parsed.
    """

    def __init__(self, path: Path, allowlist: Path, benign: bytes) -> None:
        super().__init__(path)
        self.allowlist = allowlist
        self.benign = benign

    def _load(self) -> dict[str, str]:
        self.allowlist.write_bytes(self.benign)
        return super()._load()


def test_allowlist_swapped_during_the_trust_check_is_not_applied(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    (root / ".agent-shell").mkdir(parents=True)
    path = root / ".agent-shell" / "allowlist.el"
    benign = b'(setq agent-shell-allowlist \'((command . "rm -rf build/")))\n'
    malicious = f'(setq agent-shell-allowlist \'((command . "{PUSH}")))\n'.encode()
    trust = _SwappingTrust(tmp_path / "trust.json", path, benign)
    trust.trust(root, benign)
    path.write_bytes(malicious)
    engine = PolicyEngine.for_project(root, trust=trust)
    assert engine.allowlist_status == "untrusted"
    assert engine.check_command(PUSH).decision is Decision.DENY
    # The benign bytes now on disk are trusted and apply on the next read.
    again = PolicyEngine.for_project(root, trust=AllowlistTrust(tmp_path / "trust.json"))
    assert again.allowlist_status == "trusted"
    assert again.check_command("rm -rf build/").decision is Decision.ALLOW
    assert trust.is_trusted(root) and trust.is_trusted_content(root, benign)
    assert not trust.is_trusted_content(root, malicious)


def test_a_fifo_in_place_of_the_allowlist_does_not_hang(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    (root / ".agent-shell").mkdir(parents=True)
    os.mkfifo(root / ".agent-shell" / "allowlist.el")
    trust = AllowlistTrust(tmp_path / "trust.json")
    engine = PolicyEngine.for_project(root, trust=trust)
    assert engine.allowlist_status == "none"
    assert PolicyEngine.for_project(root).allowlist_status == "none"


def test_statuses_without_a_session(tmp_path: Path) -> None:
    """The user's own audit applies the file as is; a symlinked one is never trusted."""
    root = make_root(tmp_path)
    assert PolicyEngine.for_project(root).allowlist_status == "applied"
    trust = AllowlistTrust(tmp_path / "trust.json")
    assert PolicyEngine.for_project(root, trust=trust).allowlist_status == "untrusted"
    path = root / ".agent-shell" / "allowlist.el"
    content = path.read_bytes()
    trust.trust(root, content)
    assert PolicyEngine.for_project(root, trust=trust).allowlist_status == "trusted"
    real = tmp_path / "real.el"
    real.write_bytes(content)
    path.unlink()
    path.symlink_to(real)
    assert PolicyEngine.for_project(root, trust=trust).allowlist_status == "untrusted"
    path.unlink()
    path.write_bytes(b"\xff\xfe not utf-8")
    assert PolicyEngine.for_project(root, trust=trust).allowlist_status == "invalid"
    with pytest.raises(AllowlistError):
        PolicyEngine.for_project(root)
