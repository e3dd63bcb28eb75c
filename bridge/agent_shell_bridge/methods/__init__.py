"""JSON-RPC method handlers, one module per area, assembled by ``build_dispatcher``.

The bridge starts without importing them: :data:`AREAS` names each area's methods,
and an area's module (its pydantic models, the agent loop behind ``session/*``, the
HTTP client behind ``initialize``) is imported by the first call of one of its
methods. A test keeps :data:`AREAS` equal to what the modules register.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable

from ..runtime import Runtime
from ..transport.rpc import Dispatcher

__all__ = ["AREAS", "DEBUG_AREA", "build_dispatcher"]

# Module (under this package, named for the methods' namespace) → the methods its
# ``register`` adds.
AREAS: dict[str, tuple[str, ...]] = {
    "core": ("initialize", "ping", "shutdown"),
    "session": (
        "session/cancel",
        "session/close",
        "session/fork",
        "session/grants",
        "session/jobs",
        "session/kill_job",
        "session/list",
        "session/new",
        "session/prompt",
        "session/resume",
        "session/revoke_grant",
        "session/rewind",
        "session/rewind_undo",
        "session/set_mode",
        "session/set_model",
        "session/steer",
        "session/turns",
        "session/undo_turn_done",
    ),
    "memory": ("memory/review", "memory/save", "memory/search"),
    "policy": ("policy/check", "policy/trust_allowlist", "policy/trust_config"),
    "commands": ("commands/list",),
    "mcp": ("mcp/trust",),
    "roles": ("roles/trust",),
    "skills": ("skills/list",),
    "hooks": ("hooks/trust",),
}
DEBUG_AREA: tuple[str, tuple[str, ...]] = (
    "debug",
    ("debug/client_request", "debug/drop_streams", "debug/emit"),
)


def _loader(area: str) -> Callable[[Dispatcher[Runtime]], None]:
    def load(dispatcher: Dispatcher[Runtime]) -> None:
        importlib.import_module(f"{__name__}.{area}").register(dispatcher)

    return load


def build_dispatcher(*, debug_methods: bool | None = None) -> Dispatcher[Runtime]:
    """All methods; the ``debug/*`` ones only when asked or AGENT_SHELL_BRIDGE_DEBUG=1."""
    if debug_methods is None:
        debug_methods = os.environ.get("AGENT_SHELL_BRIDGE_DEBUG") == "1"
    dispatcher: Dispatcher[Runtime] = Dispatcher()
    areas = [*AREAS.items(), *([DEBUG_AREA] if debug_methods else [])]
    for area, names in areas:
        dispatcher.lazy(names, _loader(area))
    return dispatcher
