"""Everything a turn tells the outside world: ``session/update`` and the action log.

One object so the loop has one place to report to: notifications go to the SSE hub,
log entries both to the org file (the bridge is its only writer) and to the client's
live log buffer.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import secrets
from collections.abc import Coroutine, Sequence
from datetime import datetime
from typing import Any, TypeVar

from ...orglog import (
    DrawerBlock,
    LogEntry,
    LogUpdate,
    OrgLogWriter,
    SrcBlock,
    TextBlock,
    entry_params,
    update_params,
)
from ...transport.events import EventHub
from ...types import JSONObject

__all__ = ["Reporter", "finish_even_if_cancelled", "src", "text"]

log = logging.getLogger(__name__)

T = TypeVar("T")


async def finish_even_if_cancelled(work: Coroutine[Any, Any, T]) -> T:
    """Await WORK to its end even when the caller is cancelled meanwhile.

    Used under a lock: releasing it while a writer thread still runs would let a
    second write overlap the first. The cancel is delivered once the work is done.
    """
    future = asyncio.ensure_future(work)
    try:
        return await asyncio.shield(future)
    except asyncio.CancelledError:
        await future
        raise


def text(body: str) -> TextBlock:
    return TextBlock(text=body)


def src(body: str, lang: str = "text", link: str | None = None, omitted: int = 0) -> SrcBlock:
    return SrcBlock(lang=lang, text=body, link=link, omitted_lines=omitted)


class Reporter:
    def __init__(self, hub: EventHub, session_id: str, writer: OrgLogWriter) -> None:
        self.hub = hub
        self.session_id = session_id
        self.writer = writer
        self._ids = itertools.count(1)
        self._lock = asyncio.Lock()
        # Entries stay unique when a resumed session appends to the same client buffer.
        self._prefix = "e" + secrets.token_hex(2)

    def next_id(self) -> str:
        return f"{self._prefix}-{next(self._ids)}"

    def chunk(self, update_kind: str, text: str) -> None:
        """Stream TEXT as an ``agent_message_chunk`` or ``agent_thought_chunk``.

        Deltas are joined into frames by the hub (see :mod:`..frames`); any other
        update or log entry flushes them first, so order is kept.
        """
        self.hub.stream_text(self.session_id, update_kind, text)

    async def update(self, update_kind: str, /, **fields: Any) -> None:
        await self.hub.notify(
            "session/update",
            {"sessionId": self.session_id, "update": {"sessionUpdate": update_kind, **fields}},
        )
        if update_kind == "turn_end":
            self.hub.end_stream(self.session_id)

    async def entry(
        self,
        title: str,
        *,
        source: str,
        parent: str | None,
        todo: str | None = None,
        properties: dict[str, str | int | float] | None = None,
        body: Sequence[TextBlock | SrcBlock | DrawerBlock] | None = None,
    ) -> str:
        entry = LogEntry(
            id=self.next_id(),
            session_id=self.session_id,
            parent_id=parent,
            todo=todo,  # type: ignore[arg-type]
            title=title,
            timestamp=datetime.now().astimezone().isoformat(timespec="seconds"),
            source=source,  # type: ignore[arg-type]
            properties=properties or {},
            body=list(body or []),
        )
        await self.add(entry)
        return entry.id

    async def add(self, entry: LogEntry) -> None:
        async with self._lock:
            before = self.writer.path
            try:
                await finish_even_if_cancelled(asyncio.to_thread(self.writer.add, entry))
            except OSError as exc:
                # A full disk must not stop the turn; the client still shows the entry.
                log.error("could not write the action log %s: %s", self.writer.path, exc)
            # The client shows the entry as the file holds it (the bridge renders once).
            params = entry_params(entry, self.writer.rendered(entry.id))
        await self._rotated(before)
        await self.hub.notify("log/entry", params)

    async def _rotated(self, before: object) -> None:
        """Tell the client when the log went on in a new file (``log/file``)."""
        if self.writer.path != before:
            await self.hub.notify(
                "log/file",
                {
                    "sessionId": self.session_id,
                    "logPath": str(self.writer.path),
                    "previous": str(before),
                },
            )

    async def change(
        self,
        entry_id: str,
        *,
        todo: str | None = None,
        properties: dict[str, str | int | float] | None = None,
        body: list[TextBlock | SrcBlock] | None = None,
    ) -> None:
        fields: JSONObject = {"session_id": self.session_id, "id": entry_id}
        if todo is not None:
            fields["todo"] = todo
        if properties:
            fields["properties"] = properties
        if body:
            fields["body_append"] = [b.model_dump(mode="json") for b in body]
        upd = LogUpdate.model_validate(fields)
        async with self._lock:
            before = self.writer.rendered(entry_id)
            path = self.writer.path
            try:
                await finish_even_if_cancelled(asyncio.to_thread(self.writer.update, upd))
            except OSError as exc:
                log.error("could not update the action log %s: %s", self.writer.path, exc)
            params = update_params(upd, before, self.writer.rendered(entry_id))
        await self._rotated(path)
        await self.hub.notify("log/update", params)
