"""What compaction tests script and measure: reads, the summary step, request sizes.

The scripted provider recognises a compaction request by the summariser's system
prompt; sizes are counted the way the provider counts them, so a test's "over the
window" is the provider's, not an estimate of ours.
"""

from __future__ import annotations

from typing import Any

from agent_shell_bridge.model.mock import estimate_usage
from agent_shell_bridge.model.mock_script import MockStep

SUMMARISE = "Summarise the earlier part"


def provider_tokens(body: dict[str, Any]) -> int:
    """The request's size as the scripted provider counts it."""
    return int(estimate_usage(body, MockStep())["prompt_tokens"])


def is_compaction(body: dict[str, Any]) -> bool:
    """Whether the request is the bridge asking the model for a summary."""
    return SUMMARISE in str(body["messages"][0]["content"])


def summary_step(text: str = "摘要：读了 big.txt 的几段。") -> dict[str, Any]:
    """The scripted answer to a compaction request."""
    return {"match": {"system_contains": SUMMARISE}, "text": text}


def read(start: int, end: int, path: str = "big.txt") -> dict[str, Any]:
    """A scripted step reading lines ``start``..``end`` of ``path``."""
    args = {"path": path, "start_line": start, "end_line": end}
    return {"tool_calls": [{"name": "read_file", "arguments": args}]}
