"""A project's allowlist applies to agent sessions only once the user trusted it.

Regression for a repository that ships ``.agent-shell/allowlist.el`` allowing a
dangerous command: cloning it must not be enough to run that command unasked.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from agent_shell_bridge.config import BridgeConfig
from agent_shell_bridge.server import create_app
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
