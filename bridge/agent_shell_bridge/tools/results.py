"""What a tool hands back, and what the executor hands back for one call.

A :class:`ToolResult` is a tool's own answer: the payload the model sees, whether
the tool failed, and the full text (and its saved file) that the action log shows
in place of the clipped payload. An :class:`Outcome` is the executor's answer for
one call, after the policy, the user and the tool had their say.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..types import JSONObject

__all__ = ["Outcome", "ToolResult"]


@dataclass(slots=True)
class ToolResult:
    payload: JSONObject
    failed: bool = False
    # The full output for the action log (the payload may be clipped) and where it is saved.
    log_text: str | None = None
    # Lines already left out of log_text (each gap marked in it): what the model was told.
    log_omitted: int = 0
    log_path: str | None = None


@dataclass(frozen=True, slots=True)
class Outcome:
    status: str  # completed | failed | denied | rejected
    payload: JSONObject
    # The call as the client last saw it (id, title, kind, input, status, content),
    # kept in the history so a resumed session shows the same card.
    view: JSONObject | None = None

    @property
    def failed(self) -> bool:
        return self.status != "completed"
