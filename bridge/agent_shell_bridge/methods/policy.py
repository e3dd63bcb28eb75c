"""Policy methods: ``policy/check``, and trusting the project's ``allowlist.el`` and
``config.el`` (``policy/trust_allowlist``, ``policy/trust_config``)."""

from __future__ import annotations

import asyncio
from typing import Any, Literal

from pydantic import Field

from ..errors import InvalidParams
from ..project.files import reviewed_bytes
from ..project.trust import TRUSTED_KINDS, allowlist_path, project_trust
from ..project.worktree import main_worktree
from ..runtime import Runtime
from ..sandbox.project_switch import config_path, project_sandbox
from ..transport.rpc import Dispatcher
from ..wire import Params, TrustParams
from .session import project_root
from .trust_root import trust_root

__all__ = ["register"]


class PolicyParams(Params):
    cwd: str
    command: str | None = Field(None, max_length=100_000)
    path: str | None = Field(None, max_length=10_000)
    op: Literal["read", "write"] = "read"


def register(d: Dispatcher[Runtime]) -> None:
    @d.method("policy/check", PolicyParams)
    async def policy_check(rt: Runtime, p: PolicyParams) -> dict[str, Any]:
        from ..policy.engine import PolicyEngine  # tree-sitter: loaded on first use
        from ..project.trust import project_trust

        root = project_root(p.cwd)
        if (p.command is None) == (p.path is None):
            raise InvalidParams("give exactly one of command or path")
        engine = await asyncio.to_thread(
            PolicyEngine.for_project,
            root,
            extra_paths=rt.config.extra_allowed_paths,
            trust=project_trust("allowlist", rt.config.memory_dir),
            allowlist_root=main_worktree(root),
        )
        if p.command is not None:
            verdict = engine.check_command(p.command, cwd=root)
        else:
            assert p.path is not None
            verdict = engine.check_path(p.path, p.op)
        return {
            "decision": verdict.decision.value,
            "risk": verdict.risk.value,
            "reason": verdict.reason,
        }

    @d.method("policy/trust_allowlist", TrustParams)
    async def trust_allowlist(rt: Runtime, p: TrustParams) -> dict[str, Any]:
        """Trust the project's allowlist as the user reviewed it; live sessions pick it up."""
        from ..policy.allowlist import parse_allowlist
        from ..policy.engine import PolicyEngine
        from ..project.trust import project_trust

        root = await trust_root(rt, p.cwd, TRUSTED_KINDS["allowlist"].path)
        path = allowlist_path(root)
        content, digest = await reviewed_bytes(path, p.sha256)  # hash and parse agree
        try:
            allowlist = parse_allowlist(content.decode("utf-8"))  # malformed: -32602
        except UnicodeDecodeError as exc:
            raise InvalidParams(f"{path} is not UTF-8 text") from exc
        trust = project_trust("allowlist", rt.config.memory_dir)
        await asyncio.to_thread(trust.trust, root, content)
        for live in rt.sessions.values():
            if live.memory_root == root:  # its worktrees' sessions too
                live.policy = await asyncio.to_thread(
                    PolicyEngine.for_project,
                    live.root,
                    extra_paths=live.config.extra_allowed_paths,
                    trust=trust,
                    allowlist_root=root,
                )
        return {"sha256": digest, "commands": [entry.command for entry in allowlist.entries]}

    @d.method("policy/trust_config", TrustParams)
    async def trust_config(rt: Runtime, p: TrustParams) -> dict[str, Any]:
        """Trust ``config.el`` as the user reviewed it; live sessions of the root follow."""
        root = await trust_root(rt, p.cwd, TRUSTED_KINDS["config"].path)
        content, digest = await reviewed_bytes(config_path(root), p.sha256)
        trust = project_trust("config", rt.config.memory_dir)
        await asyncio.to_thread(trust.trust, root, content)
        applied = project_sandbox(root, rt.sandbox, trust)
        for live in rt.sessions.values():
            if live.root != root:
                continue
            if live.remote is not None:  # the host's sandbox, not this machine's
                applied = project_sandbox(root, live.remote.probe.status(), trust)
            live.sandbox, live.sandbox_setting = applied.status, applied.setting
        return {
            "sha256": digest,
            "sandbox": {**applied.status.to_json(), "projectSetting": applied.setting},
        }
