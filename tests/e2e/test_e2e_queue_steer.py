"""Queue and steer while a turn runs, typed in a terminal.

Real Emacs in tmux, the real bridge, a scripted model on loopback. While a command
waits for the user's yes, a prompt typed with RET is queued (dimmed above the prompt,
"1 queued" in the header) and M-RET steers; after the yes the steer is the last user
message of the next request, and the queued prompt runs as its own turn. A steer
typed while the final answer streams makes one more request. C-c C-k cancels a turn
and puts the queued prompts back into the input.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from e2e_rig import (
    MockModel,
    Tmux,
    artifact_dir,
    clean_env,
    emacs_command,
    exit_status,
    last_user_text,
    make_project,
    processes_with_marker,
    wait_for,
    write_init,
)

pytestmark = pytest.mark.e2e

IDLE = r"│ idle │"

STEPS = [
    {
        "match": {"last_user_contains": "e2e-first"},
        "tool_calls": [{"name": "run_command", "arguments": {"command": "sleep 1"}}],
    },
    {"match": {"last_user_contains": "e2e-steer 转向"}, "text": "已转向 steered answer."},
    {"match": {"last_user_contains": "e2e-second"}, "text": "第二个回答 second answer."},
    {
        "match": {"last_user_contains": "e2e-third"},
        "text": "慢慢地回答" * 12,
        "chunk_size": 1,
        "delay_ms": 60,
    },
    {"match": {"last_user_contains": "e2e-late 晚"}, "text": "晚到的转向 late steer answered."},
    {"match": {"last_user_contains": "e2e-hold"}, "text": "never", "delay_ms": 20000},
]


def test_e2e_queue_steer_and_cancel_in_a_terminal(tmp_path: Path) -> None:
    home = tmp_path / "home"
    env = clean_env(home)
    root = make_project(tmp_path, env)
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"steps": STEPS}, ensure_ascii=False), encoding="utf-8")
    init = write_init(tmp_path / "init.el", "http://placeholder.invalid/v1")
    tmux = Tmux(env, artifact_dir("queue-steer"))
    exit_file = tmp_path / "emacs.exit"
    try:
        with MockModel.running(script, env) as mock:
            write_init(init, mock.api_base)
            tmux.start("w", root, emacs_command(exit_file, "-nw", "-Q", "-l", str(init)))
            tmux.wait_screen("w", r"\*scratch\*")
            tmux.keys("w", "M-x")
            tmux.type("w", "agent-shell-start")
            tmux.keys("w", "Enter")
            tmux.wait_screen("w", IDLE, 30)

            # A command waits for the yes: RET queues, M-RET steers.
            tmux.type("w", "e2e-first run it")
            tmux.keys("w", "Enter")
            tmux.wait_screen("w", r"Waiting for you: run_command sleep 1", 30)
            tmux.type("w", "e2e-second 第二")
            tmux.keys("w", "Enter")
            screen = tmux.wait_screen("w", r"queued 1: e2e-second 第二")
            assert "│ 1 queued" in screen
            tmux.type("w", "e2e-steer 转向")
            tmux.keys("w", "M-Enter")
            tmux.wait_screen("w", r"> \(steer\) e2e-steer 转向")
            tmux.shot("w", "queued-and-steered")
            tmux.keys("w", "C-c", "C-y")
            tmux.wait_screen("w", r"已转向 steered answer\.", 30)
            screen = tmux.wait_screen("w", r"第二个回答 second answer\.", 30)
            assert "queued 1:" not in screen
            tmux.wait_screen("w", IDLE)
            bodies = mock.requests()
            assert last_user_text(bodies[1]) == "e2e-steer 转向"
            assert last_user_text(bodies[2]) == "e2e-second 第二"

            # A steer while the final answer streams: one more request.
            tmux.type("w", "e2e-third go")
            tmux.keys("w", "Enter")
            tmux.wait_screen("w", r"慢慢", 30)
            tmux.type("w", "e2e-late 晚")
            tmux.keys("w", "M-Enter")
            tmux.wait_screen("w", r"晚到的转向 late steer answered\.", 30)
            tmux.wait_screen("w", IDLE)
            bodies = mock.requests()
            assert len(bodies) == 5 and last_user_text(bodies[4]) == "e2e-late 晚"

            # C-c C-k: the turn is cancelled, the queue is back in the input.
            tmux.type("w", "e2e-hold on")
            tmux.keys("w", "Enter")
            tmux.wait_screen("w", r"│ thinking │", 30)
            for text in ("e2e-q1 一", "e2e-q2 二"):
                tmux.type("w", text)
                tmux.keys("w", "Enter")
            tmux.wait_screen("w", r"│ 2 queued")
            tmux.keys("w", "C-c", "C-k")
            screen = tmux.wait_screen("w", r"\[turn ended: cancelled\]", 30)
            screen = tmux.wait_screen("w", r"> e2e-q1 一")
            assert "e2e-q2 二" in screen and "queued" not in screen
            tmux.shot("w", "cancelled-queue-in-input")
            assert len(mock.requests()) == 6  # the queued prompts were not sent

            tmux.keys("w", "C-x", "C-c")
            status = wait_for("Emacs to exit", lambda: exit_status(exit_file), 20)
            assert status == "0", tmux.shot("w", "exit")
    finally:
        tmux.kill()
    wait_for("no leftover processes", lambda: not processes_with_marker(str(home)), 15)
