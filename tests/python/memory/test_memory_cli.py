"""``agent-shell-bridge memory reindex|search`` through the installed console script."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
BRIDGE = REPO / ".venv" / "bin" / "agent-shell-bridge"
FIXTURES = REPO / "tests" / "fixtures" / "memory"


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(BRIDGE), "memory", *args],
        capture_output=True,
        text=True,
        encoding="utf-8",
        timeout=60,
        check=False,
    )


@pytest.fixture
def roots(tmp_path: Path) -> list[Path]:
    out = []
    for name in ("proj-go", "proj-py"):
        mem = tmp_path / name / ".agent-shell" / "memory"
        mem.mkdir(parents=True)
        for f in (FIXTURES / name).iterdir():
            shutil.copyfile(f, mem / f.name)
        out.append(tmp_path / name)
    return out


def test_reindex_then_search_json(tmp_path: Path, roots: list[Path]) -> None:
    memdir = tmp_path / "memdir"
    r = _run("reindex", "--memory-dir", str(memdir), *map(str, roots))
    assert r.returncode == 0, r.stderr
    stats = json.loads(r.stdout)
    assert stats["added"] == 4 and stats["removed"] == 0
    assert sorted(stats["roots"]) == sorted(str(p.resolve()) for p in roots)

    r = _run(
        "search", "--memory-dir", str(memdir), "--project", "proj-go", "--json", "中文 解析 JSON"
    )
    assert r.returncode == 0, r.stderr
    hits = json.loads(r.stdout)
    assert hits[0]["title"] == "修复含中文参数时 JSON 解析失败"  # Chinese survives the pipe
    assert Path(hits[0]["path"]).name == "2025-07-12--json-parse-chinese.md"
    assert {"path", "title", "project", "score", "summary"} <= hits[0].keys()
    assert hits[0]["project"] == "proj-go"

    r = _run("search", "--memory-dir", str(memdir), "--limit", "1", "--json", "pytest", "timeouts")
    assert [Path(h["path"]).name for h in json.loads(r.stdout)] == [
        "2025-03-02--flaky-pytest-timeouts.md"
    ]


def test_reindex_without_roots_uses_known_roots(tmp_path: Path, roots: list[Path]) -> None:
    memdir = tmp_path / "memdir"
    assert _run("reindex", "--memory-dir", str(memdir), *map(str, roots)).returncode == 0
    (memdir / "index.sqlite3").write_bytes(b"\x00garbage" * 512)
    r = _run("reindex", "--memory-dir", str(memdir))
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["added"] == 4


def test_search_with_fts_syntax_and_no_hits(tmp_path: Path, roots: list[Path]) -> None:
    memdir = tmp_path / "memdir"
    _run("reindex", "--memory-dir", str(memdir), *map(str, roots))
    r = _run("search", "--memory-dir", str(memdir), "--json", '"NEAR(x* -y)')
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout) == []


def test_unwritable_memory_dir_reports_an_error(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a dir", encoding="utf-8")
    r = _run("search", "--memory-dir", str(blocker / "sub"), "--json", "x")
    assert r.returncode == 1
    assert "memory" in r.stderr and "Traceback" not in r.stderr
