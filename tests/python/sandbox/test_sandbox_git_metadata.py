"""Git metadata planted by sandboxed code is set aside; git run for the agent runs none.

A hostile ``Makefile``, run without asking by ``run_test`` in the real sandbox,
plants every kind of repository git or Emacs would later run code from: a nested
``.git`` directory with an fsmonitor, a ``.git`` file pointing at a bare layout it
made, the bare layout itself (with ``core.worktree``), a swapped submodule pointer,
and an fsmonitor added to a nested repository that was there before. Each
fsmonitor would touch a marker outside the project. After the command none of
them is left where git finds it (checked with the plain git a user runs, which
would fire the marker), the untouched nested repository is still there, and the
model and the log are told what was renamed.

``project_status`` and ``magit_stage`` without Emacs (the bridge's own git) run no
fsmonitor of the project's root or of its submodules.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from agent_rig import make_project, running_rig, tool_messages
from agent_shell_bridge.sandbox import (
    SANDBOX_ENV,
    SandboxStatus,
    detect_sandbox,
    find_planted_git,
    set_aside_after_run,
)

_GIT = ["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid"]
RUN_TEST = {"tool_calls": [{"name": "run_test", "arguments": {"command": "make test"}}]}


def _real() -> SandboxStatus:
    status = detect_sandbox({k: v for k, v in os.environ.items() if k != SANDBOX_ENV})
    if not status.available:
        pytest.skip(f"bubblewrap cannot run on this machine: {status.detail}")
    return status


def _git(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*_GIT, *args], cwd=cwd, capture_output=True, text=True, check=False)


def _project_with_submodule(tmp_path: Path) -> Path:
    upstream = make_project(tmp_path / "upstream", {"lib.txt": "上游\n"})
    root = make_project(tmp_path / "proj", {"README.md": "# 项目\n"})
    added = _git(root, "-c", "protocol.file.allow=always", "submodule", "add", str(upstream), "sub")
    assert added.returncode == 0, added.stderr
    assert _git(root, "commit", "-qm", "submodule").returncode == 0
    for nested in ("vendor/old", "vendor/ok"):
        make_project(root / nested, {"x.txt": "x\n"})
    return root


def _makefile(marker: Path) -> str:
    fire = f"touch {marker}; false"
    lines = [
        "test:",
        # a nested repository with an fsmonitor
        "\tmkdir -p n1/.git/objects n1/.git/refs/heads n1/.git/hooks",
        "\techo 'ref: refs/heads/main' > n1/.git/HEAD",
        f"\tprintf '[core]\\n\\tfsmonitor = {fire}\\n' > n1/.git/config",
        # a bare layout whose work tree is the project
        "\tmkdir -p evil/objects evil/refs/heads",
        "\techo 'ref: refs/heads/main' > evil/HEAD",
        f"\tprintf '[core]\\n\\tbare = false\\n\\tworktree = ..\\n\\tfsmonitor = {fire}\\n' "
        "> evil/config",
        # a .git file pointing at it, and the submodule's pointer swapped for it
        "\tmkdir -p n2 && echo 'gitdir: ../evil' > n2/.git",
        "\techo 'gitdir: ../evil' > sub/.git",
        # an old nested repository armed
        f"\tprintf '[core]\\n\\tfsmonitor = {fire}\\n' >> vendor/old/.git/config",
        "\techo tests-ran-测试",
    ]
    return "\n".join(lines) + "\n"


def _plain_git_fires(path: Path, marker: Path) -> bool:
    """Whether the git a user runs in ``path`` (no protection) fires the marker."""
    marker.unlink(missing_ok=True)
    subprocess.run(["git", "status", "--short"], cwd=path, capture_output=True, check=False)
    return marker.exists()


async def test_planted_repositories_are_set_aside_after_the_command(
    serve_app: Any, tmp_path: Path
) -> None:
    status = _real()
    root = _project_with_submodule(tmp_path)
    marker = tmp_path / "fired"
    (root / "Makefile").write_text(_makefile(marker), encoding="utf-8")
    async with running_rig(serve_app, root, [RUN_TEST, {"text": "done"}]) as rig:
        rig.runtime.sandbox = status
        sid = await rig.new_session()
        turn = await rig.turn(sid, "run the tests")
        assert turn.permission_requests == []  # auto-allowed, sandboxed
        message = tool_messages(rig.requests[1])[0]
        log_path = Path(rig.runtime.sessions[sid].state.log_path or "")
        log_text = log_path.read_text(encoding="utf-8")
    result = json.loads(message.split("\n", 1)[1].rsplit("\n", 1)[0])
    assert result["exit_code"] == 0 and "tests-ran-测试" in result["stdout"]
    warning = result["warning"]
    for planted in ("n1/.git", "n2/.git", "evil/HEAD", "evil/config", "sub/.git"):
        assert f"{planted} (" in warning, warning
        assert planted in log_text
    assert "vendor/old/.git (repository)" in warning
    # Nothing git would run is left: the user's own git fires nothing anywhere.
    for place in (root, root / "n1", root / "n2", root / "evil", root / "sub", root / "vendor/old"):
        assert not _plain_git_fires(place, marker), place
    # The untouched nested repository, and the root's, are still there.
    assert (root / "vendor/ok/.git").is_dir()
    assert _git(root, "rev-parse", "--git-dir").stdout.strip() == ".git"
    assert (root / "n1" / ".git.made-by-a-sandboxed-command-0" / "config").is_file()


def test_untouched_repositories_are_not_reported(tmp_path: Path) -> None:
    """Repositories older than the command, a user's commit meanwhile included."""
    root = _project_with_submodule(tmp_path)
    since = time.time_ns() + 10**9  # the command "started" after all of it
    (root / "vendor/ok/y.txt").write_text("y\n", encoding="utf-8")
    assert find_planted_git([root], since_ns=since, skip=[root / ".git"]) == []
    notes = set_aside_after_run([root], since_ns=since, protected=[root / ".git"], display=root)
    assert notes == [] and (root / "sub/.git").is_file()


