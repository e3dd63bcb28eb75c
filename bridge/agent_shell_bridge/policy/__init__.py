"""Command-safety policy and path confinement (see :mod:`.engine`)."""

from __future__ import annotations

from .allowlist import AllowEntry, Allowlist, AllowlistError, load_allowlist, parse_allowlist
from .engine import PolicyEngine

__all__ = [
    "AllowEntry",
    "Allowlist",
    "AllowlistError",
    "PolicyEngine",
    "load_allowlist",
    "parse_allowlist",
]
