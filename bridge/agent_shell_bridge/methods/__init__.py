"""JSON-RPC method handlers, one module per area, assembled by ``build_dispatcher``."""

from __future__ import annotations

import os

from ..rpc import Dispatcher
from ..runtime import Runtime
from . import commands, core, debug, mcp, memory, roles, sandbox, session, undo

__all__ = ["build_dispatcher"]


def build_dispatcher(*, debug_methods: bool | None = None) -> Dispatcher[Runtime]:
    """All methods; the ``debug/*`` ones only when asked or AGENT_SHELL_BRIDGE_DEBUG=1."""
    if debug_methods is None:
        debug_methods = os.environ.get("AGENT_SHELL_BRIDGE_DEBUG") == "1"
    dispatcher: Dispatcher[Runtime] = Dispatcher()
    for module in (core, session, undo, memory, commands, sandbox, mcp, roles):
        module.register(dispatcher)
    if debug_methods:
        debug.register(dispatcher)
    return dispatcher
