"""Permission requests as ACP clients show them: what the user decides on, in the
dialog itself.

An edit's request carries its ``diff`` item (the old and new text, so a client can
offer its diff view before the user decides) and the file's location; a command's
carries the command and the policy's reason; a plan's carries the plan as Markdown
under ``rawInput.plan``, where clients look for a plan to show.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ...types import JSONObject
from .cards import ACP_KINDS, diff_content, fenced, locations

__all__ = ["permission_tool_call", "plan_markdown"]


def _text(body: str) -> JSONObject:
    return {"type": "content", "content": {"type": "text", "text": body}}


def permission_tool_call(root: Path, params: Mapping[str, Any]) -> JSONObject:
    """The ``toolCall`` of an ACP permission request made from ours."""
    call = params.get("toolCall") or {}
    raw = call.get("rawInput")
    content: list[JSONObject] = []
    diff_items = [
        item
        for item in call.get("content") or []
        if isinstance(item, Mapping) and item.get("type") == "diff"
    ]
    for item in diff_items:
        content.extend(diff_content(root, item))
    if not diff_items and isinstance(params.get("diff"), str) and params["diff"]:
        content.append(_text(fenced(str(params["diff"]), "diff")))
    lines: list[str] = []
    if isinstance(raw, Mapping) and isinstance(raw.get("command"), str):
        lines.append(fenced(str(raw["command"]), "sh"))
    if isinstance(raw, Mapping) and isinstance(raw.get("plan"), str):
        lines.append(str(raw["plan"]))
    reason = params.get("reason")
    if isinstance(reason, str) and reason:
        lines.append(f"Why it asks: {reason}")
    if isinstance(params.get("note"), str) and params["note"]:
        lines.append(str(params["note"]))
    if lines:
        content.append(_text("\n\n".join(lines)))
    kind = call.get("kind")
    return {
        "toolCallId": str(call.get("toolCallId")),
        "title": str(call.get("title") or "tool"),
        "kind": kind if kind in ACP_KINDS else "other",
        "status": "pending",
        "rawInput": raw,
        "content": content,
        "locations": locations(root, {"rawInput": raw, "content": diff_items}),
    }


def _step_line(n: int, step: Mapping[str, Any]) -> str:
    parts = [f"{n}. {step.get('title')}"]
    files = [str(f) for f in step.get("files") or []]
    if files:
        parts.append("files: " + ", ".join(f"`{f}`" for f in files))
    if step.get("expected"):
        parts.append(f"expected: {step['expected']}")
    if step.get("verify"):
        parts.append(f"verify: `{step['verify']}`")
    return " — ".join(parts)


def plan_markdown(goal: str, steps: Sequence[Mapping[str, Any]], risks: Sequence[Any]) -> str:
    """A proposed plan as Markdown: the goal, numbered steps, the risks."""
    lines = [f"## Plan: {goal}", ""]
    lines += [_step_line(n, s) for n, s in enumerate(steps, start=1) if isinstance(s, Mapping)]
    shown = [str(r) for r in risks if str(r).strip()]
    if shown:
        lines += ["", "Risks:", *(f"- {r}" for r in shown)]
    return "\n".join(lines)
