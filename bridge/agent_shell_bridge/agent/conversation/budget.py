"""Keeping the conversation inside the model's window.

Every request is measured before it is sent (:func:`fit_request`). Sizes are counted
in characters and turned into tokens with a ratio taken from the API's reported usage
(the ground truth; a cautious 3 characters a token until the first answer). Budgets
are tokens, never step counts:

* past 70% of the window, older large tool results first become short framed stubs
  (oldest first, no model call) naming a ``request_log_view`` ref and the call that
  would read them again, until the request is back at 40% of the window; failures
  stay word for word, and the newest step's results are left whole;
* only when the conversation itself, not counting the newest step's results, is
  still past 70% are older steps summarised by the model, once per crossing: the
  newest steps that fit in half the window are kept (their large results as stubs),
  every failure among the rest is kept word for word under the summary, and the
  next summary waits until the conversation was back under half the window;
* a request that would still not fit (the window minus room for the answer) is
  compacted harder, and if even that cannot fit, the turn stops with a clear
  :class:`~..errors.ContextTooLarge` instead of a provider's 400;
* a provider's context-length refusal (:class:`~..errors.ModelContextLimit`) gets one
  emergency compaction against the limit it named (:func:`after_provider_refusal`).
"""

from __future__ import annotations

import asyncio
import json
import logging
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ...errors import Cancelled, ContextTooLarge, ModelContextLimit, ModelError
from ...model.encoding import JsonCache
from ...model.overflow import requested_tokens_of
from ...model.types import Completion
from ...types import JSONObject
from ..session.reporter import src, text
from .messages import Conversation
from .system_prompt import TOOL_RESULT_CLOSE, frame_tool_result

if TYPE_CHECKING:
    from ..session.live import LiveSession
    from ..session.turnstate import TurnState

__all__ = [
    "COMPACTION_PROMPT",
    "COMPACT_AT",
    "KEEP_SHARE",
    "LOW_WATER",
    "after_provider_refusal",
    "compact",
    "fit_request",
    "request_chars",
    "split_steps",
    "stub_older_results",
    "transcript_budget",
    "transcript_text",
]

log = logging.getLogger(__name__)

COMPACT_AT = 0.70  # compact when a request passes this share of the window
KEEP_SHARE = 0.50  # a summary aims for a request of at most this share; the next waits
# until the conversation itself is back under it
LOW_WATER = 0.40  # stubbing older results aims for a request of at most this share
HARD_SHARE = 0.30  # ... and this one when the request would not fit otherwise
ANSWER_SHARE = 0.125  # room left for the answer (at most ANSWER_CAP tokens)
ANSWER_CAP = 4_096
DEFAULT_CHARS_PER_TOKEN = 3.0
STUB_OVER_CHARS = 1_200  # kept tool results longer than this become stubs
SUMMARY_MAX_CHARS = 3_000
SUMMARY_EXPECTED_CHARS = 1_500
FAILURES_SHARE = 0.10
MAX_TRANSCRIPT = 60_000
MAX_FAILURE_CHARS = 1_500
FAILURES_HEADING = "Failures so far (verbatim):"

COMPACTION_PROMPT = """\
Summarise the earlier part of this coding session for your own later use. Keep: the
user's goal and constraints, what was learned about the code (files, functions, line
ranges), decisions and their reasons, what was changed, commands run and their
outcomes, and what remains to do. Be concrete and brief (at most 400 words). Do not
invent anything."""

_HEADER = re.compile(r"^\[TOOL_RESULT name=(\S+) id=(\S+) status=(\w+)\]\n")


# -- measuring -------------------------------------------------------------------------


def request_chars(
    messages: list[JSONObject], tools: list[JSONObject] | None, cache: JsonCache | None = None
) -> int:
    """A request's size in characters, counted as the body will carry it (with the
    session model's CACHE, the history already measured is not encoded again)."""
    size = (
        cache.chars(messages)
        if cache is not None
        else len(json.dumps(messages, ensure_ascii=False))
    )
    return size + (len(json.dumps(tools, ensure_ascii=False)) if tools else 0)


def _chars(messages: Sequence[JSONObject]) -> int:
    return len(json.dumps(messages, ensure_ascii=False)) if messages else 0


