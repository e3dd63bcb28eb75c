"""``roles/trust``: use a project's ``.agent-shell/roles.el`` as the user reviewed it."""

from __future__ import annotations

import asyncio
from typing import Any

from ..errors import InvalidParams
from ..project.files import reviewed_bytes
from ..runtime import Runtime
from ..transport.rpc import Dispatcher
from ..wire import TrustParams
from .trust_root import trust_root

__all__ = ["register"]


def register(d: Dispatcher[Runtime]) -> None:
    @d.method("roles/trust", TrustParams)
    async def trust_roles(rt: Runtime, p: TrustParams) -> dict[str, Any]:
        """Trust ``roles.el`` as reviewed; sessions started from now on use its roles."""
        from ..project.roles import parse_roles, roles_path
        from ..project.trust import project_trust

        root = await trust_root(rt, p.cwd, ".agent-shell/roles.el")
        content, digest = await reviewed_bytes(roles_path(root), p.sha256)
        try:
            roles = parse_roles(content.decode("utf-8"))  # malformed: -32602, nothing trusted
        except UnicodeDecodeError as exc:
            raise InvalidParams(f"{roles_path(root)} is not UTF-8 text") from exc
        await asyncio.to_thread(project_trust("roles", rt.config.memory_dir).trust, root, content)
        return {"sha256": digest, "roles": [r.name for r in roles]}
