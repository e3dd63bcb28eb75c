"""``agent-shell-bridge run``: the headless client, as a real process against the mock model."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from agent_rig import make_project
from conftest import bridge_command

# Run again with the sandbox forced off (make test): its path depends on the sandbox.
pytestmark = pytest.mark.sandbox_sensitive

FIX_STEPS: list[dict[str, Any]] = [
    {"tool_calls": [{"name": "read_file", "arguments": {"path": "calc.py"}}]},
    {
        "tool_calls": [
            {
                "name": "replace_region",
                "arguments": {
                    "path": "calc.py",
                    "start_line": 2,
                    "end_line": 2,
                    "new_text": "    return a + b",
                },
            }
        ]
    },
    {"text": "已修复。Fixed."},
]


def _env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AGENT_SHELL_", "DEEPSEEK"))}
    env.update(
        {
            "AGENT_SHELL_API_KEY": "sk-headless-secret",
            "AGENT_SHELL_MEMORY_DIR": str(tmp_path / "memory"),
            "PYTHONUNBUFFERED": "1",
        }
    )
    return env


@pytest.fixture
def mock_model(mock_model_process: Any) -> Any:
    """Factory starting `agent-shell-bridge mock-model` with the given steps."""
    return mock_model_process


def _run(
    tmp_path: Path, root: Path, api_base: str, *extra: str
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*bridge_command(), "run", "--root", str(root), "--api-base", api_base, *extra],
        env=_env(tmp_path),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return make_project(tmp_path / "proj", {"calc.py": "def add(a, b):\n    return a - b\n"})


def test_run_with_approved_writes_edits_and_exits_zero(
    tmp_path: Path, project: Path, mock_model: Any
) -> None:
    result = _run(tmp_path, project, mock_model(FIX_STEPS), "--approve", "writes", "修复 add")
    assert result.returncode == 0, result.stderr
    assert "已修复。Fixed." in result.stdout
    assert "• read_file calc.py" in result.stderr
    assert "• replace_region calc.py" in result.stderr
    assert (project / "calc.py").read_text() == "def add(a, b):\n    return a + b\n"
    assert "sk-headless-secret" not in result.stdout + result.stderr


def test_run_without_approval_rejects_writes_in_scripts(
    tmp_path: Path, project: Path, mock_model: Any
) -> None:
    """No TTY and no --approve: risky steps are rejected, the file is untouched."""
    result = _run(tmp_path, project, mock_model(FIX_STEPS), "fix it")
    assert result.returncode == 0, result.stderr
    assert (project / "calc.py").read_text() == "def add(a, b):\n    return a - b\n"
    log = next((project / ".agent-shell" / "logs").glob("*.org")).read_text(encoding="utf-8")
    assert "REJECTED" in log


def test_run_reports_a_provider_error_and_exits_non_zero(
    tmp_path: Path, project: Path, mock_model: Any
) -> None:
    api_base = mock_model([{"fault": "400", "error_message": "invalid api key"}])
    result = _run(tmp_path, project, api_base, "anything")
    assert result.returncode == 1
    assert "error" in result.stderr
    assert "invalid api key" in result.stderr
    assert "Traceback" not in result.stderr


def test_run_json_prints_protocol_messages(tmp_path: Path, project: Path, mock_model: Any) -> None:
    result = _run(
        tmp_path, project, mock_model([{"text": "只读回答"}]), "--json", "--mode", "ask", "explain"
    )
    assert result.returncode == 0, result.stderr
    messages = [json.loads(line) for line in result.stdout.splitlines()]
    kinds = [
        m["params"]["update"]["sessionUpdate"]
        for m in messages
        if m.get("method") == "session/update"
    ]
    assert kinds[-1] == "turn_end"
    assert "agent_message_chunk" in kinds


def test_run_rejects_a_missing_root(tmp_path: Path, mock_model: Any) -> None:
    result = _run(tmp_path, tmp_path / "nope", mock_model([{"text": "x"}]), "task")
    assert result.returncode == 2
    assert "not a directory" in result.stderr


def test_run_expands_a_project_command(tmp_path: Path, mock_model: Any) -> None:
    project = make_project(
        tmp_path / "cmdproj",
        {".agent-shell/commands/say.md": "---\ndescription: d\n---\nSay $ARGUMENTS please\n"},
    )
    steps = [{"match": {"last_user_contains": "Say 中文 words please"}, "text": "matched-ok"}]
    result = _run(tmp_path, project, mock_model(steps), "/say 中文 words")
    assert result.returncode == 0, result.stderr
    assert "matched-ok" in result.stdout


def test_run_refuses_an_unknown_command_clearly(
    tmp_path: Path, project: Path, mock_model: Any
) -> None:
    result = _run(tmp_path, project, mock_model([{"text": "never"}]), "/nosuch 中文")
    assert result.returncode == 2
    assert "agent-shell: unknown command /nosuch" in result.stderr
    assert "Traceback" not in result.stderr
    assert "never" not in result.stdout
