"""$HOME and / are never a project silently; secrets stay refused whatever the root.

Real bridge app over HTTP (ASGI transport), real directories; ``$HOME`` points at a
temporary directory so nothing is written into the real home.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from agent_shell_bridge.config import BridgeConfig
from agent_shell_bridge.transport.server import create_app
from conftest import BridgeClient, make_runtime


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    place = tmp_path / "users" / "someone"
    (place / ".ssh").mkdir(parents=True)
    (place / ".ssh" / "id_rsa").write_text("-----BEGIN PRIVATE KEY-----\n", encoding="utf-8")
    (place / "notes.txt").write_text("笔记\n", encoding="utf-8")
    monkeypatch.setenv("HOME", str(place))
    return place


@pytest.fixture
async def client(tmp_path: Path, server_settings: Any, home: Path) -> AsyncIterator[BridgeClient]:
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


@pytest.mark.parametrize(
    ("where", "kind"),
    [("home", "home"), ("above", "above_home"), ("slash", "filesystem_root")],
)
async def test_wide_roots_are_refused_with_a_typed_error(
    client: BridgeClient, home: Path, where: str, kind: str
) -> None:
    cwd = {"home": home, "above": home.parent, "slash": Path("/")}[where]
    reply = await client.rpc("session/new", {"cwd": str(cwd)})
    error = reply["error"]
    assert error["code"] == -32006
    assert error["data"] == {"root": str(cwd.resolve()), "kind": kind}
    assert "allow_wide_root" in error["message"]
    assert not (cwd / ".agent-shell").exists()


async def test_a_project_inside_home_starts_normally(client: BridgeClient, home: Path) -> None:
    project = home / "code" / "项目"
    project.mkdir(parents=True)
    session = await client.result("session/new", {"cwd": str(project)})
    assert session["root"] == str(project.resolve())


async def test_confirmed_home_root_still_guards_secrets(client: BridgeClient, home: Path) -> None:
    session = await client.result("session/new", {"cwd": str(home), "allow_wide_root": True})
    assert session["root"] == str(home.resolve())

    async def check(**params: str) -> dict[str, Any]:
        result: dict[str, Any] = await client.result("policy/check", {"cwd": str(home), **params})
        return result

    assert (await check(path="notes.txt", op="read"))["decision"] == "allow"
    assert (await check(path=".ssh/id_rsa", op="read"))["decision"] == "deny"
    assert (await check(path="~/.ssh/id_rsa", op="read"))["decision"] == "deny"
    assert (await check(command="cat notes.txt"))["decision"] == "allow"
    for command in ("cat ~/.ssh/id_rsa", "cat .ssh/id_rsa", "grep -r KEY .ssh", "head .ssh/*"):
        assert (await check(command=command))["decision"] != "allow", command
