"""The agent: a live session, its conversation, the tool-call pipeline and the turn.

- :mod:`.session`: a live session and what it holds (store, reporter, approvals, grants,
  roles, turn state, its client link);
- :mod:`.conversation`: messages, the context budget, the system prompt, instructions
  and memories;
- :mod:`.calls`: one tool call: refuse → dry run → approve → place → run → record;
- :mod:`.turn`: the turn loop, plans, roles at work, review, undo;
- :mod:`.opening`: opening a new session and resuming a saved one.

The names below load with their module on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._face import lazy_face

if TYPE_CHECKING:
    from .opening import SessionHost, resume_saved, start_new

__all__ = [
    "SessionHost",
    "resume_saved",
    "start_new",
]

_WHERE = {
    "SessionHost": "opening",
    "resume_saved": "opening",
    "start_new": "opening",
}

__getattr__ = lazy_face(__name__, _WHERE)
