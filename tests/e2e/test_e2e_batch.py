"""The same loop in `emacs --batch`, keys through the real commands, no terminal.

tests/e2e/drive-batch.el presses the keys with `execute-kbd-macro` (M-x
agent-shell-start RET, the task, RET, C-c C-l, y); a second batch Emacs opens a new
session whose first model request must carry the experience the first one wrote.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from e2e_rig import (
    DEMO,
    EMACS,
    FOLLOW_UP,
    TASK,
    MockModel,
    check_first_task,
    check_second_session,
    clean_env,
    make_project,
    processes_with_marker,
    wait_for,
    write_init,
)

pytestmark = [pytest.mark.e2e, pytest.mark.sandbox_sensitive]

DRIVER = Path(__file__).resolve().parent / "drive-batch.el"


def run_phase(phase: str, task: str, root: Path, init: Path, env: dict[str, str]) -> str:
    task_file = init.parent / f"{phase}.task"
    task_file.write_text(task, encoding="utf-8")
    proc = subprocess.run(
        [EMACS, "--batch", "-Q", "-l", str(init), "-l", str(DRIVER)],
        cwd=root,
        env={**env, "E2E_PHASE": phase, "E2E_TASK_FILE": str(task_file)},
        capture_output=True,
        text=True,
        timeout=90,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert f"E2E: phase {phase} done" in proc.stderr
    return proc.stderr


def test_e2e_batch_fix_deny_approve_remember_and_recall(tmp_path: Path) -> None:
    """Batch Emacs drives the whole loop; a second Emacs's first request recalls it."""
    home = tmp_path / "home"
    env = clean_env(home)
    root = make_project(tmp_path, env)
    with MockModel.running(DEMO / "script.json", env) as mock:
        init = write_init(tmp_path / "init.el", mock.api_base)
        run_phase("first", TASK, root, init, env)
        summary = check_first_task(root, mock).title
        assert home.is_dir()  # `rm -rf ~` was denied, never run
        seen = len(mock.requests())
        run_phase("second", FOLLOW_UP, root, init, env)
        check_second_session(mock, seen, summary)
    wait_for("no leftover processes", lambda: not processes_with_marker(str(home)), 15)
