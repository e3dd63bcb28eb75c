"""One tool call from the model, end to end, as a pipeline of small steps.

refuse (validation, role limits, mode, policy deny) → dry run → approve (ask the
user) → run and record. The policy's part is in :mod:`.decide`, the running in
:mod:`.dispatch`, and the paired action-log / client writes in :mod:`.record`.

The policy decides, not the model: every path is confined, every command parsed
and classified, and anything the policy does not allow outright either waits for
the user or never runs.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from pydantic import ValidationError

from ...errors import BridgeError, Cancelled
from ...model.types import ToolCall
from ...tools import catalogue as cat
from ...tools.catalogue import CATALOGUE, ToolSpec
from ...tools.results import Outcome, ToolResult
from ...types import Decision, JSONObject
from ..conversation.messages import Conversation
from ..session.approval import PermissionRequest
from ..session.grants import add_grant, grant_record
from ..session.live import LiveSession
from ..session.roles import role_refusal
from ..session.turnstate import TurnState, call_signature
from .card import diff_item
from .decide import approval_note, confine_role_writes, decide
from .dispatch import execute
from .handlers import HANDLERS, Binding
from .hooks import post_tool_hooks, pre_tool_hooks
from .ids import CallIds
from .prepared import Prepared
from .record import CallRecord, refuse_early, view_of
from .without_emacs import has_emacs, unavailable_refusal

__all__ = ["Outcome", "ToolExecutor", "describe_call", "signature_of"]

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class _Checked:
    """A call whose arguments are valid for a known tool the turn's role may use."""

    raw: JSONObject
    title: str
    spec: ToolSpec[Any]
    args: cat.Args
    view: JSONObject


def _title(name: str, raw: JSONObject) -> str:
    if name == "delegate" and isinstance(raw.get("task"), str):
        task = raw["task"].strip().splitlines()[0][:80] if raw["task"].strip() else ""
        return f"delegate {raw.get('role')}: {task}"
    main = raw.get("command") or raw.get("path") or raw.get("symbol") or raw.get("pattern")
    if main is None and isinstance(raw.get("paths"), list):
        main = " ".join(str(p) for p in raw["paths"])
    main = main or raw.get("job_id")
    if main and raw.get("background") is True:
        main = f"{main} (background)"
    return f"{name} {main}" if main else name


def _problems(exc: ValidationError) -> str:
    return "; ".join(
        f"{'.'.join(str(x) for x in e['loc']) or 'arguments'}: "
        + e["msg"].removeprefix("Value error, ")
        for e in exc.errors(include_url=False, include_input=False)
    )


