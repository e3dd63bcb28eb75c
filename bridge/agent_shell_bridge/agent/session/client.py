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

__all__ = ["ClientLink"]


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
