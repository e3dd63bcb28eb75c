"""``policy/trust_config``: trust a project's ``config.el`` to turn its sandbox off."""

from __future__ import annotations

import asyncio
from typing import Any

from ..project.files import reviewed_bytes
from ..runtime import Runtime
from ..sandbox.project_switch import config_path, config_trust, project_sandbox
from ..transport.rpc import Dispatcher
from .memory import TrustParams
from .session import project_root

__all__ = ["register"]


def register(d: Dispatcher[Runtime]) -> None:
    @d.method("policy/trust_config", TrustParams)
    async def trust_config(rt: Runtime, p: TrustParams) -> dict[str, Any]:
        """Trust ``config.el`` as the user reviewed it; live sessions of the root follow."""
        root = project_root(p.cwd)
        content, digest = await reviewed_bytes(config_path(root), p.sha256)
        trust = config_trust(rt.config.memory_dir)
        await asyncio.to_thread(trust.trust, root, content)
        applied = project_sandbox(root, rt.sandbox, trust)
        for live in rt.sessions.values():
            if live.root == root:
                live.sandbox, live.sandbox_setting = applied.status, applied.setting
        return {
            "sha256": digest,
            "sandbox": {**applied.status.to_json(), "projectSetting": applied.setting},
        }
