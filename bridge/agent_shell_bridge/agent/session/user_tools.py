"""Tools the user defines in Emacs Lisp (``agent-shell-define-tool``): a session tool source.

Emacs sends the current list with every ``session/prompt`` (``userTools``), so a tool
defined while a session is open is offered from its next turn. Each tool runs in Emacs
through ``tool/call``; the bridge's policy decides from the declared risk: ``read``
runs unasked, ``write`` and ``exec`` wait for the user and may be allowed for the
session (a grant bound to the tool's declaration, so a redefined tool asks again)
unless declared not grantable (``eval_elisp``): then every call asks.
The arguments are checked against the declared types first (:mod:`.user_tool_args`):
a call that does not fit fails before any hook or Emacs sees it. The result is cut
to head and tail like every other output, the whole text saved.
Without Emacs (``run``, ACP) no list arrives; a call that reaches a client that cannot
run Emacs tools fails with a message instead of failing the session.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import re
from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field, field_validator

from ...errors import ToolFailed
from ...tools.catalogue import CATALOGUE, Side, ToolSpec
from ...tools.outputs import clip_lines
from ...tools.results import ToolResult
from ...types import Decision, JSONObject, Risk, Verdict
from ...wire import Params
from .user_tool_args import args_model, check_parameters

if TYPE_CHECKING:
    from .live import LiveSession

__all__ = ["SOURCE_NAME", "UserToolDecl", "UserTools", "set_user_tools"]

SOURCE_NAME = "emacs-user"
_NAME = re.compile(r"\A[A-Za-z][A-Za-z0-9_-]{0,63}\Z")
_TIMEOUT_S = 60.0


class UserToolDecl(Params):
    """One tool as ``agent-shell-define-tool`` declared it (the wire shape)."""

    name: str
    description: str = Field(max_length=4000)
    risk: Literal["read", "write", "exec"] = "read"
    parameters: dict[str, Any] = Field(default_factory=dict)
    # False: every call asks and "allow for this session" is not offered (eval_elisp).
    grantable: bool = True

    @field_validator("parameters")
    @classmethod
    def _parameters(cls, value: dict[str, Any]) -> dict[str, Any]:
        check_parameters(value)  # the arguments' types are checked by the bridge
        return value

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        if not _NAME.match(value):
            raise ValueError(f"tool name {value!r} must be letters, digits, _ or - (64 at most)")
        if value in CATALOGUE or value.startswith("mcp__"):
            raise ValueError(f"tool name {value!r} is taken by a built-in tool")
        return value

    def identity(self) -> str:
        digest = hashlib.sha256(self.model_dump_json().encode()).hexdigest()[:16]
        return f"emacs:{self.name}:{digest}"


class _EmacsTool:
    """Runs one user tool in the connected Emacs (an :class:`ExternalTool`)."""

    def __init__(self, live: LiveSession, decl: UserToolDecl) -> None:
        self.live = live
        self.decl = decl

    def verdict(self) -> Verdict:
        if self.decl.risk == "read":
            return Verdict(Decision.ALLOW, Risk.READ, "a read tool defined in Emacs")
        what = "runs code in Emacs" if self.decl.risk == "exec" else "changes things from Emacs"
        if not self.decl.grantable:  # asks every time, never granted for the session
            return Verdict(Decision.CONFIRM, Risk.DANGEROUS, f"a tool in Emacs that {what}")
        return Verdict(Decision.CONFIRM, Risk.WRITE, f"a tool defined in Emacs that {what}")

    def log_properties(self) -> dict[str, str]:
        return {"TOOL_SOURCE": "emacs", "TOOL_RISK": self.decl.risk}

    def identity(self) -> str:
        return self.decl.identity()

    async def call(self, arguments: JSONObject) -> ToolResult:
        live = self.live
        if not live.client_tools:  # no Emacs: a headless or ACP client
            raise ToolFailed(f"{self.decl.name} is defined in Emacs and unavailable here")
        params: JSONObject = {
            "sessionId": live.state.id,
            "name": self.decl.name,
            "arguments": {k: v for k, v in arguments.items() if v is not None},
            "context": {
                "root": str(live.root),
                "session_id": live.state.id,
                "turn_id": live.turn_id,
                "user_tool": True,
            },
        }
        timeout = max(_TIMEOUT_S, live.config.client_tool_timeout_s)
        answer = await live.client.hub.request("tool/call", params, timeout_s=timeout)
        value = answer.get("result") if isinstance(answer, dict) else answer
        text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, indent=1)
        ref, path = await asyncio.to_thread(live.outputs.save, text)
        clipped = clip_lines(text, ref=ref)
        payload: JSONObject = {"tool": self.decl.name, "content": clipped.text, "log_ref": ref}
        if clipped.truncated:
            payload["truncated"] = True
            payload["omitted_lines"] = clipped.omitted_lines
        return ToolResult(payload, log_text=text, log_path=str(path))


class UserTools:
    """The session's Emacs-defined tools, replaced whole whenever Emacs sends its list."""

    def __init__(self, live: LiveSession) -> None:
        self.live = live
        self._specs: dict[str, ToolSpec[Any]] = {}

    def replace(self, decls: list[UserToolDecl]) -> None:
        specs: dict[str, ToolSpec[Any]] = {}
        for decl in decls:
            schema = dict(decl.parameters) or {"type": "object", "properties": {}}
            specs[decl.name] = ToolSpec(
                decl.name,
                Side.EMACS,
                _risk(decl),
                args_model(decl.name, decl.parameters),
                decl.description,
                _TIMEOUT_S,
                "read" if decl.risk == "read" else ("execute" if decl.risk == "exec" else "edit"),
                input_schema=schema,
                external=_EmacsTool(self.live, decl),
            )
        self._specs = specs

    def specs(self) -> list[ToolSpec[Any]]:
        return list(self._specs.values())

    def spec(self, name: str) -> ToolSpec[Any] | None:
        return self._specs.get(name)

    async def aclose(self) -> None:
        self._specs = {}


def _risk(decl: UserToolDecl) -> Risk:
    if decl.risk == "read":
        return Risk.READ
    return Risk.WRITE if decl.grantable else Risk.DANGEROUS


def set_user_tools(live: LiveSession, decls: list[UserToolDecl]) -> None:
    """Offer ``decls`` from the session's next model request on (replacing the last list)."""
    for source in live.tool_sources:
        if isinstance(source, UserTools):
            source.replace(decls)
            return
    tools = UserTools(live)
    tools.replace(decls)
    live.tool_sources.append(tools)
