"""Plans the user edits before the agent follows them.

``propose_plan`` sends the plan as a ``plan`` update and asks the client with the
request ``session/request_plan``; the user deletes, reorders or rewrites steps and
approves or rejects. The plan that comes back — not the one proposed — is stored on
the session state and given to the model, so later ``complete_step`` numbers refer
to the edited plan. A client without that method (``agent-shell-bridge run``) is
asked through the ordinary permission path instead, so ``--approve`` decides.

``complete_step`` proves a step before ticking it: the step's ``verify`` command
goes through the executor (handed in as ``run_tool``) as a ``run_test`` call — the
same policy, permission request, process runner and test summariser as any command
— and a step whose verification does not pass is reported failed, never done.
"""

from __future__ import annotations

import json
import logging
import re
import secrets
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ...errors import MethodNotFound, ToolFailed
from ...model.types import ToolCall
from ...tools.catalogue import CompleteStepArgs, ProposePlanArgs
from ...tools.results import Outcome, ToolResult
from ...transport.events import ClientError
from ...types import JSONObject, Risk
from ..session.approval import PermissionRequest
from ..session.reporter import text

if TYPE_CHECKING:
    from ..session.live import LiveSession
    from ..session.turnstate import TurnState

__all__ = [
    "Plan",
    "PlanStep",
    "RunTool",
    "complete_step",
    "parse_plan_answer",
    "plan_checklist",
    "plan_text",
    "plan_update",
    "propose_plan",
]

log = logging.getLogger(__name__)

# The executor's entry point, handed in so a step's verification goes through it.
RunTool = Callable[[ToolCall, "TurnState"], Awaitable[Outcome]]

StepStatus = Literal["pending", "in_progress", "completed", "failed"]
_BOX = {"pending": " ", "in_progress": "-", "completed": "X", "failed": " "}
_SPACE = re.compile(r"\s+")
_METHOD_NOT_FOUND = MethodNotFound.code


# -- the plan itself -------------------------------------------------------------


@dataclass
class PlanStep:
    title: str
    files: list[str] = field(default_factory=list)
    expected: str = ""
    verify: str | None = None
    status: StepStatus = "pending"
    note: str = ""

    def brief(self) -> JSONObject:
        return {
            "title": self.title,
            "files": list(self.files),
            "expected": self.expected,
            "verify": self.verify,
        }


@dataclass
class Plan:
    """A plan as stored on the session state (``SessionState.plan``)."""

    plan_id: str
    goal: str
    steps: list[PlanStep]
    risks: list[str] = field(default_factory=list)
    outcome: str = "proposed"  # proposed | approved | rejected | done
    edited: bool = False
    reason: str = ""
    log_entry_id: str = ""
    log_path: str = ""

    def to_json(self) -> JSONObject:
        return asdict(self)

    @classmethod
    def from_json(cls, data: JSONObject) -> Plan:
        known = set(PlanStep.__dataclass_fields__)
        steps = [PlanStep(**{k: v for k, v in s.items() if k in known}) for s in data["steps"]]
        fields = {k: v for k, v in data.items() if k in cls.__dataclass_fields__}
        fields["steps"] = steps
        return cls(**fields)

    def shape(self) -> JSONObject:
        """What the user can change: compared to tell whether the plan was edited."""
        return {
            "goal": self.goal,
            "steps": [s.brief() for s in self.steps],
            "risks": list(self.risks),
        }

    def for_model(self) -> JSONObject:
        steps = [{"number": n, **s.brief()} for n, s in enumerate(self.steps, 1)]
        return {"goal": self.goal, "steps": steps, "risks": list(self.risks)}

    def progress(self) -> str:
        done = sum(1 for s in self.steps if s.status == "completed")
        return f"{done}/{len(self.steps)} steps done"


def _line(value: str) -> str:
    return _SPACE.sub(" ", value).strip()


