"""One price formula: the header line's cost and the action log's summary agree.

DeepSeek reports cache hits as ``prompt_cache_hit_tokens``, OpenAI as
``prompt_tokens_details.cached_tokens``; both must be priced as cached input in
the session's running cost (the ``usage`` update the header line shows) and in
the task's summary drawer.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from agent_rig import make_project, running_rig

PRICES = (2.0, 8.0, 0.5)


@pytest.mark.parametrize(
    "usage",
    [
        {"prompt_tokens": 10_000, "completion_tokens": 500, "prompt_cache_hit_tokens": 6_000},
        {
            "prompt_tokens": 10_000,
            "completion_tokens": 500,
            "prompt_tokens_details": {"cached_tokens": 6_000},
        },
    ],
    ids=["deepseek", "openai"],
)
async def test_header_cost_and_log_summary_agree(
    serve_app: Any, tmp_path: Path, usage: dict[str, Any]
) -> None:
    project = make_project(tmp_path / "proj", {"a.py": "x = 1\n"})
    async with running_rig(
        serve_app, project, [{"text": "ok", "usage": usage}], prices=PRICES
    ) as rig:
        sid = await rig.new_session()
        turn = await rig.turn(sid, "hello")
    header = turn.updates("usage")[-1]["costUsd"]
    summary = next(e for e in turn.log_entries() if e["title"].startswith("Summary:"))
    expected = (4_000 * 2.0 + 6_000 * 0.5 + 500 * 8.0) / 1_000_000
    assert header == pytest.approx(expected)
    assert summary["properties"]["COST"] == pytest.approx(expected)
    assert summary["properties"]["TOKENS_CACHED"] == 6_000
