"""The bridge's running state, shared by every request handler.

One ``Runtime`` per server: the event hub, the method table, configuration and the
sessions. Created by ``serve`` (or a test) and closed by the app's lifespan.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .agent.session.client import ClientLink
from .config import BridgeConfig
from .sandbox import SandboxStatus, detect_sandbox
from .tools.client_files import ClientFiles
from .transport.events import EventHub
from .transport.rpc import Dispatcher

if TYPE_CHECKING:
    # For the annotation only: a session (with pydantic, httpx, the model client)
    # is imported when the first one opens, not when the server starts.
    from .agent.session.live import LiveSession

__all__ = ["Runtime"]

log = logging.getLogger(__name__)


@dataclass
class Runtime:
    config: BridgeConfig
    hub: EventHub = field(default_factory=EventHub)
    dispatcher: Dispatcher[Runtime] = field(default_factory=Dispatcher)
    shutdown_requested: asyncio.Event = field(default_factory=asyncio.Event)
    client_info: dict[str, Any] = field(default_factory=dict)
    sessions: dict[str, LiveSession] = field(default_factory=dict)
    # Whether bubblewrap works here; found out once, when the bridge starts.
    sandbox: SandboxStatus = field(default_factory=detect_sandbox)
    # Components register async closers here (sessions, process runners, HTTP clients).
    _closers: list[Callable[[], Awaitable[None]]] = field(default_factory=list)
    _closed: bool = False

    # What every session knows of the client (made from the hub when none is given).
    client: ClientLink | None = None

    def __post_init__(self) -> None:
        if self.client is None:
            self.client = ClientLink(self.hub)

    @property
    def link(self) -> ClientLink:
        """The client link (always set after construction)."""
        assert self.client is not None
        return self.client

    @property
    def client_tools(self) -> frozenset[str]:
        return self.link.tools

    @client_tools.setter
    def client_tools(self, tools: frozenset[str]) -> None:
        self.link.tools = tools

    @property
    def client_files(self) -> ClientFiles | None:
        return self.link.files

    @client_files.setter
    def client_files(self, files: ClientFiles | None) -> None:
        self.link.files = files

    def on_close(self, closer: Callable[[], Awaitable[None]]) -> None:
        self._closers.append(closer)

    def request_shutdown(self) -> None:
        self.shutdown_requested.set()

    async def aclose(self) -> None:
        """Stop everything: cancel turns, kill child process groups, close the stream."""
        if self._closed:
            return
        self._closed = True
        for session in list(self.sessions.values()):
            try:
                await session.aclose()
            except Exception:
                log.exception("error while closing session %s", session.state.id)
        for closer in reversed(self._closers):
            try:
                await closer()
            except Exception:
                log.exception("error while closing %r", closer)
        await self.hub.close()
