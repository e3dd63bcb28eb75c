"""The user undid a turn's edits in Emacs: the log records it, the model is told.

Undo happens in Emacs (``agent-shell-undo-turn`` restores files from snapshots), out
of the model's sight. What the model read of those files is stale, so it must read
them again; the next request carries a framed note saying so.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from ...types import JSONObject
from ..conversation.messages import Conversation
from ..session.reporter import src, text

if TYPE_CHECKING:
    from ..session.live import LiveSession

__all__ = ["record_undo"]

_MAX_LISTED = 50


def _prompt_of(visible: Sequence[JSONObject], turn_id: str) -> str | None:
    for item in visible:
        if item.get("turnId") == turn_id and item.get("role") == "user":
            first = str(item.get("text") or "").strip().splitlines()
            return first[0][:120] if first else None
    return None


async def record_undo(live: LiveSession, turn_id: str, paths: list[str]) -> None:
    """Forget the reads of ``paths``, queue the note, log the undo and checkpoint."""
    state = live.state
    conversation = Conversation(live.state)
    prompt = _prompt_of(conversation.visible, turn_id)
    label = f"turn {turn_id}" + (f" ({prompt!r})" if prompt else "")
    listed = ", ".join(paths[:_MAX_LISTED]) + (
        f" and {len(paths) - _MAX_LISTED} more" if len(paths) > _MAX_LISTED else ""
    )
    # What the model read of these files is stale: it must read them again.
    for path in paths:
        state.read_hashes.pop(path, None)
    live.read_cache = {k: v for k, v in live.read_cache.items() if k[0] not in set(paths)}
    conversation.queue_note(
        f"The user undid {label} in Emacs: {len(paths)} file(s) were restored to "
        f"their state before that turn, and files it created were deleted: {listed or '-'}. "
        "The changes you made in that turn are gone; read these files again before "
        "relying on or editing them.",
    )
    await live.reporter.entry(
        f"Undo: {label} undone by the user, {len(paths)} file(s) restored",
        source="user",
        parent=None,
        properties={"UNDO_OF": turn_id, "FILES": len(paths)},
        body=[text("Restored from the turn's snapshots:"), src("\n".join(paths), "text")]
        if paths
        else [],
    )
    conversation.show(f"[the user undid {label}]")
    await live.checkpoint()
