"""Which Emacs-side tools go to Emacs: all it handles, or in a remote session only
those it said it runs on the buffers visiting a remote project's files."""

from __future__ import annotations

from agent_shell_bridge.agent.session.client import REMOTE_TOOLS, ClientLink
from agent_shell_bridge.transport.events import EventHub


def test_a_remote_link_routes_only_what_emacs_runs_for_a_remote_session() -> None:
    hub = EventHub()
    shared = ClientLink(hub, tools=frozenset({"buffer_overview", "symbol_search", "open_file"}))
    remote = ClientLink(hub, served_by=shared)
    assert shared.routed == {"buffer_overview", "symbol_search", "open_file"}
    # An Emacs that did not say it runs tools for a remote session gets none of them.
    assert remote.routed == frozenset()
    shared.remote_tools = REMOTE_TOOLS
    assert remote.routed == {"buffer_overview"}
    # Emacs initializing again changes what the remote session's link routes.
    shared.tools = frozenset({"buffer_overview", "project_diagnostics", "magit_stage"})
    assert remote.routed == REMOTE_TOOLS
    # A name outside REMOTE_TOOLS never goes to Emacs for a remote session.
    shared.remote_tools = frozenset({"buffer_overview", "project_diagnostics", "magit_stage"})
    assert remote.routed == REMOTE_TOOLS
    assert remote.tools == frozenset()  # no Emacs-side tool of its own: user tools refused
