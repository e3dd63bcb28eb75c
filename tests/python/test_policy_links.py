"""Commands judged against a real tree holding symlinks, globs and the agent's records.

The corpus (tests/fixtures/policy/links.jsonl) depends on the tree built here: links
leading out of the project, a link to the agent's logs, a directory with more entries
than a glob may look at, and a link loop for patterns that would never end.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from agent_shell_bridge.policy import PolicyEngine
from agent_shell_bridge.types import Decision, Risk

CORPUS = Path(__file__).resolve().parents[1] / "fixtures" / "policy" / "links.jsonl"
CASES = [json.loads(x) for x in CORPUS.read_text(encoding="utf-8").splitlines() if x]


def build_tree(tmp: Path) -> Path:
    root = tmp / "proj"
    (root / "src").mkdir(parents=True)
    (root / "src" / "a.py").write_text("print('a')\n", encoding="utf-8")
    (root / "README.md").write_text("说明\n", encoding="utf-8")
    (root / "sub").mkdir()
    (root / ".git" / "hooks").mkdir(parents=True)
    for name in ("logs", "sessions", "memory"):
        (root / ".agent-shell" / name).mkdir(parents=True)
    (root / ".agent-shell" / "logs" / "2026-01-01.org").write_text("* log\n", encoding="utf-8")
    (root / ".agent-shell" / "sessions" / "s1.json").write_text("{}\n", encoding="utf-8")
    (root / ".agent-shell" / "memory" / "note.md").write_text("备忘\n", encoding="utf-8")
    (tmp / "outside").mkdir()
    (tmp / "outside" / "secret.txt").write_text("secret\n", encoding="utf-8")
    (tmp / "secret.txt").write_text("secret\n", encoding="utf-8")
    os.symlink(tmp / "outside", root / "sub" / "out")
    os.symlink("src", root / "in")
    os.symlink(".agent-shell/logs", root / "loglink")
    os.symlink(".", root / "loop")
    many = root / "many"
    many.mkdir()
    for i in range(5_001):
        (many / f"f{i}").touch()
    return root


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory) -> PolicyEngine:
    tmp = tmp_path_factory.mktemp("links").resolve()
    return PolicyEngine(build_tree(tmp))


def test_corpus_shape() -> None:
    assert len(CASES) >= 40
    assert len({c["command"] for c in CASES}) == len(CASES)
    assert {c["decision"] for c in CASES} == {"allow", "confirm", "deny"}


@pytest.mark.parametrize("case", CASES, ids=[str(i) for i in range(len(CASES))])
def test_links_case(engine: PolicyEngine, case: dict[str, str]) -> None:
    verdict = engine.check_command(case["command"])
    assert verdict.decision.value == case["decision"], (case["command"], verdict)
    if case["decision"] == "allow":
        assert verdict.risk is Risk.READ
    if case["kind"] == "dangerous":
        assert verdict.risk is Risk.DANGEROUS


def test_reasons_name_the_problem(engine: PolicyEngine) -> None:
    assert "follows symlinks" in engine.check_command("grep -R x .").reason
    assert "too many" in engine.check_command("ls many/*").reason
    assert "link leading out" in engine.check_command("cat sub/out/secret.txt").reason
    assert "cannot be checked" in engine.check_command("cat /etc/passw[^x]").reason
    redirect = engine.check_command("cat < sub/out/secret.txt").reason
    assert "input redirection" in redirect and "secret.txt" in redirect


def test_wide_globs_are_judged_without_walking_the_machine(engine: PolicyEngine) -> None:
    """/proc/*/root loops once made one check run for minutes; now none may walk far."""
    started = time.monotonic()
    for command in (
        "cat /*/*/*/*/*/*/*/*/zzz",
        "cat ./*/*/*/*/*/*/*/*/*/zzz",
        "cat loop/*/*/*/*/*/*/*/*/*/*/zzz",
        "ls ../../../*/*/*/*",
    ):
        assert engine.check_command(command).decision is Decision.CONFIRM, command
    assert time.monotonic() - started < 10


def test_a_link_swapped_between_two_commands_changes_the_next_verdict(tmp_path: Path) -> None:
    """Where a path word leads is looked up afresh for every command: the engine keeps
    nothing from one check to the next, so a link re-pointed in between is seen."""
    tmp = tmp_path.resolve()
    root = tmp / "proj"
    (root / "src").mkdir(parents=True)
    (root / ".git" / "hooks").mkdir(parents=True)
    (root / "src" / "notes.txt").write_text("笔记\n", encoding="utf-8")
    (tmp / "out").mkdir()
    (tmp / "out" / "notes.txt").write_text("secret\n", encoding="utf-8")
    engine = PolicyEngine(root, home=tmp / "home")
    link = root / "data"
    commands = ("cat data/notes.txt", "touch data/hooks/x", "echo hi > data/x")

    def judge() -> list[Decision]:
        return [engine.check_command(c).decision for c in commands]

    os.symlink("src", link)
    assert judge() == [Decision.ALLOW, Decision.CONFIRM, Decision.CONFIRM]
    link.unlink()
    os.symlink(tmp / "out", link)
    read = engine.check_command(commands[0])
    assert read.decision is Decision.CONFIRM and "link leading out" in read.reason
    assert judge()[2] is Decision.DENY
    link.unlink()
    os.symlink(".git", link)
    assert judge() == [Decision.ALLOW, Decision.DENY, Decision.DENY]
    link.unlink()
    os.symlink("src", link)
    assert judge() == [Decision.ALLOW, Decision.CONFIRM, Decision.CONFIRM]