def plan_checklist(plan: Plan) -> str:
    """The plan as an org checklist: one ``- [ ]`` item per step, details as sub-items."""
    lines = [f"Goal: {_line(plan.goal)}"]
    for number, step in enumerate(plan.steps, 1):
        failed = " (FAILED)" if step.status == "failed" else ""
        lines.append(f"- [{_BOX[step.status]}] {number}. {_line(step.title)}{failed}")
        if step.files:
            lines.append("  - files: " + ", ".join(_line(f) for f in step.files))
        if step.expected:
            lines.append(f"  - expected: {_line(step.expected)}")
        if step.verify:
            lines.append(f"  - verify: {_line(step.verify)}")
    for risk in plan.risks:
        lines.append(f"Risk: {_line(risk)}")
    return "\n".join(lines)


def plan_update(plan: Plan) -> JSONObject:
    """Fields of the ``plan`` session update: ACP's entries plus our own."""
    return {
        "planId": plan.plan_id,
        "entries": [
            {"content": s.title, "status": s.status, "priority": "medium"} for s in plan.steps
        ],
        "goal": plan.goal,
        "steps": [{**s.brief(), "status": s.status, "note": s.note} for s in plan.steps],
        "risks": list(plan.risks),
        "outcome": plan.outcome,
    }


def _status(value: object) -> StepStatus:
    for status in ("in_progress", "completed", "failed"):
        if value == status:
            return status
    return "pending"


def plan_text(update: JSONObject) -> str:
    """A ``plan`` update as the org checklist, for clients that print it (``run``)."""
    steps = [
        PlanStep(
            title=str(s.get("title", "")),
            files=[str(f) for f in s.get("files") or []],
            expected=str(s.get("expected") or ""),
            verify=s.get("verify") or None,
            status=_status(s.get("status")),
        )
        for s in update.get("steps") or []
        if isinstance(s, dict)
    ]
    plan = Plan(
        plan_id=str(update.get("planId", "")),
        goal=str(update.get("goal", "")),
        steps=steps,
        risks=[str(r) for r in update.get("risks") or []],
    )
    return f"Plan ({update.get('outcome', 'proposed')}):\n{plan_checklist(plan)}"


# -- the client's answer (wire boundary) -------------------------------------------


class _Wire(BaseModel):
    model_config = ConfigDict(extra="ignore")


class _StepIn(_Wire):
    title: str = Field(min_length=1, max_length=300)
    files: list[str] = Field(default_factory=list, max_length=200)
    expected: str = ""
    verify: str | None = Field(None, max_length=10_000)


class _PlanIn(_Wire):
    goal: str = Field(min_length=1)
    steps: list[_StepIn] = Field(min_length=1, max_length=50)
    risks: list[str] = Field(default_factory=list)


class _AnswerIn(_Wire):
    outcome: Literal["approved", "rejected"]
    plan: _PlanIn | None = None
    reason: str | None = None


@dataclass(frozen=True, slots=True)
class PlanAnswer:
    approved: bool
    plan: Plan | None
    reason: str


def parse_plan_answer(result: object, proposed: Plan) -> PlanAnswer:
    """Read the client's answer; anything malformed counts as a rejection."""
    try:
        answer = _AnswerIn.model_validate(result)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(x) for x in e['loc']) or 'answer'}: {e['msg']}"
            for e in exc.errors(include_url=False, include_input=False)
        )
        return PlanAnswer(False, None, f"the client's answer was malformed ({problems})")
    reason = (answer.reason or "").strip()
    if answer.outcome == "rejected":
        return PlanAnswer(False, None, reason)
    if answer.plan is None:
        return PlanAnswer(True, proposed, reason)
    edited = Plan(
        plan_id=proposed.plan_id,
        goal=answer.plan.goal.strip(),
        steps=[
            PlanStep(
                title=s.title.strip(),
                files=[f.strip() for f in s.files if f.strip()],
                expected=s.expected.strip(),
                verify=(s.verify or "").strip() or None,
            )
            for s in answer.plan.steps
        ],
        risks=[r.strip() for r in answer.plan.risks if r.strip()],
    )
    return PlanAnswer(True, edited, reason)


# -- the tools ------------------------------------------------------------------


async def _send_update(live: LiveSession, plan: Plan) -> None:
    await live.reporter.update("plan", **plan_update(plan))


