"""The bridge's tools that end or page through a turn's work: finishing, a review's
verdict, and paging through a truncated output."""

from __future__ import annotations

import asyncio

from ....tools.catalogue import (
    RequestLogViewArgs,
    ReviewVerdictArgs,
    TaskCompleteArgs,
)
from ....tools.results import ToolResult
from .base import Run

__all__ = ["request_log_view", "review_verdict", "task_complete"]


async def task_complete(run: Run, args: TaskCompleteArgs) -> ToolResult:
    run.turn.completed = args.summary
    return ToolResult({"ok": True})


async def review_verdict(run: Run, args: ReviewVerdictArgs) -> ToolResult:
    run.turn.verdict = {"verdict": args.verdict, "comments": args.comments}
    return ToolResult({"ok": True, "verdict": args.verdict})


async def request_log_view(run: Run, args: RequestLogViewArgs) -> ToolResult:
    outputs = run.live.outputs
    view = await asyncio.to_thread(outputs.view, args.ref, args.offset or 0, args.limit or 200)
    return ToolResult(view)
