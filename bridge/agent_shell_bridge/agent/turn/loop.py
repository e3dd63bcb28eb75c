"""The turn loop: perception, action, verification and a report, within guards.

A turn streams a model response, runs the tool calls it asks for (in order, each
getting its result), and repeats until the model answers with text only, calls
``task_complete``, is cancelled, fails, or reaches the step limit. Guards: a warning
after three identical calls, a demand for a new approach after a tool fails twice.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Collection
from datetime import datetime
from typing import TYPE_CHECKING, Any

import httpx

from ...errors import BridgeError, Cancelled, ModelContextLimit
from ...model.types import Completion, ReasoningDelta, RefusalDelta, StreamRestart, TextDelta
from ...orglog import DrawerBlock, SrcBlock, TaskUsage, TextBlock, summary_drawer_entry
from ...tools.catalogue import CATALOGUE, ToolSpec, tool_schemas
from ...types import JSONObject, Risk
from ..calls.executor import Outcome, ToolExecutor, describe_call, signature_of
from ..calls.project_hooks import run_turn_end_hooks
from ..calls.without_emacs import unavailable_note, unavailable_tools
from ..conversation.attachments import Batch, frame_attachments, summary
from ..conversation.attachments import log_blocks as attachment_blocks
from ..conversation.attachments import log_properties as attachment_properties
from ..conversation.budget import after_provider_refusal, calibrate, fit_request, request_chars
from ..conversation.instructions import activate_nested_instructions, session_instructions
from ..conversation.memory import finish_task_memory, inject_memories
from ..conversation.messages import Conversation
from ..conversation.system_prompt import summary_messages, system_prompt
from ..session.model_help import explain_model_error
from ..session.reporter import src, text
from ..session.roles import ROLE_ONLY_TOOLS
from ..session.skills import skill_index
from ..session.turnstate import TurnState
from .models import apply_pending_model, model_totals
from .notify import NotifyEvent, post_webhook
from .review import review_turn
from .steer import deliver_steers, take_leftover_steers
from .tools import ALL_HANDLERS

if TYPE_CHECKING:
    from ..session.live import LiveSession

__all__ = ["run_turn"]

log = logging.getLogger(__name__)

REPEAT_LIMIT = 3
FAIL_LIMIT = 2


def _tools_for(
    mode: str, extra: list[ToolSpec[Any]], hidden: Collection[str] = ()
) -> list[JSONObject]:
    names = {n for n in CATALOGUE if n not in ROLE_ONLY_TOOLS and n not in hidden}
    if mode == "ask":
        names = {n for n in names if CATALOGUE[n].risk is Risk.READ} | {"task_complete"}
        return tool_schemas(names, [s for s in extra if s.risk is Risk.READ])
    return tool_schemas(names, extra)


def _request_messages(live: LiveSession, memories: str) -> list[JSONObject]:
    """The next request: system prompt, the compacted summary, then the history."""
    state = live.state
    return [
        {
            "role": "system",
            "content": system_prompt(
                root=str(live.root),
                project=live.project,
                mode=state.mode,
                snapshot=live.snapshot,
                memories=memories,
                instructions=session_instructions(live),
                skills=skill_index(live),
                unavailable=unavailable_note(live, ALL_HANDLERS),
            ),
        },
        *summary_messages(Conversation(live.state).summary),
        *Conversation(live.state).messages,
    ]


async def _fitted_model_step(live: LiveSession, turn: TurnState, memories: str) -> Completion:
    """One model step whose request fits the window; a provider's refusal as too
    long gets one emergency compaction and one retry."""
    await apply_pending_model(live, turn)
    Conversation(live.state).deliver_notes()
    hidden = unavailable_tools(live, ALL_HANDLERS)  # needs Emacs, and none is connected
    tools = _tools_for(live.state.mode, live.external_tools(), hidden)

    def build() -> list[JSONObject]:
        return _request_messages(live, memories)

    messages, chars = await fit_request(live, turn, build, tools)
    try:
        return await _model_step(live, turn, messages, tools, chars)
    except ModelContextLimit as exc:
        overhead = request_chars(messages[:1], tools, live.model.json_cache)
        if not await after_provider_refusal(live, turn, exc, chars, overhead):
            raise  # nothing to shrink and nothing learnt: the retry would fail the same way
    messages, chars = await fit_request(live, turn, build, tools)
    return await _model_step(live, turn, messages, tools, chars)


async def _model_step(
    live: LiveSession,
    turn: TurnState,
    messages: list[JSONObject],
    tools: list[JSONObject],
    chars: int,
) -> Completion:
    state = live.state
    completion: Completion | None = None
    async for event in live.model.stream_chat(messages, tools):
        if isinstance(event, TextDelta):
            live.reporter.chunk("agent_message_chunk", event.text)
        elif isinstance(event, RefusalDelta):
            # The model declined: its words are the answer, marked as a refusal.
            await live.reporter.update(
                "agent_message_chunk", content={"type": "text", "text": event.text}, refusal=True
            )
        elif isinstance(event, ReasoningDelta):
            live.reporter.chunk("agent_thought_chunk", event.text)
        elif isinstance(event, StreamRestart):
            live.reporter.chunk("agent_message_chunk", "\n[connection lost; the answer restarts]\n")
        elif isinstance(event, Completion):
            completion = event
    assert completion is not None, "stream_chat always ends with a Completion"
    if completion.usage is not None:
        live.account_usage(completion.usage, turn)
        state.totals.last_prompt_tokens = completion.usage.prompt_tokens
        calibrate(live, chars, completion.usage.prompt_tokens)
        totals = state.totals
        used = completion.usage.prompt_tokens + completion.usage.completion_tokens
        await live.reporter.update(
            "usage",
            inputTokens=totals.input_tokens,
            outputTokens=totals.output_tokens,
            cachedTokens=totals.cached_tokens,
            totalTokens=totals.total_tokens,
            contextWindow=live.config.context_window,
            contextUsed=used,
            costUsd=round(totals.cost, 6) if live.model.settings.prices else None,
            **(
                {"model": live.model_label, "byModel": model_totals(live)}
                if live.state.model_totals
                else {}
            ),
        )
    calls = completion.tool_calls
    if calls:
        title = f"Model: {len(calls)} tool call(s): {', '.join(c.name for c in calls)}"
    elif completion.refusal and not completion.content:
        title = "Model: refusal"
    else:
        title = "Model: answer"
    body: list[TextBlock | SrcBlock] = []
    if completion.reasoning:
        body.append(src(completion.reasoning, "text"))
    if completion.answer:
        body.append(text(completion.answer))
    props: dict[str, str | int | float] = {"STEP": turn.steps}
    if completion.usage is not None:
        props["TOKENS_IN"] = completion.usage.prompt_tokens
        props["TOKENS_OUT"] = completion.usage.completion_tokens
    if completion.finish_reason:
        props["FINISH"] = completion.finish_reason
    await live.reporter.entry(
        title, source="model", parent=turn.task_entry, properties=props, body=body
    )
    return completion


def _guard_notes(turn: TurnState, name: str, signature: str, outcome: Outcome) -> list[str]:
    notes: list[str] = []
    turn.calls_seen[signature] += 1
    if turn.calls_seen[signature] >= REPEAT_LIMIT:
        notes.append(
            f"You have made this exact {name} call {turn.calls_seen[signature]} times in this "
            "task. You are repeating yourself: use what you already have or try something else."
        )
    if outcome.failed:
        turn.failures_by_tool[name] += 1
        if turn.failures_by_tool[name] >= FAIL_LIMIT:
            notes.append(
                f"{name} has now failed {turn.failures_by_tool[name]} times in a row. Stop and "
                "change your approach: re-read the relevant code, question your assumption, or "
                "ask the user."
            )
    else:
        turn.failures_by_tool[name] = 0
    return notes


async def _reviewed_back(live: LiveSession, executor: ToolExecutor, turn: TurnState) -> bool:
    """Run the reviewer on the turn's change; True when the lead must go on."""
    note = await review_turn(executor, turn)
    if note is None:
        return False
    Conversation(live.state).add_feedback(note, shown="The reviewer asked for changes.")
    await live.checkpoint()
    return True


