"""The first minutes, typed in a terminal: a prompt typed at once, a killed bridge.

A user runs ``M-x agent-shell-start`` and types the task straight away, before the
session is ready; it must be queued and run, not refused.  Later the bridge is
killed with SIGKILL: the shell says so at once, and ``C-c C-r`` brings the same
session back with the transcript still on screen.  Real Emacs in tmux, the real
bridge, the demo's scripted model on loopback.
"""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest
from e2e_rig import (
    DEMO,
    TASK,
    MockModel,
    Tmux,
    artifact_dir,
    clean_env,
    emacs_command,
    exit_status,
    make_project,
    processes_with_marker,
    wait_for,
    write_init,
)

pytestmark = pytest.mark.e2e

IDLE = r"│ idle │"


def bridge_pid(marker: str) -> int:
    """The pid of the bridge server (``agent-shell-bridge serve``) of this test."""
    for pid in processes_with_marker(marker):
        try:
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"serve" in argv and b"--port" in argv:
            return pid
    raise AssertionError("no bridge process found")


def test_e2e_prompt_typed_at_once_is_queued_and_restart_keeps_transcript(
    tmp_path: Path,
) -> None:
    home = tmp_path / "home"
    env = clean_env(home)
    root = make_project(tmp_path, env)
    init = write_init(tmp_path / "init.el", "http://placeholder.invalid/v1")
    tmux = Tmux(env, artifact_dir("first-minutes"))
    exit_file = tmp_path / "emacs.exit"
    try:
        with MockModel.running(DEMO / "script.json", env) as mock:
            write_init(init, mock.api_base)
            tmux.start("w", root, emacs_command(exit_file, "-nw", "-Q", "-l", str(init)))
            tmux.wait_screen("w", r"\*scratch\*")

            # M-x agent-shell-start RET and the task, typed without waiting: the keys
            # arrive while the bridge is still starting.
            tmux.keys("w", "M-x")
            tmux.type("w", "agent-shell-start")
            tmux.keys("w", "Enter")
            tmux.type("w", TASK)
            tmux.keys("w", "Enter")
            screen = tmux.wait_screen("w", r"\(sent\)", 30)
            assert "no session yet" not in screen
            tmux.shot("w", "queued-prompt-sent")
            screen = tmux.wait_screen("w", r"Waiting for you: replace_region glossary\.py", 60)
            assert "智能体" in screen  # the queued prompt went out intact
            tmux.keys("w", "C-c", "C-y")
            tmux.wait_screen("w", r"● task_complete", 60)
            tmux.wait_screen("w", IDLE)
            assert len(mock.requests()) > 1

            # The bridge is killed: the shell says so at once, nothing is erased.
            tmux.type("w", "草稿 not sent yet")
            os.kill(bridge_pid(str(home)), signal.SIGKILL)
            screen = tmux.wait_screen("w", r"│ bridge stopped │")
            assert "C-c C-r restarts it" in screen
            tmux.shot("w", "bridge-killed")

            # C-c C-r: the same session again, transcript and input kept.
            tmux.keys("w", "C-c", "C-r")
            screen = tmux.wait_screen("w", r"Session \S+ is back", 30)
            screen = tmux.wait_screen("w", IDLE)
            assert "task_complete" in screen
            assert "草稿 not sent yet" in screen
            tmux.shot("w", "restarted")

            tmux.keys("w", "C-x", "C-c")
            status = wait_for("Emacs to exit", lambda: exit_status(exit_file), 20)
            assert status == "0", tmux.shot("w", "exit")
    finally:
        tmux.kill()
    wait_for("no leftover processes", lambda: not processes_with_marker(str(home)), 15)
