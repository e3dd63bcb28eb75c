"""The user's hooks around a step, run in Emacs: they may tighten, never loosen.

When the client says it has them (``session/prompt``'s ``hooks``), the bridge asks it
with ``hook/pre_tool`` after the policy judged a call and before anything else: the
answer may deny the call (with a reason the model sees), ask where the policy allowed,
or rewrite the arguments, which the policy then judges again from scratch. A hook
cannot turn a policy's deny or ask into an allow. ``hook/post_tool`` gets the call and
its result; text it returns is added to the result. A hook that fails or answers
nonsense is no opinion: the policy's verdict stands.
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


async def pre_tool_hooks(
    live: LiveSession, spec: ToolSpec[Any], args: cat.Args, prepared: Prepared
) -> tuple[Prepared, cat.Args]:
    """The call as the hooks leave it: a verdict at least as strict as the policy's."""
    if "pre_tool" not in live.client_hooks or prepared.verdict.decision is Decision.DENY:
        return prepared, args
    answer = await _ask(
        live,
        "hook/pre_tool",
        {
            "sessionId": live.state.id,
            "tool": spec.name,
            "arguments": args.model_dump(exclude_none=True),
        },
    )
    if not answer:
        return prepared, args
    hook = str(answer.get("hook") or "a pre-tool hook")[:120]
    reason = str(answer.get("reason") or "")[:2000]
    new_args = answer.get("args")
    if isinstance(new_args, dict):
        try:
            args = spec.args.model_validate(new_args)
        except ValidationError:
            why = f"{hook} rewrote the arguments into invalid ones"
            return _with(prepared, Verdict(Decision.DENY, prepared.verdict.risk, why)), args
        # Judged again: a rewrite never carries the first verdict over.
        prepared = await decide(live, spec, args)
    decision = answer.get("decision")
    verdict = prepared.verdict
    if decision == "deny":
        why = f"denied by {hook}" + (f": {reason}" if reason else "")
        return _with(prepared, Verdict(Decision.DENY, verdict.risk, why)), args
    if decision == "ask" and verdict.decision is Decision.ALLOW:
        why = f"{hook} asks first" + (f": {reason}" if reason else "")
        return _with(prepared, Verdict(Decision.CONFIRM, verdict.risk, why)), args
    return prepared, args


def _with(prepared: Prepared, verdict: Verdict) -> Prepared:
    prepared.verdict = verdict
    return prepared


async def post_tool_hooks(
    live: LiveSession, spec: ToolSpec[Any], args: cat.Args, result: ToolResult
) -> ToolResult:
    """``result`` with what the post-tool hooks said added to it."""
    if "post_tool" not in live.client_hooks:
        return result
    answer = await _ask(
        live,
        "hook/post_tool",
        {
            "sessionId": live.state.id,
            "tool": spec.name,
            "arguments": args.model_dump(exclude_none=True),
            "result": result.payload,
            "failed": result.failed,
        },
    )
    text = answer.get("text") if answer else None
    if not isinstance(text, str) or not text.strip():
        return result
    payload = {**result.payload, "hook_notes": text[:20_000]}
    return ToolResult(
        payload,
        failed=result.failed,
        log_text=result.log_text,
        log_omitted=result.log_omitted,
        log_path=result.log_path,
    )
