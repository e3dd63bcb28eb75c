"""A live session: its state on disk, the parts that act for it, and its client.

- :mod:`.live`: the :class:`~.live.LiveSession`;
- :mod:`.store`: session state and its checkpoints;
- :mod:`.client`: the link to the client (hub, Emacs tools, an editor's files);
- :mod:`.reporter`: ``session/update`` and the action log;
- :mod:`.approval`: asking the user;
- :mod:`.grants`: "allow for this session";
- :mod:`.roles`: the roles a session may run;
- :mod:`.turnstate`: what one turn remembers;
- :mod:`.model_help`: plain words for the model API's failures;
- :mod:`.mcp_servers`: the session's MCP servers.

The names below load with their module on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..._face import lazy_face

if TYPE_CHECKING:
    from .client import ClientLink
    from .live import LiveSession, open_session
    from .reporter import Reporter
    from .roles import Role
    from .store import SessionState, SessionStore
    from .turnstate import TurnState

__all__ = [
    "ClientLink",
    "LiveSession",
    "Reporter",
    "Role",
    "SessionState",
    "SessionStore",
    "TurnState",
    "open_session",
]

_WHERE = {
    "ClientLink": "client",
    "LiveSession": "live",
    "Reporter": "reporter",
    "Role": "roles",
    "SessionState": "store",
    "SessionStore": "store",
    "TurnState": "turnstate",
    "open_session": "live",
}

__getattr__ = lazy_face(__name__, _WHERE)
