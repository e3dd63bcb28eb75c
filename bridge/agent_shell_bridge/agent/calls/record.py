"""One tool call as the action log and the client see it.

Every step of a call is written twice: an org entry (or a change to it) in the
action log, and a ``tool_call`` / ``tool_call_update`` for the client. A
:class:`CallRecord` owns both halves, so each step is one call here and the two
can never drift apart.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ...orglog import SrcBlock, TextBlock
from ...tools.outputs import clip_lines
from ...tools.results import Outcome, ToolResult
from ...types import Decision, JSONObject, Verdict
from ..session.reporter import Reporter, src, text
from .card import card_output, diff_item
from .prepared import Prepared

if TYPE_CHECKING:
    from ..session.turnstate import TurnState

__all__ = ["CallRecord", "refuse_early", "view_of"]

Body = list[TextBlock | SrcBlock]
Props = dict[str, str | int | float]

_CLIENT_KEEP = (
    "exit_code",
    "duration_ms",
    "truncated",
    "timed_out",
    "log_ref",
    "error",
    "path",
    "summary",
    "role",
    "steps",
    "report",
    "sandbox",
    "warning",
)


def view_of(call_id: str, title: str, kind: str, raw: JSONObject) -> JSONObject:
    """A call as its ``tool_call`` announces it; each update is merged in."""
    return {"toolCallId": call_id, "title": title, "kind": kind, "rawInput": raw}


def _merge(view: JSONObject, status: str, fields: dict[str, object]) -> None:
    view["status"] = status
    for key in ("content", "rawOutput", "output"):
        if key in fields:
            view[key] = fields[key]


async def refuse_early(
    reporter: Reporter, view: JSONObject, tool: str, turn: TurnState, message: str
) -> Outcome:
    """A call refused before the policy saw it (bad arguments, unknown tool, role limits)."""
    await reporter.entry(
        f"{tool}: refused before running",
        source="tool",
        parent=turn.task_entry,
        todo="FAILED",
        properties={"TOOL": tool, "DECISION": "deny"},
        body=[text(message)],
    )
    fields: dict[str, object] = {"rawOutput": {"error": message}}
    _merge(view, "failed", fields)
    await reporter.update(
        "tool_call_update", toolCallId=view["toolCallId"], status="failed", **fields
    )
    return Outcome("failed", {"error": message}, view=dict(view))


def _props(p: Prepared, raw: JSONObject) -> Props:
    verdict = p.verdict
    props: Props = {
        "TOOL": p.spec.name,
        "DECISION": verdict.decision.value,
        "RISK": verdict.risk.value,
    }
    if p.paths:
        props["PATH"] = p.paths[0][1]
    if p.spec.external is not None:
        props.update(p.spec.external.log_properties())
    if isinstance(raw.get("line") or raw.get("start_line"), int):
        props["LINE"] = int(raw.get("line") or raw.get("start_line") or 1)
    return props


def _body(p: Prepared, raw: JSONObject, note: str | None) -> Body:
    verdict = p.verdict
    body: Body = []
    if p.command is not None:
        body.append(src(p.command, "sh"))
    elif raw and not p.spec.edits:
        body.append(src(json.dumps(raw, ensure_ascii=False, indent=1), "json"))
    if verdict.decision is not Decision.ALLOW:
        body.append(
            text(f"Policy: {verdict.decision.value} ({verdict.risk.value}): {verdict.reason}")
        )
    if note is not None:
        body.append(text(note))
    if p.diff:
        body.append(src(p.diff, "diff"))
    return body


@dataclass
class CallRecord:
    """The log entry and the client's view of one decided call, written in pairs."""

    reporter: Reporter
    call_id: str
    parent: str
    title: str
    prepared: Prepared
    props: Props
    body: Body
    view: JSONObject = field(default_factory=dict)
    entry_id: str = field(default="")

    @classmethod
    def of(
        cls,
        reporter: Reporter,
        call_id: str,
        turn: TurnState,
        title: str,
        raw: JSONObject,
        prepared: Prepared,
        note: str | None,
        view: JSONObject | None = None,
    ) -> CallRecord:
        return cls(
            reporter,
            call_id,
            turn.task_entry,
            title,
            prepared,
            _props(prepared, raw),
            _body(prepared, raw, note),
            view if view is not None else view_of(call_id, title, prepared.spec.kind, raw),
        )

    async def _client(self, status: str, **fields: object) -> None:
        _merge(self.view, status, fields)
        await self.reporter.update(
            "tool_call_update", toolCallId=self.call_id, status=status, **fields
        )

    def _outcome(self, status: str, payload: JSONObject) -> Outcome:
        return Outcome(status, payload, view=dict(self.view))

    # -- a call that never runs ----------------------------------------------------

    async def denied(self, verdict: Verdict) -> Outcome:
        await self.reporter.entry(
            self.title,
            source="tool",
            parent=self.parent,
            todo="REJECTED",
            properties=self.props,
            body=self.body,
        )
        message = f"Refused by the safety policy: {verdict.reason}"
        await self._client("failed", rawOutput={"error": message, "decision": "deny"})
        return self._outcome(
            "denied", {"error": message, "decision": "deny", "risk": verdict.risk.value}
        )

    async def dry_run(self, verdict: Verdict) -> Outcome:
        await self.reporter.entry(
            f"[dry-run] {self.title}",
            source="tool",
            parent=self.parent,
            todo="DONE",
            properties={**self.props, "DRY_RUN": "t"},
            body=self.body,
        )
        await self._client("completed", rawOutput={"dry_run": True})
        return self._outcome(
            "completed",
            {
                "dry_run": True,
                "decision": verdict.decision.value,
                "note": "dry-run: nothing was executed",
            },
        )

    # -- waiting for the user --------------------------------------------------------

    async def open(self, *, waiting: bool) -> str:
        """The call's entry in the log (WAIT while the user decides)."""
        self.entry_id = await self.reporter.entry(
            self.title,
            source="tool",
            parent=self.parent,
            todo="WAIT" if waiting else None,
            properties=self.props,
            body=self.body,
        )
        return self.entry_id

    async def cancelled_while_waiting(self) -> None:
        await self.reporter.change(
            self.entry_id, todo="REJECTED", body=[text("Cancelled before a decision was made.")]
        )
        await self._client("failed", rawOutput={"error": "cancelled while waiting for approval"})

    async def cancelled(self) -> None:
        await self.reporter.change(self.entry_id, todo="REJECTED", body=[text("Cancelled.")])

    async def rejected(self, why: str) -> Outcome:
        await self.reporter.change(
            self.entry_id,
            todo="REJECTED",
            properties={"DECISION": "rejected"},
            body=[text(f"Rejected by the user: {why}")],
        )
        await self._client("failed", rawOutput={"error": "rejected by the user", "reason": why})
        return self._outcome(
            "rejected", {"error": "The user rejected this step.", "user_reason": why}
        )

    async def approved(self, option: str) -> None:
        decision = "approved" if option == "allow_once" else "approved-session"
        await self.reporter.change(
            self.entry_id, todo="APPROVED", properties={"DECISION": decision}
        )

    # -- running -------------------------------------------------------------------

    async def running(self) -> None:
        await self._client("in_progress")

    async def finished(self, result: ToolResult, duration_ms: int) -> Outcome:
        payload = result.payload
        status = "failed" if result.failed else "completed"
        log_body: Body = []
        shown = result.log_text
        if shown and result.log_omitted:
            # Clipped already, as the model got it: the log says the same count.
            log_body.append(src(shown, "text", link=result.log_path, omitted=result.log_omitted))
        elif shown:
            clipped = clip_lines(shown)
            log_body.append(
                src(clipped.text, "text", link=result.log_path, omitted=clipped.omitted_lines)
            )
        elif "error" in payload:
            log_body.append(text(f"Error: {payload['error']}"))
        if isinstance(payload.get("diff"), str) and payload["diff"] and not self.prepared.diff:
            log_body.append(src(payload["diff"], "diff"))
        if isinstance(payload.get("hook_notes"), str):  # what the post-tool hooks added
            log_body.extend([text("Added by hooks:"), src(payload["hook_notes"], "text")])
        done_props: Props = {"DURATION_MS": duration_ms}
        if isinstance(payload.get("sandbox"), str):
            done_props["SANDBOX"] = payload["sandbox"]
        if "exit_code" in payload and payload["exit_code"] is not None:
            done_props["EXIT_CODE"] = payload["exit_code"]
        await self.reporter.change(
            self.entry_id,
            todo="DONE" if status == "completed" else "FAILED",
            properties=done_props,
            body=log_body,
        )
        content: list[JSONObject] = []
        p = self.prepared
        if isinstance(payload.get("diff"), str) and p.paths:
            # The texts planned before the write, when the write did what was planned.
            texts = p.texts if payload["diff"] == p.diff else None
            content.append(diff_item(p.paths[0][1], payload["diff"], texts))
        fields: dict[str, object] = {
            "content": content,
            "rawOutput": {k: payload[k] for k in _CLIENT_KEEP if k in payload},
        }
        output = card_output(result)
        if output is not None:
            fields["output"] = output
        await self._client(status, **fields)
        return self._outcome(status, payload)
