"""Whether an MCP tool call runs, asks, or is refused.

The bridge cannot see what an MCP tool does, only what its server says about it.
So the rule is narrow: a tool annotated ``readOnlyHint: true`` that does not also
say ``openWorldHint: true`` runs without asking; every other tool asks the user
(showing server, tool and arguments). The user can mark a whole server trusted
(everything runs) or denied (nothing runs). A server's annotations can only lower
the friction for tools it claims to be read-only; they can never grant more.
The arguments are shown to the user and passed to the server, never executed here.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..types import Decision, Risk, Verdict
from .config import ServerPolicy

__all__ = ["decide", "is_read_only"]


def is_read_only(annotations: Mapping[str, Any] | None) -> bool:
    """``readOnlyHint: true`` and not ``openWorldHint: true``."""
    if not annotations:
        return False
    return annotations.get("readOnlyHint") is True and annotations.get("openWorldHint") is not True


def decide(
    server: str, tool: str, annotations: Mapping[str, Any] | None, server_policy: ServerPolicy
) -> Verdict:
    """The verdict for one call of ``tool`` on ``server``."""
    read_only = is_read_only(annotations)
    risk = Risk.READ if read_only else Risk.WRITE
    if server_policy == "denied":
        return Verdict(Decision.DENY, risk, f"MCP server {server} is denied by the user")
    if server_policy == "trusted":
        return Verdict(Decision.ALLOW, risk, f"MCP server {server} is trusted by the user")
    if read_only:
        return Verdict(Decision.ALLOW, Risk.READ, f"{server} annotates {tool} read-only")
    if annotations and annotations.get("readOnlyHint") is True:
        why = f"{server} says {tool} reaches the outside world (openWorldHint)"
    else:
        why = f"{server} does not annotate {tool} as read-only"
    return Verdict(Decision.CONFIRM, Risk.WRITE, why)
