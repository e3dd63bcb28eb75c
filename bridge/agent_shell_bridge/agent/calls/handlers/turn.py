"""The bridge's tools that act on the turn itself: finishing, verdicts, plans, roles,
and paging through a truncated output."""

from __future__ import annotations

import asyncio

from ....tools.catalogue import (
    CompleteStepArgs,
    DelegateArgs,
    ProposePlanArgs,
    RequestLogViewArgs,
    ReviewVerdictArgs,
    TaskCompleteArgs,
)
from ....tools.results import ToolResult
from ...turn import plan
from ...turn.delegate import run_delegate
from .base import Run

__all__ = [
    "complete_step",
    "delegate",
    "propose_plan",
    "request_log_view",
    "review_verdict",
    "task_complete",
]


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


async def delegate(run: Run, args: DelegateArgs) -> ToolResult:
    return ToolResult(await run_delegate(run.executor, args, run.turn))


async def propose_plan(run: Run, args: ProposePlanArgs) -> ToolResult:
    return await plan.propose_plan(run.live, run.call, args, run.turn)


async def complete_step(run: Run, args: CompleteStepArgs) -> ToolResult:
    # The step's verification goes through the executor, like any run_test call.
    return await plan.complete_step(run.live, run.call, args, run.turn, run.executor.run)
