"""MCP methods: ``mcp/trust`` (use the project's ``.mcp.json`` as reviewed)."""

from __future__ import annotations

import asyncio
import hashlib
from typing import Any

from pydantic import Field

from ..errors import InvalidParams
from ..mcp.config import from_claude_json
from ..rpc import Dispatcher, Params
from ..runtime import Runtime
from .session import project_root


class TrustMcpParams(Params):
    cwd: str
    # The sha256 of the bytes the user reviewed; trust is refused if the file differs.
    sha256: str | None = Field(None, pattern=r"^[0-9a-f]{64}$")


def register(d: Dispatcher[Runtime]) -> None:
    @d.method("mcp/trust", TrustMcpParams)
    async def trust(rt: Runtime, p: TrustMcpParams) -> dict[str, Any]:
        """Trust the project's .mcp.json as the user reviewed it (new sessions use it)."""
        # Loaded here, not at server start: the trust record pulls in the policy.
        from ..mcp.session import mcp_trust, project_config_path

        root = project_root(p.cwd)
        path = project_config_path(root)
        if path.is_symlink() or not path.is_file():
            raise InvalidParams(f"{path} does not exist or is a symlink")
        content = await asyncio.to_thread(path.read_bytes)  # read once: hash and parse agree
        digest = hashlib.sha256(content).hexdigest()
        if p.sha256 is not None and p.sha256 != digest:
            raise InvalidParams(
                f"{path} changed after you reviewed it; review it again before trusting it"
            )
        servers = from_claude_json(content, str(path))  # malformed: -32602, nothing trusted
        await asyncio.to_thread(mcp_trust(rt.config.memory_dir).trust, root, content)
        return {"sha256": digest, "servers": [s.name for s in servers]}
