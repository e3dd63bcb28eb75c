"""The session's use of the memory layer: what to inject, when to extract.

Extraction costs a model call, so it runs only on key events (fail → fix → pass,
an explicit save, a stack change); every other task is archived from its log alone.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING

from ...errors import BridgeError, MemoryError_, SessionBusy
from ...memory.experience import write_experience
from ...memory.extract import build_extraction_messages, parse_extraction
from ...memory.hit import MemoryHit
from ...memory.inject import injection_block
from ...memory.triggers import TaskEvents, extraction_decision
from ...model.types import Completion
from ...types import JSONObject
from ..session.reporter import src, text
from .budget import transcript_budget, transcript_text
from .messages import Conversation

if TYPE_CHECKING:
    from ...memory.index import MemoryIndex
    from ..session.live import LiveSession
    from ..session.turnstate import TurnState

__all__ = [
    "extract_experience",
    "finish_task_memory",
    "inject_memories",
    "recent_memories",
    "refresh_memory",
]

log = logging.getLogger(__name__)

INJECT_MAX = 5


async def refresh_memory(live: LiveSession, index: MemoryIndex) -> None:
    """Bring the index up to date for this project at a cost independent of its size
    (MemoryIndex.refresh_root), and start the periodic full scan in the background
    when one is due: it finds files rewritten in place, which nothing else sees."""
    await asyncio.to_thread(index.refresh_root, live.memory_root, live.project)
    if await asyncio.to_thread(index.claim_full_scan, live.memory_root):
        live.in_background(_full_scan(index, live.memory_root, live.project))


async def _full_scan(index: MemoryIndex, root: Path, project: str) -> None:
    try:
        await asyncio.to_thread(index.sync_root, root, project)
    except (BridgeError, OSError) as exc:
        log.warning("memory full scan of %s failed: %s", root, exc)


async def inject_memories(live: LiveSession, prompt: str, parent: str) -> str:
    """Find the most relevant experiences for this task; log what the agent is told."""
    if live.memory is None:
        return ""
    index = live.memory
    try:
        await refresh_memory(live, index)
        accepted_only = live.config.memory_accepted_only
        hits: list[MemoryHit] = await asyncio.to_thread(
            lambda: index.search(
                prompt, project=live.project, limit=INJECT_MAX, accepted_only=accepted_only
            )
        )
    except (BridgeError, OSError) as exc:
        log.warning("memory search failed: %s", exc)
        return ""
    block = injection_block(hits, max_items=INJECT_MAX)
    live.state.memories = [
        {"path": h.path, "title": h.title, "summary": h.summary, "score": h.score} for h in hits
    ]
    if hits:
        await live.reporter.entry(
            f"Memory: {len(hits)} experience(s) injected into the system prompt",
            source="memory",
            parent=parent,
            properties={
                "COUNT": len(hits),
                "RECALLED": " | ".join(h.title for h in hits),
                "SCORES": " | ".join(f"{h.score:.3f}" for h in hits),
                "PATHS": " | ".join(live.display_path(Path(h.path)) for h in hits),
            },
            body=[
                text(
                    "\n".join(
                        f"{n}. {h.score:.3f} {Path(h.path).name} — {h.title}"
                        + (" (new, not reviewed yet)" if h.status == "new" else "")
                        for n, h in enumerate(hits, start=1)
                    )
                ),
                src(block, "markdown"),
            ],
        )
    return block


async def recent_memories(live: LiveSession) -> None:
    """At session start, note the project's newest experiences for the client to show.

    Nothing is injected yet: each task gets the ones relevant to its own words.
    """
    if live.memory is None:
        return
    index = live.memory
    try:
        await refresh_memory(live, index)
        hits: list[MemoryHit] = await asyncio.to_thread(
            lambda: index.search("", project=live.project, limit=INJECT_MAX)
        )
    except (BridgeError, OSError) as exc:
        log.warning("memory listing failed: %s", exc)
        return
    live.state.memories = [
        {"path": h.path, "title": h.title, "summary": h.summary, "score": h.score}
        for h in hits
        if h.project == live.project
    ]


async def extract_experience(
    live: LiveSession,
    *,
    trigger: str,
    parent: str,
    messages: Sequence[JSONObject],
    turn: TurnState | None = None,
) -> Path:
    """One model call that fills the experience template; the file is written and indexed."""
    today = date.today().isoformat()
    request = build_extraction_messages(
        transcript=transcript_text(messages, limit=transcript_budget(live)),
        project=live.project,
        date=today,
        trigger=trigger,
    )
    completion: Completion | None = None
    async for event in live.model.stream_chat(request, None):
        if isinstance(event, Completion):
            completion = event
    if completion is not None and completion.usage is not None:
        live.account_usage(completion.usage, turn)  # extraction is part of the task's cost
    if completion is None or not completion.content.strip():
        raise MemoryError_("The model returned no experience text")
    exp, problem = parse_extraction(
        completion.content, project=live.project, date=today, trigger=trigger
    )
    if problem:
        log.warning("memory extraction: %s; indexing the lesson's own words alone", problem)
    path = await asyncio.to_thread(write_experience, live.memory_root, exp)
    if live.memory is not None:
        index = live.memory  # this file only: the next turn sees it, the others are not looked at
        await asyncio.to_thread(index.index_file, live.memory_root, path, live.project)
    await live.reporter.entry(
        f"Memory: wrote {path.name}",
        source="memory",
        parent=parent,
        properties={
            "PATH": live.display_path(path),
            "TRIGGER": trigger,
            "STATUS": exp.status,
            "SEARCH_TERMS": " | ".join(exp.search_terms) if exp.search_terms else "none",
        },
        body=[text(exp.summary), *([text(_dropped(problem))] if problem else [])],
    )
    return path


def _dropped(problem: str) -> str:
    return f"Search terms dropped ({problem}): indexed by the lesson's own words alone."


async def save_on_request(live: LiveSession) -> Path:
    """``memory/save``: extract an experience from the whole session now."""
    if live.busy:
        raise SessionBusy("A turn is running; save the memory when it has ended")
    messages = Conversation(live.state).messages
    if not messages:
        raise MemoryError_("Nothing to remember yet: this session has no conversation")
    parent = await live.reporter.entry(
        "Memory: saving an experience at the user's request",
        source="user",
        parent=None,
        properties={"SESSION": live.state.id},
    )
    return await extract_experience(
        live, trigger="saved by the user", parent=parent, messages=messages
    )


async def finish_task_memory(live: LiveSession, turn: TurnState, start_index: int) -> Path | None:
    """At the end of a task: extract on a key event, otherwise archive with no model call."""
    branch_changed = False
    if turn.branch_at_start is not None:
        branch_changed = (await live.current_branch()) not in (None, turn.branch_at_start)
    events = TaskEvents(
        verification_results=list(turn.verification),
        edits_after_failure=turn.edits_after_failure,
        user_requested=False,
        dependency_files_changed=list(turn.dependency_changes),
        branch_changed=branch_changed,
    )
    extract, reason = extraction_decision(events)
    if not extract:
        await live.reporter.entry(
            "Memory: archived from the log, no extraction",
            source="memory",
            parent=turn.task_entry,
            properties={"DECISION": "archive"},
            body=[text(reason)],
        )
        return None
    await live.reporter.entry(
        "Memory: key event, extracting an experience",
        source="memory",
        parent=turn.task_entry,
        properties={"DECISION": "extract"},
        body=[text(reason)],
    )
    try:
        return await extract_experience(
            live,
            trigger=reason,
            parent=turn.task_entry,
            messages=Conversation(live.state).since(start_index),
            turn=turn,
        )
    except BridgeError as exc:
        await live.reporter.entry(
            "Memory: extraction failed",
            source="memory",
            parent=turn.task_entry,
            todo="FAILED",
            body=[text(exc.message)],
        )
        return None
