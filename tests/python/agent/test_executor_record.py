"""The executor's record step: each step of a call is one log write and one client update.

Real parts: the event hub the client reads, the org log file on disk, the reporter
that writes both. The plan tools reach the executor only through ``run_tool``, so
importing them does not load the executor.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
from collections.abc import AsyncGenerator
from pathlib import Path
from typing import Any

from agent_shell_bridge.agent.calls.prepared import Prepared
from agent_shell_bridge.agent.calls.record import CallRecord
from agent_shell_bridge.agent.session.reporter import Reporter
from agent_shell_bridge.agent.session.turnstate import TurnState
from agent_shell_bridge.orglog import OrgLogWriter
from agent_shell_bridge.tools import catalogue as cat
from agent_shell_bridge.tools.results import ToolResult
from agent_shell_bridge.transport.events import EventHub
from agent_shell_bridge.types import Decision, Risk, Verdict

COMMAND = "echo 你好"


async def _rig(tmp_path: Path) -> tuple[EventHub, Reporter, TurnState]:
    hub = EventHub()
    reporter = Reporter(hub, "s1", OrgLogWriter(tmp_path / "log.org", title="t"))
    task = await reporter.entry("任务", source="user", parent=None)
    turn = TurnState(turn_id="t1", task_entry=task, prompt="任务", started=time.monotonic())
    return hub, reporter, turn


def _record(reporter: Reporter, turn: TurnState, tmp_path: Path, verdict: Verdict) -> CallRecord:
    prepared = Prepared(
        cat.CATALOGUE["run_command"],
        cat.RunCommandArgs.model_validate({"command": COMMAND}),
        verdict,
        [],
        command=COMMAND,
        cwd=tmp_path,
    )
    raw: dict[str, Any] = {"command": COMMAND}
    return CallRecord.of(reporter, "c1", turn, f"run_command {COMMAND}", raw, prepared, None)


async def _messages(hub: EventHub, after: int) -> list[dict[str, Any]]:
    stream = hub.subscribe(after)
    try:
        async with asyncio.timeout(2):
            events = [await anext(stream) for _ in range(hub.last_id - after)]
    finally:
        if isinstance(stream, AsyncGenerator):
            await stream.aclose()
    return [json.loads(e.data) for e in events]


def _updates(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        m["params"]["update"]
        for m in messages
        if m["method"] == "session/update"
        and m["params"]["update"]["sessionUpdate"] == "tool_call_update"
    ]


def _state(org: str) -> str:
    """The TODO keyword of the call's headline (``** DONE [date] run_command ...``)."""
    (line,) = [x for x in org.splitlines() if x.endswith(f"] run_command {COMMAND}")]
    return line.split()[1]


def _log_writes(messages: list[dict[str, Any]]) -> list[str]:
    return [m["method"] for m in messages if m["method"] in ("log/entry", "log/update")]


async def test_a_denied_call_is_one_rejected_entry_and_one_failed_update(tmp_path: Path) -> None:
    hub, reporter, turn = await _rig(tmp_path)
    start = hub.last_id
    verdict = Verdict(Decision.DENY, Risk.WRITE, "no 你好 here")
    outcome = await _record(reporter, turn, tmp_path, verdict).denied(verdict)
    messages = await _messages(hub, start)
    assert _log_writes(messages) == ["log/entry"]
    assert [u["status"] for u in _updates(messages)] == ["failed"]
    assert outcome.status == "denied" and outcome.failed
    assert outcome.payload["error"] == "Refused by the safety policy: no 你好 here"
    org = (tmp_path / "log.org").read_text(encoding="utf-8")
    assert _state(org) == "REJECTED"
    assert "Policy: deny (write): no 你好 here" in org


async def test_a_finished_call_shows_the_full_log_text_and_keeps_the_payload(
    tmp_path: Path,
) -> None:
    hub, reporter, turn = await _rig(tmp_path)
    verdict = Verdict(Decision.CONFIRM, Risk.WRITE, "changes things")
    record = _record(reporter, turn, tmp_path, verdict)
    await record.open(waiting=True)
    await record.approved("allow_once")
    start = hub.last_id
    await record.running()
    saved = tmp_path / "out.log"
    payload = {"exit_code": 0, "stdout": "你好 (clipped)", "sandbox": "none"}
    result = ToolResult(dict(payload), log_text="你好\n全文", log_path=str(saved))
    outcome = await record.finished(result, 12)
    messages = await _messages(hub, start)
    assert _log_writes(messages) == ["log/update"]
    updates = _updates(messages)
    assert [u["status"] for u in updates] == ["in_progress", "completed"]
    # The client gets the summary keys only; the model gets the whole payload, nothing added.
    assert updates[-1]["rawOutput"] == {"exit_code": 0, "sandbox": "none"}
    assert outcome.status == "completed" and outcome.payload == payload
    org = reporter.writer.render()  # the entries in their last state, as Emacs shows them
    assert _state(org) == "DONE"
    assert "全文" in org and str(saved) in org
    assert ":DECISION: approved" in org and ":EXIT_CODE: 0" in org


async def test_a_failed_result_without_log_text_logs_its_error(tmp_path: Path) -> None:
    hub, reporter, turn = await _rig(tmp_path)
    verdict = Verdict(Decision.ALLOW, Risk.READ, "read-only")
    record = _record(reporter, turn, tmp_path, verdict)
    await record.open(waiting=False)
    start = hub.last_id
    outcome = await record.finished(ToolResult({"error": "坏了"}, failed=True), 3)
    messages = await _messages(hub, start)
    assert _log_writes(messages) == ["log/update"]
    assert [u["status"] for u in _updates(messages)] == ["failed"]
    assert outcome.status == "failed" and outcome.payload == {"error": "坏了"}
    org = reporter.writer.render()
    assert _state(org) == "FAILED" and "Error: 坏了" in org
    # The file keeps the history: the outcome follows the step as its own heading.
    file_text = (tmp_path / "log.org").read_text(encoding="utf-8")
    assert "*** FAILED [" in file_text and "Error: 坏了" in file_text


def test_plan_tools_do_not_import_the_executor() -> None:
    probe = (
        "import sys, agent_shell_bridge.agent.turn.plan\n"
        "print('agent_shell_bridge.agent.calls.executor' in sys.modules)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=True
    )
    assert done.stdout.strip() == "False"
