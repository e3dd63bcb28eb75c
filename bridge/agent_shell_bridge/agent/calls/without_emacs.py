"""What a session without Emacs cannot offer, said up front instead of failing mid-turn.

``agent-shell-bridge run`` and an ACP editor connect no Emacs: no client handles the
Emacs-side tools. Those with a bridge-side fallback (git, ripgrep, the file tools)
run anyway; the others (``buffer_overview``), the Emacs Lisp tools that come with
agent-shell (``describe_symbol``, ``eval_elisp``) and the tools a user defines with
``agent-shell-define-tool`` are left out of the request, and the system prompt says
they are unavailable here. A call to one anyway gets a failed result saying why.

A remote session is told the same, with its own reason: Emacs runs only the tools
that look at its buffers visiting the project's files (``REMOTE_TOOLS``:
``buffer_overview``, ``project_diagnostics``), the others answer from the host,
and the Emacs Lisp tools are not offered.
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
    """The catalogue's tools this session cannot run: Emacs-side, not run by Emacs
    for it, with no fallback."""
    if has_emacs(live):
        return []
    routed = live.emacs_tools
    return [
        name
        for name, spec in CATALOGUE.items()
        if spec.side is Side.EMACS and name not in handlers and name not in routed
    ]


def _why(live: LiveSession) -> str:
    """Why the Emacs-side tools do not run: no Emacs, or a remote project (whose
    files Emacs's other tools would look for here, where only its records are)."""
    if live.remote is not None:
        where = f"this is a remote project (its files are on {live.remote.target.label})"
        served = sorted(live.emacs_tools)
        if served:
            return (
                f"{where}: Emacs runs only {' and '.join(served)} for it, "
                "on its buffers visiting the project's files"
            )
        return f"{where} and no Emacs is connected to show the buffers visiting them"
    return "no Emacs is connected to this session (a headless run or another editor)"


def unavailable_note(live: LiveSession, handlers: Collection[str]) -> str:
    """The system prompt's line about what needs Emacs; empty with Emacs connected."""
    if has_emacs(live):
        return ""
    names = ", ".join([*unavailable_tools(live, handlers), *EMACS_LISP_TOOLS])
    why = _why(live)
    return (
        f"{why[0].upper()}{why[1:]}, so these tools are unavailable and not offered: "
        f"{names}, and any tool defined in Emacs Lisp. Use the file, search and command "
        "tools instead."
    )


def unavailable_refusal(live: LiveSession, name: str, handlers: Collection[str]) -> str | None:
    """Why ``name`` cannot be called in this session, or None when it may be."""
    if has_emacs(live):
        return None
    if name in EMACS_LISP_TOOLS or name in unavailable_tools(live, handlers):
        return f"{name} is unavailable here: {_why(live)}"
    return None
