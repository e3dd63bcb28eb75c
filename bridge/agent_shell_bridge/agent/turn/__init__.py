"""The turn: the loop within its guards, plans, roles at work, review and undo.

- :mod:`.loop`: perception, action, verification and a report;
- :mod:`.plan`: plans the user edits first;
- :mod:`.delegate`: a role as a sub-session;
- :mod:`.review`: the reviewer after a turn that changed files;
- :mod:`.tools`: the turn's own tools (delegate, plans);
- :mod:`.submit`: a prompt with its ``/NAME`` expanded;
- :mod:`.undo`: a turn the user undid;
- :mod:`.notify`: webhooks when a task ends.

The names below load with their module on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..._face import lazy_face

if TYPE_CHECKING:
    from .loop import run_turn
    from .submit import submit_prompt
    from .tools import ALL_HANDLERS

__all__ = [
    "ALL_HANDLERS",
    "run_turn",
    "submit_prompt",
]

_WHERE = {
    "ALL_HANDLERS": "tools",
    "run_turn": "loop",
    "submit_prompt": "submit",
}

__getattr__ = lazy_face(__name__, _WHERE)
