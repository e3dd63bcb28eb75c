"""Type aliases and small value types shared across the bridge."""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any, Final

__all__ = ["JSON", "Decision", "JSONObject", "Risk", "Verdict"]

JSON = Any
JSONObject = dict[str, Any]


_RISK_RANKS: Final = {"read": 0, "write": 1, "dangerous": 2}


class Risk(enum.StrEnum):
    """How much harm an action can do; a compound action takes its worst part."""

    READ = "read"
    WRITE = "write"
    DANGEROUS = "dangerous"

    @property
    def rank(self) -> int:
        return _RISK_RANKS[self]

    def worst(self, other: Risk) -> Risk:
        return self if self.rank >= other.rank else other


class Decision(enum.StrEnum):
    """What the policy says about one tool call."""

    ALLOW = "allow"
    CONFIRM = "confirm"
    DENY = "deny"


@dataclass(frozen=True, slots=True)
class Verdict:
    """A policy decision with the risk that led to it and a human-readable reason."""

    decision: Decision
    risk: Risk
    reason: str
