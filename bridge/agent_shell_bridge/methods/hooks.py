"""``hooks/trust``: run a project's ``.agent-shell/hooks.json`` as the user reviewed it."""

from __future__ import annotations

import asyncio
from typing import Any

from ..errors import InvalidParams
from ..project.files import reviewed_bytes
from ..runtime import Runtime
from ..transport.rpc import Dispatcher
from ..wire import TrustParams
from .trust_root import local_trust_root

__all__ = ["register"]


def register(d: Dispatcher[Runtime]) -> None:
    @d.method("hooks/trust", TrustParams)
    async def trust_hooks(rt: Runtime, p: TrustParams) -> dict[str, Any]:
        """Trust ``hooks.json`` as reviewed; every session of the root runs it from its
        next step (the file is read again at each event, so a change stops it)."""
        from ..project.hooks import EVENTS, hooks_path, parse_hooks
        from ..project.trust import project_trust

        root = local_trust_root(p.cwd, ".agent-shell/hooks.json")
        content, digest = await reviewed_bytes(hooks_path(root), p.sha256)
        try:
            hooks = parse_hooks(content)  # malformed: -32602, nothing trusted
        except ValueError as exc:
            raise InvalidParams(str(exc)) from exc
        await asyncio.to_thread(project_trust("hooks", rt.config.memory_dir).trust, root, content)
        return {
            "sha256": digest,
            "hooks": {event: [h.command for h in getattr(hooks, event)] for event in EVENTS},
        }
