"""A session in a linked git worktree keeps the main project's memory and allowlist."""

from __future__ import annotations

import subprocess
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from agent_shell_bridge.config import BridgeConfig
from agent_shell_bridge.project.worktree import main_worktree
from agent_shell_bridge.runtime import Runtime
from agent_shell_bridge.transport.server import create_app
from conftest import BridgeClient, make_runtime

PUSH = "git push --force origin main"


def git(cwd: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.org", *args],
        cwd=cwd,
        check=True,
        capture_output=True,
    )


def make_repo(tmp_path: Path) -> tuple[Path, Path]:
    """A repository 主项目 with one commit, and its linked worktree on branch 功能."""
    main = tmp_path / "主项目"
    main.mkdir()
    git(main, "init", "-q", "-b", "main")
    (main / "a.txt").write_text("一\n", encoding="utf-8")
    git(main, "add", "a.txt")
    git(main, "commit", "-q", "-m", "first")
    worktree = tmp_path / "主项目.worktrees" / "功能"
    git(main, "worktree", "add", "-q", "-b", "功能", str(worktree))
    return main, worktree


def test_main_worktree_of_a_linked_worktree_is_the_main_checkout(tmp_path: Path) -> None:
    main, worktree = make_repo(tmp_path)
    assert main_worktree(worktree) == main.resolve()
    assert main_worktree(main) == main


def test_main_worktree_of_no_repository_is_the_root_itself(tmp_path: Path) -> None:
    assert main_worktree(tmp_path) == tmp_path


def test_a_forged_git_file_does_not_lead_elsewhere(tmp_path: Path) -> None:
    """A .git file naming a directory that is no worktree of its common dir is ignored."""
    elsewhere = tmp_path / "elsewhere"
    (elsewhere / ".git").mkdir(parents=True)
    fake = tmp_path / "fake-admin"
    fake.mkdir()
    (fake / "commondir").write_text(str(elsewhere / ".git"), encoding="utf-8")
    (fake / "gitdir").write_text("x", encoding="utf-8")
    root = tmp_path / "root"
    root.mkdir()
    (root / ".git").write_text(f"gitdir: {fake}\n", encoding="utf-8")
    assert main_worktree(root) == root


@pytest.fixture
def rt() -> Runtime:
    return make_runtime()


@pytest.fixture
async def client(rt: Runtime, tmp_path: Path, server_settings: Any) -> AsyncIterator[BridgeClient]:
    rt.config = BridgeConfig(memory_dir=tmp_path / "memory")
    app = create_app(server_settings, rt)
    async with BridgeClient(
        transport=httpx.ASGITransport(app=app),
        base_url=f"http://127.0.0.1:{server_settings.port}",
        headers={"Authorization": f"Bearer {server_settings.token}"},
    ) as c:
        yield c
    await rt.aclose()


async def test_a_worktree_session_uses_the_main_projects_trusted_allowlist(
    client: BridgeClient, rt: Runtime, tmp_path: Path
) -> None:
    main, worktree = make_repo(tmp_path)
    (main / ".agent-shell").mkdir()
    (main / ".agent-shell" / "allowlist.el").write_text(
        f'(setq agent-shell-allowlist \'((command . "{PUSH}")))\n', encoding="utf-8"
    )
    await client.result("policy/trust_allowlist", {"cwd": str(main)})
    session = await client.result("session/new", {"cwd": str(worktree)})
    assert session["allowlist"] == "trusted"
    verdict = await client.result("policy/check", {"cwd": str(worktree), "command": PUSH})
    assert verdict["decision"] == "allow"
    # The worktree's own records stay apart: its log is in the worktree.
    assert Path(session["logPath"]).is_relative_to(worktree)
    # Its experiences are the main project's.
    live = rt.sessions[session["sessionId"]]
    assert live.root == worktree
    assert live.memory_root == main.resolve()
    assert live.project == "主项目"


async def test_a_worktree_session_without_the_main_allowlist_asks_as_usual(
    client: BridgeClient, tmp_path: Path
) -> None:
    _main, worktree = make_repo(tmp_path)
    session = await client.result("session/new", {"cwd": str(worktree)})
    assert session["allowlist"] == "none"
    verdict = await client.result("policy/check", {"cwd": str(worktree), "command": PUSH})
    assert verdict["decision"] == "deny"
