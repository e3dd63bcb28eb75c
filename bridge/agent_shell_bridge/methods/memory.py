"""Memory methods: ``memory/save``, ``memory/search``, ``memory/review``."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any, Literal

from pydantic import Field

from ..errors import MemoryError_
from ..memory.experience import parse_experience
from ..runtime import Runtime
from ..transport.rpc import Dispatcher
from ..wire import Params
from .session import session_of


class SaveParams(Params):
    sessionId: str


class ReviewParams(Params):
    path: str = Field(max_length=4096)
    # accept, edit (accepted, then opened by the client), reject, forget; none: only
    # the search terms change.
    decision: Literal["accept", "edit", "reject", "forget"] | None = None
    searchTerms: list[str] | None = Field(None, max_length=16)


class SearchParams(Params):
    query: str = Field(max_length=2000)
    project: str | None = None
    limit: int = Field(5, ge=1, le=50)


def register(d: Dispatcher[Runtime]) -> None:
    @d.method("memory/save", SaveParams)
    async def save(rt: Runtime, p: SaveParams) -> dict[str, Any]:
        from ..agent.conversation.memory import save_on_request  # the agent loop: first use

        path = await save_on_request(session_of(rt, p.sessionId))
        terms: list[str] = []
        try:
            exp = parse_experience(await asyncio.to_thread(path.read_text, "utf-8"))
            title, terms = exp.title, exp.search_terms
        except (OSError, MemoryError_):
            title = path.stem.split("--", 1)[-1]
        return {"path": str(path), "title": title, "searchTerms": terms}

    @d.method("memory/review", ReviewParams)
    async def review(rt: Runtime, p: ReviewParams) -> dict[str, Any]:
        """A decision of the review inbox (or ``forget``): the file is marked, indexed
        again, and the decision goes into the log of every session of its project."""
        from ..memory.review import DECISIONS, experience_root, set_front_matter_line

        path = Path(p.path)
        real_root, real_path = await asyncio.to_thread(
            lambda: (experience_root(path).resolve(), path.resolve())
        )
        if p.decision is None and p.searchTerms is None:
            raise MemoryError_("memory/review needs a decision or searchTerms")
        if p.searchTerms is not None:
            await asyncio.to_thread(set_front_matter_line, path, "search_terms", p.searchTerms)
        if p.decision is not None:
            status = DECISIONS[p.decision]
            await asyncio.to_thread(set_front_matter_line, path, "status", status)
        exp = parse_experience(await asyncio.to_thread(path.read_text, "utf-8"))
        lives = [s for s in rt.sessions.values() if s.memory_root == real_root]
        project = lives[0].project if lives else real_root.name
        if lives and lives[0].memory is not None:
            await asyncio.to_thread(lives[0].memory.index_file, real_root, path, project)
        elif (memory_dir := rt.config.memory_dir) is not None:
            from ..memory.index import MemoryIndex

            def reindex() -> None:
                with MemoryIndex(memory_dir) as index:
                    index.index_file(real_root, path, project)

            await asyncio.to_thread(reindex)
        what = p.decision or "search terms"
        for live in lives:
            await live.reporter.entry(
                f"Memory: {what} {path.name}",
                source="user",
                parent=None,
                properties={
                    "PATH": live.display_path(real_path),
                    "DECISION": what,
                    "STATUS": exp.status or "accepted",
                    "SEARCH_TERMS": " | ".join(exp.search_terms) or "none",
                },
            )
        return {
            "path": str(path),
            "status": exp.status,
            "searchTerms": exp.search_terms,
            "logged": [live.state.id for live in lives],
        }

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
