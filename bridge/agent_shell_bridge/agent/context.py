"""Keeping the conversation inside the model's window.

Token counts come from the API's reported usage (the ground truth); between calls the
growth is estimated from the characters added. Past 70% of the window, older steps
are compacted by a model call into a summary; the last 10 steps stay verbatim and
every failure is kept word for word.
"""

from __future__ import annotations

import json
import logging
from typing import TYPE_CHECKING

from ..model.types import Completion
from ..types import JSONObject
from .prompt import TOOL_RESULT_CLOSE
from .reporter import src, text

if TYPE_CHECKING:
    from .live import LiveSession
    from .turnstate import TurnState

__all__ = [
    "COMPACTION_PROMPT",
    "COMPACT_AT",
    "KEEP_STEPS",
    "estimate_tokens",
    "maybe_compact",
    "split_steps",
    "transcript_text",
]

log = logging.getLogger(__name__)

COMPACT_AT = 0.70
KEEP_STEPS = 10
MAX_TRANSCRIPT = 60_000
MAX_FAILURE_CHARS = 1_500

COMPACTION_PROMPT = """\
Summarise the earlier part of this coding session for your own later use. Keep: the
user's goal and constraints, what was learned about the code (files, functions, line
ranges), decisions and their reasons, what was changed, commands run and their
outcomes, and what remains to do. Be concrete and brief (at most 400 words). Do not
invent anything."""


def _chars(messages: list[JSONObject]) -> int:
    return sum(len(json.dumps(m, ensure_ascii=False)) for m in messages)


def estimate_tokens(live: LiveSession) -> int:
    """The last reported prompt size plus a rough count for what was added since."""
    totals = live.state.totals
    added = _chars(live.state.messages[live.counted_messages :])
    return totals.last_prompt_tokens + added // 3


def split_steps(messages: list[JSONObject]) -> list[list[JSONObject]]:
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


def transcript_text(messages: list[JSONObject], limit: int = MAX_TRANSCRIPT) -> str:
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


async def maybe_compact(live: LiveSession, turn: TurnState) -> bool:
    window = live.config.context_window
    used = estimate_tokens(live)
    if used <= COMPACT_AT * window:
        return False
    steps = split_steps(live.state.messages)
    if len(steps) <= KEEP_STEPS:
        return False
    old = [m for step in steps[:-KEEP_STEPS] for m in step]
    keep = [m for step in steps[-KEEP_STEPS:] for m in step]
    failures = [_bounded_failure(str(m["content"])) for m in old if _is_failure(m)]
    previous = live.state.summary
    request: list[JSONObject] = [
        {"role": "system", "content": COMPACTION_PROMPT},
        {
            "role": "user",
            "content": (f"Earlier summary:\n{previous}\n\n" if previous else "")
            + "Conversation to summarise:\n"
            + transcript_text(old),
        },
    ]
    completion: Completion | None = None
    async for event in live.model.stream_chat(request, None):
        if isinstance(event, Completion):
            completion = event
    if completion is None or not completion.content.strip():
        log.warning("compaction produced no summary; keeping the history")
        return False
    summary = completion.content.strip()
    if failures:
        summary += "\n\nFailures so far (verbatim):\n" + "\n---\n".join(failures)
    before_chars = _chars(live.state.messages)
    live.state.summary = summary
    live.state.messages = keep
    live.counted_messages = 0
    live.read_cache.clear()
    if completion.usage is not None:
        live.account_usage(completion.usage, turn)
    # Until the next response reports usage, the history's size is only an estimate.
    live.state.totals.last_prompt_tokens = 0
    await live.reporter.entry(
        f"Compacted {len(old)} earlier messages into a summary",
        source="bridge",
        parent=turn.task_entry,
        properties={
            "TOKENS_BEFORE": used,
            "CONTEXT_WINDOW": window,
            "MESSAGES_KEPT": len(keep),
            "FAILURES_KEPT": len(failures),
            "CHARS_BEFORE": before_chars,
        },
        body=[text("Summary:"), src(summary, "markdown")],
    )
    return True
