"""Type aliases and small value types shared across the bridge."""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any, Final

__all__ = ["JSON", "Decision", "JSONObject", "Prices", "Risk", "Verdict"]

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


@dataclass(frozen=True, slots=True)
class Prices:
    """Prices per million tokens, in one currency; the one cost formula.

    The header line (a session's running cost) and the action log's summaries
    (a task's, a role's) all price tokens here, so they cannot disagree.
    """

    input_per_million: float
    output_per_million: float
    cached_input_per_million: float | None = None
    currency: str = "USD"

    def cost(self, input_tokens: int, cached_tokens: int, output_tokens: int) -> float:
        """Price of these tokens; cached input falls back to the input price."""
        cached = min(cached_tokens, input_tokens)
        cached_price = (
            self.cached_input_per_million
            if self.cached_input_per_million is not None
            else self.input_per_million
        )
        total = (
            (input_tokens - cached) * self.input_per_million
            + cached * cached_price
            + output_tokens * self.output_per_million
        )
        return round(total / 1_000_000, 6)