async def _store(live: LiveSession, plan: Plan) -> None:
    live.state.plan = plan.to_json()
    await live.checkpoint()


async def _log_change(live: LiveSession, plan: Plan, **change: Any) -> None:
    # A resumed session writes a new log file, where the old entry does not exist.
    if plan.log_entry_id and plan.log_path == live.state.log_path:
        await live.reporter.change(plan.log_entry_id, **change)


async def _ask_client(live: LiveSession, call: ToolCall, plan: Plan) -> PlanAnswer:
    params: JSONObject = {
        "sessionId": live.state.id,
        "toolCallId": call.id,
        "logEntryId": plan.log_entry_id,
        "planId": plan.plan_id,
        **plan.shape(),
    }
    try:
        result = await live.client.hub.request("session/request_plan", params, timeout_s=None)
    except ClientError as exc:
        if exc.client_code != _METHOD_NOT_FOUND:
            return PlanAnswer(False, None, f"the client failed to show the plan: {exc.message}")
        return await _ask_permission(live, call, plan)
    return parse_plan_answer(result, plan)


async def _ask_permission(live: LiveSession, call: ToolCall, plan: Plan) -> PlanAnswer:
    """No plan editor on the client: approve the plan as proposed, or not, per step."""
    request = PermissionRequest(
        session_id=live.state.id,
        tool_call_id=call.id,
        tool="propose_plan",
        title=f"propose_plan {_line(plan.goal)}",
        kind="think",
        raw_input=plan.shape(),
        risk=Risk.WRITE,
        reason="approve this plan as proposed (this client cannot edit plans)",
        log_entry_id=plan.log_entry_id,
        diff=plan_checklist(plan),
    )
    answer = await live.approver.ask(request)
    if answer.approved:
        return PlanAnswer(True, plan, "")
    why = answer.reason or "not approved"
    return PlanAnswer(
        False,
        None,
        f"no client could review the plan and it was not approved ({why}); "
        "approve plans with --approve writes or --approve all",
    )


async def propose_plan(
    live: LiveSession, call: ToolCall, args: ProposePlanArgs, turn: TurnState
) -> ToolResult:
    """The ``propose_plan`` tool: show the plan, let the user edit it, keep their version."""
    proposed = Plan(
        plan_id="p" + secrets.token_hex(4),
        goal=args.goal,
        steps=[
            PlanStep(title=s.title, files=list(s.files), expected=s.expected, verify=s.verify)
            for s in args.steps
        ],
        risks=list(args.risks),
    )
    proposed.log_path = live.state.log_path
    proposed.log_entry_id = await live.reporter.entry(
        f"Plan: {_line(proposed.goal)}",
        source="model",
        parent=turn.task_entry,
        todo="WAIT",
        properties={"PLAN_ID": proposed.plan_id, "STEPS": len(proposed.steps)},
        body=[text(plan_checklist(proposed))],
    )
    await _store(live, proposed)
    await _send_update(live, proposed)
    answer = await _ask_client(live, call, proposed)
    if not answer.approved or answer.plan is None:
        proposed.outcome = "rejected"
        proposed.reason = answer.reason
        await _store(live, proposed)
        await _send_update(live, proposed)
        await _log_change(
            live,
            proposed,
            todo="REJECTED",
            properties={"OUTCOME": "rejected"},
            body=[text(f"Rejected: {answer.reason or 'no reason given'}")],
        )
        rejected: JSONObject = {
            "outcome": "rejected",
            "planId": proposed.plan_id,
            "user_reason": answer.reason or "no reason given",
            "error": f"plan rejected: {answer.reason or 'no reason given'}",
            "instruction": "The user rejected this plan. Do not carry it out. Take the "
            "reason into account, then propose a different plan or ask the user.",
        }
        return ToolResult(rejected, failed=True)

    plan = answer.plan
    plan.outcome = "approved"
    plan.edited = plan.shape() != proposed.shape()
    plan.reason = answer.reason
    plan.log_entry_id, plan.log_path = proposed.log_entry_id, proposed.log_path
    await _store(live, plan)
    await _send_update(live, plan)
    body = [text("Approved as edited by the user:"), text(plan_checklist(plan))]
    await _log_change(
        live,
        plan,
        todo="APPROVED",
        properties={"OUTCOME": "approved", "EDITED": "yes" if plan.edited else "no"},
        body=body if plan.edited else [text("Approved as proposed.")],
    )
    how = "as edited by the user" if plan.edited else "as proposed"
    approved: JSONObject = {
        "outcome": "approved",
        "planId": plan.plan_id,
        "edited": plan.edited,
        "plan": plan.for_model(),
        "user_note": answer.reason or None,
        "instruction": f"The user approved the plan {how}. Follow exactly this plan: these "
        "steps, in this order, numbered as here; do not do steps that are not in it. After "
        "finishing each step call complete_step with its number here.",
    }
    return ToolResult(approved)