@dataclass(frozen=True, slots=True)
class Window:
    tokens: int

    @property
    def limit(self) -> int:
        """The largest request that leaves room for the answer."""
        return self.tokens - min(ANSWER_CAP, int(self.tokens * ANSWER_SHARE))

    @property
    def threshold(self) -> int:
        return int(self.tokens * COMPACT_AT)


def window_of(live: LiveSession) -> Window:
    tokens = live.config.context_window
    if live.provider_limit is not None:
        tokens = min(tokens, live.provider_limit)
    return Window(tokens)


def estimate(live: LiveSession, chars: int) -> int:
    return math.ceil(chars / live.chars_per_token)


def calibrate(live: LiveSession, chars: int, prompt_tokens: int) -> None:
    """Learn the characters-per-token ratio from a request the API counted."""
    if chars > 0 and prompt_tokens > 0:
        live.chars_per_token = min(8.0, max(1.0, chars / prompt_tokens))


# -- steps and failures ------------------------------------------------------------------


def split_steps(messages: Sequence[JSONObject]) -> list[list[JSONObject]]:
    """Group messages into steps; tool results stay with the call that asked for them."""
    steps: list[list[JSONObject]] = []
    for message in messages:
        if message.get("role") == "tool" and steps:
            steps[-1].append(message)
        else:
            steps.append([message])
    return steps


def _is_failure(message: JSONObject) -> bool:
    content = message.get("content")
    return (
        message.get("role") == "tool"
        and isinstance(content, str)
        and any(f"status={s}]" in content for s in ("failed", "denied", "rejected"))
    )


def _bounded_failure(framed: str) -> str:
    """Cut a framed tool result but keep its closing marker, so the frame stays whole."""
    if len(framed) <= MAX_FAILURE_CHARS:
        return framed
    return framed[:MAX_FAILURE_CHARS] + " …\n" + TOOL_RESULT_CLOSE


def _split_summary(summary: str) -> tuple[str, list[str]]:
    """A stored summary's prose and the failures carried verbatim under it."""
    head, sep, tail = summary.partition("\n\n" + FAILURES_HEADING + "\n")
    if not sep:
        return summary, []
    return head, [f for f in tail.split("\n---\n") if f.strip()]


def _failure_section(failures: list[str], budget_chars: int) -> str:
    """Every failure, newest kept first when they do not all fit the budget."""
    unique = list(dict.fromkeys(failures))
    kept: list[str] = []
    used = 0
    for failure in reversed(unique):
        if kept and used + len(failure) > budget_chars:
            break
        kept.insert(0, failure)
        used += len(failure) + 5
    dropped = len(unique) - len(kept)
    lead = [f"({dropped} earlier failures left out for space)"] if dropped else []
    return "\n---\n".join(lead + kept)


def transcript_budget(live: LiveSession) -> int:
    """Characters of transcript a side request (summary, memory) may carry: half the window."""
    return min(MAX_TRANSCRIPT, int(window_of(live).tokens * KEEP_SHARE * live.chars_per_token))


def transcript_text(messages: Sequence[JSONObject], limit: int = MAX_TRANSCRIPT) -> str:
    """A plain-text rendering of messages for summarisation and memory extraction."""
    parts: list[str] = []
    for m in messages:
        role = m.get("role", "?")
        content = m.get("content") or ""
        if not isinstance(content, str):
            content = json.dumps(content, ensure_ascii=False)
        calls = m.get("tool_calls") or []
        for call in calls:
            fn = call.get("function", {})
            content += f"\n→ {fn.get('name')}({fn.get('arguments', '')[:500]})"
        parts.append(f"## {role}\n{content[:4000]}")
    out = "\n\n".join(parts)
    if len(out) > limit:
        half = limit // 2
        out = out[:half] + "\n\n[... middle of the transcript omitted ...]\n\n" + out[-half:]
    return out


# -- stubs -------------------------------------------------------------------------------


def _payload(content: str) -> JSONObject | None:
    """The JSON payload inside a framed tool result, or None."""
    if not _HEADER.match(content) or not content.endswith("\n" + TOOL_RESULT_CLOSE):
        return None
    body = content.split("\n", 1)[1].rsplit("\n", 1)[0]
    try:
        value = json.loads(body)
    except json.JSONDecodeError:
        return None
    return value if isinstance(value, dict) else None


def _stub_size() -> int:
    return 560  # a framed stub with its call and note, about


