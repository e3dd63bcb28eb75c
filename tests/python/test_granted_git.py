"""Which granted commands run outside the sandbox again: plain git on the project's
own repository, and nothing that could run code the agent changed since the yes."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from agent_shell_bridge.granted_git import runs_outside_when_granted


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
