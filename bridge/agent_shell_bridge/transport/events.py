"""Bridge → client messages: the SSE event stream and requests awaiting answers.

Every message gets a monotonically increasing id and is kept in a bounded replay
ring, so a client that reconnects with ``Last-Event-ID`` receives exactly the events
it missed: none lost, none twice. Streamed text deltas go through a
:class:`~.frames.FrameCoalescer` first (:meth:`EventHub.stream_text`), which joins
them into frames; any other message published flushes the open frames before it,
so the order of production is the order on the wire.

Publishing is synchronous (nothing awaits between taking an id and appending to the
ring), so a frame timer can publish from a plain loop callback. Requests the bridge
sends to the client (an Emacs-side tool call, a permission prompt) are futures
resolved when the client POSTs its response to ``/rpc``.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import logging
from collections import deque
from collections.abc import AsyncGenerator, AsyncIterator
from dataclasses import dataclass
from typing import Any

from ..errors import BridgeError, ClientGone
from ..types import JSONObject
from .frames import FrameCoalescer, FrameSettings

__all__ = ["ClientError", "Event", "EventHub", "encode_events"]

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Event:
    id: int
    data: str  # the serialised JSON-RPC message

    def wire(self) -> bytes:
        """The event as SSE text: an ``id`` line and one ``data`` line.

        ``json.dumps`` escapes CR and LF, so the data is always one line.
        """
        return f"id: {self.id}\r\ndata: {self.data}\r\n\r\n".encode()


def encode_events(events: list[Event]) -> bytes:
    """Several events as one piece of SSE text, to go out in one write."""
    if len(events) == 1:
        return events[0].wire()
    return b"".join(e.wire() for e in events)


class ClientError(BridgeError):
    """The client answered a bridge request with a JSON-RPC error object."""

    def __init__(self, error: JSONObject) -> None:
        message = str(error.get("message", "client error"))
        super().__init__(message, data=error.get("data"))
        self.client_code = error.get("code")


class EventHub:
    """Publishes JSON-RPC messages to SSE subscribers with replay on reconnect."""

    def __init__(self, ring_size: int = 4096, frames: FrameSettings | None = None) -> None:
        self._ring: deque[Event] = deque(maxlen=ring_size)
        self._next_id = 1
        self._waiters: set[asyncio.Future[None]] = set()
        self._pending: dict[str, asyncio.Future[Any]] = {}
        self._request_ids = itertools.count(1)
        self._subscribers = 0
        self._closed = False
        self._generation = 0  # bumped to end every open stream (tests, reconnects)
        self.frames = FrameCoalescer(self._append, frames)

    @property
    def last_id(self) -> int:
        return self._next_id - 1

    @property
    def subscribers(self) -> int:
        return self._subscribers

    def publish_nowait(self, message: JSONObject) -> Event:
        """Publish MESSAGE after any text frames still held back."""
        self.frames.flush()
        return self._append(message)

    async def publish(self, message: JSONObject) -> Event:
        return self.publish_nowait(message)

    async def notify(self, method: str, params: JSONObject) -> Event:
        return self.publish_nowait({"jsonrpc": "2.0", "method": method, "params": params})

    def stream_text(self, session_id: str, kind: str, text: str) -> None:
        """Queue a text delta of ``kind`` for ``session_id``; it leaves in a frame."""
        self.frames.delta(session_id, kind, text)

    def end_stream(self, session_id: str) -> None:
        """Flush ``session_id``'s frame; its next delta is the first of a turn."""
        self.frames.end_turn(session_id)

    def _append(self, message: JSONObject) -> Event:
        event = Event(self._next_id, json.dumps(message, ensure_ascii=False))
        self._next_id += 1
        self._ring.append(event)
        self._wake()
        return event

    def _wake(self) -> None:
        waiters, self._waiters = self._waiters, set()
        for fut in waiters:
            if not fut.done():
                fut.set_result(None)

    async def _changed(self) -> None:
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiters.add(fut)
        try:
            await fut
        finally:
            self._waiters.discard(fut)

    def _after(self, cursor: int) -> list[Event]:
        """The retained events with ids above ``cursor``, oldest first."""
        ring = self._ring
        if not ring or ring[-1].id <= cursor:
            return []
        start = max(0, cursor + 1 - ring[0].id)
        if start == 0:
            return list(ring)
        return list(itertools.islice(ring, start, None))

    async def subscribe(self, last_event_id: int | None = None) -> AsyncIterator[Event]:
        """Yield events after ``last_event_id`` (all retained ones when None), then live."""
        batches = self.subscribe_batches(last_event_id)
        try:
            async for batch in batches:
                for event in batch:
                    yield event
        finally:
            await batches.aclose()

    async def subscribe_batches(
        self, last_event_id: int | None = None
    ) -> AsyncGenerator[list[Event], None]:
        """Lists of the events after ``last_event_id``, then of new ones as they come.

        Every event already waiting comes in one list, so a writer can send them in
        one write.
        """
        cursor = 0 if last_event_id is None else last_event_id
        if cursor > self.last_id:
            # Never issued here: the client saw an earlier bridge. Waiting for ids to
            # pass it would silence the stream, so send everything retained instead.
            log.warning("Last-Event-ID %d is ahead of %d; replaying all", cursor, self.last_id)
            cursor = 0
        generation = self._generation
        self._subscribers += 1
        try:
            while not self._closed and generation == self._generation:
                batch = self._after(cursor)
                if not batch:
                    await self._changed()
                    continue
                if batch[0].id > cursor + 1 and last_event_id is not None:
                    log.warning(
                        "replay gap: events %d..%d left the ring", cursor + 1, batch[0].id - 1
                    )
                cursor = batch[-1].id
                yield batch
        finally:
            self._subscribers -= 1

    async def drop_streams(self) -> None:
        """End every open SSE stream; clients reconnect with Last-Event-ID."""
        self._generation += 1
        self._wake()

    async def close(self) -> None:
        self.frames.close()
        self._closed = True
        self._wake()
        for fut in self._pending.values():
            if not fut.done():
                fut.set_exception(ClientGone("The bridge is shutting down"))

    async def request(self, method: str, params: JSONObject, *, timeout_s: float | None) -> Any:
        """Send a request to the client over SSE and wait for its POSTed response."""
        rid = f"b{next(self._request_ids)}"
        fut: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._pending[rid] = fut
        try:
            await self.publish({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
            if timeout_s is None:
                return await fut
            try:
                return await asyncio.wait_for(fut, timeout_s)
            except TimeoutError as exc:
                raise ClientGone(
                    f"The client did not answer {method} within {timeout_s:g} s"
                ) from exc
        finally:
            self._pending.pop(rid, None)

    def resolve(self, rid: int | str, result: Any, error: JSONObject | None) -> bool:
        """Deliver a client's response; False when no request with that id waits."""
        fut = self._pending.get(str(rid))
        if fut is None or fut.done():
            return False
        if error is not None:
            fut.set_exception(ClientError(error))
        else:
            fut.set_result(result)
        return True

    def fail_pending(self, reason: str) -> None:
        """Fail every waiting request, e.g. when a turn is cancelled."""
        for fut in list(self._pending.values()):
            if not fut.done():
                fut.set_exception(ClientGone(reason))
