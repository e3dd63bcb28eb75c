"""The shared ``session/update`` fixture: one real scripted turn, as Emacs receives it.

A scripted model drives one turn through the real bridge on 127.0.0.1 (real HTTP and
SSE, a real git project, real file edits): a thought, text, a read, a plan proposed
and approved, an edit with its diff (approved by the client), a completed plan step,
usage and the end of the turn with its summary. The ``session/update`` params the
client saw are normalised (ids, times and the temp path) and written to
``tests/fixtures/updates/turn.json``; the Emacs shell tests (tests/elisp/test-shell.el)
replay that file through the real event stream, so the renderer is tested against
what the bridge really sends. This test fails when the committed file is stale;
regenerate with ``AGENT_SHELL_REGEN_FIXTURES=1``.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import pytest

from agent_rig import AgentRig, EventStream, make_project, running_rig

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "updates" / "turn.json"

SCRIPT: list[dict[str, Any]] = [
    {
        "reasoning": "先想一想：add 好像写反了，读一下 calc.py。",
        "text": "我先看看代码。",
        "chunk_size": 4,
        "tool_calls": [{"name": "read_file", "arguments": {"path": "calc.py"}, "id": "call_read"}],
    },
    {
        "text": "计划如下。",
        "tool_calls": [
            {
                "name": "propose_plan",
                "arguments": {
                    "goal": "修好 add",
                    "steps": [
                        {
                            "title": "改 calc.py 里的 add",
                            "files": ["calc.py"],
                            "expected": "add 返回 a + b",
                            "verify": None,
                        }
                    ],
                    "risks": ["无"],
                },
                "id": "call_plan",
            }
        ],
    },
    {
        "tool_calls": [
            {
                "name": "write_file",
                "arguments": {"path": "calc.py", "content": "def add(a, b):\n    return a + b\n"},
                "id": "call_write",
            }
        ]
    },
    {"tool_calls": [{"name": "complete_step", "arguments": {"step": 1}, "id": "call_step"}]},
    {
        "text": "修好了：add 现在返回 a + b。",
        "chunk_size": 3,
        "tool_calls": [
            {
                "name": "task_complete",
                "arguments": {"summary": "修好了：add 现在返回 a + b"},
                "id": "call_done",
            }
        ],
    },
    {"text": "完成。"},
]
# Fixed counts: estimated ones would follow the length of the temp path in the prompt.
for _n, _step in enumerate(SCRIPT, start=1):
    _step["usage"] = {
        "prompt_tokens": 1000 * _n,
        "completion_tokens": 10 * _n,
        "total_tokens": 1010 * _n,
        "prompt_cache_miss_tokens": 1000 * _n,
    }


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return make_project(tmp_path / "proj", {"calc.py": "def add(a, b):\n    return a - b\n"})


def _approve_plans(rig: AgentRig) -> Any:
    async def on_message(message: dict[str, Any], _stream: EventStream) -> None:
        if message.get("method") == "session/request_plan":
            reply = {"jsonrpc": "2.0", "id": message["id"], "result": {"outcome": "approved"}}
            assert (await rig.client.post_rpc(reply)).status_code == 202

    return on_message


_VOLATILE_NUMBERS = {"duration_ms", "durationMs", "costUsd"}


def normalise(value: Any, root: str, ids: dict[str, str]) -> Any:
    """Replace what differs between runs (temp root, random ids, times) by stable text."""
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for key, item in value.items():
            if key in _VOLATILE_NUMBERS and isinstance(item, int | float):
                out[key] = 0
            elif key in ("sessionId", "turnId", "planId", "log_ref") and isinstance(item, str):
                out[key] = ids.setdefault(item, f"{key}-{len(ids) + 1}")
            else:
                out[key] = normalise(item, root, ids)
        return out
    if isinstance(value, list):
        return [normalise(item, root, ids) for item in value]
    if isinstance(value, str):
        return value.replace(root, "{root}")
    return value


async def record(serve_app: Any, project: Path) -> list[dict[str, Any]]:
    async with running_rig(serve_app, project, SCRIPT) as rig:
        sid = await rig.new_session()
        turn = await rig.turn(sid, "修一下 add", on_message=_approve_plans(rig))
    ids: dict[str, str] = {}
    params = [
        m["params"]
        for m in turn.messages
        if m.get("method") == "session/update" and m["params"].get("sessionId") == sid
    ]
    return join_frames([normalise(p, str(project.resolve()), ids) for p in params])


_CHUNKS = ("agent_message_chunk", "agent_thought_chunk")


def join_frames(updates: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Join consecutive text frames of one kind into one update.

    How the bridge cuts a stream into frames depends on timing (a frame every 16 ms),
    so the fixture keeps what a client renders: each run of text whole, in order.
    """
    out: list[dict[str, Any]] = []
    for item in updates:
        update = item["update"]
        last = out[-1]["update"] if out else None
        if (
            last is not None
            and update.get("sessionUpdate") in _CHUNKS
            and last.get("sessionUpdate") == update.get("sessionUpdate")
            and not update.get("refusal")
            and not last.get("refusal")
        ):
            last["content"] = {
                **last["content"],
                "text": last["content"]["text"] + update["content"]["text"],
            }
            continue
        out.append({**item, "update": dict(update)})
    return out


def encode(updates: list[dict[str, Any]]) -> bytes:
    return (json.dumps(updates, ensure_ascii=False, indent=1) + "\n").encode("utf-8")


async def test_update_fixture_is_current(serve_app: Any, project: Path) -> None:
    """The committed fixture is exactly what the bridge sends for the scripted turn."""
    updates = await record(serve_app, project)
    kinds = {u["update"]["sessionUpdate"] for u in updates}
    assert kinds >= {
        "agent_message_chunk",
        "agent_thought_chunk",
        "tool_call",
        "tool_call_update",
        "plan",
        "usage",
        "turn_end",
    }, kinds
    diffs = [
        c
        for u in updates
        for c in u["update"].get("content") or []
        if isinstance(c, dict) and c.get("type") == "diff"
    ]
    assert diffs and "+    return a + b" in diffs[0]["diff"]
    assert updates[-1]["update"]["sessionUpdate"] == "turn_end"
    assert not any(re.search(r"/tmp/|pytest-of", json.dumps(u)) for u in updates)
    data = encode(updates)
    if os.environ.get("AGENT_SHELL_REGEN_FIXTURES"):
        FIXTURE.parent.mkdir(parents=True, exist_ok=True)
        FIXTURE.write_bytes(data)
    assert FIXTURE.exists(), "missing: run with AGENT_SHELL_REGEN_FIXTURES=1"
    assert FIXTURE.read_bytes() == data, "stale: regenerate with AGENT_SHELL_REGEN_FIXTURES=1"
