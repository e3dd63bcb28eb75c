"""``session/undo_turn_done``: the user undid a turn's edits in Emacs.

Undo happens in Emacs (``agent-shell-undo-turn`` restores files from snapshots), out
of the model's sight. The client reports it here so the action log records it and the
model's next request carries a framed note: the changes are gone, read again.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from ..agent.notes import queue_note
from ..agent.reporter import src, text
from ..rpc import Dispatcher
from ..runtime import Runtime
from ..wire import Params
from .session import session_of

__all__ = ["register"]

_MAX_LISTED = 50


class UndoParams(Params):
    sessionId: str
    turnId: str = Field(min_length=1, max_length=120)
    paths: list[str] = Field(default_factory=list, max_length=10_000)


def _prompt_of(visible: list[dict[str, Any]], turn_id: str) -> str | None:
    for item in visible:
        if item.get("turnId") == turn_id and item.get("role") == "user":
            first = str(item.get("text") or "").strip().splitlines()
            return first[0][:120] if first else None
    return None


def register(d: Dispatcher[Runtime]) -> None:
    @d.method("session/undo_turn_done", UndoParams)
    async def undo_turn_done(rt: Runtime, p: UndoParams) -> dict[str, Any]:
        live = session_of(rt, p.sessionId)
        state = live.state
        paths = [x[:500] for x in p.paths]
        prompt = _prompt_of(state.visible, p.turnId)
        label = f"turn {p.turnId}" + (f" ({prompt!r})" if prompt else "")
        listed = ", ".join(paths[:_MAX_LISTED]) + (
            f" and {len(paths) - _MAX_LISTED} more" if len(paths) > _MAX_LISTED else ""
        )
        # What the model read of these files is stale: it must read them again.
        for path in paths:
            state.read_hashes.pop(path, None)
        live.read_cache = {k: v for k, v in live.read_cache.items() if k[0] not in set(paths)}
        queue_note(
            state,
            f"The user undid {label} in Emacs: {len(paths)} file(s) were restored to "
            f"their state before that turn, and files it created were deleted: {listed or '-'}. "
            "The changes you made in that turn are gone; read these files again before "
            "relying on or editing them.",
        )
        await live.reporter.entry(
            f"Undo: {label} undone by the user, {len(paths)} file(s) restored",
            source="user",
            parent=None,
            properties={"UNDO_OF": p.turnId, "FILES": len(paths)},
            body=[text("Restored from the turn's snapshots:"), src("\n".join(paths), "text")]
            if paths
            else [],
        )
        state.visible.append({"role": "system", "text": f"[the user undid {label}]"})
        await live.checkpoint()
        return {"recorded": True, "noteQueued": True}
