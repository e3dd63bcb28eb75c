"""What a tool handler is given, and how a handler is bound to its catalogue entry.

A handler runs one allowed (or approved) call of one tool: the bridge's own tools,
and the headless fallbacks of Emacs-side tools (``agent-shell-bridge run``, an ACP
client, or a bridge whose Emacs does not handle the tool). It gets the call's
:class:`Run` and the call's arguments, typed as its tool's argument model; the
binding checks, for the type checker, that the two belong together.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ....tools.catalogue import ArgsT, Side, ToolSpec
from ....tools.results import ToolResult

if TYPE_CHECKING:
    from ....model.types import ToolCall
    from ...session.live import LiveSession
    from ...session.turnstate import TurnState
    from ..decide import Prepared
    from ..executor import ToolExecutor

__all__ = ["Binding", "Handler", "Run", "bind"]


@dataclass(frozen=True, slots=True)
class Run:
    """One call on its way to its handler: who runs it and what the policy prepared."""

    executor: ToolExecutor
    call: ToolCall
    turn: TurnState
    prepared: Prepared

    @property
    def live(self) -> LiveSession:
        return self.executor.live

    @property
    def paths(self) -> list[tuple[Path, str]]:
        """The confined paths of the call (resolved, display), in the spec's order."""
        return self.prepared.paths


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
