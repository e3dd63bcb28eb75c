"""Commands judged against a real tree holding symlinks, globs and the agent's records.

The corpus (tests/fixtures/policy/links.jsonl) depends on the tree built here: links
leading out of the project (among them the links sandboxed code could plant into a
temporary $HOME: to ~/.bashrc, to a folder, dangling, chained, into ~/.ssh), a link to
the agent's logs, a directory with more entries than a glob may look at, and a link
loop for patterns that would never end.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from agent_shell_bridge.policy import PolicyEngine
from agent_shell_bridge.policy.allowlist import parse_allowlist
from agent_shell_bridge.types import Decision, Risk

CORPUS = Path(__file__).resolve().parents[2] / "fixtures" / "policy" / "links.jsonl"
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
    plant_links_out(root, tmp / "home")
    return root


def plant_links_out(root: Path, home: Path) -> None:
    """What sandboxed code could plant: links from the project into ``home``."""
    (home / ".config").mkdir(parents=True, exist_ok=True)
    (home / ".ssh").mkdir(exist_ok=True)
    (home / ".ssh" / "authorized_keys").write_text("ssh-ed25519 AAAA mine\n", encoding="utf-8")
    (home / ".bashrc").write_text("# mine\n", encoding="utf-8")
    os.symlink(home / ".bashrc", root / "notes_link.md")
    os.symlink(home / ".config", root / "dir_link")
    os.symlink(home / ".profile.new", root / "dangling_link")
    os.symlink("chain_b", root / "chain_a")
    os.symlink(home / ".bashrc", root / "chain_b")
    os.symlink(home / ".ssh", root / "keys_link")
    os.symlink(home / ".ssh" / "authorized_keys", root / "key_file_link")
    os.symlink("README.md", root / "notes_in.md")


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory) -> PolicyEngine:
    tmp = tmp_path_factory.mktemp("links").resolve()
    return PolicyEngine(build_tree(tmp), home=tmp / "home")


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


def test_a_write_through_a_link_names_where_it_really_goes(engine: PolicyEngine) -> None:
    """The question shows the link's real target, and is never the kind a grant covers."""
    verdict = engine.check_command("cp README.md notes_link.md")
    where = "notes_link.md → ~/.bashrc, outside the project (through a symlink)"
    assert verdict.reason == f"cp: {where}"
    assert verdict.risk is Risk.DANGEROUS  # asked each time, never "for this session"
    chain = engine.check_command("cp README.md chain_a").reason
    assert "chain_a → ~/.bashrc" in chain
    assert "dir_link/file → ~/.config/file" in engine.check_command("touch dir_link/file").reason
    assert "dangling_link → ~/.profile.new" in engine.check_command("cp x dangling_link").reason
    secret = engine.check_command("cp README.md key_file_link")
    assert secret.decision is Decision.DENY
    assert "key_file_link → ~/.ssh/authorized_keys, among the user's secrets" in secret.reason
    redirect = engine.check_command("echo x >> notes_link.md")
    assert redirect.decision is Decision.DENY
    assert "notes_link.md → ~/.bashrc, outside the project" in redirect.reason
    assert "notes_link.md → ~/.bashrc" in engine.check_path("notes_link.md", "write").reason


def test_an_allowlisted_write_is_asked_once_a_link_leads_it_out(tmp_path: Path) -> None:
    """The allowlist entry was written for the project's file, not for ~/.bashrc."""
    tmp = tmp_path.resolve()
    root = tmp / "proj"
    (root / ".git").mkdir(parents=True)
    (root / "README.md").write_text("说明\n", encoding="utf-8")
    entry = '(setq agent-shell-allowlist \'((command . "cp README.md notes.md")))\n'
    allowlist = parse_allowlist(entry)
    engine = PolicyEngine(root, allowlist=allowlist, home=tmp / "home")
    assert engine.check_command("cp README.md notes.md").decision is Decision.ALLOW
    (tmp / "home").mkdir()
    os.symlink(tmp / "home" / ".bashrc", root / "notes.md")
    verdict = engine.check_command("cp README.md notes.md")
    assert verdict.decision is Decision.CONFIRM and verdict.risk is Risk.DANGEROUS
    assert "notes.md → ~/.bashrc" in verdict.reason


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
