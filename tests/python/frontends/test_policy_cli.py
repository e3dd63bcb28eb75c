"""``agent-shell-bridge policy check|path`` through the real console script."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from policy_tree import build_corpus_project

# Run again with the sandbox forced off (make test): its path depends on the sandbox.
pytestmark = pytest.mark.sandbox_sensitive

REPO = Path(__file__).resolve().parents[3]
SCRIPT = REPO / ".venv" / "bin" / "agent-shell-bridge"
CORPUS = REPO / "tests" / "fixtures" / "policy" / "commands.jsonl"


def run_cli(args: list[str], stdin: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [str(SCRIPT), *args],
        input=stdin.encode("utf-8"),
        capture_output=True,
        timeout=60,
        check=False,
    )


def jsonl(out: bytes) -> list[dict[str, object]]:
    return [json.loads(line) for line in out.decode("utf-8").splitlines()]


def test_check_answers_one_object_per_line(tmp_path: Path) -> None:
    proc = run_cli(
        ["policy", "check", "--root", str(tmp_path), "--jsonl"],
        "git status\nrm -rf /\necho 中文 > 输出.txt\n",
    )
    assert proc.returncode == 0, proc.stderr
    rows = jsonl(proc.stdout)
    assert [r["command"] for r in rows] == ["git status", "rm -rf /", "echo 中文 > 输出.txt"]
    assert [r["decision"] for r in rows] == ["allow", "deny", "confirm"]
    assert [r["risk"] for r in rows] == ["read", "dangerous", "write"]
    assert all(isinstance(r["reason"], str) and r["reason"] for r in rows)


def test_check_agrees_with_the_corpus(tmp_path: Path) -> None:
    """The CLI runs the same engine: every single-line corpus case gets its decision."""
    cases = [json.loads(x) for x in CORPUS.read_text(encoding="utf-8").splitlines()]
    # Rows with "home" need $HOME to be the project root (see test_policy_commands).
    single = [c for c in cases if "\n" not in c["command"] and "home" not in c]
    root = build_corpus_project(tmp_path / "proj")
    proc = run_cli(
        ["policy", "check", "--root", str(root), "--jsonl"],
        "".join(c["command"] + "\n" for c in single),
    )
    assert proc.returncode == 0, proc.stderr
    rows = jsonl(proc.stdout)
    assert len(rows) == len(single) > 300
    mismatches = [
        (c["command"], r["decision"])
        for c, r in zip(single, rows, strict=True)
        if r["decision"] != c["decision"]
    ]
    assert mismatches == []


def test_check_uses_an_explicit_allowlist(tmp_path: Path) -> None:
    allow = tmp_path / "allow.el"
    allow.write_text('(setq agent-shell-allowlist \'((command . "rm -rf build/")))\n')
    proc = run_cli(
        ["policy", "check", "--root", str(tmp_path), "--allowlist", str(allow), "--jsonl"],
        "rm -rf build/\nrm -rf build/ /\n",
    )
    assert [r["decision"] for r in jsonl(proc.stdout)] == ["allow", "deny"]


def test_check_reads_the_project_allowlist(tmp_path: Path) -> None:
    (tmp_path / ".agent-shell").mkdir()
    (tmp_path / ".agent-shell" / "allowlist.el").write_text(
        '(setq agent-shell-allowlist \'((command . "git push --force origin main")))\n'
    )
    proc = run_cli(
        ["policy", "check", "--root", str(tmp_path), "--jsonl"],
        "git push --force origin main\ngit push --force origin dev\n",
    )
    assert [r["decision"] for r in jsonl(proc.stdout)] == ["allow", "deny"]


def test_malformed_allowlist_is_a_clear_error(tmp_path: Path) -> None:
    allow = tmp_path / "allow.el"
    allow.write_text('(setq agent-shell-allowlist #.(shell-command "id"))\n')
    proc = run_cli(
        ["policy", "check", "--root", str(tmp_path), "--allowlist", str(allow), "--jsonl"],
        "ls\n",
    )
    assert proc.returncode == 2
    assert b"unsupported syntax" in proc.stderr
    assert proc.stdout == b""


@pytest.mark.parametrize("op", ["read", "write"])
def test_path_answers_with_resolution(tmp_path: Path, op: str) -> None:
    root = tmp_path / "proj"
    (root / ".git").mkdir(parents=True)
    extra = tmp_path / "extra"
    extra.mkdir()
    os.symlink("../outside", root / "out")
    proc = run_cli(
        ["policy", "path", "--root", str(root), "--extra", str(extra), "--op", op, "--jsonl"],
        f"src/中文.py\n../proj-evil/x\nout/x\n.git/config\n{extra}/n.txt\n",
    )
    assert proc.returncode == 0, proc.stderr
    rows = jsonl(proc.stdout)
    decisions = [r["decision"] for r in rows]
    expected_git = "allow" if op == "read" else "deny"
    assert decisions == ["allow", "deny", "deny", expected_git, "allow"]
    assert rows[0]["resolved"] == str(root.resolve() / "src" / "中文.py")
    assert rows[1]["resolved"] is None and "outside" in str(rows[1]["reason"])
    assert rows[4]["resolved"] == str(extra.resolve() / "n.txt")
