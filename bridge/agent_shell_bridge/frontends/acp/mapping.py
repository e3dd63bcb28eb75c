"""Our session events in Agent Client Protocol shapes, and ACP prompts in ours.

Pure functions: no I/O besides reading an edited file to show its diff. The core's
``session/update`` kinds were named after ACP's, so most of this is renaming and
dropping fields ACP does not define.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ...types import JSONObject

__all__ = [
    "STOP_REASONS",
    "history_updates",
    "map_update",
    "permission_options",
    "prompt_text",
    "reverse_unified_diff",
]

ACP_KINDS = frozenset(
    {"read", "edit", "delete", "move", "search", "execute", "think", "fetch", "other"}
)
# Our turn_end stop reasons that ACP also has; "error" becomes a JSON-RPC error.
STOP_REASONS = frozenset({"end_turn", "max_tokens", "max_turn_requests", "refusal", "cancelled"})
_STATUSES = frozenset({"pending", "in_progress", "completed", "failed"})
_PATH_KEYS = ("path", "cwd")
_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


def _locations(root: Path, raw_input: Any) -> list[JSONObject]:
    if not isinstance(raw_input, Mapping):
        return []
    out: list[JSONObject] = []
    for key in _PATH_KEYS:
        value = raw_input.get(key)
        if isinstance(value, str) and value and "\x00" not in value:
            location: JSONObject = {"path": str((root / value).resolve(strict=False))}
            line = raw_input.get("start_line", raw_input.get("line"))
            if isinstance(line, int) and line > 0:
                location["line"] = line
            out.append(location)
    return out


def reverse_unified_diff(new_text: str, diff: str) -> str | None:
    """The text before ``diff`` was applied, given the text after; None if they disagree."""
    new_lines = new_text.splitlines(keepends=True)
    old: list[str] = []
    cursor = 0  # index into new_lines
    lines = diff.splitlines(keepends=True)
    i = 0
    while i < len(lines):
        match = _HUNK.match(lines[i])
        i += 1
        if match is None:
            continue
        new_start = int(match.group(3))
        start = max(new_start - 1, 0) if match.group(4) != "0" else new_start
        if start < cursor or start > len(new_lines):
            return None
        old.extend(new_lines[cursor:start])
        cursor = start
        while i < len(lines) and not lines[i].startswith("@@"):
            line = lines[i]
            i += 1
            if line.startswith("\\"):  # "\ No newline at end of file"
                if lines[i - 2].startswith("-") and old and old[-1].endswith("\n"):
                    old[-1] = old[-1][:-1]
                continue
            tag, body = line[:1], line[1:]
            if tag == " ":
                if cursor >= len(new_lines) or new_lines[cursor].rstrip("\n") != body.rstrip("\n"):
                    return None
                old.append(new_lines[cursor])
                cursor += 1
            elif tag == "-":
                old.append(body if body.endswith("\n") else body + "\n")
            elif tag == "+":
                if cursor >= len(new_lines) or new_lines[cursor].rstrip("\n") != body.rstrip("\n"):
                    return None
                cursor += 1
            else:  # a truncation note or garbage: the texts cannot be rebuilt
                return None
    old.extend(new_lines[cursor:])
    return "".join(old)


def _diff_content(root: Path, item: Mapping[str, Any]) -> JSONObject:
    """ACP's diff shows whole texts; ours is a unified diff against the file now on disk."""
    path = root / str(item.get("path", ""))
    diff = str(item.get("diff", ""))
    try:
        new_text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return {"type": "content", "content": {"type": "text", "text": diff}}
    if diff.startswith("--- /dev/null") or "\n--- /dev/null" in diff[:200]:
        return {"type": "diff", "path": str(path), "oldText": None, "newText": new_text}
    old_text = reverse_unified_diff(new_text, diff)
    if old_text is None:  # the file changed again since: show the diff as text
        return {"type": "content", "content": {"type": "text", "text": diff}}
    return {"type": "diff", "path": str(path), "oldText": old_text, "newText": new_text}


def _content(root: Path, items: Any) -> list[JSONObject]:
    out: list[JSONObject] = []
    for item in items if isinstance(items, list) else []:
        if not isinstance(item, Mapping):
            continue
        if item.get("type") == "diff":
            out.append(_diff_content(root, item))
        elif item.get("type") == "content" and isinstance(item.get("content"), Mapping):
            out.append({"type": "content", "content": dict(item["content"])})
    return out


def map_update(root: Path, update: Mapping[str, Any]) -> JSONObject | None:
    """One of our updates as an ACP ``session/update`` payload; None when ACP has no such."""
    kind = update.get("sessionUpdate")
    if kind in ("agent_message_chunk", "agent_thought_chunk", "user_message_chunk"):
        return {"sessionUpdate": kind, "content": dict(update.get("content") or {})}
    if kind == "tool_call":
        raw = update.get("rawInput")
        tool_kind = update.get("kind")
        return {
            "sessionUpdate": "tool_call",
            "toolCallId": str(update.get("toolCallId")),
            "title": str(update.get("title") or "tool"),
            "kind": tool_kind if tool_kind in ACP_KINDS else "other",
            "status": update.get("status") if update.get("status") in _STATUSES else "pending",
            "rawInput": raw,
            "locations": _locations(root, raw),
        }
    if kind == "tool_call_update":
        mapped: JSONObject = {
            "sessionUpdate": "tool_call_update",
            "toolCallId": str(update.get("toolCallId")),
        }
        if update.get("status") in _STATUSES:
            mapped["status"] = update["status"]
        content = _content(root, update.get("content"))
        if content:
            mapped["content"] = content
        if "rawOutput" in update:
            mapped["rawOutput"] = update["rawOutput"]
        return mapped
    if kind == "plan":
        entries = [
            {
                "content": str(e.get("content", "")),
                "status": e.get("status") if e.get("status") in _STATUSES else "pending",
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


_PRIORITIES = frozenset({"high", "medium", "low"})


def history_updates(history: Sequence[Mapping[str, Any]]) -> list[JSONObject]:
    """A session's visible history replayed as ACP updates (``session/load``)."""
    out: list[JSONObject] = []
    for n, item in enumerate(history):
        role = item.get("role")
        text = str(item.get("text", ""))
        if role == "user":
            out.append(
                {"sessionUpdate": "user_message_chunk", "content": {"type": "text", "text": text}}
            )
        elif role == "assistant":
            out.append(
                {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": text}}
            )
        elif role == "tool":
            call_id = str(item.get("toolCallId") or f"history-{n}")
            status = item.get("status")
            out.append(
                {
                    "sessionUpdate": "tool_call",
                    "toolCallId": call_id,
                    "title": str(item.get("title") or "tool"),
                    "kind": "other",
                    "status": status if status in _STATUSES else "completed",
                    **(
                        {
                            "content": [
                                {"type": "content", "content": {"type": "text", "text": text}}
                            ]
                        }
                        if text
                        else {}
                    ),
                }
            )
        elif role == "system" and text:
            out.append(
                {
                    "sessionUpdate": "agent_message_chunk",
                    "content": {"type": "text", "text": f"\n{text}\n"},
                }
            )
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
# which this front end keeps for the rest of the session.
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
