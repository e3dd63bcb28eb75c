"""A session's conversation: its messages, the window they fit in, and what frames them.

- :mod:`.messages`: the model's messages and the history the user sees;
- :mod:`.budget`: keeping the conversation inside the model's window;
- :mod:`.system_prompt`: the system prompt;
- :mod:`.instructions`: nested AGENTS.md joining as the agent reaches them;
- :mod:`.memory`: what to inject from memory, and when to extract;
- :mod:`.notes`: notes for the model about what happened outside its steps.

The names below load with their module on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..._face import lazy_face

if TYPE_CHECKING:
    from .messages import Conversation

__all__ = [
    "Conversation",
]

_WHERE = {
    "Conversation": "messages",
}

__getattr__ = lazy_face(__name__, _WHERE)
