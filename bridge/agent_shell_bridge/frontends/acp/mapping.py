"""Our session events in Agent Client Protocol shapes, and ACP prompts in ours.

Pure functions. The core's ``session/update`` kinds were named after ACP's, so most
of this is renaming and dropping fields ACP does not define; tool calls are
:mod:`.cards`'.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ...types import JSONObject
from .cards import STATUSES, end_update, start_update

__all__ = [
    "STOP_REASONS",
    "ended_text",
    "final_words",
    "history_updates",
    "map_update",
    "message",
    "permission_options",
    "prompt_text",
    "prompt_usage",
]

# Our turn_end stop reasons that ACP also has; "error" becomes a JSON-RPC error.
STOP_REASONS = frozenset({"end_turn", "max_tokens", "max_turn_requests", "refusal", "cancelled"})
_PRIORITIES = frozenset({"high", "medium", "low"})


def message(text: str, kind: str = "agent_message_chunk") -> JSONObject:
    return {"sessionUpdate": kind, "content": {"type": "text", "text": text}}


def ended_text(stop_reason: str, error: Mapping[str, Any] | None) -> str:
    """The line a turn that did not end normally leaves in the history, as shown live."""
    why = f": {error.get('message')}" if error else ""
    return f"\n[turn ended: {stop_reason}{why}]\n"


def final_words(end: Mapping[str, Any]) -> list[JSONObject]:
    """What a ``turn_end`` leaves for the user to read: the ``task_complete`` summary,
    or why the turn stopped; the same text the history keeps for a resumed session."""
    reason = str(end.get("stopReason"))
    error = end.get("error")
    if reason != "end_turn":
        return [message(ended_text(reason, error if isinstance(error, Mapping) else None))]
    if isinstance(end.get("summary"), str):
        return [message(f"Done: {end['summary']}")]
    return []


def map_update(update: Mapping[str, Any]) -> JSONObject | None:
    """One of our non-tool updates as an ACP ``session/update``; None when ACP has no such."""
    kind = update.get("sessionUpdate")
    if kind in ("agent_message_chunk", "agent_thought_chunk", "user_message_chunk"):
        return {"sessionUpdate": kind, "content": dict(update.get("content") or {})}
    if kind == "plan":
        entries = [
            {
                "content": str(e.get("content", "")),
                "status": e.get("status") if e.get("status") in STATUSES else "pending",
                "priority": e.get("priority") if e.get("priority") in _PRIORITIES else "medium",
            }
            for e in update.get("entries") or []
            if isinstance(e, Mapping)
        ]
        return {"sessionUpdate": "plan", "entries": entries}
    if kind == "usage":
        used = update.get("contextUsed")
        size = update.get("contextWindow")
        if not isinstance(used, int) or not isinstance(size, int):
            return None
        usage: JSONObject = {"sessionUpdate": "usage_update", "used": used, "size": size}
        cost = update.get("costUsd")
        if isinstance(cost, int | float):
            usage["cost"] = {"amount": float(cost), "currency": "USD"}
        return usage
    return None


def prompt_usage(end: Mapping[str, Any]) -> JSONObject | None:
    """A turn's token counts (from its ``turn_end``) in the prompt response's shape."""
    used = end.get("usage")
    if not isinstance(used, Mapping):
        return None
    counts = {k: used.get(k) for k in ("inputTokens", "outputTokens", "cachedTokens")}
    if not all(isinstance(v, int) and v >= 0 for v in counts.values()):
        return None
    return {
        "inputTokens": counts["inputTokens"],
        "outputTokens": counts["outputTokens"],
        "totalTokens": int(counts["inputTokens"] or 0) + int(counts["outputTokens"] or 0),
        "cachedReadTokens": counts["cachedTokens"],
    }


def _legacy_view(item: Mapping[str, Any], n: int) -> JSONObject:
    """A tool item saved before views were kept: what it says, as a finished card."""
    status = item.get("status")
    text = str(item.get("text", ""))
    view: JSONObject = {
        "toolCallId": str(item.get("toolCallId") or f"history-{n}"),
        "title": str(item.get("title") or "tool"),
        "kind": "other",
        "status": "completed" if status == "completed" else "failed",
    }
    if text:
        view["rawOutput"] = {"error": text}
    return view


def history_updates(root: Path, history: Sequence[Mapping[str, Any]]) -> list[JSONObject]:
    """A session's visible history replayed as ACP updates (``session/load``): each
    message as one chunk, each call as the two updates that opened and closed it."""
    out: list[JSONObject] = []
    for n, item in enumerate(history):
        role = item.get("role")
        text = str(item.get("text", ""))
        if role == "user":
            out.append(message(text, "user_message_chunk"))
        elif role == "assistant" and text:
            out.append(message(text))
        elif role == "tool":
            view = item.get("view")
            if not isinstance(view, Mapping):
                view = _legacy_view(item, n)
            out.append(start_update(root, view))
            out.append(end_update(root, view))
        elif role == "system" and text:
            out.append(message(f"\n{text}\n"))
    return out


def _resource_text(block: Mapping[str, Any]) -> str:
    resource = block.get("resource")
    if not isinstance(resource, Mapping):
        return ""
    uri = str(resource.get("uri", ""))
    if isinstance(resource.get("text"), str):
        return f'<context uri="{uri}">\n{resource["text"]}\n</context>'
    return f"(attached binary resource {uri}, not shown)"


def prompt_text(blocks: Sequence[Mapping[str, Any]]) -> str:
    """ACP content blocks as one prompt: text as is, resources as labelled context."""
    parts: list[str] = []
    for block in blocks:
        kind = block.get("type")
        if kind == "text":
            parts.append(str(block.get("text", "")))
        elif kind == "resource":
            parts.append(_resource_text(block))
        elif kind == "resource_link":
            name = block.get("name") or block.get("uri")
            parts.append(f"(referenced: {name} at {block.get('uri')})")
        elif kind in ("image", "audio"):
            parts.append(f"(an attached {kind} was left out: this agent reads text only)")
    return "\n\n".join(p for p in parts if p)


# ACP's option kinds for the choices the policy offers, plus "reject always",
# which this front end keeps for the rest of the session. It comes last: clients
# that show only the first three kinds (xenodium's agent-shell) lose nothing else,
# and reach "no for the rest of the session" through the ask mode (README).
_OPTION_KINDS = {
    "allow_once": ("allow_once", "Allow once"),
    "allow_session": ("allow_always", "Allow for this session"),
    "reject_once": ("reject_once", "Reject"),
}


def permission_options(offered: Sequence[Mapping[str, Any]]) -> list[JSONObject]:
    """The options of our permission request for ACP, with ``reject_always`` added."""
    out: list[JSONObject] = []
    for option in offered:
        option_id = str(option.get("optionId"))
        kind, name = _OPTION_KINDS.get(option_id, (str(option.get("kind")), option_id))
        out.append({"optionId": option_id, "name": str(option.get("name") or name), "kind": kind})
    out.append(
        {"optionId": "reject_always", "name": "Reject for this session", "kind": "reject_always"}
    )
    return out
