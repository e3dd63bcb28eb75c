"""Memory and policy methods: ``memory/save``, ``memory/search``, ``policy/check``."""

from __future__ import annotations

import asyncio
from typing import Any, Literal

from pydantic import Field

from ..errors import InvalidParams, MemoryError_
from ..memory.experience import parse_experience
from ..project.files import reviewed_bytes
from ..runtime import Runtime
from ..transport.rpc import Dispatcher
from ..wire import Params
from .session import project_root, session_of


class SaveParams(Params):
    sessionId: str


class SearchParams(Params):
    query: str = Field(max_length=2000)
    project: str | None = None
    limit: int = Field(5, ge=1, le=50)


class TrustParams(Params):
    cwd: str
    # The sha256 of the bytes the user reviewed; trust is refused if the file differs.
    sha256: str | None = Field(None, pattern=r"^[0-9a-f]{64}$")


class PolicyParams(Params):
    cwd: str
    command: str | None = Field(None, max_length=100_000)
    path: str | None = Field(None, max_length=10_000)
    op: Literal["read", "write"] = "read"


def register(d: Dispatcher[Runtime]) -> None:
    @d.method("memory/save", SaveParams)
    async def save(rt: Runtime, p: SaveParams) -> dict[str, Any]:
        from ..agent.conversation.memory import save_on_request  # the agent loop: first use

        path = await save_on_request(session_of(rt, p.sessionId))
        try:
            title = parse_experience(await asyncio.to_thread(path.read_text, "utf-8")).title
        except (OSError, MemoryError_):
            title = path.stem.split("--", 1)[-1]
        return {"path": str(path), "title": title}

    @d.method("memory/search", SearchParams)
    async def search(rt: Runtime, p: SearchParams) -> dict[str, Any]:
        from ..memory.index import MemoryIndex  # sqlite-utils: loaded on first use

        memory_dir = rt.config.memory_dir
        if memory_dir is None:
            raise MemoryError_("No memory directory is configured (--memory-dir)")

        def run() -> list[dict[str, Any]]:
            with MemoryIndex(memory_dir) as index:
                for live in rt.sessions.values():
                    index.sync_root(live.root, live.project)
                hits = index.search(p.query, project=p.project, limit=p.limit)
            return [
                {
                    "path": h.path,
                    "title": h.title,
                    "project": h.project,
                    "score": h.score,
                    "summary": h.summary,
                    "date": h.date,
                }
                for h in hits
            ]

        return {"hits": await asyncio.to_thread(run)}

    @d.method("policy/check", PolicyParams)
    async def policy_check(rt: Runtime, p: PolicyParams) -> dict[str, Any]:
        from ..policy.engine import PolicyEngine  # tree-sitter: loaded on first use
        from ..project.trust import AllowlistTrust, default_trust_file

        root = project_root(p.cwd)
        if (p.command is None) == (p.path is None):
            raise InvalidParams("give exactly one of command or path")
        engine = await asyncio.to_thread(
            PolicyEngine.for_project,
            root,
            extra_paths=rt.config.extra_allowed_paths,
            trust=AllowlistTrust(default_trust_file(rt.config.memory_dir)),
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
        from ..project.trust import AllowlistTrust, allowlist_path, default_trust_file

        root = project_root(p.cwd)
        path = allowlist_path(root)
        content, digest = await reviewed_bytes(path, p.sha256)  # hash and parse agree
        try:
            allowlist = parse_allowlist(content.decode("utf-8"))  # malformed: -32602
        except UnicodeDecodeError as exc:
            raise InvalidParams(f"{path} is not UTF-8 text") from exc
        trust = AllowlistTrust(default_trust_file(rt.config.memory_dir))
        await asyncio.to_thread(trust.trust, root, content)
        for live in rt.sessions.values():
            if live.root == root:
                live.policy = await asyncio.to_thread(
                    PolicyEngine.for_project,
                    root,
                    extra_paths=live.config.extra_allowed_paths,
                    trust=trust,
                )
        return {"sha256": digest, "commands": [entry.command for entry in allowlist.entries]}
