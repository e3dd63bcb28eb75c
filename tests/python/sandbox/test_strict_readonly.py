"""The no-sandbox filter: what still runs without asking when nothing would contain it.

Cases of tests/fixtures/policy/no_sandbox.jsonl (``command``, ``strict``, ``class``
and an optional ``cwd`` below the project) are judged in the corpus project of
policy_tree. The filter comes after the policy; these tests hold it to refusing on
its own the programs that run other programs and the readers' escapes, and check
that, together, the two never let a risky corpus command run unasked.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from agent_shell_bridge.policy import PolicyEngine
from agent_shell_bridge.sandbox.strict_readonly import (
    RUNS_PROGRAMS,
    STRICT_READERS,
    strictly_read_only,
)
from agent_shell_bridge.types import Decision
from policy_tree import build_corpus_project

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "policy"
CASES = [
    json.loads(line)
    for line in (FIXTURES / "no_sandbox.jsonl").read_text(encoding="utf-8").splitlines()
    if line
]
CORPUS = [
    json.loads(line)
    for line in (FIXTURES / "commands.jsonl").read_text(encoding="utf-8").splitlines()
    if line
]
# Programs that run the program named in their arguments; the issue names these.
WRAPPERS = [
    "env", "xargs", "nice", "timeout", "nohup", "stdbuf", "time", "command", "exec",
    "builtin", "sudo", "chroot", "setsid", "ionice", "taskset", "flock", "watch",
]  # fmt: skip


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = build_corpus_project(tmp_path_factory.mktemp("proj").resolve())
    (root / "README.md").write_text("说明\n", encoding="utf-8")
    (root / "src" / "a.py").write_text("print('a')\n", encoding="utf-8")
    return root


@pytest.mark.parametrize("case", CASES, ids=[c["command"] for c in CASES])
def test_fixture_case(project: Path, case: dict[str, str]) -> None:
    cwd = project / case["cwd"] if "cwd" in case else None
    assert strictly_read_only(case["command"], [project], cwd=cwd) is case["strict"], case


@pytest.mark.parametrize("wrapper", WRAPPERS)
def test_a_program_that_runs_another_is_never_a_plain_reader(project: Path, wrapper: str) -> None:
    """Regression: counting env, xargs, nice or timeout as readers ran `env make test`
    (the project's Makefile) unasked on a machine without bubblewrap."""
    assert wrapper not in STRICT_READERS
    assert wrapper in RUNS_PROGRAMS
    for inner in ("cat README.md", "ls", "make test", "git status"):
        assert not strictly_read_only(f"{wrapper} {inner}", [project]), (wrapper, inner)
    assert strictly_read_only("cat README.md", [project])


def test_env_make_test_asks_without_a_sandbox(project: Path) -> None:
    assert not strictly_read_only("env make test", [project])
    assert not strictly_read_only("env -- make test", [project])
    assert not strictly_read_only("nice -n 19 make test", [project])
    assert not strictly_read_only("timeout 60 make test", [project])
    assert not strictly_read_only("echo x | xargs make", [project])


def test_git_in_a_nested_repository_is_not_strict(project: Path) -> None:
    assert strictly_read_only("git status", [project], cwd=project / "src")
    for where in ("vendor/lib", "wt", "bare.git"):
        assert not strictly_read_only("git status", [project], cwd=project / where), where
        assert not strictly_read_only(f"git -C {where} status", [project]), where
        assert not strictly_read_only(f"cd {where} && git log", [project]), where


def test_a_link_to_a_nested_repository_is_followed(project: Path) -> None:
    os.symlink(project / "vendor" / "lib", project / "lib_link")
    try:
        assert not strictly_read_only("git -C lib_link status", [project])
    finally:
        (project / "lib_link").unlink()
    assert strictly_read_only("git -C docs status", [project])


def test_risky_corpus_commands_never_run_unasked_without_a_sandbox(project: Path) -> None:
    """Policy and filter together, as the agent applies them where bwrap is missing."""
    engine = PolicyEngine(project)
    leaked = [
        case["command"]
        for case in CORPUS
        if case["kind"] != "read"
        and "home" not in case
        and engine.check_command(case["command"]).decision is Decision.ALLOW
        and strictly_read_only(case["command"], [project])
    ]
    assert leaked == []


def test_harmless_loops_still_run_without_a_sandbox(project: Path) -> None:
    engine = PolicyEngine(project)
    for command in (
        'for f in src/*.py; do wc -l "$f"; done',
        'for f in src/*.py README.md; do head -n 3 "$f"; done',
        "for i in 1 2 3; do echo $((i * 2)); done",
    ):
        assert engine.check_command(command).decision is Decision.ALLOW, command
        assert strictly_read_only(command, [project]), command


def test_a_real_repository_passes_and_its_nested_clone_does_not(tmp_path: Path) -> None:
    root = tmp_path / "项目"
    (root / "src").mkdir(parents=True)
    subprocess.run(["git", "init", "-q", root], check=True)
    assert strictly_read_only("git status && git log -1", [root])
    nested = root / "third_party" / "x"
    nested.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", nested], check=True)
    assert not strictly_read_only("cd third_party/x && git status", [root])
    assert strictly_read_only("cd third_party && git status", [root])