def _arm(repo_git_dir: Path, marker: Path) -> None:
    with (repo_git_dir / "config").open("a", encoding="utf-8") as fh:
        fh.write(f"[core]\n\tfsmonitor = touch {marker}; false\n")


async def test_the_bridges_own_git_runs_no_fsmonitor(serve_app: Any, tmp_path: Path) -> None:
    """The root's and a submodule's configuration both name an fsmonitor (as a
    cloned project's could not, but a user's might): project_status and
    magit_stage without Emacs fire neither, where plain git fires both."""
    root = _project_with_submodule(tmp_path)
    marker = tmp_path / "fired"
    _arm(root / ".git", marker)
    _arm(root / ".git" / "modules" / "sub", marker)
    assert _plain_git_fires(root, marker)  # the trap is real
    marker.unlink()
    (root / "README.md").write_text("# 项目 changed\n", encoding="utf-8")
    steps = [
        {"tool_calls": [{"name": "project_status", "arguments": {}}]},
        {"tool_calls": [{"name": "magit_stage", "arguments": {"paths": ["README.md"]}}]},
        {"text": "done"},
    ]
    async with running_rig(serve_app, root, steps) as rig:
        rig.runtime.sandbox = SandboxStatus.off("not needed here")
        sid = await rig.new_session()
        await rig.turn(sid, "status, then stage", answer=lambda _p: _allow())
        status_message = tool_messages(rig.requests[1])[0]
    assert "README.md" in status_message
    assert not marker.exists()
    staged = _git(root, "-c", "core.fsmonitor=false", "diff", "--cached", "--name-only")
    assert staged.stdout.split() == ["README.md"]


def _allow() -> dict[str, Any]:
    return {"outcome": {"outcome": "selected", "optionId": "allow_once"}}


async def test_a_granted_git_runs_no_fsmonitor(serve_app: Any, tmp_path: Path) -> None:
    """Plain git granted for the session runs outside the sandbox from its second run
    on, with the safe settings in its environment: the approved first run fires the
    repository's fsmonitor (it ran as the user would run it), the granted ones do not."""
    root = _project_with_submodule(tmp_path)
    marker = tmp_path / "fired"
    _arm(root / ".git" / "modules" / "sub", marker)
    (root / "sub" / "lib.txt").write_text("改\n", encoding="utf-8")
    status = {"tool_calls": [{"name": "run_command", "arguments": {"command": "git add -A"}}]}
    steps = [status, {"text": "one"}, status, {"text": "two"}]
    grant = {"outcome": {"outcome": "selected", "optionId": "allow_session"}}
    async with running_rig(serve_app, root, steps) as rig:
        rig.runtime.sandbox = SandboxStatus.off("granted git runs outside it anyway")
        sid = await rig.new_session()
        first = await rig.turn(sid, "stage", answer=lambda _p: grant)
        assert len(first.permission_requests) == 1
        assert marker.exists()
        marker.unlink()
        second = await rig.turn(sid, "stage again")
        assert second.permission_requests == []
        ran = tool_messages(rig.requests[-1])[-1]
    assert '"exit_code": 0' in ran
    assert not marker.exists()
