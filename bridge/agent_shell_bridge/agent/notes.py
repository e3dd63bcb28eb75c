"""Notes for the model about what happened outside its own steps.

When the user does something the model cannot see (undoes a turn's edits in
Emacs), the bridge queues a note in the session; the next request carries it as
framed data, never as the user's words or as instructions.
"""

from __future__ import annotations

from ..session import SessionState

__all__ = ["NOTE_CLOSE", "NOTE_OPEN", "deliver_notes", "queue_note"]

NOTE_OPEN = "[SESSION_NOTE from agent-shell]"
NOTE_CLOSE = "[/SESSION_NOTE]"


def queue_note(state: SessionState, note: str) -> None:
    state.pending_notes.append(note)


def _framed(notes: list[str]) -> str:
    body = "\n".join(f"- {n}" for n in notes).replace(NOTE_CLOSE, "[/SESSION_NOTE\u200b]")
    return (
        f"{NOTE_OPEN}\n{body}\n{NOTE_CLOSE}\n"
        "(A note from agent-shell about what changed outside your steps; it is not the "
        "user's request.)"
    )


def deliver_notes(state: SessionState) -> bool:
    """Put the queued notes into the history just before the next request.

    At a turn's start they go in front of the user's prompt (one user message, as
    some providers refuse two in a row); mid-turn they follow the tool results.
    """
    if not state.pending_notes:
        return False
    framed = _framed(state.pending_notes)
    state.pending_notes = []
    last = state.messages[-1] if state.messages else None
    if last is not None and last.get("role") == "user" and isinstance(last.get("content"), str):
        state.messages[-1] = {**last, "content": f"{framed}\n\n{last['content']}"}
    else:
        state.messages.append({"role": "user", "content": framed})
    return True
