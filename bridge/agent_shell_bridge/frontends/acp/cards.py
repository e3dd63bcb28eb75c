"""Tool calls as ACP clients draw them: a card from ``content`` and ``locations``.

Clients (Zed, xenodium's agent-shell) build a call's card from its ``content`` (text
blocks, ``diff`` items) and ``locations``; ``rawInput``/``rawOutput`` are debug data
at most. The core's call, merged from its ``tool_call`` and each update, is a
*view*; both the live stream and ``session/load`` turn a view into the same two
updates here, so a resumed session shows each card as it was.

Pure functions: nothing here reads a file.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ...types import JSONObject

__all__ = [
    "ACP_KINDS",
    "diff_content",
    "end_update",
    "fenced",
    "hunk_texts",
    "locations",
    "merge",
    "start_update",
]

ACP_KINDS = frozenset(
    {"read", "edit", "delete", "move", "search", "execute", "think", "fetch", "other"}
)
STATUSES = frozenset({"pending", "in_progress", "completed", "failed"})
_PATH_KEYS = ("path", "cwd")
_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
_FENCE = re.compile(r"`{3,}")


def merge(view: JSONObject, update: Mapping[str, Any]) -> None:
    """Fold one core update into the call's view, as a client folds updates."""
    for key, value in update.items():
        if key != "sessionUpdate":
            view[key] = value


def _absolute(root: Path, value: str) -> str:
    return str((root / value).resolve(strict=False))


def locations(root: Path, view: Mapping[str, Any]) -> list[JSONObject]:
    """The files a call reads or edits, with the line where that is known."""
    raw = view.get("rawInput")
    out: list[JSONObject] = []
    seen: set[str] = set()
    for item in view.get("content") or []:  # an edit: the first changed line
        if isinstance(item, Mapping) and item.get("type") == "diff" and item.get("path"):
            location: JSONObject = {"path": _absolute(root, str(item["path"]))}
            if isinstance(item.get("line"), int):
                location["line"] = item["line"]
            out.append(location)
            seen.add(location["path"])
    if not isinstance(raw, Mapping):
        return out
    for key in _PATH_KEYS:
        value = raw.get(key)
        if not isinstance(value, str) or not value or "\x00" in value:
            continue
        path = _absolute(root, value)
        if path in seen:
            continue
        location = {"path": path}
        line = raw.get("start_line", raw.get("line"))
        if isinstance(line, int) and line > 0:
            location["line"] = line
        out.append(location)
    return out


def fenced(text: str, lang: str = "") -> str:
    """TEXT as a Markdown code block whose fence no run of backticks in it can close."""
    longest = max((len(m) for m in _FENCE.findall(text)), default=2)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{lang}\n{text.rstrip(chr(10))}\n{fence}"


def _text(body: str) -> JSONObject:
    return {"type": "content", "content": {"type": "text", "text": body}}


def hunk_texts(diff: str) -> list[tuple[str, str]]:
    """Each hunk of a unified diff as (old, new) texts, context lines included."""
    out: list[tuple[str, str]] = []
    old: list[str] | None = None
    new: list[str] = []
    for line in diff.splitlines(keepends=True):
        if _HUNK.match(line):
            if old is not None:
                out.append(("".join(old), "".join(new)))
            old, new = [], []
            continue
        if old is None or line.startswith("\\"):
            continue
        tag, body = line[:1], line[1:]
        if tag in (" ", "-"):
            old.append(body)
        if tag in (" ", "+"):
            new.append(body)
    if old is not None:
        out.append(("".join(old), "".join(new)))
    return out


def diff_content(root: Path, item: Mapping[str, Any]) -> list[JSONObject]:
    """Our diff item as ACP ``diff`` items: its texts, else each hunk's."""
    path = _absolute(root, str(item.get("path", "")))
    if "newText" in item:
        return [
            {
                "type": "diff",
                "path": path,
                "oldText": item.get("oldText"),
                "newText": str(item.get("newText") or ""),
            }
        ]
    diff = str(item.get("diff", ""))
    hunks = hunk_texts(diff)
    if not hunks:
        return [_text(fenced(diff, "diff"))] if diff.strip() else []
    return [{"type": "diff", "path": path, "oldText": o, "newText": n} for o, n in hunks]


