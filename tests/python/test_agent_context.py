"""Long sessions stay inside the model's window: token budgets, stubs, pre-flight.

The scripted model counts a request the way ``estimate_usage`` does (about four
characters a token, tools included); every request it receives must fit the window.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agent_rig import make_project, running_rig, tool_messages
from agent_shell_bridge.model.mock import estimate_usage
from agent_shell_bridge.model.mock_script import MockStep

SUMMARISE = "Summarise the earlier part"


def provider_tokens(body: dict[str, Any]) -> int:
    """The request's size as the scripted provider counts it."""
    return int(estimate_usage(body, MockStep())["prompt_tokens"])


def is_compaction(body: dict[str, Any]) -> bool:
    return SUMMARISE in str(body["messages"][0]["content"])


def summary_step(text: str = "摘要：读了 big.txt 的三段。") -> dict[str, Any]:
    return {"match": {"system_contains": SUMMARISE}, "text": text}


def read(start: int, end: int, path: str = "big.txt") -> dict[str, Any]:
    return {
        "tool_calls": [
            {"name": "read_file", "arguments": {"path": path, "start_line": start, "end_line": end}}
        ]
    }


@pytest.fixture
def project(tmp_path: Path) -> Path:
    lines = "".join(f"line {i:03d}: filler text so that each line has some weight\n" for i in range(1, 301))
    return make_project(tmp_path / "proj", {"big.txt": lines, "README.md": "# demo\n"})


async def test_rereads_in_a_small_window_never_overflow(serve_app: Any, project: Path) -> None:
    """The issue's scenario: three 100-line ranges read, then read again (14 steps)."""
    ranges = [(1, 100), (101, 200), (201, 300)]
    reads = [read(*ranges[i % 3]) for i in range(13)]
    async with running_rig(
        serve_app,
        project,
        [summary_step()] * 10 + [*reads, {"text": "done"}],
        context_window=8_000,
        max_steps=30,
    ) as rig:
        sid = await rig.new_session()
        turn = await rig.turn(sid, "read the file in three parts, twice")
        assert turn.end["stopReason"] == "end_turn", turn.end
        sizes = [provider_tokens(b) for b in rig.requests]
        print(sizes, [is_compaction(b) for b in rig.requests])
        assert max(sizes) <= 8_000
