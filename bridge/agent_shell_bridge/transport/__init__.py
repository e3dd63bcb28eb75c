"""The transport: JSON-RPC 2.0 over HTTP and SSE on loopback; it knows no session.

- :mod:`.server`: the Starlette app (``POST /rpc``, ``GET /events``) over a
  :class:`~.server.Served`;
- :mod:`.rpc`: envelopes, the method table, error objects;
- :mod:`.events`: the event ring, SSE frames, requests awaiting answers;
- :mod:`.frames`: streamed text in frames.

The names below load with their module on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._face import lazy_face

if TYPE_CHECKING:
    from .events import EventHub
    from .rpc import Dispatcher
    from .server import Served, ServerSettings, create_app

__all__ = [
    "Dispatcher",
    "EventHub",
    "Served",
    "ServerSettings",
    "create_app",
]

_WHERE = {
    "Dispatcher": "rpc",
    "EventHub": "events",
    "Served": "server",
    "ServerSettings": "server",
    "create_app": "server",
}

__getattr__ = lazy_face(__name__, _WHERE)
