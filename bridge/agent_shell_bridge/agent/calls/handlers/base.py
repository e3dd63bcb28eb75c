"""What a tool handler is given, and how a handler is bound to its catalogue entry.

A handler runs one allowed (or approved) call of one tool: the bridge's own tools,
and the headless fallbacks of Emacs-side tools (``agent-shell-bridge run``, an ACP
client, or a bridge whose Emacs does not handle the tool). It gets the call's
:class:`Run` and the call's arguments, typed as its tool's argument model; the
binding checks, for the type checker, that the two belong together.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ....model.types import ToolCall
from ....tools.catalogue import ArgsT, Side, ToolSpec
from ....tools.results import Outcome, ToolResult
from ...session.live import LiveSession
from ...session.turnstate import TurnState
from ..prepared import Prepared

__all__ = ["Binding", "Handler", "Run", "RunTool", "bind"]

# Another call through the whole pipeline (refuse, approve, place, run, record): a
# plan step's verification, a role's own calls.
RunTool = Callable[[ToolCall, TurnState], Awaitable[Outcome]]


@dataclass(frozen=True, slots=True)
class Run:
    """One call on its way to its handler: the session, the call, what the policy
    prepared, and how to run further calls the same way."""

    live: LiveSession
    call: ToolCall
    turn: TurnState
    prepared: Prepared
    run_tool: RunTool

    @property
    def paths(self) -> list[tuple[Path, str]]:
        """The confined paths of the call (resolved, display), in the spec's order."""
        return self.prepared.paths

    @property
    def shown_call(self) -> ToolCall:
        """The call under the id clients know it by (the model keeps its own)."""
        return replace(self.call, id=self.prepared.call_id or self.call.id)


Handler = Callable[[Run, ArgsT], Awaitable[ToolResult]]


@dataclass(frozen=True, slots=True)
class Binding:
    """A catalogue entry and what runs it on the bridge's side."""

    spec: ToolSpec[Any]
    handler: Handler[Any]

    @property
    def fallback(self) -> bool:
        """An Emacs-side tool run here because no Emacs handles it."""
        return self.spec.side is Side.EMACS


def bind(spec: ToolSpec[ArgsT], handler: Handler[ArgsT]) -> Binding:
    """Bind ``handler`` to ``spec``: the handler takes exactly the spec's arguments."""
    return Binding(spec, handler)
