"""Command-safety policy and path confinement (see :mod:`.engine`).

The names below are loaded on first use (PEP 562): importing a light sub-module
(the trust records, the path rules) must not load the shell parser, which brings
tree-sitter, into a server that has no session yet.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .allowlist import AllowEntry, Allowlist, AllowlistError, load_allowlist, parse_allowlist
    from .engine import PolicyEngine

_WHERE = {
    "AllowEntry": "allowlist",
    "Allowlist": "allowlist",
    "AllowlistError": "allowlist",
    "PolicyEngine": "engine",
    "load_allowlist": "allowlist",
    "parse_allowlist": "allowlist",
}

__all__ = [
    "AllowEntry",
    "Allowlist",
    "AllowlistError",
    "PolicyEngine",
    "load_allowlist",
    "parse_allowlist",
]


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f".{module}", __name__), name)
