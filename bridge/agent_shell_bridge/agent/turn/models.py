"""Switching a session's model (``session/set_model``): from the next request on.

Chosen while a turn streams, the model takes over at the next model call, not in
the middle of one. What the previous provider wrote is marked as its own, so its
reasoning is never sent to another provider (model/profiles.py); the log notes the
switch; totals are kept per model from then on (``SessionState.model_totals``).
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from ...config import BridgeConfig
from ...model.profiles import same_provider
from ...types import JSONObject
from ..conversation.messages import Conversation
from ..session.reporter import text

if TYPE_CHECKING:
    from ..session.live import LiveSession
    from ..session.turnstate import TurnState

__all__ = ["apply_pending_model", "choose_model", "model_totals"]


def _where(config: BridgeConfig) -> str:
    return f"{config.model} at {config.api_base}"


async def choose_model(live: LiveSession, config: BridgeConfig, name: str) -> bool:
    """Use ``config``'s model from the next request; True when it is in use already,
    False when it waits for the running turn's next model call."""
    live.pending_model = (config, name)
    if live.busy:
        return False
    await apply_pending_model(live, None)
    return True


async def apply_pending_model(live: LiveSession, turn: TurnState | None) -> bool:
    """Switch to the chosen model, if any, between model calls; True when it did."""
    if live.pending_model is None:
        return False
    config, name = live.pending_model
    live.pending_model = None
    left, left_config = live.model_label, live.config
    if not same_provider(left_config.api_base, config.api_base):
        Conversation(live.state).mark_producer(left_config.api_base)
    if not live.state.model_totals and live.state.totals.model_calls:
        # The calls so far were the first model's: its totals start as the session's.
        live.state.model_totals[left] = replace(live.state.totals)
    live.replace_model(config, name)
    await live.reporter.entry(
        f"Model: switched from {left} to {live.model_label}",
        source="user",
        parent=turn.task_entry if turn is not None else None,
        properties={"MODEL": config.model, "MODEL_NAME": live.model_label, "FROM": left},
        body=[text(f"From {_where(left_config)} to {_where(config)}, from the next request on.")],
    )
    await live.checkpoint()
    return True


def model_totals(live: LiveSession) -> list[JSONObject]:
    """The session's totals per model, and their sum (the session's totals)."""
    return [
        {
            "model": name,
            "inputTokens": t.input_tokens,
            "outputTokens": t.output_tokens,
            "totalTokens": t.total_tokens,
            "costUsd": round(t.cost, 6),
        }
        for name, t in live.state.model_totals.items()
    ]
