"""A user at a terminal: `emacs -nw` in a private tmux server, keys typed one by one.

The real package, the real bridge it starts, the bridge's scripted mock model (the
demo's own script) and a temporary git copy of the demo project.  Screens of the key
moments go to tests/e2e/artifacts/ for inspection.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from e2e_rig import (
    DEMO,
    FOLLOW_UP,
    TASK,
    MockModel,
    Tmux,
    artifact_dir,
    check_first_task,
    check_second_session,
    clean_env,
    emacs_command,
    exit_status,
    make_project,
    memory_files,
    processes_with_marker,
    sandboxed,
    wait_for,
    write_init,
)

pytestmark = pytest.mark.e2e

IDLE = r"│ idle │"


def start_shell(tmux: Tmux, window: str) -> None:
    """M-x agent-shell-start RET, as typed, then wait for the session."""
    tmux.wait_screen(window, r"\*scratch\*")
    tmux.keys(window, "M-x")
    tmux.type(window, "agent-shell-start")
    tmux.keys(window, "Enter")
    tmux.wait_screen(window, r"\*agent-shell: glossary\*")
    tmux.wait_screen(window, IDLE)


def quit_emacs(tmux: Tmux, window: str, exit_file: Path) -> None:
    """C-x C-c; Emacs must exit with status 0 without asking anything."""
    tmux.keys(window, "C-x", "C-c")

    status = wait_for("Emacs to exit", lambda: exit_status(exit_file), 20)
    assert status == "0", tmux.shot(window, f"{window}-exit")


def test_e2e_tmux_fix_deny_approve_remember_and_recall(tmp_path: Path) -> None:
    """The whole loop typed in a terminal, then a second Emacs recalls the experience."""
    home = tmp_path / "home"
    env = clean_env(home)
    root = make_project(tmp_path, env)
    init = write_init(tmp_path / "init.el", "http://placeholder.invalid/v1")
    tmux = Tmux(env, artifact_dir("tmux"))
    exits = [tmp_path / "first.exit", tmp_path / "second.exit"]
    try:
        with MockModel.running(DEMO / "script.json", env) as mock:
            write_init(init, mock.api_base)

            # First Emacs: the task, a denied command, an approval, a memory.
            tmux.start("first", root, emacs_command(exits[0], "-nw", "-Q", "-l", str(init)))
            start_shell(tmux, "first")
            tmux.shot("first", "session-started")
            tmux.type("first", TASK)
            tmux.keys("first", "Enter")
            if not sandboxed(env):  # the test run waits for a yes: C-c C-y in the shell
                tmux.wait_screen("first", r"Waiting for you: run_test")
                tmux.keys("first", "C-c", "C-y")
            screen = tmux.wait_screen("first", r"Waiting for you: replace_region glossary\.py")
            assert "✗ run_command rm -rf ~" in screen  # denied before it could run
            assert "✗ run_test" in screen  # the first run failed
            tmux.shot("first", "edit-waits-for-approval")
            tmux.keys("first", "C-c", "C-l")
            tmux.wait_screen("first", r"\*agent-shell-log: glossary\*")
            tmux.keys("first", "C-x", "o", "y")
            if not sandboxed(env):  # back to the shell for the second test run
                tmux.wait_screen("first", r"Waiting for you: run_test")
                tmux.keys("first", "C-x", "o", "C-c", "C-y")
            tmux.wait_screen("first", r"● task_complete")
            screen = tmux.wait_screen("first", IDLE)
            assert "全部通过" in screen
            tmux.shot("first", "task-complete")
            wait_for("the experience file", lambda: memory_files(root), 20)
            summary = check_first_task(root, mock).title
            assert home.is_dir() and (home / ".emacs.d").is_dir()  # `rm -rf ~` never ran

            # The memory index lives in the private HOME's user-emacs-directory.
            assert list((home / ".emacs.d" / "agent-shell-memory").iterdir())
            seen = len(mock.requests())
            quit_emacs(tmux, "first", exits[0])

            # Second Emacs, new session: its first request carries the summary.
            tmux.start("second", root, emacs_command(exits[1], "-nw", "-Q", "-l", str(init)))
            start_shell(tmux, "second")
            tmux.type("second", FOLLOW_UP)
            tmux.keys("second", "Enter")
            screen = tmux.wait_screen("second", r"end\s+of\s+the\s+script")
            assert "ensure_ascii=False" in screen
            tmux.shot("second", "second-session-recalls")
            check_second_session(mock, seen, summary)
            quit_emacs(tmux, "second", exits[1])
    finally:
        tmux.kill()
    # Nothing outlives the test: every bridge went with its Emacs.
    wait_for("no leftover processes", lambda: not processes_with_marker(str(home)), 15)
