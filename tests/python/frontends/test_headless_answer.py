"""``agent-shell-bridge run --answer``: the model's ``ask_user`` answered from the
command line, and without an answer a failed call that says how to give one."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

from agent_rig import make_project
from conftest import bridge_command

ASK = {
    "tool_calls": [
        {
            "name": "ask_user",
            "arguments": {"question": "哪个？ Which one?", "options": ["甲 A", "乙 B"]},
        }
    ]
}


def _run(tmp_path: Path, api_base: str, *extra: str) -> subprocess.CompletedProcess[str]:
    root = make_project(tmp_path / "proj", {"a.py": "x = 1\n"})
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AGENT_SHELL_", "DEEPSEEK"))}
    env.update({"AGENT_SHELL_API_KEY": "sk-x", "AGENT_SHELL_MEMORY_DIR": str(tmp_path / "m")})
    return subprocess.run(
        [*bridge_command(), "run", "--root", str(root), "--api-base", api_base, *extra],
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_run_answers_ask_user_from_the_command_line(
    tmp_path: Path, mock_model_process: Any
) -> None:
    steps = [
        ASK,
        ASK,
        {"match": {"any_message_contains": '"answer": "我的想法 mine"'}, "text": "用了你的 ok"},
    ]
    result = _run(
        tmp_path, mock_model_process(steps), "--answer", "2", "--answer", "我的想法 mine", "go"
    )
    assert result.returncode == 0, result.stderr
    assert "? 哪个？ Which one? [1. 甲 A; 2. 乙 B]" in result.stderr
    assert "answered: 2" in result.stderr and "answered: 我的想法 mine" in result.stderr
    assert "用了你的 ok" in result.stdout


def test_run_without_an_answer_fails_the_call_clearly(
    tmp_path: Path, mock_model_process: Any
) -> None:
    steps = [
        ASK,
        {"match": {"any_message_contains": "--answer TEXT"}, "text": "told to use --answer"},
    ]
    result = _run(tmp_path, mock_model_process(steps), "go")
    assert result.returncode == 0, result.stderr
    assert "failed" in result.stderr and "--answer TEXT" in result.stderr
    assert "told to use --answer" in result.stdout