def _current_plan(live: LiveSession) -> Plan:
    data = getattr(live.state, "plan", None)
    if not data:
        raise ToolFailed("There is no plan in this session; call propose_plan first")
    plan = Plan.from_json(data)
    if plan.outcome not in ("approved", "done"):
        raise ToolFailed(f"The current plan was not approved (it is {plan.outcome})")
    return plan


def _verification_detail(status: str, payload: JSONObject) -> str:
    if payload.get("dry_run"):
        return "dry-run: the verification was recorded, not run"
    if status == "denied":
        return str(payload.get("error", "refused by the safety policy"))
    if status == "rejected":
        why = payload.get("user_reason") or "no reason given"
        return f"the user rejected the verification command ({why})"
    summary = payload.get("summary") if isinstance(payload.get("summary"), dict) else None
    parts = [f"exit {payload.get('exit_code')}"]
    if summary:
        for key in ("passed", "failed", "errors"):
            if summary.get(key) is not None:
                parts.append(f"{summary[key]} {key}")
    if payload.get("error"):
        parts.append(str(payload["error"]))
    return ", ".join(parts)


async def complete_step(
    live: LiveSession, call: ToolCall, args: CompleteStepArgs, turn: TurnState, run_tool: RunTool
) -> ToolResult:
    """The ``complete_step`` tool: verify the step through ``run_tool``, then tick it."""
    plan = _current_plan(live)
    number: int = args.step
    if number > len(plan.steps):
        raise ToolFailed(
            f"The approved plan has {len(plan.steps)} steps; there is no step {number}"
        )
    step = plan.steps[number - 1]
    step.status = "in_progress"
    await _send_update(live, plan)

    result: JSONObject = {"step": number, "title": step.title}
    if step.verify:
        check = ToolCall(
            id=f"{call.id}-verify",
            name="run_test",
            arguments=json.dumps({"command": step.verify}, ensure_ascii=False),
        )
        outcome = await run_tool(check, turn)
        passed = outcome.status == "completed"
        detail = _verification_detail(outcome.status, outcome.payload)
        verification: JSONObject = {
            "command": step.verify,
            "status": outcome.status,
            "detail": detail,
        }
        for key in ("exit_code", "summary", "log_ref", "error", "decision"):
            if key in outcome.payload:
                verification[key] = outcome.payload[key]
        result["verification"] = verification
    else:
        passed, detail = True, "no verification command in the plan"
    step.status = "completed" if passed else "failed"
    step.note = _line(args.note or detail)[:500]
    if all(s.status == "completed" for s in plan.steps):
        plan.outcome = "done"
    await _store(live, plan)
    await _send_update(live, plan)

    box = "X" if passed else " "
    verdict = "done" if passed else "FAILED"
    await _log_change(
        live,
        plan,
        todo="DONE" if plan.outcome == "done" else None,
        body=[text(f"- [{box}] {number}. {_line(step.title)}: {verdict} ({detail})")],
    )
    result["status"] = step.status
    result["progress"] = plan.progress()
    if not passed:
        result["error"] = (
            f"Step {number} is not done: its verification did not pass ({detail}). "
            "Fix the problem and call complete_step again."
        )
    return ToolResult(result, failed=not passed)
