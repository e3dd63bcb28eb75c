"""Handing the agent context at a terminal: `emacs -nw` in a private tmux server.

Select lines of a file, M-x agent-shell-send-region, RET: the scripted model's
request carries those lines with their path and range. Then a failing `make test`
in a real *compilation* buffer, `@*comp` completed with TAB in the shell's input,
RET: the model gets the compilation buffer as an attachment.
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
    wait_for,
    write_init,
)

pytestmark = pytest.mark.e2e

IDLE = r"│ idle │"
REGION_NAME = '[ATTACHMENT name="glossary.py:2-3" kind=region'


def _script(path: Path) -> Path:
    steps = [
        {"match": {"last_user_contains": "@glossary.py:2-3"}, "text": "看到了两行 seen."},
        {"match": {"last_user_contains": "@*compilation*"}, "text": "测试失败了 it failed."},
    ]
    path.write_text(json.dumps({"steps": steps}, ensure_ascii=False), encoding="utf-8")
    return path


def _request_with(mock: MockModel, marker: str) -> str | None:
    for body in mock.requests():
        text = last_user_text(body)
        if marker in text:
            return text
    return None


def test_e2e_send_region_and_complete_a_compilation_buffer(tmp_path: Path) -> None:
    home = tmp_path / "home"
    env = clean_env(home)
    root = make_project(tmp_path, env)
    lines = (root / "glossary.py").read_text(encoding="utf-8").splitlines(keepends=True)
    init = write_init(tmp_path / "init.el", "http://placeholder.invalid/v1")
    tmux = Tmux(env, artifact_dir("tmux-context"))
    exit_file = tmp_path / "emacs.exit"
    try:
        with MockModel.running(_script(tmp_path / "script.json"), env) as mock:
            write_init(init, mock.api_base)
            tmux.start("ctx", root, emacs_command(exit_file, "-nw", "-Q", "-l", str(init)))
            tmux.wait_screen("ctx", r"\*scratch\*")
            # Lines 2-3 of glossary.py, selected with the keyboard.
            tmux.keys("ctx", "C-x", "C-f")
            tmux.type("ctx", "glossary.py")
            tmux.keys("ctx", "Enter")
            tmux.wait_screen("ctx", r"glossary\.py")
            tmux.keys("ctx", "M-<", "C-n", "C-Space", "C-n", "C-n")
            tmux.keys("ctx", "M-x")
            tmux.type("ctx", "agent-shell-send-region")
            tmux.keys("ctx", "Enter")
            # No session yet: the command started one, the mention waits in its input.
            tmux.wait_screen("ctx", r"\*agent-shell: glossary\*")
            tmux.wait_screen("ctx", IDLE)
            tmux.wait_screen("ctx", r"> @glossary\.py:2-3")
            tmux.shot("ctx", "mention-in-input")
            tmux.keys("ctx", "Enter")
            user = wait_for("the region's request", lambda: _request_with(mock, REGION_NAME), 30)
            assert user.startswith("@glossary.py:2-3\n\n")
            assert f"lines=2-3 chars={len(''.join(lines[1:3]))}]\n{''.join(lines[1:3])}" in user
            screen = tmux.wait_screen("ctx", r"看到了两行")
            assert "@ glossary.py:2-3 (2 lines" in screen
            tmux.shot("ctx", "region-sent")

            # A failing make in *compilation*, then @*comp TAB in the input.
            tmux.keys("ctx", "M-x")
            tmux.type("ctx", "compile")
            tmux.keys("ctx", "Enter")
            tmux.keys("ctx", "C-a", "C-k")
            tmux.type("ctx", "make test")
            tmux.keys("ctx", "Enter")
            tmux.wait_screen("ctx", r"Compilation exited abnormally")
            tmux.keys("ctx", "C-x", "b")
            tmux.type("ctx", "*agent-shell: glossary*")
            tmux.keys("ctx", "Enter")
            tmux.type("ctx", "why did @*comp")
            tmux.keys("ctx", "Tab")
            tmux.wait_screen("ctx", r"why did @\*compilation\*")
            tmux.type("ctx", " fail?")
            tmux.keys("ctx", "Enter")
            marker = '[ATTACHMENT name="*compilation*" kind=buffer'
            user = wait_for("the compilation's request", lambda: _request_with(mock, marker), 30)
            assert "Compilation exited abnormally" in user
            tmux.wait_screen("ctx", r"测试失败了")
            tmux.shot("ctx", "compilation-sent")
            tmux.keys("ctx", "C-x", "C-c")
            status = wait_for("Emacs to exit", lambda: exit_status(exit_file), 20)
            assert status == "0", tmux.shot("ctx", "exit")
    finally:
        tmux.kill()
