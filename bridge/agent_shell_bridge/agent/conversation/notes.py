"""Notes for the model about what happened outside its own steps.

When the user does something the model cannot see (undoes a turn's edits in
Emacs), the bridge queues a note in the session (``Conversation.queue_note``); the
next request carries it as framed data (``Conversation.deliver_notes``), never as
the user's words or as instructions.
"""

from __future__ import annotations

__all__ = ["NOTE_CLOSE", "NOTE_OPEN", "frame_notes"]

NOTE_OPEN = "[SESSION_NOTE from agent-shell]"
NOTE_CLOSE = "[/SESSION_NOTE]"


def frame_notes(notes: list[str]) -> str:
    """The notes as one framed block of data, its closing marker unforgeable."""
    body = "\n".join(f"- {n}" for n in notes).replace(NOTE_CLOSE, "[/SESSION_NOTE\u200b]")
    return (
        f"{NOTE_OPEN}\n{body}\n{NOTE_CLOSE}\n"
        "(A note from agent-shell about what changed outside your steps; it is not the "
        "user's request.)"
    )
