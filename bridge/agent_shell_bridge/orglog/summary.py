"""The end-of-task summary entry: what the task consumed, cost and took."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from ..model.types import UsageCounts
from ..types import Prices
from .entries import LogEntry, PropertyValue

__all__ = [
    "TaskUsage",
    "summary_drawer_entry",
]


@dataclass(slots=True)
class TaskUsage(UsageCounts):
    """What one task consumed (the API's reported usage) and how long it took."""

    duration_ms: int = 0

    @classmethod
    def of(cls, counts: UsageCounts, duration_ms: int) -> TaskUsage:
        c = counts
        return cls(
            c.model_calls,
            c.tool_calls,
            c.input_tokens,
            c.output_tokens,
            c.cached_tokens,
            duration_ms,
        )


def _duration_text(ms: int) -> str:
    seconds = ms // 1000
    if seconds < 60:
        return f"{ms / 1000:.1f}s"
    minutes, seconds = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes}m{seconds:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m"


def summary_drawer_entry(
    *,
    entry_id: str,
    session_id: str,
    task_id: str,
    usage: TaskUsage,
    timestamp: datetime,
    prices: Prices | None = None,
    model: str | None = None,
    by_role: dict[str, UsageCounts] | None = None,
    by_model: dict[str, tuple[UsageCounts, Prices | None]] | None = None,
) -> LogEntry:
    """The step closing a task: usage in the drawer, a one-line account as title.

    ``by_role`` splits the usage between the lead and the roles it ran; each gets
    ``TOKENS_<ROLE>`` and, with prices, ``COST_<ROLE>`` (they add up to the total).
    """
    props: dict[str, PropertyValue] = {
        "MODEL_CALLS": usage.model_calls,
        "TOOL_CALLS": usage.tool_calls,
        "TOKENS_IN": usage.input_tokens,
        "TOKENS_OUT": usage.output_tokens,
        "TOKENS_CACHED": usage.cached_tokens,
        "DURATION_MS": usage.duration_ms,
    }
    if model:
        props["MODEL"] = model
    title = (
        f"Summary: {usage.model_calls} model calls, {usage.tool_calls} tool calls, "
        f"{usage.input_tokens} in / {usage.output_tokens} out tokens "
        f"({usage.cached_tokens} cached), {_duration_text(usage.duration_ms)}"
    )
    if by_model:
        # Each model's tokens at its own prices; the cost is their sum.
        cost = 0.0
        for name, (part, part_prices) in by_model.items():
            key = "".join(c if c.isalnum() else "_" for c in name.upper())
            props[f"TOKENS_MODEL_{key}"] = part.total_tokens
            if part_prices is not None:
                props[f"COST_MODEL_{key}"] = part.cost_at(part_prices)
                cost += part.cost_at(part_prices)
        props["COST"] = round(cost, 6)
        title += f", cost {cost:.4f} over {len(by_model)} models"
    elif prices is not None:
        cost = usage.cost_at(prices)
        props["COST"] = cost
        props["CURRENCY"] = prices.currency
        title += f", cost {cost:.4f} {prices.currency}"
    for name, part in (by_role or {}).items():
        key = name.upper().replace("-", "_")
        props[f"TOKENS_{key}"] = part.total_tokens
        if prices is not None:
            props[f"COST_{key}"] = part.cost_at(prices)
    return LogEntry(
        id=entry_id,
        session_id=session_id,
        parent_id=task_id,
        todo=None,
        title=title,
        timestamp=timestamp.isoformat(timespec="seconds"),
        source="bridge",
        properties=props,
    )
