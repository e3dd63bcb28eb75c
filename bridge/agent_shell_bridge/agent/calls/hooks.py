"""The hooks around a step, the user's in Emacs and the project's commands: they may
tighten, never loosen.

When the client says it has them (``session/prompt``'s ``hooks``), the bridge asks it
with ``hook/pre_tool`` after the policy judged a call and before anything else: the
answer may deny the call (with a reason the model sees), ask where the policy allowed,
or rewrite the arguments, which the policy then judges again from scratch. A hook
cannot turn a policy's deny or ask into an allow. ``hook/post_tool`` gets the call and
its result; text it returns is added to the result. A hook that fails or answers
nonsense is no opinion: the policy's verdict stands. The project's commands in
``.agent-shell/hooks.json`` (:mod:`.project_hooks`) answer in the same shape and go
through the same rule, after the Emacs hooks.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from ...errors import BridgeError
from ...tools import catalogue as cat
from ...tools.catalogue import ToolSpec
from ...tools.results import ToolResult
from ...types import Decision, JSONObject, Verdict
from .decide import decide
from .prepared import Prepared
from .project_hooks import post_tool_text, pre_tool_answer, project_hooks

if TYPE_CHECKING:
    from ..session.live import LiveSession

__all__ = ["HOOK_TIMEOUT_S", "post_tool_hooks", "pre_tool_hooks"]

log = logging.getLogger(__name__)

HOOK_TIMEOUT_S = 30.0


async def _ask(live: LiveSession, method: str, params: JSONObject) -> JSONObject | None:
    try:
        answer = await live.client.hub.request(method, params, timeout_s=HOOK_TIMEOUT_S)
    except BridgeError as exc:
        log.warning("%s failed: %s", method, exc.message)
        return None
    return answer if isinstance(answer, dict) else None


class _Hooked:
    """A call as the hooks so far left it, and whether one of them asked first."""

    def __init__(self, spec: ToolSpec[Any], args: cat.Args, prepared: Prepared) -> None:
        self.spec = spec
        self.args = args
        self.prepared = prepared
        self.ask: str | None = None

    @property
    def denied(self) -> bool:
        return self.prepared.verdict.decision is Decision.DENY

    async def apply(self, live: LiveSession, answer: JSONObject) -> None:
        """Take one hook's answer; tightening only (the one rule for every hook)."""
        hook = str(answer.get("hook") or "a pre-tool hook")[:200]
        reason = str(answer.get("reason") or "")[:2000]
        new_args = answer.get("args")
        if isinstance(new_args, dict):
            try:
                self.args = self.spec.args.model_validate(new_args)
            except ValidationError:
                self._deny(f"{hook} rewrote the arguments into invalid ones")
                return
            # Judged again: a rewrite never carries the first verdict over.
            self.prepared = await decide(live, self.spec, self.args)
            if self.denied:
                return
        decision = answer.get("decision")
        if decision == "deny":
            self._deny(f"denied by {hook}" + (f": {reason}" if reason else ""))
        elif decision == "ask" and self.ask is None:
            self.ask = f"{hook} asks first" + (f": {reason}" if reason else "")

    def _deny(self, why: str) -> None:
        self.prepared.verdict = Verdict(Decision.DENY, self.prepared.verdict.risk, why)

    def result(self) -> tuple[Prepared, cat.Args]:
        verdict = self.prepared.verdict
        if self.ask is not None and verdict.decision is Decision.ALLOW:
            self.prepared.verdict = Verdict(Decision.CONFIRM, verdict.risk, self.ask)
        return self.prepared, self.args


async def pre_tool_hooks(
    live: LiveSession, spec: ToolSpec[Any], args: cat.Args, prepared: Prepared
) -> tuple[Prepared, cat.Args]:
    """The call as the hooks leave it: a verdict at least as strict as the policy's.

    The Emacs hooks answer first, then the project's commands, each seeing the
    arguments as rewritten so far; a deny ends it, an ask holds whatever follows.
    """
    if prepared.verdict.decision is Decision.DENY:
        return prepared, args
    state = _Hooked(spec, args, prepared)
    if "pre_tool" in live.client_hooks:
        answer = await _ask(
            live,
            "hook/pre_tool",
            {
                "sessionId": live.state.id,
                "tool": spec.name,
                "arguments": args.model_dump(exclude_none=True),
            },
        )
        if answer:
            await state.apply(live, answer)
    for hook in [] if state.denied else await project_hooks(live, "pre_tool", spec.name):
        said = await pre_tool_answer(
            live, hook, spec.name, state.args.model_dump(exclude_none=True)
        )
        if said:
            await state.apply(live, said)
        if state.denied:
            break
    return state.result()


async def post_tool_hooks(
    live: LiveSession, spec: ToolSpec[Any], args: cat.Args, result: ToolResult
) -> ToolResult:
    """``result`` with what the post-tool hooks said added to it, each text under the
    name of the hook that gave it (the model and the log see the same)."""
    notes: list[str] = []
    arguments = args.model_dump(exclude_none=True)
    if "post_tool" in live.client_hooks:
        answer = await _ask(
            live,
            "hook/post_tool",
            {
                "sessionId": live.state.id,
                "tool": spec.name,
                "arguments": arguments,
                "result": result.payload,
                "failed": result.failed,
            },
        )
        said = answer.get("text") if answer else None
        if isinstance(said, str) and said.strip():
            notes.append(f"[agent-shell-post-tool-functions]\n{said[:20_000]}")
    for hook in await project_hooks(live, "post_tool", spec.name):
        said = await post_tool_text(live, hook, spec.name, arguments, result.payload)
        if said:
            notes.append(f"[{hook.name}]\n{said}")
    if not notes:
        return result
    payload = {**result.payload, "hook_notes": "\n\n".join(notes)}
    return ToolResult(
        payload,
        failed=result.failed,
        log_text=result.log_text,
        log_omitted=result.log_omitted,
        log_path=result.log_path,
    )
