"""``agent-shell-bridge run`` has no Emacs: what needs one is said to be unavailable.

A real ``run`` process against the scripted model process: the request leaves out
the tools only Emacs can run and the system prompt names them, and a call to one
anyway (a built-in Emacs Lisp tool, one without a fallback, one a user would define
in Emacs) is a failed result saying why, while the turn goes on.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import httpx

from agent_rig import make_project
from conftest import bridge_command

STEPS: list[dict[str, Any]] = [
    {"tool_calls": [{"name": "describe_symbol", "arguments": {"name": "car"}}]},
    {"tool_calls": [{"name": "buffer_overview", "arguments": {}}]},
    {"tool_calls": [{"name": "org_agenda_today", "arguments": {"days": 2}}]},
    {"tool_calls": [{"name": "read_file", "arguments": {"path": "说明.txt"}}]},
    {"text": "没有 Emacs 也完成了。Done without Emacs."},
]


def _requests(api_base: str) -> list[dict[str, Any]]:
    base = api_base.removesuffix("/v1")
    records = httpx.get(f"{base}/_mock/requests", timeout=10).json()
    return [r["body"] for r in records]


def test_run_offers_no_emacs_tool_and_refuses_a_call_to_one(
    tmp_path: Path, mock_model_process: Any
) -> None:
    root = make_project(tmp_path / "proj", {"说明.txt": "中文内容 survives\n"})
    api_base = mock_model_process(STEPS)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AGENT_SHELL_", "DEEPSEEK"))}
    env.update({"AGENT_SHELL_API_KEY": "sk-x", "AGENT_SHELL_MEMORY_DIR": str(tmp_path / "m")})
    result = subprocess.run(
        [*bridge_command(), "run", "--root", str(root), "--api-base", api_base, "看看 Emacs"],
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert "没有 Emacs 也完成了。Done without Emacs." in result.stdout
    bodies = _requests(api_base)
    first = bodies[0]
    offered = {tool["function"]["name"] for tool in first["tools"]}
    assert "buffer_overview" not in offered and "describe_symbol" not in offered
    assert {"read_file", "symbol_search", "open_file"} <= offered  # they have fallbacks
    system = first["messages"][0]["content"]
    assert "No Emacs is connected to this session" in system
    assert "buffer_overview, describe_symbol, eval_elisp" in system
    results = [m["content"] for m in bodies[-1]["messages"] if m["role"] == "tool"]
    assert len(results) == 4
    for name, framed in zip(("describe_symbol", "buffer_overview"), results, strict=False):
        assert f"{name} is unavailable here: no Emacs is connected to this session" in framed
    assert "Unknown tool 'org_agenda_today' (no Emacs is connected" in results[2]
    assert "中文内容 survives" in results[3]
    log = next((root / ".agent-shell" / "logs").glob("*.org")).read_text(encoding="utf-8")
    assert "describe_symbol is unavailable here" in log
