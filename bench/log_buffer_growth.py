"""The live org log buffer as a session grows, and opening a large log file.

A batch Emacs (see ``agent-shell-log-bench.el``) feeds a long session's ``log/entry``
and ``log/update`` notifications through the real handlers into the session's live
log buffer and reports, in the same run:

* the time per turn around turn ``log_early_turns`` (baseline) and around turn
  ``log_late_turns`` (ratio: how much a turn costs more in a long log);
* the time ``agent-shell-log-open-file`` takes to open a generated log of about
  ``log_open_bytes`` against ``find-file`` of a plain org file with the same text.

The notifications carry the org text the bridge would send, made by the bridge's
own renderer (``agent_shell_bridge.orglog``) without writing a log file for them;
each turn is a task, three tool steps (one waiting for approval) with their
updates, the model's answer, the summary and the task's final update, with Chinese
text in titles and output. Every generated file lives in the run's work directory
and is deleted after.
"""

from __future__ import annotations

import asyncio
import json
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agent_shell_bridge.orglog import (
    LogEntry,
    LogUpdate,
    Rendered,
    entry_params,
    render_body,
    render_head,
    render_header,
    update_params,
)
from agent_shell_bridge.orglog.render import merge_properties

from .common import Figure, Scale
from .emacs_batch import run_batch

__all__ = ["LogStream", "run", "session_notifications"]


SESSION = "bench-log-session"


@dataclass
class _Node:
    entry: LogEntry
    level: int


class LogStream:
    """The notifications of one session's log, rendered as the bridge renders them.

    Mirrors the writer's placement and update rules in memory (no file): a step goes
    one level under its parent, an update merges properties and appends body blocks.
    """

    def __init__(self) -> None:
        self._nodes: dict[str, _Node] = {}

    def _rendered(self, node: _Node) -> Rendered:
        return Rendered(render_head(node.entry, node.level), render_body(node.entry.body))

    def entry(self, data: dict[str, Any]) -> dict[str, Any]:
        entry = LogEntry.model_validate({"session_id": SESSION, **data})
        parent = self._nodes.get(entry.parent_id) if entry.parent_id else None
        node = _Node(entry, parent.level + 1 if parent else 1)
        self._nodes[entry.id] = node
        return entry_params(entry, self._rendered(node))

    def update(self, data: dict[str, Any]) -> dict[str, Any]:
        upd = LogUpdate.model_validate({"session_id": SESSION, **data})
        node = self._nodes[upd.id]
        before = self._rendered(node)
        changes: dict[str, Any] = {}
        if upd.todo is not None:
            changes["todo"] = upd.todo
        if upd.properties:
            changes["properties"] = merge_properties(
                merge_properties({}, node.entry.properties), upd.properties
            )
        if upd.body_append:
            changes["body"] = [*node.entry.body, *upd.body_append]
        node.entry = node.entry.model_copy(update=changes)
        return update_params(upd, before, self._rendered(node))

    def text(self, entry_id: str) -> str:
        """The entry's text in the file now."""
        head, body = self._rendered(self._nodes[entry_id])
        return head + body


def _stamp(turn: int, minute: int) -> str:
    hours, minutes = divmod(turn * 7 + minute, 60)
    return f"2026-11-{1 + hours // 24 % 28:02d}T{hours % 24:02d}:{minutes:02d}:00+08:00"


def _output(turn: int, lines: int) -> str:
    return "".join(
        f"第{n}行 line {n} of turn {turn}: ok 通过 {'x' * (n % 17)}\n" for n in range(lines)
    )


def _turn(stream: LogStream, turn: int) -> Iterator[tuple[str, dict[str, Any]]]:
    """The notifications of one turn, in the order the bridge sends them."""
    task = f"t{turn}"
    yield (
        "log/entry",
        stream.entry(
            {
                "id": task,
                "title": f"修复第 {turn} 个问题: make the parser accept 中文 keys",
                "timestamp": _stamp(turn, 0),
                "source": "user",
                "properties": {"MODEL": "deepseek-chat", "SESSION": SESSION},
                "body": [{"kind": "text", "text": f"请修复问题 {turn}，然后运行测试。"}],
            }
        ),
    )
    read = f"{task}-read"
    yield (
        "log/entry",
        stream.entry(
            {
                "id": read,
                "parent_id": task,
                "title": f"read_file src/模块_{turn % 50}.py",
                "timestamp": _stamp(turn, 1),
                "source": "tool",
                "properties": {"TOOL": "read_file", "PATH": f"src/模块_{turn % 50}.py"},
            }
        ),
    )
    yield (
        "log/update",
        stream.update(
            {
                "id": read,
                "todo": "DONE",
                "properties": {"LINE": 1, "BYTES": 2048},
                "body_append": [{"kind": "src", "lang": "python", "text": _output(turn, 30)}],
            }
        ),
    )
    run_id = f"{task}-run"
    yield (
        "log/entry",
        stream.entry(
            {
                "id": run_id,
                "parent_id": task,
                "todo": "WAIT",
                "title": "run_command: make test",
                "timestamp": _stamp(turn, 2),
                "source": "tool",
                "properties": {"TOOL": "run_command", "RISK": "write"},
                "body": [{"kind": "src", "lang": "sh", "text": "make test"}],
            }
        ),
    )
    yield (
        "log/update",
        stream.update({"id": run_id, "todo": "APPROVED", "properties": {"DECISION": "approved"}}),
    )
    yield (
        "log/update",
        stream.update(
            {
                "id": run_id,
                "properties": {"EXIT_CODE": 0, "DURATION_MS": 1234},
                "body_append": [{"kind": "src", "lang": "text", "text": _output(turn, 20)}],
            }
        ),
    )
    edit = f"{task}-edit"
    diff = f"--- a/src/x.py\n+++ b/src/x.py\n@@ -1 +1 @@\n-old {turn}\n+新 {turn}\n"
    yield (
        "log/entry",
        stream.entry(
            {
                "id": edit,
                "parent_id": task,
                "todo": "DONE",
                "title": f"replace_region src/模块_{turn % 50}.py",
                "timestamp": _stamp(turn, 3),
                "source": "tool",
                "properties": {"TOOL": "replace_region", "PATH": "src/x.py", "LINE": 1},
                "body": [{"kind": "src", "lang": "diff", "text": diff}],
            }
        ),
    )
    yield (
        "log/entry",
        stream.entry(
            {
                "id": f"{task}-answer",
                "parent_id": task,
                "title": "回答 answer",
                "timestamp": _stamp(turn, 4),
                "source": "model",
                "body": [{"kind": "text", "text": f"已修复问题 {turn}；测试通过。 Fixed, tested."}],
            }
        ),
    )
    yield (
        "log/entry",
        stream.entry(
            {
                "id": f"{task}-summary",
                "parent_id": task,
                "title": "Summary: 3 model calls, 4,321 tokens",
                "timestamp": _stamp(turn, 5),
                "source": "bridge",
                "properties": {"MODEL_CALLS": 3, "TOKENS_IN": 4000, "TOKENS_OUT": 321},
            }
        ),
    )
    yield (
        "log/update",
        stream.update(
            {"id": task, "todo": "DONE", "properties": {"DURATION_MS": 5678, "TOKENS_IN": 4000}}
        ),
    )


