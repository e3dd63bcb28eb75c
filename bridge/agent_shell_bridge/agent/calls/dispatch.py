"""Running one allowed (or approved) tool call: in Emacs, or by its bridge-side handler.

An Emacs-side tool goes to Emacs when the connected Emacs handles it (in a remote
session only the few that look at the buffers visiting its files); otherwise, and
for the bridge's own tools, the handler bound to the tool's catalogue entry
(:mod:`.handlers`) runs it. Each returns a :class:`ToolResult`; what the executor
records of it (log entry, client update) happens in :mod:`.record`.
"""

from __future__ import annotations

from collections.abc import Mapping

from ...errors import ToolFailed
from ...model.types import ToolCall
from ...tools.catalogue import Side
from ...tools.results import ToolResult
from ...types import JSONObject
from ..session.live import LiveSession
from ..session.turnstate import TurnState
from .handlers import Binding, Run, RunTool
from .prepared import Prepared

__all__ = ["execute"]


async def execute(
    live: LiveSession,
    handlers: Mapping[str, Binding],
    call: ToolCall,
    turn: TurnState,
    p: Prepared,
    run_tool: RunTool,
) -> ToolResult:
    """Run the call ``p`` prepared: an MCP server's, Emacs's, or its bound handler's."""
    spec = p.spec
    if spec.external is not None:
        return await spec.external.call(p.args.model_dump())
    if spec.side is Side.EMACS and spec.name in live.emacs_tools:
        result = ToolResult(await _client_call(live, call, turn, p))
    else:
        binding = handlers.get(spec.name)
        if binding is None or binding.spec is not spec:
            raise ToolFailed(f"{spec.name} needs Emacs; no Emacs client is connected")
        result = await binding.handler(Run(live, call, turn, p, run_tool), p.args)
    if spec.edits:
        _note_edit(live, turn, p, result.payload)
    return result


def _note_edit(live: LiveSession, turn: TurnState, p: Prepared, payload: JSONObject) -> None:
    """A written edit: the file's new hash counts as read; the turn keeps its diff."""
    if not isinstance(payload.get("sha256_after"), str):
        return
    display = p.paths[0][1]
    live.state.read_hashes[display] = payload["sha256_after"]
    turn.record_edit(display)
    if isinstance(payload.get("diff"), str):
        turn.diffs.append(payload["diff"])


async def _client_call(
    live: LiveSession, call: ToolCall, turn: TurnState, p: Prepared
) -> JSONObject:
    display = p.paths[0][1] if p.paths else None
    params = {
        "sessionId": live.state.id,
        "toolCallId": p.call_id or call.id,
        "name": p.spec.name,
        "arguments": p.args.model_dump(exclude_none=True),
        "context": {
            "root": str(live.root),
            "op_id": f"{turn.turn_id}-{call.id}"[:120],
            "turn_id": turn.turn_id,
            "session_id": live.state.id,
            "expected_sha256": live.state.read_hashes.get(display) if display else None,
            "extra_roots": [str(x) for x in live.config.extra_allowed_paths],
            # Emacs then uses its own session's remote root; ROOT is only the mirror.
            "remote": live.remote is not None,
        },
    }
    result = await live.client.hub.request(
        "tool/call", params, timeout_s=max(p.spec.timeout_s, live.config.client_tool_timeout_s)
    )
    if not isinstance(result, dict):
        return {"result": result}
    return result