async def run_turn(
    live: LiveSession,
    prompt: str,
    turn_id: str,
    *,
    mode: str | None = None,
    quiet_memory: bool = False,
    attachments: Batch | None = None,
) -> None:
    """Run one user task to its end; every outcome ends with a ``turn_end`` update.

    ``mode`` runs this one turn in another mode (a ``/ask`` or ``/act`` prefix); the
    session's own mode is back before ``turn_end`` is sent.
    """
    state = live.state
    # Recording the task is finished even when a cancel arrives meanwhile (a client
    # may cancel the moment it has the turn id): the turn then ends as cancelled,
    # with its turn_end, instead of vanishing.
    begin = asyncio.ensure_future(_begin_turn(live, prompt, turn_id, mode, attachments))
    try:
        turn, start_index = await asyncio.shield(begin)
    except asyncio.CancelledError:
        turn, start_index = await begin
        await _finish(live, turn, "cancelled", None, start_index)
        return
    task_entry = turn.task_entry
    # Off the path to the first token: the checkpoint (an fsync) and the branch
    # lookup (a git process) run while the memory search and the model call go on.
    # The checkpoint lock keeps later checkpoints after this one.
    prelude = asyncio.ensure_future(_prelude(live, turn))
    stop_reason = "end_turn"
    error: JSONObject | None = None
    executor = ToolExecutor(live, ALL_HANDLERS)
    conversation = Conversation(live.state)
    try:
        if live.remote is not None:
            await live.remote.ready()  # connects again after a drop
        memories = "" if quiet_memory else await inject_memories(live, prompt, task_entry)
        while True:
            if turn.steps >= live.max_steps:
                stop_reason = "max_turn_requests"
                await live.reporter.entry(
                    f"Stopped: reached the limit of {live.max_steps} model steps",
                    source="bridge",
                    parent=task_entry,
                    todo="FAILED",
                )
                break
            turn.steps += 1
            await deliver_steers(live, turn)
            completion = await _fitted_model_step(live, turn, memories)
            conversation.add_assistant(completion)
            await live.checkpoint()
            if not completion.tool_calls:
                if completion.finish_reason == "length":
                    stop_reason = "max_tokens"
                elif completion.finish_reason == "content_filter" or (
                    completion.refusal and not completion.content
                ):
                    stop_reason = "refusal"
                if stop_reason == "end_turn" and live.state.pending_steers:
                    continue  # the user spoke after the final answer: one more round
                if stop_reason == "end_turn" and await _reviewed_back(live, executor, turn):
                    continue
                break
            pending = list(completion.tool_calls)
            try:
                while pending:
                    call = pending[0]
                    outcome = await executor.run(call, turn)
                    await activate_nested_instructions(live, call, turn.task_entry)
                    turn.usage.tool_calls += 1
                    state.totals.tool_calls += 1
                    notes = _guard_notes(turn, call.name, signature_of(call), outcome)
                    if outcome.failed:
                        turn.last_failure = (
                            f"{call.name}: {outcome.payload.get('error', outcome.status)}"
                        )
                    payload = dict(outcome.payload)
                    if notes:
                        payload["agent_shell_notes"] = notes
                    conversation.add_tool_result(
                        call, outcome.status, payload, title=describe_call(call), view=outcome.view
                    )
                    pending.pop(0)
                    if live.remote is not None and live.remote.connection.dropped is not None:
                        raise live.remote.connection.dropped  # the turn ends here
            finally:
                # Every call the model made needs a result, or the next request is invalid.
                conversation.answer_unrun(pending)
                await live.checkpoint()
            if turn.completed is not None:
                if live.state.pending_steers or await _reviewed_back(live, executor, turn):
                    turn.completed = None
                    continue
                conversation.show(f"Done: {turn.completed}", role="assistant")
                break
    except (asyncio.CancelledError, Cancelled):
        stop_reason = "cancelled"
    except BridgeError as exc:  # ModelError included: the provider's message is kept
        stop_reason = "error"
        error = {"code": exc.code, "message": explain_model_error(exc, live.config)}
    except Exception as exc:
        log.exception("turn %s failed", turn_id)
        stop_reason = "error"
        error = {"code": BridgeError.code, "message": f"internal error: {type(exc).__name__}"}
    await _settle(prelude)
    await _finish(live, turn, stop_reason, error, start_index)