def _tests_line(summary: Mapping[str, Any]) -> str:
    counts = [f"{summary.get(k) or 0} {k}" for k in ("passed", "failed", "errors")]
    verdict = "ok" if summary.get("ok") is True else "not ok"
    line = f"Tests: {', '.join(counts)} — {verdict}"
    failures = [str(f).splitlines()[0] for f in summary.get("failures") or [] if str(f).strip()]
    return line + "".join(f"\n- {f}" for f in failures[:20])


def _outcome_lines(view: Mapping[str, Any]) -> list[str]:
    """The reason, exit status and test summary of a finished call, as Markdown lines."""
    raw = view.get("rawOutput")
    raw = raw if isinstance(raw, Mapping) else {}
    lines: list[str] = []
    if isinstance(raw.get("error"), str) and raw["error"]:
        lines.append(str(raw["error"]))
    if isinstance(raw.get("reason"), str) and raw["reason"]:
        lines.append(f"Reason: {raw['reason']}")
    if raw.get("dry_run") is True:
        lines.append("Dry run: nothing was executed.")
    if raw.get("timed_out") is True:
        lines.append("Timed out: the process group was killed.")
    elif isinstance(raw.get("exit_code"), int):
        lines.append(f"Exit code {raw['exit_code']}")
    if isinstance(raw.get("summary"), Mapping):
        lines.append(_tests_line(raw["summary"]))
    if isinstance(raw.get("warning"), str) and raw["warning"]:
        lines.append(f"Warning: {raw['warning']}")
    return lines


def _summary_of_input(view: Mapping[str, Any]) -> str | None:
    raw = view.get("rawInput")
    if isinstance(raw, Mapping) and isinstance(raw.get("summary"), str):
        return str(raw["summary"])  # task_complete's own words
    return None


def end_content(root: Path, view: Mapping[str, Any]) -> list[JSONObject]:
    """What a finished call's card shows: diffs, the reason or outcome, the output."""
    content: list[JSONObject] = []
    for item in view.get("content") or []:
        if not isinstance(item, Mapping):
            continue
        if item.get("type") == "diff":
            content.extend(diff_content(root, item))
        elif item.get("type") == "content" and isinstance(item.get("content"), Mapping):
            content.append({"type": "content", "content": dict(item["content"])})
    lines = _outcome_lines(view)
    output = view.get("output")
    if isinstance(output, Mapping) and isinstance(output.get("text"), str):
        lines.append(fenced(str(output["text"])))
    if not lines and not content:
        summary = _summary_of_input(view)
        done = view.get("status") == "completed"
        lines.append(summary if summary else ("Done." if done else "Failed."))
    if lines:
        content.append(_text("\n\n".join(lines)))
    return content


def start_update(root: Path, view: Mapping[str, Any]) -> JSONObject:
    """The ``tool_call`` that opens a call's card."""
    kind = view.get("kind")
    return {
        "sessionUpdate": "tool_call",
        "toolCallId": str(view.get("toolCallId")),
        "title": str(view.get("title") or "tool"),
        "kind": kind if kind in ACP_KINDS else "other",
        "status": "pending",
        "rawInput": view.get("rawInput"),
        "locations": locations(root, {"rawInput": view.get("rawInput")}),
    }


def end_update(root: Path, view: Mapping[str, Any]) -> JSONObject:
    """The ``tool_call_update`` that closes a call's card: status, content, locations."""
    status = view.get("status")
    update: JSONObject = {
        "sessionUpdate": "tool_call_update",
        "toolCallId": str(view.get("toolCallId")),
        "status": status if status in ("completed", "failed") else "failed",
        "content": end_content(root, view),
        "locations": locations(root, view),
    }
    if "rawOutput" in view:
        update["rawOutput"] = view["rawOutput"]
    return update
