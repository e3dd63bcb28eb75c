"""A search result of the memory index (shared by the index, ranking and injection)."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

__all__ = ["MemoryHit"]


@dataclass
class MemoryHit:
    """One search result; ``path`` is absolute, ``score`` higher is better."""

    path: str
    title: str
    project: str
    score: float
    summary: str
    date: str
    task_type: str

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)
