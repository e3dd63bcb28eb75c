"""MCP methods: ``mcp/trust`` (use the project's ``.mcp.json`` as reviewed)."""

from __future__ import annotations

import asyncio
from typing import Any

from ..mcp.config import from_claude_json
from ..project.files import reviewed_bytes
from ..runtime import Runtime
from ..transport.rpc import Dispatcher
from ..wire import TrustParams
from .trust_root import local_trust_root


def register(d: Dispatcher[Runtime]) -> None:
    @d.method("mcp/trust", TrustParams)
    async def trust(rt: Runtime, p: TrustParams) -> dict[str, Any]:
        """Trust the project's .mcp.json as the user reviewed it (new sessions use it)."""
        # Loaded here, not at server start: the trust record pulls in the policy.
        from ..agent.session.mcp_servers import project_config_path
        from ..project.trust import project_trust

        root = local_trust_root(p.cwd, ".mcp.json")
        path = project_config_path(root)
        content, digest = await reviewed_bytes(path, p.sha256)  # hash and parse agree
        servers = from_claude_json(content, str(path))  # malformed: -32602, nothing trusted
        await asyncio.to_thread(project_trust("mcp", rt.config.memory_dir).trust, root, content)
        return {"sha256": digest, "servers": [s.name for s in servers]}
