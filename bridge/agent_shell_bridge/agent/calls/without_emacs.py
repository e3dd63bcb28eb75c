"""What a session without Emacs cannot offer, said up front instead of failing mid-turn.

``agent-shell-bridge run`` and an ACP editor connect no Emacs: no client handles the
Emacs-side tools. Those with a bridge-side fallback (git, ripgrep, the file tools)
run anyway; the others (``buffer_overview``), the Emacs Lisp tools that come with
agent-shell (``describe_symbol``, ``eval_elisp``) and the tools a user defines with
``agent-shell-define-tool`` are left out of the request, and the system prompt says
they are unavailable here. A call to one anyway gets a failed result saying why.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import TYPE_CHECKING

from ...tools.catalogue import CATALOGUE, Side

if TYPE_CHECKING:
    from ..session.live import LiveSession

__all__ = [
    "EMACS_LISP_TOOLS",
    "has_emacs",
    "unavailable_note",
    "unavailable_refusal",
    "unavailable_tools",
]

# The Emacs Lisp tools agent-shell.el sends with every prompt (agent-shell-extend.el).
EMACS_LISP_TOOLS = ("describe_symbol", "eval_elisp")


def has_emacs(live: LiveSession) -> bool:
    """Whether an Emacs is connected: it said which tools it handles."""
    return bool(live.client_tools)


def unavailable_tools(live: LiveSession, handlers: Collection[str]) -> list[str]:
    """The catalogue's tools this session cannot run: Emacs-side with no fallback."""
    if has_emacs(live):
        return []
    return [
        name for name, spec in CATALOGUE.items() if spec.side is Side.EMACS and name not in handlers
    ]


def unavailable_note(live: LiveSession, handlers: Collection[str]) -> str:
    """The system prompt's line about what needs Emacs; empty with Emacs connected."""
    if has_emacs(live):
        return ""
    names = ", ".join([*unavailable_tools(live, handlers), *EMACS_LISP_TOOLS])
    return (
        "No Emacs is connected to this session (a headless run or another editor), so "
        f"these tools are unavailable and not offered: {names}, and any tool defined in "
        "Emacs Lisp. Use the file, search and command tools instead."
    )


def unavailable_refusal(live: LiveSession, name: str, handlers: Collection[str]) -> str | None:
    """Why ``name`` cannot be called in this session, or None when it may be."""
    if has_emacs(live):
        return None
    if name in EMACS_LISP_TOOLS or name in unavailable_tools(live, handlers):
        return (
            f"{name} needs Emacs, and no Emacs is connected to this session (a headless "
            "run or another editor): it is unavailable here"
        )
    return None
