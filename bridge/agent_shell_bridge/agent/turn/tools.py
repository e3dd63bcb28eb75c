"""The tools that act on the turn itself: delegating to a role, proposing a plan,
completing a plan's step. They belong to the turn layer (roles and plans live
here) and reach the executor as bindings, with the calls layer's own."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from ...tools import catalogue as cat
from ...tools.catalogue import AskUserArgs, CompleteStepArgs, DelegateArgs, ProposePlanArgs
from ...tools.results import ToolResult
from ..calls.handlers import HANDLERS, Binding, Run, bind
from . import plan
from .ask import ask_user as _ask_user
from .delegate import run_delegate

__all__ = ["ALL_HANDLERS", "TURN_HANDLERS"]


async def delegate(run: Run, args: DelegateArgs) -> ToolResult:
    return ToolResult(await run_delegate(run.live, run.run_tool, args, run.turn))


async def propose_plan(run: Run, args: ProposePlanArgs) -> ToolResult:
    return await plan.propose_plan(run.live, run.shown_call, args, run.turn)


async def complete_step(run: Run, args: CompleteStepArgs) -> ToolResult:
    # The step's verification goes through the pipeline, like any run_test call.
    return await plan.complete_step(run.live, run.shown_call, args, run.turn, run.run_tool)


async def ask_user(run: Run, args: AskUserArgs) -> ToolResult:
    return await _ask_user(run, args)


TURN_HANDLERS: Mapping[str, Binding] = MappingProxyType(
    {
        b.spec.name: b
        for b in (
            bind(cat.DELEGATE, delegate),
            bind(cat.PROPOSE_PLAN, propose_plan),
            bind(cat.COMPLETE_STEP, complete_step),
            bind(cat.ASK_USER, ask_user),
        )
    }
)
# Every bridge-side handler of a turn: the calls layer's and the turn's own.
ALL_HANDLERS: Mapping[str, Binding] = MappingProxyType({**HANDLERS, **TURN_HANDLERS})
