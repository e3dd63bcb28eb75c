"""Bridge → client messages: the SSE event stream and requests awaiting answers.

Every message gets a monotonically increasing id and is kept in a bounded replay
ring, so a client that reconnects with ``Last-Event-ID`` receives exactly the events
it missed: none lost, none twice. Requests the bridge sends to the client (an
Emacs-side tool call, a permission prompt) are futures resolved when the client
POSTs its response to ``/rpc``.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import logging
from collections import deque
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

from .errors import BridgeError, ClientGone
from .types import JSONObject

__all__ = ["ClientError", "Event", "EventHub"]

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Event:
    id: int
    data: str  # the serialised JSON-RPC message


class ClientError(BridgeError):
    """The client answered a bridge request with a JSON-RPC error object."""

    def __init__(self, error: JSONObject) -> None:
        message = str(error.get("message", "client error"))
        super().__init__(message, data=error.get("data"))
        self.client_code = error.get("code")


class EventHub:
    """Publishes JSON-RPC messages to SSE subscribers with replay on reconnect."""

    def __init__(self, ring_size: int = 4096) -> None:
        self._ring: deque[Event] = deque(maxlen=ring_size)
        self._next_id = 1
        self._changed = asyncio.Condition()
        self._pending: dict[str, asyncio.Future[Any]] = {}
        self._request_ids = itertools.count(1)
        self._subscribers = 0
        self._closed = False
        self._generation = 0  # bumped to end every open stream (tests, reconnects)

    @property
    def last_id(self) -> int:
        return self._next_id - 1

    @property
    def subscribers(self) -> int:
        return self._subscribers

    async def publish(self, message: JSONObject) -> Event:
        event = Event(self._next_id, json.dumps(message, ensure_ascii=False))
        self._next_id += 1
        async with self._changed:
            self._ring.append(event)
            self._changed.notify_all()
        return event

    async def notify(self, method: str, params: JSONObject) -> Event:
        return await self.publish({"jsonrpc": "2.0", "method": method, "params": params})

    async def subscribe(self, last_event_id: int | None = None) -> AsyncIterator[Event]:
        """Yield events after ``last_event_id`` (all retained ones when None), then live."""
        cursor = 0 if last_event_id is None else last_event_id
        if cursor > self.last_id:
            # Never issued here: the client saw an earlier bridge. Waiting for ids to
            # pass it would silence the stream, so send everything retained instead.
            log.warning("Last-Event-ID %d is ahead of %d; replaying all", cursor, self.last_id)
            cursor = 0
        generation = self._generation
        self._subscribers += 1
        try:
            while not self._closed:
                async with self._changed:
                    await self._changed.wait_for(self._has_news(cursor, generation))
                    if generation != self._generation:
                        return
                    batch = [e for e in self._ring if e.id > cursor]
                if batch and batch[0].id > cursor + 1 and last_event_id is not None:
                    log.warning(
                        "replay gap: events %d..%d left the ring", cursor + 1, batch[0].id - 1
                    )
                for event in batch:
                    cursor = event.id
                    yield event
        finally:
            self._subscribers -= 1

    def _has_news(self, cursor: int, generation: int) -> Callable[[], bool]:
        return lambda: (
            self._closed
            or generation != self._generation
            or (bool(self._ring) and self._ring[-1].id > cursor)
        )

    async def drop_streams(self) -> None:
        """End every open SSE stream; clients reconnect with Last-Event-ID."""
        async with self._changed:
            self._generation += 1
            self._changed.notify_all()

    async def close(self) -> None:
        self._closed = True
        async with self._changed:
            self._changed.notify_all()
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