async def _prelude(live: LiveSession, turn: TurnState) -> None:
    """Checkpoint the started turn and note the branch it starts on."""
    await asyncio.gather(live.checkpoint(), _note_branch(live, turn))


async def _note_branch(live: LiveSession, turn: TurnState) -> None:
    turn.branch_at_start = await live.current_branch()


async def _settle(work: asyncio.Future[None]) -> None:
    """Wait for background WORK of the turn, even when the turn was cancelled."""
    try:
        await asyncio.shield(work)
    except asyncio.CancelledError:
        await asyncio.wait([work])
    except Exception:
        log.exception("the start of the turn failed")


async def _begin_turn(
    live: LiveSession, prompt: str, turn_id: str, mode: str | None, attached: Batch | None = None
) -> tuple[TurnState, int]:
    """Record the task: its log entry, the user's message and a checkpoint."""
    state = live.state
    started = time.monotonic()
    restore_mode = None
    if mode is not None and mode != state.mode:
        restore_mode, state.mode = state.mode, mode
    first_line = prompt.strip().splitlines()[0] if prompt.strip() else "(empty prompt)"
    batch = attached or Batch([], [])
    body: list[TextBlock | SrcBlock | DrawerBlock] = []
    if "\n" in prompt.strip():
        body.append(text(prompt))
    task_entry = await live.reporter.entry(
        first_line,
        source="user",
        parent=None,
        properties={
            "SESSION": state.id,
            "MODEL": live.config.model,
            "TURN": turn_id,
            "MODE": state.mode,
            **attachment_properties(batch.accepted, batch.refused),
        },
        body=body + list(attachment_blocks(batch.accepted)),
    )
    turn = TurnState(turn_id=turn_id, task_entry=task_entry, prompt=prompt, started=started)
    turn.restore_mode = restore_mode
    turn.mode = state.mode
    start_index = Conversation(live.state).add_user(
        prompt,
        turn_id=turn_id,
        attached=frame_attachments(batch.accepted) if batch.accepted else "",
        attachments=[summary(a) for a in batch.accepted],
    )
    state.turn_times[turn_id] = datetime.now().astimezone().isoformat(timespec="seconds")
    state.turns += 1
    state.title = state.title or first_line[:80]
    state.turn_in_progress = turn_id
    return turn, start_index


