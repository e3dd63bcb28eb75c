"""Bridge-side file tools on real files: reads, the search fallback, headless edits."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from agent_shell_bridge.policy.secrets import BUILTIN, SecretCheck, SecretList
from agent_shell_bridge.tools import files
from agent_shell_bridge.tools.args import WriteFileArgs


def test_python_grep_fallback_does_not_follow_planted_symlinks(tmp_path: Path) -> None:
    """Regression: without ripgrep, grep read through a symlink leading out of the repo."""
    outside = tmp_path / "outside_secret"
    outside.write_text("AWS_SECRET=hunter2\n", encoding="utf-8")
    root = tmp_path / "proj"
    root.mkdir()
    (root / "innocent.txt").symlink_to(outside)
    (root / "notes.md").write_text("AWS_SECRET appears here too: 笔记\n", encoding="utf-8")
    hits = files._grep_python("AWS_SECRET", root, None, root)
    assert [h["path"] for h in hits] == ["notes.md"]
    assert "hunter2" not in repr(hits)


def test_read_text_numbers_lines_and_reports_hash(tmp_path: Path) -> None:
    path = tmp_path / "中文.py"
    path.write_text("# 你好\nx = 1\n", encoding="utf-8")
    result = files.read_text(path, "中文.py", None, None)
    assert result["text"] == "     1\t# 你好\n     2\tx = 1"
    assert result["sha256"] == files.sha256_bytes(path.read_bytes())
    assert result["total_lines"] == 2


def test_diff_of_a_new_file_starts_from_dev_null(tmp_path: Path) -> None:
    args = WriteFileArgs(path="new.txt", content="新文件\n")
    plan = files.plan_edit(args, tmp_path / "new.txt", "new.txt", None)
    assert plan.diff.startswith("--- /dev/null\n+++ b/new.txt\n")
    assert "+新文件" in plan.diff


def _home_with_secrets(tmp_path: Path) -> Path:
    home = tmp_path / "home"
    (home / ".config" / "gh").mkdir(parents=True)
    (home / ".config" / "gh" / "hosts.yml").write_text("oauth_token: gho_SECRET\n", "utf-8")
    (home / ".config" / "app.conf").write_text("oauth_token: 公开\n", "utf-8")
    return home


async def test_grep_never_shows_the_users_secrets(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With $HOME as the project, searching .config must not reveal ~/.config/gh."""
    home = _home_with_secrets(tmp_path)
    monkeypatch.setenv("HOME", str(home))
    assert shutil.which("rg") is not None  # the system-wide ripgrep the tool prefers
    found = await files.grep("oauth_token", home / ".config", ".config", None, home, 30)
    assert [h["path"] for h in found["matches"]] == [".config/app.conf"]
    assert "gho_SECRET" not in repr(found)
    hits = files._grep_python("oauth_token", home / ".config", None, home)
    assert [h["path"] for h in hits] == [".config/app.conf"]


def test_listing_home_does_not_open_secret_folders(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = _home_with_secrets(tmp_path)
    (home / ".ssh").mkdir()
    (home / ".ssh" / "id_work_rsa").write_text("KEY\n", "utf-8")
    monkeypatch.setenv("HOME", str(home))
    listed = files.list_directory(home, ".", 3, home)
    entries = listed["entries"]
    assert ".ssh/" in entries and ".config/app.conf" in entries
    assert ".config/gh/" in entries  # the folder is named, not opened
    assert not any(e.startswith((".ssh/id", ".config/gh/h")) for e in entries), entries


class _CountingSecrets(SecretList):
    """The built-in secrets, counting the paths a search asks about."""

    def __init__(self) -> None:
        super().__init__(BUILTIN.entries)
        self.asked = 0

    def checker(self, home: Path) -> SecretCheck:
        return _CountingCheck(self, home)


class _CountingCheck(SecretCheck):
    __slots__ = ()

    def __call__(self, path: Path) -> bool:
        assert isinstance(self.secrets, _CountingSecrets)
        self.secrets.asked += 1
        return super().__call__(path)


async def test_grep_stops_at_its_limit_and_checks_only_what_it_keeps(tmp_path: Path) -> None:
    """300 files match; a search for 5 hits reads, checks and returns only those."""
    root = tmp_path / "proj"
    for n in range(300):
        sub = root / f"pkg_{n // 50}"
        sub.mkdir(parents=True, exist_ok=True)
        (sub / f"m{n:03d}.py").write_text(
            f"# 模块 {n}\nx = find_me({n})  # 找我\ny = find_me({n} + 1)\n", encoding="utf-8"
        )
    assert shutil.which("rg") is not None
    everything = await files.grep(r"\bfind_me\b", root, ".", None, root, 30, limit=1_000)
    assert len(everything["matches"]) == 600 and "truncated" not in everything
    secrets = _CountingSecrets()
    found = await files.grep(r"\bfind_me\b", root, ".", None, root, 30, secrets=secrets, limit=5)
    assert found["truncated"] is True
    hits = found["matches"]
    assert len(hits) == 5
    for hit in hits:  # the same hits, word for word, as the whole search has
        assert hit in everything["matches"], hit
        assert "find_me(" in hit["text"]
    assert secrets.asked <= 5  # once per file kept, not per file matched


def test_a_refused_edit_takes_back_only_its_own_snapshot(tmp_path: Path) -> None:
    """drop_snapshot removes one edit's bytes and index line; the others stay."""
    (tmp_path / "src").mkdir()
    for name in ("src/a.py", "b.py"):
        (tmp_path / name).write_text("旧 old\n", encoding="utf-8")

    def snap(op_id: str, rel: str) -> files.PlannedEdit:
        ctx = files.EditContext(tmp_path, op_id, "t1", "s1", None)
        args = WriteFileArgs(path=rel, content="新 new\n")
        plan = files.plan_edit(args, tmp_path / rel, rel, None)
        files.snapshot_edit(ctx, tmp_path / rel, plan)
        return plan

    snap("op-1", "b.py")
    snap("op-2", "b.py")
    refused = snap("op-2", "src/a.py")
    files.drop_snapshot(files.EditContext(tmp_path, "op-2", "t1", "s1", None), refused)
    snapshots = tmp_path / ".agent-shell" / "snapshots"
    index = (snapshots / "index.jsonl").read_text(encoding="utf-8").splitlines()
    assert [(e["op_id"], e["path"]) for e in map(json.loads, index)] == [
        ("op-1", "b.py"),
        ("op-2", "b.py"),
    ]
    assert not (snapshots / "op-2" / "src").exists()
    assert (snapshots / "op-2" / "b.py").read_text(encoding="utf-8") == "旧 old\n"
    assert (tmp_path / "src/a.py").read_text(encoding="utf-8") == "旧 old\n"
