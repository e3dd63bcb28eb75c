"""The HTTP face of the bridge: ``POST /rpc`` and ``GET /events`` on loopback.

Every request passes the same gate before routing: no browser ``Origin``, a loopback
``Host`` naming our port (DNS-rebinding guard), the per-launch bearer token compared
in constant time, and a body size limit. Refusals are JSON-RPC error objects.
"""

from __future__ import annotations

import hmac
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any, Protocol

from sse_starlette import EventSourceResponse
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ..errors import BridgeError, Forbidden, PayloadTooLarge, Unauthorized
from .events import EventHub, encode_events
from .rpc import Dispatcher, IncomingResponse, error_response, parse_message

__all__ = ["Served", "ServerSettings", "create_app"]

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class ServerSettings:
    token: str
    port: int
    max_body_bytes: int = 8 * 1024 * 1024
    sse_ping_s: float = 15.0

    @property
    def allowed_hosts(self) -> frozenset[str]:
        return frozenset({f"127.0.0.1:{self.port}", f"localhost:{self.port}"})


def _refusal(status: int, error: BridgeError) -> JSONResponse:
    return JSONResponse(error_response(None, error), status_code=status)


class GateMiddleware:
    """Origin, Host, token and body-size checks for every HTTP request."""

    def __init__(self, app: ASGIApp, settings: ServerSettings) -> None:
        self.app = app
        self.settings = settings
        self._expected = f"Bearer {settings.token}".encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self.app(scope, receive, send)
            return
        if scope["type"] != "http":
            # No websocket (or other) endpoint exists; refuse before any routing.
            if scope["type"] == "websocket":
                await send({"type": "websocket.close", "code": 1008})
            return
        headers: dict[bytes, bytes] = {}
        for key, value in scope["headers"]:
            # A repeated security header is ambiguous; keep the first and refuse below.
            if key in headers and key in (b"host", b"authorization", b"origin"):
                headers[key + b"!dup"] = value
            headers.setdefault(key, value)
        refusal = self._check(headers)
        if refusal is not None:
            await refusal(scope, receive, send)
            return
        length = headers.get(b"content-length")
        if length is not None:
            try:
                too_big = int(length) > self.settings.max_body_bytes
            except ValueError:
                too_big = True
            if too_big:
                await _refusal(413, PayloadTooLarge("Request body too large"))(scope, receive, send)
                return
        await self.app(scope, self._limited(receive), send)

    def _check(self, headers: dict[bytes, bytes]) -> Response | None:
        if any(k.endswith(b"!dup") for k in headers):
            return _refusal(403, Forbidden("Repeated Host, Origin or Authorization header"))
        if b"origin" in headers:
            return _refusal(403, Forbidden("Requests from web pages are refused"))
        host = headers.get(b"host", b"").decode("latin-1")
        if host not in self.settings.allowed_hosts:
            return _refusal(403, Forbidden("Host must be the loopback address and port"))
        supplied = headers.get(b"authorization", b"")
        if not hmac.compare_digest(supplied, self._expected):
            return _refusal(401, Unauthorized("Missing or wrong bearer token"))
        return None

    def _limited(self, receive: Receive) -> Receive:
        limit = self.settings.max_body_bytes
        seen = 0

        async def wrapped() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > limit:
                    raise _BodyTooLarge
            return message

        return wrapped


class _BodyTooLarge(Exception):
    """Raised inside the receive channel when a chunked body passes the limit."""


class Served(Protocol):
    """What the transport serves: an event hub, a method table whose handlers get
    the served object itself, and a way to close it all. The transport knows no
    session; the runtime is one of these."""

    hub: EventHub

    @property
    def dispatcher(self) -> Dispatcher[Any]: ...

    async def aclose(self) -> None: ...


def create_app(settings: ServerSettings, runtime: Served) -> Starlette:
    """Build the Starlette app over ``runtime`` (see :class:`Served`)."""

    async def rpc(request: Request) -> Response:
        try:
            body = await request.body()
        except _BodyTooLarge:
            return _refusal(413, PayloadTooLarge("Request body too large"))
        except ClientDisconnect:
            return Response(status_code=400)
        try:
            message = parse_message(body)
        except BridgeError as exc:
            rid = exc.data.get("id") if isinstance(exc.data, dict) else None
            exc.data = None
            return JSONResponse(error_response(rid, exc))
        if isinstance(message, IncomingResponse):
            if not runtime.hub.resolve(message.id, message.result, message.error):
                log.info("response for unknown or finished request %r ignored", message.id)
            return Response(status_code=202)
        reply = await runtime.dispatcher.dispatch(runtime, message)
        if reply is None:
            return Response(status_code=202)
        return JSONResponse(reply)

    async def events(request: Request) -> Response:
        raw = request.headers.get("last-event-id")
        last: int | None = None
        if raw is not None:
            try:
                last = max(0, int(raw))
            except ValueError:
                last = None

        async def stream() -> AsyncIterator[bytes]:
            # Every event already waiting goes out in one write (a replay, a burst).
            async for batch in runtime.hub.subscribe_batches(last):
                yield encode_events(batch)

        return EventSourceResponse(
            stream(),
            ping=settings.sse_ping_s,
            headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"},
        )

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        try:
            yield
        finally:
            await runtime.aclose()

    app = Starlette(
        routes=[
            Route("/rpc", rpc, methods=["POST"]),
            Route("/events", events, methods=["GET"]),
        ],
        middleware=[Middleware(GateMiddleware, settings=settings)],
        lifespan=lifespan,
    )
    app.state.runtime = runtime
    return app