async def _finish(
    live: LiveSession, turn: TurnState, stop_reason: str, error: JSONObject | None, start_index: int
) -> None:
    """Close the task in the log, decide about memory, checkpoint, and tell the client.

    Once the memory step is over, a user's cancel waits for the rest (see
    LiveSession.cancel_turn): the log, the checkpoint and the client's turn_end are
    never left half done.
    """
    state = live.state
    # The memory step may take a model call: a cancel skips it rather than wait.
    if error is not None:
        await live.reporter.entry(
            f"Error: {error['message']}",
            source="bridge",
            parent=turn.task_entry,
            todo="FAILED",
            properties={"CODE": int(error["code"])},
        )
    if stop_reason != "cancelled":
        try:
            await finish_task_memory(live, turn, start_index)
        except asyncio.CancelledError:
            await live.reporter.entry(
                "Memory: skipped, the turn was cancelled", source="memory", parent=turn.task_entry
            )
        except Exception:
            log.exception("memory step failed")
    this_task = asyncio.current_task()
    live.finishing_task = this_task
    try:
        duration = int((time.monotonic() - turn.started) * 1000)
        await live.reporter.add(
            summary_drawer_entry(
                entry_id=live.reporter.next_id(),
                session_id=state.id,
                task_id=turn.task_entry,
                usage=TaskUsage.of(turn.usage, duration),
                timestamp=datetime.now().astimezone(),
                prices=live.config.price_list,
                model=live.config.model,
                by_role=turn.usage_by_role(),
                by_model=(
                    {n: (u, turn.prices_by_model.get(n)) for n, u in turn.usage_by_model.items()}
                    if len(turn.usage_by_model) > 1
                    else None
                ),
            )
        )
        ok = stop_reason == "end_turn"
        await live.reporter.change(
            turn.task_entry,
            todo="DONE" if ok else "FAILED",
            properties={"STOP_REASON": stop_reason, "DURATION_MS": duration},
        )
        state.turn_in_progress = None
        if stop_reason != "end_turn":
            why = f": {error['message']}" if error is not None else ""
            Conversation(live.state).show(f"[turn ended: {stop_reason}{why}]")
        if turn.restore_mode is not None and state.mode == turn.mode:
            state.mode = turn.restore_mode  # unless session/set_mode changed it meanwhile
        await live.checkpoint()
        end: JSONObject = {
            "turnId": turn.turn_id,
            "stopReason": stop_reason,
            "durationMs": duration,
        }
        if error is not None:
            end["error"] = error
        if turn.completed is not None:
            end["summary"] = turn.completed
        used = turn.usage
        end["usage"] = {  # this turn's own, roles included (the session's totals are in usage)
            "inputTokens": used.input_tokens,
            "outputTokens": used.output_tokens,
            "cachedTokens": used.cached_tokens,
            "totalTokens": used.input_tokens + used.output_tokens,
        }
        steers = take_leftover_steers(live)
        if steers:  # too late for a model call: the client sends them as the next prompt
            end["steers"] = steers
        live.turn_open = False  # the client may send the next prompt from here on
        live.turn_end_sent = True
        await live.reporter.update("turn_end", **end)
    finally:
        if live.finishing_task is this_task:
            live.finishing_task = None
    live.in_background(_post_webhook(live, turn, stop_reason, error))
    live.in_background(run_turn_end_hooks(live, stop_reason))


async def _post_webhook(
    live: LiveSession, turn: TurnState, stop_reason: str, error: JSONObject | None
) -> None:
    """Tell the configured webhook how the task ended (never raises)."""
    url = live.config.notify_webhook
    if not url or stop_reason == "cancelled":
        return
    ok = stop_reason == "end_turn"
    event = NotifyEvent(
        status="completed" if ok else "failed",
        task=turn.prompt[:500],
        session_id=live.state.id,
        failed_step=None if ok else (turn.last_failure or None),
        reason=None if ok else (str(error["message"]) if error else stop_reason),
        log_path=live.state.log_path,
        project=live.project,
    )
    async with httpx.AsyncClient(trust_env=live.config.trust_env) as http:
        await post_webhook(url, live.config.notify_kind, event, http=http)  # type: ignore[arg-type]
