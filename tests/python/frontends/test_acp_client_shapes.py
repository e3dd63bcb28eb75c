"""``agent-shell-bridge acp`` read by a client that parses raw JSON the way editors do.

No SDK models on this side: the lines on stdout are parsed as JSON and drawn as
xenodium's agent-shell and Zed draw them. A tool card is its ``content`` (text
blocks; ``diff`` items with ``path``, ``oldText`` (null for a new file) and
``newText``) and its ``locations`` (absolute paths); ``rawInput``/``rawOutput`` are
never read. A permission dialog shows only options of kind ``allow_once``,
``allow_always`` and ``reject_once`` (what agent-shell offers) and a diff view when
the request's tool call has a diff item; a plan dialog reads ``rawInput.plan``. The
``/`` completion reads ``availableCommands[].name``, ``description`` and
``input.hint``.
"""

from __future__ import annotations

import asyncio
import difflib
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from acp_rig import agent_env
from agent_rig import make_project
from agent_shell_bridge.model.mock_script import MockScript
from agent_shell_bridge.model.mock_server import MockServer
from conftest import bridge_command

BUGGY = "def add(a, b):\n    return a - b\n"
SHOWN_KINDS = ("allow_once", "allow_always", "reject_once")

STEPS: list[dict[str, Any]] = [
    {"tool_calls": [{"name": "read_file", "arguments": {"path": "calc.py"}, "id": "a"}]},
    {"tool_calls": [{"name": "run_command", "arguments": {"command": "rm -rf ~"}, "id": "a"}]},
    {
        "tool_calls": [
            {
                "name": "propose_plan",
                "arguments": {
                    "goal": "修好 add",
                    "steps": [{"title": "改 calc.py 的减号", "files": ["calc.py"]}],
                    "risks": ["无"],
                },
                "id": "a",
            }
        ]
    },
    {
        "tool_calls": [
            {
                "name": "write_file",
                "arguments": {"path": "calc.py", "content": "def add(a, b):\n    return a + b\n"},
                "id": "a",
            }
        ]
    },
    {"tool_calls": [{"name": "task_complete", "arguments": {"summary": "改好了"}, "id": "a"}]},
]


def render_item(item: dict[str, Any]) -> str:
    """One content item as a tool card shows it; an item no client draws fails."""
    if item["type"] == "content":
        block = item["content"]
        assert block["type"] == "text" and isinstance(block["text"], str)
        return str(block["text"])
    assert item["type"] == "diff", item
    assert Path(item["path"]).is_absolute()
    old = item["oldText"]
    assert old is None or isinstance(old, str)
    assert isinstance(item["newText"], str)
    lines = difflib.unified_diff(
        (old or "").splitlines(keepends=True), item["newText"].splitlines(keepends=True)
    )
    return "".join(lines)


