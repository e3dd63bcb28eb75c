"""Asking the user before a risky step.

The bridge sends ``session/request_permission`` (ACP's shape) to the client, which
answers when the user presses a key on the WAIT entry of the action log. Headless
runs answer from a fixed policy or a terminal prompt instead.
"""

from __future__ import annotations

import asyncio
import sys
from dataclasses import dataclass
from typing import Literal, Protocol

from ...mcp.naming import is_mcp_name
from ...transport.events import EventHub
from ...types import JSONObject, Risk
from .grants import Grant, grant_record

__all__ = [
    "Answer",
    "Approver",
    "ClientApprover",
    "FixedApprover",
    "PermissionRequest",
    "TerminalApprover",
]

Option = Literal["allow_once", "allow_session", "reject_once", "cancelled"]


@dataclass(frozen=True, slots=True)
class PermissionRequest:
    session_id: str
    tool_call_id: str
    tool: str
    title: str
    kind: str
    raw_input: JSONObject
    risk: Risk
    reason: str
    log_entry_id: str
    diff: str | None = None
    # Where the step runs once approved (inside or outside the sandbox).
    note: str | None = None
    command: str | None = None  # the command that would run (run_test's detected one too)
    cwd: str | None = None  # where it would run
    grant_scope: str | None = None  # what a grant is bound to besides the tool
    # An edit's diff item with its old and new text, for clients that diff themselves.
    diff_item: JSONObject | None = None

    @property
    def offers_session(self) -> bool:
        # "Allow for this session" is for write risk only, never for dangerous steps.
        return self.risk is Risk.WRITE

    def to_params(self) -> JSONObject:
        options: list[JSONObject] = [
            {"optionId": "allow_once", "name": "Allow once", "kind": "allow_once"}
        ]
        if self.offers_session:
            # The label says what the grant covers: an MCP tool's arguments may hold a
            # "command", but its grant covers every call of the tool.
            if self.command is not None:
                what = f"`{self.command}`"
            elif is_mcp_name(self.tool):
                what = f"every {self.tool} call"
            else:
                what = f"{self.tool} edits"
            options.append(
                {
                    "optionId": "allow_session",
                    "name": f"Allow {what} for this session",
                    "kind": "allow_always",
                }
            )
        options.append({"optionId": "reject_once", "name": "Reject", "kind": "reject_once"})
        params: JSONObject = {
            "sessionId": self.session_id,
            "toolCall": {
                "toolCallId": self.tool_call_id,
                "title": self.title,
                "kind": self.kind,
                "rawInput": self.raw_input,
            },
            "options": options,
            "logEntryId": self.log_entry_id,
            "risk": self.risk.value,
            "reason": self.reason,
        }
        if self.diff is not None:
            params["diff"] = self.diff
        if self.diff_item is not None:
            params["toolCall"]["content"] = [self.diff_item]
        if self.note is not None:
            params["note"] = self.note
        if self.offers_session:
            # Exactly what "allow for this session" would grant, for the client to show
            # before the user confirms it.
            params["grant"] = self.grant().to_json()
        return params

    def grant(self) -> Grant:
        """What "allow for this session" grants: this command here, or this kind of edit."""
        return grant_record(self.tool, self.command, self.cwd, scope=self.grant_scope)


@dataclass(frozen=True, slots=True)
class Answer:
    option: Option
    reason: str = ""

    @property
    def approved(self) -> bool:
        return self.option in ("allow_once", "allow_session")


class Approver(Protocol):
    async def ask(self, request: PermissionRequest) -> Answer: ...


class ClientApprover:
    """Ask the connected client; wait as long as the user needs (cancel ends it)."""

    def __init__(self, hub: EventHub) -> None:
        self.hub = hub

    async def ask(self, request: PermissionRequest) -> Answer:
        result = await self.hub.request(
            "session/request_permission", request.to_params(), timeout_s=None
        )
        return parse_answer(result, request)


def parse_answer(result: object, request: PermissionRequest) -> Answer:
    """Read an ACP permission answer; anything unexpected counts as a rejection."""
    if not isinstance(result, dict):
        return Answer("reject_once", "malformed answer from the client")
    outcome = result.get("outcome")
    reason = result.get("reason")
    reason_text = reason if isinstance(reason, str) else ""
    if not isinstance(outcome, dict):
        return Answer("reject_once", "malformed answer from the client")
    if outcome.get("outcome") == "cancelled":
        return Answer("cancelled", reason_text)
    option = outcome.get("optionId")
    if option == "allow_session" and not request.offers_session:
        return Answer("reject_once", "allow for the session is not offered for this step")
    if option in ("allow_once", "allow_session", "reject_once"):
        return Answer(option, reason_text)
    return Answer("reject_once", f"unknown option {option!r}")


class FixedApprover:
    """``--approve none|writes|all`` for scripts: never asks anybody."""

    def __init__(self, level: Literal["none", "writes", "all"]) -> None:
        self.level = level

    async def ask(self, request: PermissionRequest) -> Answer:
        if self.level == "all" or (self.level == "writes" and request.risk is Risk.WRITE):
            return Answer("allow_once")
        return Answer("reject_once", f"not approved (--approve {self.level})")


class TerminalApprover:
    """y/n on the controlling terminal, for interactive headless runs."""

    async def ask(self, request: PermissionRequest) -> Answer:
        note = f"\n  {request.note}" if request.note else ""
        prompt = (
            f"\n[{request.risk.value}] {request.title}\n  {request.reason}{note}\nAllow? [y/N] "
        )
        if request.diff:
            prompt = request.diff + prompt
        reply = await asyncio.to_thread(_ask_tty, prompt)
        return (
            Answer("allow_once") if reply in ("y", "yes") else Answer("reject_once", "user said no")
        )


def _ask_tty(prompt: str) -> str:
    sys.stderr.write(prompt)
    sys.stderr.flush()
    line = sys.stdin.readline()
    return line.strip().lower()
