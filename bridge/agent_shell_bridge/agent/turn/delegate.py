"""Running a role as a sub-session: fresh context, own tool set, same policy.

The role sees its task and the project's instructions, nothing of the lead's
history. Its tool calls go through the lead's executor (policy, sandbox, approvals,
org log) but under a sub-turn whose ``role`` limits the tools and where it writes.
In the org log the role is one subtree under the turn; its usage is added to the
turn's and kept by role for the summary drawer.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace

from ...errors import ToolFailed
from ...model.openai import ModelClient
from ...model.types import Completion, UsageCounts
from ...orglog import SrcBlock, TextBlock
from ...tools.catalogue import CATALOGUE, DelegateArgs, tool_schemas
from ...types import JSONObject, Risk
from ..calls.handlers import RunTool
from ..conversation.budget import (
    KEEP_SHARE,
    STUB_OVER_CHARS,
    _stub,
    estimate,
    request_chars,
    window_of,
)
from ..conversation.instructions import activate_nested_instructions, session_instructions
from ..conversation.messages import Conversation
from ..conversation.system_prompt import frame_instructions
from ..session.live import LiveSession
from ..session.reporter import src, text
from ..session.roles import REPORT_LIMIT, Role
from ..session.turnstate import TurnState

__all__ = ["RoleRun", "run_delegate", "run_role"]


@dataclass(frozen=True)
class RoleRun:
    role: str
    report: str
    steps: int
    verdict: JSONObject | None
    usage: UsageCounts
    stopped: str  # "done", "step_limit", "no_answer", "context_full"


def _offered(role: Role, mode: str) -> set[str]:
    """The role's tools, less what the turn's mode refuses (ask mode: reading only)."""
    if mode != "ask":
        return set(role.tools)
    keep = {"task_complete", "review_verdict"}
    return {n for n in role.tools if n in keep or CATALOGUE[n].risk is Risk.READ}


def _model_for(live: LiveSession, role: Role) -> ModelClient:
    if not role.model or role.model == live.model.settings.model:
        return live.model
    return ModelClient(replace(live.model.settings, model=role.model))


def _system(live: LiveSession, role: Role, mode: str) -> str:
    parts = [role.system_prompt(str(live.root), mode)]
    instructions = session_instructions(live)
    if instructions:
        parts.append(frame_instructions(instructions))
    return "\n\n".join(parts)


async def run_role(
    live: LiveSession, run_tool: RunTool, role: Role, task: str, parent: TurnState
) -> RoleRun:
    """Run ``role`` on ``task`` to its report, within its step limit; its calls go
    through ``run_tool`` (the lead's pipeline: policy, sandbox, approvals, log)."""
    first = task.strip().splitlines()[0][:100] if task.strip() else role.name
    entry = await live.reporter.entry(
        f"Role {role.name}: {first}",
        source="role",
        parent=parent.task_entry,
        todo=None,
        properties={"ROLE": role.name, "TURN": parent.turn_id},
        body=[text(task)] if "\n" in task.strip() else [],
    )
    sub = TurnState(
        turn_id=parent.turn_id,
        task_entry=entry,
        prompt=task,
        started=time.monotonic(),
        mode=parent.mode,
        role=role,
    )
    model = _model_for(live, role)
    tools = tool_schemas(_offered(role, parent.mode))
    # The role's own conversation: its task, then its steps (never saved or shown).
    conversation = Conversation.scratch()
    conversation.add_user(task)
    report = ""
    stopped = "step_limit"
    try:
        while sub.steps < role.max_steps:
            sub.steps += 1
            # Rebuilt each step: an AGENTS.md the role's work reached now applies.
            system: JSONObject = {"role": "system", "content": _system(live, role, parent.mode)}
            if not await _fit(live, system, conversation, tools, sub):
                stopped = "context_full"
                break
            messages = [system, *conversation.messages]
            completion = await _step(live, model, messages, tools, sub)
            conversation.add_assistant(completion)
            if not completion.tool_calls:
                report = completion.content
                stopped = "done" if report.strip() else "no_answer"
                break
            for call in completion.tool_calls:
                outcome = await run_tool(call, sub)
                await activate_nested_instructions(live, call, sub.task_entry)
                sub.usage.tool_calls += 1
                conversation.add_tool_result(call, outcome.status, outcome.payload)
            if sub.completed is not None or sub.verdict is not None:
                report = sub.completed or str((sub.verdict or {}).get("comments", ""))
                stopped = "done"
                break
    finally:
        parent.add_usage_of(role.name, sub)
        if model is not live.model:  # the role's own model client: its connections go
            await model.aclose()
    if len(report) > REPORT_LIMIT:
        report = report[: REPORT_LIMIT - 40] + f"\n[... report cut at {REPORT_LIMIT} characters]"
    await live.reporter.change(
        entry,
        todo="DONE" if stopped == "done" else "FAILED",
        properties={
            "STEPS": sub.steps,
            "MODEL_CALLS": sub.usage.model_calls,
            "TOKENS_IN": sub.usage.input_tokens,
            "TOKENS_OUT": sub.usage.output_tokens,
            **_cost(live, sub),
        },
        body=[src(report or f"(no report: {stopped})", "markdown")],
    )
    return RoleRun(role.name, report, sub.steps, sub.verdict, sub.usage, stopped)


async def _fit(
    live: LiveSession,
    system: JSONObject,
    conversation: Conversation,
    tools: list[JSONObject],
    sub: TurnState,
) -> bool:
    """Keep the role's request inside the window, as the lead's is kept.

    Past the compaction threshold, the older large tool results become stubs naming
    their ``request_log_view`` ref (oldest first, the newest step untouched) until
    the request is back within half the window. False when it still cannot fit.
    """
    window = window_of(live)

    messages = conversation.messages

    def tokens() -> int:
        return estimate(live, request_chars([system, *messages], tools))

    if tokens() <= window.threshold:
        return True
    newest = max((i for i, m in enumerate(messages) if m.get("role") == "assistant"), default=-1)
    stubbed = 0
    for i in range(newest):
        if tokens() <= int(window.tokens * KEEP_SHARE):
            break
        content = str(messages[i].get("content") or "")
        if messages[i].get("role") == "tool" and len(content) > STUB_OVER_CHARS:
            stubbed_content = str((await _stub(live, messages[i])).get("content"))
            if len(stubbed_content) < len(content):
                conversation.replace_tool_content(i, stubbed_content)
                stubbed += 1
    if stubbed:
        await live.reporter.entry(
            f"Context: {stubbed} older tool result(s) of the role replaced by refs",
            source="bridge",
            parent=sub.task_entry,
            properties={"STEP": sub.steps},
        )
    return tokens() <= window.limit


def _cost(live: LiveSession, sub: TurnState) -> dict[str, str | int | float]:
    prices = live.config.price_list
    if prices is None:
        return {}
    return {"COST": sub.usage.cost_at(prices)}


async def _step(
    live: LiveSession,
    model: ModelClient,
    messages: list[JSONObject],
    tools: list[JSONObject],
    sub: TurnState,
) -> Completion:
    """One model call of the role; its text is logged, not streamed into the shell."""
    completion: Completion | None = None
    async for event in model.stream_chat(messages, tools):
        if isinstance(event, Completion):
            completion = event
    assert completion is not None, "stream_chat always ends with a Completion"
    if completion.usage is not None:
        live.account_usage(completion.usage, sub)
    calls = completion.tool_calls
    title = f"Model ({sub.role.name if sub.role else 'role'}): " + (
        f"{len(calls)} tool call(s): {', '.join(c.name for c in calls)}" if calls else "answer"
    )
    props: dict[str, str | int | float] = {"STEP": sub.steps}
    if completion.usage is not None:
        props["TOKENS_IN"] = completion.usage.prompt_tokens
        props["TOKENS_OUT"] = completion.usage.completion_tokens
    body: list[TextBlock | SrcBlock] = [text(completion.content)] if completion.content else []
    await live.reporter.entry(
        title, source="model", parent=sub.task_entry, properties=props, body=body
    )
    return completion


async def run_delegate(
    live: LiveSession, run_tool: RunTool, args: DelegateArgs, turn: TurnState
) -> JSONObject:
    """The ``delegate`` tool: run a role for the lead and return its bounded report."""
    if turn.role is not None:
        raise ToolFailed("roles cannot delegate further")
    role = live.roles.get(args.role)
    if role is None or role.name == "reviewer":
        names = ", ".join(sorted(n for n in live.roles if n != "reviewer"))
        raise ToolFailed(f"unknown role {args.role!r}; roles you can delegate to: {names}")
    run = await run_role(live, run_tool, role, args.task, turn)
    result: JSONObject = {
        "role": run.role,
        "steps": run.steps,
        "report": run.report,
        "tokens": run.usage.total_tokens,
    }
    if run.stopped != "done":
        result["note"] = f"the {role.name} stopped without finishing ({run.stopped})"
    return result