class ToolExecutor:
    """Runs the model's tool calls for one session through the pipeline; ``handlers``
    are the bridge-side ones (the calls layer's, with the turn layer's own)."""

    def __init__(self, live: LiveSession, handlers: Mapping[str, Binding] = HANDLERS) -> None:
        self.live = live
        self.handlers = handlers
        self.ids = CallIds.of_history(Conversation(live.state).visible)

    async def run(self, call: ToolCall, turn: TurnState) -> Outcome:
        call_id = self.ids.assign(call.id)
        checked = await self._check(call, call_id, turn)
        if isinstance(checked, Outcome):
            return checked
        prepared = await decide(self.live, checked.spec, checked.args)
        prepared, hooked = await pre_tool_hooks(self.live, checked.spec, checked.args, prepared)
        if hooked is not checked.args:  # rewritten by a hook: show what will run
            raw = hooked.model_dump(exclude_none=True)
            title = _title(call.name, raw)
            view = view_of(call_id, title, checked.spec.kind, raw)
            checked = replace(checked, raw=raw, title=title, args=hooked, view=view)
        prepared = confine_role_writes(turn, prepared)
        prepared.call_id = call_id
        verdict = prepared.verdict
        note = approval_note(self.live, prepared) if verdict.decision is Decision.CONFIRM else None
        record = CallRecord.of(
            self.live.reporter,
            call_id,
            turn,
            checked.title,
            checked.raw,
            prepared,
            note,
            checked.view,
        )
        if verdict.decision is Decision.DENY:
            return await record.denied(verdict)
        # Dry run: no process at all (a "read-only" test run still runs project code)
        # and no write; the bridge's own file reads go ahead.
        if self.live.dry_run and prepared.acts:
            return await record.dry_run(verdict)
        await record.open(waiting=verdict.decision is Decision.CONFIRM)
        if verdict.decision is Decision.CONFIRM:
            rejected = await self._approve(call, checked, prepared, record, note)
            if rejected is not None:
                return rejected
        return await self._run_and_record(call, turn, prepared, record)

    # -- refuse: what never reaches the policy ----------------------------------------

    async def _check(self, call: ToolCall, call_id: str, turn: TurnState) -> _Checked | Outcome:
        live = self.live
        problem: str | None = None
        try:
            raw = call.parsed_arguments()
        except BridgeError as exc:
            raw, problem = {}, exc.message
        title = _title(call.name, raw)
        if turn.role is not None:  # a role's step, shown under its name
            title = f"[{turn.role.name}] {title}"
        spec = CATALOGUE.get(call.name) or live.external_tool(call.name)
        view = view_of(call_id, title, spec.kind if spec else "other", raw)
        # Announced first, even when refused at once: a client's card needs its start.
        await live.reporter.update(
            "tool_call",
            toolCallId=call_id,
            title=title,
            kind=view["kind"],
            status="pending",
            rawInput=raw,
        )
        refuse = functools.partial(refuse_early, live.reporter, view, call.name, turn)
        if problem is not None:
            return await refuse(problem)
        missing = unavailable_refusal(live, call.name, self.handlers)
        if missing is not None:
            return await refuse(missing)
        if spec is None:
            hint = "" if has_emacs(live) else " (no Emacs is connected: its tools are unavailable)"
            return await refuse(f"Unknown tool {call.name!r}{hint}")
        try:
            args = spec.args.model_validate(raw)
        except ValidationError as exc:
            return await refuse(f"Invalid arguments: {_problems(exc)}")
        refusal = role_refusal(turn.role, spec.name)
        if refusal:
            return await refuse(refusal)
        return _Checked(raw, title, spec, args, view)

    # -- approve: the user's yes or no ----------------------------------------------

    async def _approve(
        self,
        call: ToolCall,
        checked: _Checked,
        p: Prepared,
        record: CallRecord,
        note: str | None,
    ) -> Outcome | None:
        """Ask the user; an outcome when the step must not run, else None."""
        live = self.live
        request = PermissionRequest(
            session_id=live.state.id,
            tool_call_id=p.call_id,
            tool=p.spec.name,
            title=checked.title,
            kind=p.spec.kind,
            raw_input=checked.raw,
            risk=p.verdict.risk,
            reason=p.verdict.reason,
            log_entry_id=record.entry_id,
            diff=p.diff,
            note=note,
            command=p.command,
            cwd=p.cwd_text,
            grant_scope=p.grant_scope,
            diff_item=diff_item(p.paths[0][1], p.diff, p.texts) if p.diff and p.paths else None,
        )
        try:
            answer = await live.approver.ask(request)
        except asyncio.CancelledError:
            # The turn was cancelled while the step waited: close the WAIT step
            # in the log and tell the client, then let the cancel go on.
            await asyncio.shield(record.cancelled_while_waiting())
            raise
        if answer.option == "cancelled":
            await record.cancelled()
            raise Cancelled("the turn was cancelled while waiting for approval")
        if not answer.approved:
            return await record.rejected(answer.reason or "no reason given")
        p.by_user = True
        if answer.option == "allow_session":
            add_grant(
                live.state,
                grant_record(p.spec.name, p.command, p.cwd_text, scope=p.grant_scope),
            )
        await record.approved(answer.option)
        return None

    # -- run and record ------------------------------------------------------------

    async def _run_and_record(
        self, call: ToolCall, turn: TurnState, p: Prepared, record: CallRecord
    ) -> Outcome:
        await record.running()
        started = time.monotonic()
        try:
            result = await execute(self.live, self.handlers, call, turn, p, self.run)
        except Cancelled:
            raise
        except BridgeError as exc:  # ToolFailed, ClientError and the rest
            result = ToolResult({"error": exc.message}, failed=True)
        result = await post_tool_hooks(self.live, p.spec, p.args, result)
        duration = int((time.monotonic() - started) * 1000)
        return await record.finished(result, duration)


def describe_call(call: ToolCall) -> str:
    """The one-line title of a call (tool and main argument), as clients show it."""
    try:
        return _title(call.name, call.parsed_arguments())
    except BridgeError:
        return call.name


def signature_of(call: ToolCall) -> str:
    try:
        return call_signature(call.name, call.parsed_arguments())
    except BridgeError:
        return call.name + call.arguments
