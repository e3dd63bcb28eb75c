"""``session/undo_turn_done``: the user undid a turn's edits in Emacs.

The client reports it here; agent/undo.py records it in the log and queues a note
for the model's next request: the changes are gone, read again.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from ..runtime import Runtime
from ..transport.rpc import Dispatcher
from ..wire import Params
from .session import session_of

__all__ = ["register"]


class UndoParams(Params):
    sessionId: str
    turnId: str = Field(min_length=1, max_length=120)
    paths: list[str] = Field(default_factory=list, max_length=10_000)


def register(d: Dispatcher[Runtime]) -> None:
    @d.method("session/undo_turn_done", UndoParams)
    async def undo_turn_done(rt: Runtime, p: UndoParams) -> dict[str, Any]:
        from ..agent.turn.undo import record_undo

        live = session_of(rt, p.sessionId)
        await record_undo(live, p.turnId, [x[:500] for x in p.paths])
        return {"recorded": True, "noteQueued": True}
