"""Memory methods: ``memory/save``, ``memory/search``."""

from __future__ import annotations

import asyncio
from typing import Any

from pydantic import Field

from ..errors import MemoryError_
from ..memory.experience import parse_experience
from ..runtime import Runtime
from ..transport.rpc import Dispatcher
from ..wire import Params
from .session import session_of


class SaveParams(Params):
    sessionId: str


class SearchParams(Params):
    query: str = Field(max_length=2000)
    project: str | None = None
    limit: int = Field(5, ge=1, le=50)


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
                # Asked for by the user, not run at every turn: the full scan, which
                # also finds files rewritten in place since the last one.
                for live in rt.sessions.values():
                    index.sync_root(live.memory_root, live.project)
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
