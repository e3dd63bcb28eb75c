"""Tool call ids as clients see them: unique in the session, whatever the provider sent.

Clients key a call's card by its id. Providers repeat ids across turns (``call_0``
every time) or within a step (some local servers); the model keeps its own ids in
the conversation, and clients get the provider's id while it is new in the session,
else the same id with a ``~N`` suffix.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

__all__ = ["CallIds"]


class CallIds:
    """Hands out client ids; seeded with the ids a session's history already shows."""

    def __init__(self, taken: Iterable[str] = ()) -> None:
        self._taken = set(taken)

    @classmethod
    def of_history(cls, visible: Iterable[Mapping[str, Any]]) -> CallIds:
        return cls(
            str(item["toolCallId"])
            for item in visible
            if item.get("role") == "tool" and item.get("toolCallId")
        )

    def assign(self, provider_id: str) -> str:
        base = provider_id or "call"
        candidate, n = base, 1
        while candidate in self._taken:
            n += 1
            candidate = f"{base}~{n}"
        self._taken.add(candidate)
        return candidate
