"""The client a session answers to: what a session needs of the front end, no more.

A session sends its updates and requests through the client's event hub, asks the
client to run the Emacs-side tools it handles, and reads and writes files through
the editor when the editor serves them (ACP's ``fs/*``). One link per bridge: a
client that initializes again (Emacs reconnecting) changes it for every session.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...tools.client_files import ClientFiles
from ...transport.events import EventHub

__all__ = ["REMOTE_TOOLS", "ClientLink"]

# The Emacs-side tools Emacs runs for a remote session: they look at its buffers
# visiting the project's files over TRAMP, under the session's own remote root.
REMOTE_TOOLS = frozenset({"buffer_overview", "project_diagnostics"})


@dataclass
class ClientLink:
    hub: EventHub
    # The Emacs-side tools the client said it runs (``initialize``).
    tools: frozenset[str] = frozenset()
    # Set by a front end whose client serves file reads and writes (ACP's fs/*).
    files: ClientFiles | None = None
    # The client reads and writes its buffers visiting a remote project's files
    # (``clientCapabilities.remoteBuffers``: Emacs, over TRAMP).
    buffers: bool = False
    # Those of REMOTE_TOOLS the client runs for a remote session, on its buffers
    # visiting the project's files (``clientCapabilities.remoteTools``).
    remote_tools: frozenset[str] = frozenset()
    # A remote session's link: the bridge's own, whose Emacs runs its remote_tools
    # (and no other Emacs-side tool) for the session.
    served_by: ClientLink | None = None

    @property
    def routed(self) -> frozenset[str]:
        """The Emacs-side tools that go to the client: all it handles, or for a
        remote session those its Emacs said it runs for one, as it says now."""
        if self.served_by is None:
            return self.tools
        return self.served_by.tools & self.served_by.remote_tools & REMOTE_TOOLS
