"""`make demo`'s launcher in a terminal: the scripted demo walks the whole loop.

demo/run-demo.sh runs in a private tmux server with no API key in the environment,
so it must say plainly that the model is scripted, pre-fill the task, and need only
RET, C-c C-l, C-x o and y from the user.  Screens of each key moment go to
tests/e2e/artifacts/demo/.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from e2e_rig import (
    DEMO,
    FOLLOW_UP,
    Tmux,
    artifact_dir,
    check_first_task,
    clean_env,
    exit_status,
    memory_files,
    processes_with_marker,
    recording_exit,
    sandboxed,
    wait_for,
)

pytestmark = pytest.mark.e2e

IDLE = r"│ idle │"


def test_e2e_demo_launcher_runs_the_scripted_walkthrough(tmp_path: Path) -> None:
    """From an empty HOME: banner, pre-filled task, RET, y, memory, recall, clean exit."""
    home = tmp_path / "home"
    base = tmp_path / "demo"
    env = clean_env(home, AGENT_SHELL_DEMO_DIR=str(base))
    exit_file = tmp_path / "demo.exit"
    tmux = Tmux(env, artifact_dir("demo"))
    try:
        tmux.start("demo", tmp_path, recording_exit(exit_file, str(DEMO / "run-demo.sh")))
        screen = tmux.wait_screen("demo", r"^> Fix the failing test", 30)
        screen = tmux.wait_screen("demo", IDLE)
        assert "SCRIPTED DEMO: no API key found" in screen  # first lines of the buffer
        assert "agent-shell: SCRIPTED DEMO (mock model, no API key)" in screen  # echo area
        assert "*agent-shell: glossary*" in screen
        tmux.shot("demo", "started-with-prefilled-task")

        tmux.keys("demo", "Enter")
        boxed = sandboxed(env)
        if not boxed:  # the test run waits for a yes: C-c C-y in the shell
            tmux.wait_screen("demo", r"Waiting for you: run_test")
            tmux.keys("demo", "C-c", "C-y")
        screen = tmux.wait_screen("demo", r"Waiting for you: replace_region glossary\.py")
        assert "✗ run_command rm -rf ~" in screen
        tmux.shot("demo", "denied-rm-and-edit-waiting")
        tmux.keys("demo", "C-c", "C-l", "C-x", "o")
        tmux.wait_screen("demo", r"\*agent-shell-log: glossary\*")
        tmux.shot("demo", "action-log-before-y")
        tmux.keys("demo", "y")
        if not boxed:  # back to the shell for the second test run
            tmux.wait_screen("demo", r"Waiting for you: run_test")
            tmux.keys("demo", "C-x", "o", "C-c", "C-y")
        tmux.wait_screen("demo", r"● task_complete")
        tmux.wait_screen("demo", IDLE)
        tmux.shot("demo", "task-complete")
        root = base / "glossary"
        wait_for("the experience file", lambda: memory_files(root), 20)
        check_first_task(root, None)

        if boxed:
            tmux.keys("demo", "C-x", "o")  # back to the shell
        tmux.type("demo", FOLLOW_UP)
        tmux.keys("demo", "Enter")
        tmux.wait_screen("demo", r"end\s+of\s+the\s+script")
        tmux.shot("demo", "follow-up-recalls-memory")

        tmux.keys("demo", "C-x", "C-c")
        assert wait_for("the demo to exit", lambda: exit_status(exit_file), 20) == "0"
        screen = tmux.wait_screen("demo", r"the project \(with its \.agent-shell/")
        tmux.shot("demo", "exited")
    finally:
        tmux.kill()
    # The demo keeps its memory index beside the project, not in the user's HOME.
    assert list((base / "state" / "memory-index").iterdir())
    assert not (home / ".emacs.d" / "agent-shell-memory").exists()
    wait_for("no leftover processes", lambda: not processes_with_marker(str(home)), 15)