def _calls_by_id(messages: Sequence[JSONObject]) -> dict[str, tuple[str, str]]:
    """Each tool call's name and arguments text, by the call's id."""
    calls: dict[str, tuple[str, str]] = {}
    for m in messages:
        for call in m.get("tool_calls") or []:
            if isinstance(call, dict) and isinstance(call.get("function"), dict):
                fn = call["function"]
                calls[str(call.get("id"))] = (str(fn.get("name")), str(fn.get("arguments") or ""))
    return calls


def _call_of(arguments: str) -> object:
    """The call's arguments as the stub shows them: JSON when they parse, else text."""
    if len(arguments) > 400:
        return arguments[:400] + " …"
    try:
        return json.loads(arguments)
    except json.JSONDecodeError:
        return arguments


async def _stub(
    live: LiveSession, message: JSONObject, call: tuple[str, str] | None = None
) -> JSONObject:
    """The message with its result moved out to the output store, leaving a stub.

    ``call`` (the tool's name and arguments) tells the model how to get it afresh.
    """
    content = str(message.get("content") or "")
    header = _HEADER.match(content)
    name, call_id, status = header.groups() if header else ("tool", "?", "completed")
    payload = _payload(content) or {}
    ref = payload.get("log_ref")
    if not isinstance(ref, str):
        full = payload.get("text")
        saved = (
            full
            if isinstance(full, str)
            else json.dumps(payload or content, ensure_ascii=False, indent=1)
        )
        ref, _ = await asyncio.to_thread(live.outputs.save, saved)
    stub: JSONObject = {"compacted": True, "ref": ref, "chars": len(content)}
    for key in ("path", "exit_code", "total_lines"):
        if key in payload:
            stub[key] = payload[key]
    if status != "completed" and isinstance(payload.get("error"), str):
        stub["error"] = payload["error"][:600]
    again = ""
    if call is not None:
        stub["call"] = {"tool": call[0], "arguments": _call_of(call[1])}
        again = f"; {call[0]} with the same arguments (under `call`) runs it again"
        if name == "read_file":
            again += " and shows the file's current text"
    elif name == "read_file":
        again = "; read_file again for the file's current text"
    stub["note"] = (
        "This result was taken out of the conversation to keep it inside the model's "
        f"window. request_log_view(ref={ref!r}) pages through it" + again + "."
    )
    return {**message, "content": frame_tool_result(name, call_id, status, stub)}


async def stub_older_results(
    live: LiveSession, turn: TurnState, *, chars: int, target_chars: int
) -> int:
    """Older large tool results become stubs, oldest first, until the request of
    ``chars`` characters is down to ``target_chars``; how many did. No model call.

    The newest step's results are left whole (the model has not seen them), and so
    are failures (kept word for word) and the results its re-reads point at.
    """
    conversation = Conversation(live.state)
    messages = conversation.messages
    newest = max((i for i, m in enumerate(messages) if m.get("role") == "assistant"), default=-1)
    pointed: set[str] = set()
    for m in messages[newest + 1 :]:
        payload = _payload(str(m.get("content") or "")) if m.get("role") == "tool" else None
        if payload and payload.get("unchanged") and isinstance(payload.get("same_as"), str):
            pointed.add(str(payload["same_as"]))
    calls = _calls_by_id(messages)
    stubbed = 0
    saved = 0
    for i in range(max(newest, 0)):
        if chars - saved <= target_chars:
            break
        message = messages[i]
        size = _chars([message])
        if message.get("role") != "tool" or size <= STUB_OVER_CHARS or _is_failure(message):
            continue
        call_id = str(message.get("tool_call_id"))
        payload = _payload(str(message.get("content") or ""))
        if call_id in pointed or (payload is not None and payload.get("compacted")):
            continue
        stub = await _stub(live, message, calls.get(call_id))
        if _chars([stub]) >= size:
            continue
        conversation.replace_tool_content(i, str(stub["content"]))
        saved += size - _chars([stub])
        stubbed += 1
    if stubbed:
        forget_removed_reads(live)
        ratio = live.chars_per_token
        await live.reporter.entry(
            f"Context: {stubbed} older tool result(s) replaced by refs (no model call)",
            source="bridge",
            parent=turn.task_entry,
            properties={
                "REASON": "threshold",
                "TOKENS_BEFORE": math.ceil(chars / ratio),
                "TOKENS_AFTER": math.ceil((chars - saved) / ratio),
                "CONTEXT_WINDOW": window_of(live).tokens,
                "RESULTS_STUBBED": stubbed,
            },
        )
    return stubbed


