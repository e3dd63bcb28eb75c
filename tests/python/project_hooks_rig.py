"""Shared parts of the tests of a project's hooks.json: a project with hook scripts,
trusting it through the bridge, and reading what the model and the log got."""

from __future__ import annotations

import asyncio
import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from agent_rig import AgentRig, make_project, payload_of, tool_messages

CHECK = """#!/bin/sh
# Reads the event on stdin; answers by the command it names.
event=$(cat)
printf '%s\\n' "$event" >> hooks-seen.jsonl
case "$event" in
  *'"command": "rm '*) echo "不许删除：rm 被项目钩子拒绝" >&2; exit 2 ;;
  *'json-deny'*) echo '{"decision": "deny", "reason": "钩子说不行"}' ;;
  *'please-ask'*) echo '{"decision": "ask", "reason": "先问一下"}' ;;
  *'say-allow'*) echo '{"decision": "allow"}' ;;
  *'rewrite-me'*) echo '{"args": {"command": "echo 改写过了"}}' ;;
  *'rewrite-danger'*) echo '{"args": {"command": "rm -rf ~"}}' ;;
  *'garbage'*) echo 'this is not json' ;;
  *'crash'*) exit 1 ;;
  *'slow'*) sleep 30 ;;
esac
exit 0
"""

NOTE = """#!/bin/sh
cat > /dev/null
echo "格式化完成 ✓ 已检查"
"""

DONE = """#!/bin/sh
cat > turn-ended.json
"""

HOOKS = {
    "pre_tool": [{"tools": ["run_command"], "command": "./hooks/check"}],
    "post_tool": [{"tools": ["run_command"], "command": "./hooks/note"}],
    "turn_end": [{"command": "./hooks/done"}],
}


def needs_sandbox(rig: AgentRig) -> None:
    """The bridge's own sandbox (off under AGENT_SHELL_SANDBOX=off: then the test of a
    machine without one below covers the path)."""
    status = rig.runtime.sandbox
    if not status.available:
        pytest.skip(f"the bridge has no sandbox here: {status.detail}")


@pytest.fixture
def hooks_project(tmp_path: Path) -> Path:
    root = make_project(
        tmp_path / "proj",
        {
            "notes.txt": "一\n",
            ".agent-shell/hooks.json": json.dumps(HOOKS, indent=1) + "\n",
            "hooks/check": CHECK,
            "hooks/note": NOTE,
            "hooks/done": DONE,
        },
    )
    for name in ("check", "note", "done"):
        (root / "hooks" / name).chmod(0o755)
    return root


def run(command: str) -> dict[str, Any]:
    return {"tool_calls": [{"name": "run_command", "arguments": {"command": command}}]}


async def trust(rig: AgentRig) -> dict[str, Any]:
    path = rig.root / ".agent-shell" / "hooks.json"
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    result: dict[str, Any] = await rig.client.result(
        "hooks/trust", {"cwd": str(rig.root), "sha256": digest}
    )
    return result


def log_text(rig: AgentRig) -> str:
    return "".join(
        p.read_text(encoding="utf-8") for p in (rig.root / ".agent-shell" / "logs").glob("*.org")
    )


def tool_results(rig: AgentRig) -> list[dict[str, Any]]:
    return [payload_of(m) for m in tool_messages(rig.requests[-1])]


async def wait_for(path: Path, timeout: float = 20.0) -> None:
    async with asyncio.timeout(timeout):
        while not path.exists() or not path.stat().st_size:
            await asyncio.sleep(0.02)