def session_notifications(turns: int) -> Iterator[tuple[int, str, dict[str, Any]]]:
    """``(turn, method, params)`` of a session of TURNS turns, turns counted from 0."""
    stream = LogStream()
    for turn in range(turns):
        for method, params in _turn(stream, turn):
            yield turn, method, params


def write_notifications(path: Path, turns: int) -> None:
    """One JSON object a line: ``{"turn": N, "method": M, "params": {...}}``."""
    with path.open("w", encoding="utf-8") as out:
        for turn, method, params in session_notifications(turns):
            line = {"turn": turn, "method": method, "params": params}
            out.write(json.dumps(line, ensure_ascii=False) + "\n")


def write_log(path: Path, size: int) -> int:
    """A log file as the bridge leaves it, of at least SIZE bytes; return its size."""
    stream = LogStream()
    written = 0
    turn = 0
    with path.open("w", encoding="utf-8") as out:
        header = render_header(f"agent-shell log: {SESSION}")
        out.write(header)
        written += len(header.encode("utf-8"))
        while written < size:
            ids = []
            for method, params in _turn(stream, turn):
                if method == "log/entry":
                    ids.append(str(params["id"]))
            text = "".join(stream.text(i) for i in ids)
            out.write(text)
            written += len(text.encode("utf-8"))
            turn += 1
    return written


def _prepare(scale: Scale, work: Path) -> tuple[Path, Path, Path, int]:
    """Write the notifications, the large log and its plain copy under WORK."""
    events = work / "events.jsonl"
    logs = work / "project" / ".agent-shell" / "logs"
    logs.mkdir(parents=True)
    write_notifications(events, scale.log_late_turns + scale.log_measured_turns)
    log_file = logs / f"2026-11-30-101500-{SESSION}.org"
    size = write_log(log_file, scale.log_open_bytes)
    plain = work / "notes" / "plain.org"
    plain.parent.mkdir()
    shutil.copyfile(log_file, plain)
    return events, log_file, plain, size


async def run(scale: Scale, work: Path) -> list[Figure]:
    try:
        return await _run(scale, work)
    finally:
        await asyncio.to_thread(shutil.rmtree, work, ignore_errors=True)


async def _run(scale: Scale, work: Path) -> list[Figure]:
    early, late, measured = scale.log_early_turns, scale.log_late_turns, scale.log_measured_turns
    events, log_file, plain, size = await asyncio.to_thread(_prepare, scale, work)
    quoted = [json.dumps(str(p)) for p in (events, log_file, plain)]
    form = (
        f"(agent-shell-log-bench-batch {quoted[0]} {early} {late} {measured}"
        f" {quoted[1]} {quoted[2]} {scale.log_open_reps})"
    )
    data = await run_batch("agent-shell-log-bench.el", form, cwd=work)
    turns = {"early_turn": early, "late_turn": late, "turns_measured": measured}
    return [
        Figure(
            key="log_buffer_growth",
            title=f"Emacs log buffer: time per turn at turn {late:,} (median)",
            unit="ms",
            value=data["late_median_ms"],
            baseline=data["early_median_ms"],
            baseline_label=f"same buffer at turn {early}",
            better="lower",
            details={
                **turns,
                "early_mean_ms": data["early_ms"],
                "late_mean_ms": data["late_ms"],
                "buffer_chars": data["buffer_chars"],
                "overlays": data["overlays"],
                "entries": data["entries"],
                "fill_seconds": data["fill_seconds"],
            },
        ),
        Figure(
            key="log_buffer_open",
            title=f"Emacs: open a {size / 1024**2:.1f} MiB log",
            unit="s",
            value=data["open_log_s"],
            baseline=data["open_plain_s"],
            baseline_label="find-file of a plain org file with the same text",
            better="lower",
            details={"bytes": size, "runs": scale.log_open_reps},
        ),
    ]