class ShapeClient:
    """Raw newline-delimited JSON-RPC over the agent's stdio."""

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc
        self.updates: list[dict[str, Any]] = []
        self.dialogs: list[dict[str, Any]] = []

    async def send(self, message: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write((json.dumps(message, ensure_ascii=False) + "\n").encode())
        await self.proc.stdin.drain()

    def _choose(self, params: dict[str, Any]) -> str:
        shown = [o for o in params["options"] if o["kind"] in SHOWN_KINDS]
        kinds = [o["kind"] for o in shown]
        assert "allow_once" in kinds and "reject_once" in kinds, params["options"]
        return next(o["optionId"] for o in shown if o["kind"] == "allow_once")

    async def request(self, n: int, method: str, params: dict[str, Any]) -> dict[str, Any]:
        await self.send({"jsonrpc": "2.0", "id": n, "method": method, "params": params})
        assert self.proc.stdout is not None
        while True:
            raw = await asyncio.wait_for(self.proc.stdout.readline(), 60)
            assert raw, "the agent closed stdout"
            message = json.loads(raw)
            if message.get("method") == "session/update":
                self.updates.append(message["params"]["update"])
            elif message.get("method") == "session/request_permission":
                self.dialogs.append(message["params"])
                option = self._choose(message["params"])
                await self.send(
                    {
                        "jsonrpc": "2.0",
                        "id": message["id"],
                        "result": {"outcome": {"outcome": "selected", "optionId": option}},
                    }
                )
            elif message.get("id") == n:
                assert "error" not in message, message
                return dict(message["result"])


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = make_project(tmp_path / "proj", {"calc.py": BUGGY})
    commands = root / ".agent-shell" / "commands"
    commands.mkdir(parents=True)
    (commands / "fix.md").write_text(
        "---\ndescription: Fix a bug\n---\nFix $ARGUMENTS\n", encoding="utf-8"
    )
    return root


async def test_acp_what_an_editor_parses_from_the_wire(tmp_path: Path, project: Path) -> None:
    mock = MockServer(MockScript.model_validate({"steps": STEPS}))
    await mock.start()
    proc = await asyncio.create_subprocess_exec(
        *bridge_command(),
        "acp",
        env=agent_env(tmp_path, mock.api_base),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    try:
        client = ShapeClient(proc)
        await client.request(1, "initialize", {"protocolVersion": 1})
        new = await client.request(2, "session/new", {"cwd": str(project), "mcpServers": []})
        done = await client.request(
            3,
            "session/prompt",
            {"sessionId": new["sessionId"], "prompt": [{"type": "text", "text": "修"}]},
        )
        assert done["stopReason"] == "end_turn"
        assert set(done["usage"]) >= {"inputTokens", "outputTokens", "totalTokens"}
        proc.stdin.close()  # type: ignore[union-attr]
        assert await asyncio.wait_for(proc.wait(), 30) == 0
    finally:
        if proc.returncode is None:
            proc.kill()
        await mock.stop()

    kinds = [u["sessionUpdate"] for u in client.updates]
    # The / completion: what agent-shell and Zed read of each command.
    commands = next(u for u in client.updates if u["sessionUpdate"] == "available_commands_update")
    completion = {
        c["name"]: (c["description"], c["input"]["hint"]) for c in commands["availableCommands"]
    }
    assert completion["fix"] == ("Fix a bug", "text")
    assert {"ask", "act"} <= set(completion)

    # Cards: every call that ends draws something from its content alone.
    cards: dict[str, dict[str, Any]] = {}
    for update in client.updates:
        if update["sessionUpdate"] == "tool_call":
            assert update["toolCallId"] not in cards, "a card was overwritten"
            cards[update["toolCallId"]] = dict(update)
        elif update["sessionUpdate"] == "tool_call_update":
            cards[update["toolCallId"]].update(update)
    assert len(cards) == 5  # the provider called every one of them "a"
    drawn = {}
    for card in cards.values():
        assert card["status"] in ("completed", "failed")
        body = "\n".join(render_item(i) for i in card["content"])
        assert body.strip(), card
        for location in card["locations"]:
            assert Path(location["path"]).is_absolute()
        drawn[card["title"]] = (card["status"], body)
    assert "return a - b" in drawn["read_file calc.py"][1]
    assert drawn["run_command rm -rf ~"][0] == "failed"
    assert "Refused by the safety policy" in drawn["run_command rm -rf ~"][1]
    assert "+    return a + b" in drawn["write_file calc.py"][1]
    assert "改好了" in drawn["task_complete"][1]

    # Dialogs: the plan as Markdown, then the edit with its diff view.
    plan, edit = client.dialogs
    assert "## Plan: 修好 add" in plan["toolCall"]["rawInput"]["plan"]
    assert "1. 改 calc.py 的减号" in plan["toolCall"]["rawInput"]["plan"]
    diff_items = [i for i in edit["toolCall"]["content"] if i["type"] == "diff"]
    assert len(diff_items) == 1 and "-    return a - b" in render_item(diff_items[0])
    assert edit["toolCall"]["locations"][0]["path"] == str(project / "calc.py")

    # The final words close the conversation, after the last card.
    assert kinds[-1] == "agent_message_chunk"
    assert client.updates[-1]["content"]["text"] == "Done: 改好了"
