"""Which granted commands run outside the sandbox again: plain git on the project's
own repository, and nothing that could run code the agent changed since the yes."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from agent_shell_bridge.sandbox.granted_git import runs_outside_when_granted

# Rows: command, outside (whether a grant may run it outside the sandbox), class.
CASES = [
    json.loads(line)
    for line in (Path(__file__).resolve().parents[2] / "fixtures" / "policy" / "granted_git.jsonl")
    .read_text(encoding="utf-8")
    .splitlines()
    if line
]


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "项目"
    (root / "src").mkdir(parents=True)
    subprocess.run(["git", "init", "-q", root], check=True)
    return root


@pytest.mark.parametrize(
    "command",
    [
        "git commit -am wip",
        "git add -A && git commit -m '第二次'",
        "git stash",
        "git push origin main",
        "git status; git log --oneline -3",
    ],
)
def test_plain_git_on_the_project_repository_runs_outside(repo: Path, command: str) -> None:
    assert runs_outside_when_granted(command, repo, repo)
    assert runs_outside_when_granted(command, repo / "src", repo)


@pytest.mark.parametrize(
    "command",
    [
        "make test",  # not git
        "git -c core.hooksPath=scripts commit -m x",  # config from the command line
        "git -C sub commit -m x",  # another repository
        "git --exec-path=bin commit",
        "git --git-dir=other/.git commit",
        "git bisect run ./check.sh",  # runs a project script
        "git rebase -x ./check.sh main",
        "git fetch --upload-pack=./evil origin",
        "git push --receive-pack=./evil origin",
        'git commit -m "$(cat msg)"',  # a substitution
        "git commit -m $MSG",  # an expansion
        "GIT_DIR=other git commit",  # an assignment
        "git log > out.txt",  # a redirection
        "./git commit",
        "/usr/bin/env git commit",
        "git add -A && make",
        "git",
    ],
)
def test_anything_else_stays_in_the_sandbox(repo: Path, command: str) -> None:
    assert not runs_outside_when_granted(command, repo, repo)


def test_a_nested_repository_stays_in_the_sandbox(repo: Path) -> None:
    """Its .git is writable from the sandbox, so its hooks may be the agent's."""
    nested = repo / "vendor" / "lib"
    nested.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", nested], check=True)
    assert not runs_outside_when_granted("git commit -am x", nested, repo)
    assert runs_outside_when_granted("git commit -am x", nested.parent, repo)


def test_no_repository_or_a_cwd_outside_stays_in_the_sandbox(tmp_path: Path) -> None:
    bare = tmp_path / "plain"
    bare.mkdir()
    assert not runs_outside_when_granted("git status", bare, bare)
    other = tmp_path / "other"
    other.mkdir()
    assert not runs_outside_when_granted("git status", other, bare)


def test_a_git_on_path_inside_the_project_stays_in_the_sandbox(repo: Path) -> None:
    fake = repo / "bin" / "git"
    fake.parent.mkdir()
    fake.write_text("#!/bin/sh\nexit 0\n", encoding="utf-8")
    fake.chmod(0o755)
    path = f"{fake.parent}{os.pathsep}{os.environ.get('PATH', '')}"
    assert not runs_outside_when_granted("git status", repo, repo, path_env=path)
    assert runs_outside_when_granted("git status", repo, repo, path_env=os.environ.get("PATH"))


@pytest.mark.parametrize("case", CASES, ids=[c["command"] for c in CASES])
def test_fixture_case(repo: Path, case: dict[str, str]) -> None:
    assert runs_outside_when_granted(case["command"], repo, repo) is case["outside"], case


@pytest.mark.parametrize("option", ["--upload-pack", "--receive-pack", "--exec"])
@pytest.mark.parametrize("sub", ["fetch", "pull", "push"])
def test_options_that_run_a_program_never_pass_in_any_spelling(
    repo: Path, option: str, sub: str
) -> None:
    """Regression: the check matched --upload-pack/--exec by their whole names, and git
    takes any unambiguous abbreviation, so `git fetch --upl=PROG origin` ran PROG
    outside the sandbox once granted."""
    assert runs_outside_when_granted(f"git {sub} origin", repo, repo)
    for end in range(3, len(option) + 1):
        spelled = option[:end]
        for form in (f"{spelled}=./evil origin", f"{spelled} ./evil origin", f"origin {spelled}=x"):
            command = f"git {sub} {form}"
            assert not runs_outside_when_granted(command, repo, repo), command


@pytest.mark.parametrize("sub", ["fetch", "clone", "pull"])
def test_short_upload_pack_stays_in_the_sandbox(repo: Path, sub: str) -> None:
    assert not runs_outside_when_granted(f"git {sub} -u ./evil origin", repo, repo)
    assert not runs_outside_when_granted(f"git {sub} -qu ./evil origin", repo, repo)


def test_hooks_moved_into_the_work_tree_stay_in_the_sandbox(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """husky-style core.hooksPath points at files the sandboxed agent can write."""
    user_config = tmp_path / "gitconfig"
    user_config.write_text("[user]\n\tname = 测试\n", encoding="utf-8")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(user_config))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    assert runs_outside_when_granted("git commit -m x", repo, repo)
    user_config.write_text("[core]\n\thooksPath = githooks\n", encoding="utf-8")
    assert not runs_outside_when_granted("git commit -m x", repo, repo)
    user_config.write_text(f"[core]\n\thooksPath = {tmp_path / 'hooks'}\n", encoding="utf-8")
    assert runs_outside_when_granted("git commit -m x", repo, repo)
    subprocess.run(["git", "-C", repo, "config", "core.hooksPath", ".husky"], check=True)
    assert not runs_outside_when_granted("git commit -m x", repo, repo)
    subprocess.run(["git", "-C", repo, "config", "core.hooksPath", str(repo / "hooks")], check=True)
    assert not runs_outside_when_granted("git commit -m x", repo, repo)
    subprocess.run(["git", "-C", repo, "config", "--unset", "core.hooksPath"], check=True)
    assert runs_outside_when_granted("git commit -m x", repo, repo)
    subprocess.run(
        ["git", "-C", repo, "config", "include.path", "../project.gitconfig"], check=True
    )
    assert not runs_outside_when_granted("git commit -m x", repo, repo)


def test_a_bare_layout_between_stays_in_the_sandbox(repo: Path) -> None:
    bare = repo / "vendor" / "x.git"
    for sub in ("objects", "refs"):
        (bare / sub).mkdir(parents=True)
    (bare / "HEAD").write_text("ref: refs/heads/main\n", encoding="utf-8")
    assert not runs_outside_when_granted("git status", bare, repo)
    assert runs_outside_when_granted("git status", bare.parent, repo)
