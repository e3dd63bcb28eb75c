"""JSON-RPC method handlers, one module per area, assembled by ``build_dispatcher``."""

from __future__ import annotations

from ..rpc import Dispatcher
from ..runtime import Runtime
from . import core

__all__ = ["build_dispatcher"]


def build_dispatcher() -> Dispatcher[Runtime]:
    dispatcher: Dispatcher[Runtime] = Dispatcher()
    for module in (core,):
        module.register(dispatcher)
    return dispatcher