def _verbatim_reads(messages: Sequence[JSONObject]) -> set[str]:
    """Ids of tool results still in the history whose text a re-read could point at."""
    ids: set[str] = set()
    for m in messages:
        if m.get("role") != "tool":
            continue
        payload = _payload(str(m.get("content") or ""))
        if payload and not payload.get("compacted") and not payload.get("unchanged"):
            ids.add(str(m.get("tool_call_id")))
    return ids


def forget_removed_reads(live: LiveSession) -> None:
    """After compaction: re-reads resend text, and no stub points at removed text."""
    conversation = Conversation(live.state)
    messages = conversation.messages
    present = _verbatim_reads(messages)
    live.read_cache = {k: v for k, v in live.read_cache.items() if v[1] in present}
    for i, m in enumerate(messages):
        if m.get("role") != "tool":
            continue
        content = str(m.get("content") or "")
        payload = _payload(content)
        if not payload or not payload.get("unchanged") or payload.get("same_as") in present:
            continue
        header = _HEADER.match(content)
        assert header is not None
        name, call_id, status = header.groups()
        note = {
            "path": payload.get("path"),
            "unchanged": True,
            "note": "Identical to an earlier read whose text has since been compacted out "
            "of the conversation; read_file this range again to see it.",
        }
        conversation.replace_tool_content(i, frame_tool_result(name, call_id, status, note))


# -- compaction --------------------------------------------------------------------------


@dataclass
class _Plan:
    old: list[JSONObject]
    kept: list[tuple[JSONObject, bool]]  # message, replace by a stub
    pinned: JSONObject | None


