"""Steering a running turn: the user's words for the model's next request.

``session/steer`` keeps the text in the session (``SessionState.pending_steers``,
checkpointed with it) while a turn runs. Before each model call the loop hands the
waiting steers to the model as the user's messages, each with a STEER entry in the
log; after the model's final answer, a steer still waiting makes one more round. A
steer that lands after the turn's last model call is not lost either: the turn's
``turn_end`` carries it back (``steers``) for the client to send as the next prompt.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..conversation.messages import Conversation
from ..session.reporter import text

if TYPE_CHECKING:
    from ..session.live import LiveSession
    from ..session.turnstate import TurnState

__all__ = ["accept_steer", "deliver_steers", "take_leftover_steers"]


def accept_steer(live: LiveSession, words: str) -> bool:
    """Keep ``words`` for the running turn; False when no turn is open to take it.

    Synchronous on purpose: the check and the append happen in one step of the
    event loop, so a turn ending meanwhile either sees the steer or refuses it.
    """
    if not live.turn_open:
        return False
    live.state.pending_steers.append(words)
    return True


async def deliver_steers(live: LiveSession, turn: TurnState) -> int:
    """Put the waiting steers into the conversation before a model call; how many."""
    waiting = live.state.pending_steers
    if not waiting:
        return 0
    live.state.pending_steers = []
    conversation = Conversation(live.state)
    for words in waiting:
        conversation.add_steer(words, turn_id=turn.turn_id)
        first = words.strip().splitlines()[0] if words.strip() else ""
        await live.reporter.entry(
            f"STEER: {first}",
            source="user",
            parent=turn.task_entry,
            properties={"TURN": turn.turn_id},
            body=[text(words)] if "\n" in words.strip() else [],
        )
    await live.checkpoint()
    return len(waiting)


def take_leftover_steers(live: LiveSession) -> list[str]:
    """The steers no model call took (the turn is ending); the session forgets them."""
    left, live.state.pending_steers = live.state.pending_steers, []
    return left
