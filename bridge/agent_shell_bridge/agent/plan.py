"""Plans the user edits before the agent follows them (placeholder)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..errors import ToolFailed
from ..model.types import ToolCall
from ..types import JSONObject

if TYPE_CHECKING:
    from .live import LiveSession
    from .turnstate import TurnState

__all__ = ["PLAN_TOOLS", "handle_plan_tool"]

PLAN_TOOLS = frozenset({"propose_plan", "complete_step"})


async def handle_plan_tool(
    live: LiveSession, call: ToolCall, name: str, args: Any, turn: TurnState
) -> JSONObject:
    raise ToolFailed(f"{name} is not available yet")