def _plan(steps: list[list[JSONObject]], budget: int, newest_budget: int) -> _Plan:
    """Newest steps first while they fit ``budget`` characters; the newest always.

    Large results in kept steps become stubs, except the newest step's: the model has
    not seen them yet, so they go only if the request could not fit ``newest_budget``.
    """
    kept_steps: list[list[tuple[JSONObject, bool]]] = []
    used = 0
    for age, step in enumerate(reversed(steps)):
        sizes = [_chars([m]) for m in step]
        # A failure is kept word for word (cut only as the summary would cut it).
        large = [
            m.get("role") == "tool" and n > STUB_OVER_CHARS and not _is_failure(m)
            for m, n in zip(step, sizes, strict=True)
        ]
        if age == 0 and sum(sizes) <= newest_budget:
            large = [False] * len(step)
        size = sum(_stub_size() if s else n for s, n in zip(large, sizes, strict=True))
        if age > 0 and used + size > budget:
            break
        kept_steps.insert(0, list(zip(step, large, strict=True)))
        used += size
    old = [m for step in steps[: len(steps) - len(kept_steps)] for m in step]
    kept = [pair for step in kept_steps for pair in step]
    pinned = None
    users = [m for m in old if m.get("role") == "user"]
    if (
        users
        and not any(m.get("role") == "user" for m, _ in kept)
        and _chars([users[-1]]) <= max(budget // 2, 2_000)
    ):
        pinned = users[-1]  # the task at hand stays in the user's own words
    return _Plan(old, kept, pinned)


async def _summarise(
    live: LiveSession, turn: TurnState, old: list[JSONObject], previous: str, limit: int
) -> str | None:
    request: list[JSONObject] = [
        {"role": "system", "content": COMPACTION_PROMPT},
        {
            "role": "user",
            "content": (f"Earlier summary:\n{previous}\n\n" if previous else "")
            + "Conversation to summarise:\n"
            + transcript_text(old, limit=max(2_000, limit - len(previous))),
        },
    ]
    completion: Completion | None = None
    try:
        async for event in live.model.stream_chat(request, None):
            if isinstance(event, Completion):
                completion = event
    except (Cancelled, asyncio.CancelledError):
        raise
    except ModelError as exc:
        log.warning("compaction call failed: %s", exc.message)
        return None
    if completion is not None and completion.usage is not None:
        live.account_usage(completion.usage, turn)
        calibrate(live, request_chars(request, None), completion.usage.prompt_tokens)
    if completion is None or not completion.content.strip():
        return None
    summary = completion.content.strip()
    if len(summary) > SUMMARY_MAX_CHARS:
        summary = summary[:SUMMARY_MAX_CHARS] + " …"
    return summary


def _mechanical_summary(old: list[JSONObject], limit: int) -> str:
    """When the model cannot summarise: what was asked and which tools ran."""
    lines = ["(No model summary was available; the calls made earlier were:)"]
    for m in old:
        for call in m.get("tool_calls") or []:
            fn = call.get("function", {})
            lines.append(f"- {fn.get('name')}({str(fn.get('arguments', ''))[:200]})")
    out = "\n".join(lines)
    return out if len(out) <= limit else out[: limit // 2] + "\n…\n" + out[-limit // 2 :]


async def compact(
    live: LiveSession, turn: TurnState, *, share: float, reason: str, overhead_chars: int
) -> bool:
    """Shrink the history so the request fits ``share`` of the window; True if it did."""
    window = window_of(live)
    ratio = live.chars_per_token
    conversation = Conversation(live.state)
    target = int(window.tokens * share * ratio)
    failures_budget = int(window.tokens * FAILURES_SHARE * ratio)
    previous, carried = _split_summary(conversation.summary)
    steps = split_steps(conversation.messages)
    if not steps:
        return False
    # Room for the summary to come: its usual size, and the failures it will carry.
    known_failures = carried + [
        _bounded_failure(str(m["content"])) for m in conversation.messages if _is_failure(m)
    ]
    failure_chars = min(failures_budget, sum(len(f) + 5 for f in known_failures))
    summary_room = SUMMARY_EXPECTED_CHARS + failure_chars
    budget = target - overhead_chars - summary_room
    newest_budget = int(window.limit * ratio) - overhead_chars - summary_room
    plan = _plan(steps, budget, newest_budget)
    summarised = [m for m in plan.old if m is not plan.pinned]
    if not summarised and not any(stub for _, stub in plan.kept):
        return False  # nothing would change
    before = overhead_chars + _chars(conversation.messages) + len(conversation.summary)
    summary = previous
    if summarised:
        limit = int(window.tokens * KEEP_SHARE * ratio) - len(COMPACTION_PROMPT)
        made = await _summarise(live, turn, plan.old, previous, limit)
        if made is None:
            if share > HARD_SHARE:
                log.warning("compaction produced no summary; keeping the history")
                return False
            made = (previous + "\n\n" if previous else "") + _mechanical_summary(
                summarised, SUMMARY_MAX_CHARS
            )
        summary = made
    failures = carried + [_bounded_failure(str(m["content"])) for m in plan.old if _is_failure(m)]
    if failures:
        summary += f"\n\n{FAILURES_HEADING}\n" + _failure_section(failures, failures_budget)
    kept: list[JSONObject] = [plan.pinned] if plan.pinned is not None else []
    calls = _calls_by_id(conversation.messages)
    stubbed = 0
    for message, stub in plan.kept:
        if stub:
            message = await _stub(live, message, calls.get(str(message.get("tool_call_id"))))
            stubbed += 1
        elif _is_failure(message):
            message = {**message, "content": _bounded_failure(str(message["content"]))}
        kept.append(message)
    conversation.replace_for_compaction(kept, summary)
    forget_removed_reads(live)
    after = overhead_chars + _chars(kept) + len(summary)
    await live.reporter.entry(
        f"Compacted {len(summarised)} earlier messages into a summary"
        + (f", {stubbed} large result(s) replaced by refs" if stubbed else ""),
        source="bridge",
        parent=turn.task_entry,
        properties={
            "REASON": reason,
            "TOKENS_BEFORE": math.ceil(before / ratio),
            "TOKENS_AFTER": math.ceil(after / ratio),
            "CONTEXT_WINDOW": window.tokens,
            "MESSAGES_KEPT": len(kept),
            "RESULTS_STUBBED": stubbed,
            "FAILURES_KEPT": len(failures),
        },
        body=[text("Summary:"), src(summary, "markdown")] if summarised else [],
    )
    await live.reporter.update(
        "compaction",
        turnId=turn.turn_id,
        reason=reason,
        summary=summary if summarised else "",
        messagesSummarised=len(summarised),
        messagesKept=len(kept),
        resultsStubbed=stubbed,
        failuresKept=len(failures),
        tokensBefore=math.ceil(before / ratio),
        tokensAfter=math.ceil(after / ratio),
        contextWindow=window.tokens,
    )
    return True


# -- the pre-flight ----------------------------------------------------------------------


def _newest_results_chars(messages: Sequence[JSONObject]) -> int:
    """Characters of the results after the last assistant message (the newest step's)."""
    newest = max((i for i, m in enumerate(messages) if m.get("role") == "assistant"), default=-1)
    results = [m for m in messages[newest + 1 :] if newest >= 0 and m.get("role") == "tool"]
    return _chars(results) if results else 0


async def fit_request(
    live: LiveSession,
    turn: TurnState,
    build: Callable[[], list[JSONObject]],
    tools: list[JSONObject] | None,
) -> tuple[list[JSONObject], int]:
    """The next request's messages and size, compacted as needed to fit the window.

    Raises :class:`ContextTooLarge` when even a hard compaction leaves it too big.
    """
    window = window_of(live)
    rearm_at = int(window.tokens * KEEP_SHARE)
    cache = live.model.json_cache
    messages = build()
    chars = request_chars(messages, tools, cache)
    own = chars - _newest_results_chars(messages)
    if estimate(live, own) <= rearm_at:
        live.compaction_armed = True
    if estimate(live, chars) <= window.threshold:
        return messages, chars
    overhead = request_chars(messages[:1], tools, cache)
    # First the older results become stubs: no model call.
    low_water = int(window.tokens * LOW_WATER * live.chars_per_token)
    if await stub_older_results(live, turn, chars=chars, target_chars=low_water):
        messages = build()
        chars = request_chars(messages, tools, cache)
        own = chars - _newest_results_chars(messages)
    # A summary only when the conversation itself is past the threshold (a large newest
    # result alone is no reason), and once per crossing: the next one waits until the
    # conversation was back under half the window.
    if estimate(live, own) > window.threshold and live.compaction_armed:
        live.compaction_armed = False
        if await compact(live, turn, share=KEEP_SHARE, reason="threshold", overhead_chars=overhead):
            messages = build()
            chars = request_chars(messages, tools, cache)
            own = chars - _newest_results_chars(messages)
            live.compaction_armed = estimate(live, own) <= rearm_at
    if estimate(live, chars) > window.limit:
        if await compact(live, turn, share=HARD_SHARE, reason="window", overhead_chars=overhead):
            messages = build()
            chars = request_chars(messages, tools, cache)
        needed = estimate(live, chars)
        if needed > window.limit:
            fixed = estimate(live, overhead)
            raise ContextTooLarge(
                f"the next request needs about {needed} tokens but the model's window is "
                f"{window.tokens} tokens ({window.limit} with room for the answer), even after "
                f"compacting the history (the system prompt and tools take about {fixed}). "
                "Start a new session, ask for smaller steps, or set agent-shell-context-window "
                "if the model has a larger window.",
                data={"needed": needed, "window": window.tokens, "fixed": fixed},
            )
    return messages, chars


async def after_provider_refusal(
    live: LiveSession,
    turn: TurnState,
    exc: ModelContextLimit,
    chars: int,
    overhead_chars: int,
) -> bool:
    """A provider refused the request as too long: learn its limit and compact hard.

    False when nothing was learnt and nothing compacted: a retry would be refused too.
    """
    learnt = False
    if exc.limit is not None and exc.limit < window_of(live).tokens:
        live.provider_limit = exc.limit
        learnt = True
    requested = requested_tokens_of(exc.message)
    if requested is not None:
        calibrate(live, chars, requested)
        learnt = True
    else:  # count more cautiously from now on
        live.chars_per_token = max(1.0, live.chars_per_token * 0.75)
    await live.reporter.entry(
        "Model refused the request as too long; compacting and retrying once",
        source="bridge",
        parent=turn.task_entry,
        properties={"CONTEXT_LIMIT": exc.limit or "unknown", "HTTP_STATUS": exc.status},
        body=[text(exc.message)],
    )
    compacted = await compact(
        live, turn, share=HARD_SHARE, reason="provider", overhead_chars=overhead_chars
    )
    return compacted or learnt
