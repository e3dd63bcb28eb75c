"""A search result of the memory index (shared by the index, ranking and injection)."""

from __future__ import annotations

from typing import Any, NamedTuple

__all__ = ["MemoryHit", "clamp_text"]


class MemoryHit(NamedTuple):
    """One search result; ``path`` is absolute, ``score`` higher is better.

    A named tuple rather than a dataclass: the one-shot search imports nothing more.
    """

    path: str
    title: str
    project: str
    score: float
    summary: str
    date: str
    task_type: str
    status: str = ""  # the review state: new, accepted ('' before reviews existed)

    def to_dict(self) -> dict[str, Any]:
        return self._asdict()


def clamp_text(text: str, limit: int) -> str:
    """Collapse whitespace to single spaces and cut to ``limit`` characters with ``…``."""
    flat = " ".join(text.split())
    if len(flat) <= limit:
        return flat
    return flat[: max(limit - 1, 0)].rstrip() + "…"
