"""A small async client of the bridge protocol (used by ``run`` and by tests).

Speaks exactly what Emacs speaks: JSON-RPC POSTs to ``/rpc`` with the bearer token,
an SSE stream from ``/events`` resumed with ``Last-Event-ID`` after a drop, and
responses POSTed back for the bridge's own requests.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import logging
from collections.abc import AsyncIterator
from typing import Any

import httpx

from ..errors import BridgeError
from ..types import JSONObject

__all__ = ["BridgeConnection", "RemoteError"]

log = logging.getLogger(__name__)


class RemoteError(BridgeError):
    """The bridge answered with a JSON-RPC error object."""

    def __init__(self, error: JSONObject) -> None:
        super().__init__(str(error.get("message", "error")), data=error.get("data"))
        self.remote_code = int(error.get("code", BridgeError.code))


class BridgeConnection:
    def __init__(self, port: int, token: str, *, timeout_s: float = 30.0) -> None:
        self.base = f"http://127.0.0.1:{port}"
        self._http = httpx.AsyncClient(
            base_url=self.base,
            headers={"Authorization": f"Bearer {token}"},
            timeout=httpx.Timeout(timeout_s, read=None),
            trust_env=False,  # loopback traffic must never go through a proxy
        )
        self._ids = itertools.count(1)
        self.last_event_id: int | None = None

    async def aclose(self) -> None:
        await self._http.aclose()

    async def call(self, method: str, params: JSONObject | None = None) -> Any:
        rid = next(self._ids)
        body = {"jsonrpc": "2.0", "id": rid, "method": method, "params": params or {}}
        response = await self._http.post("/rpc", json=body)
        reply = response.json()
        if "error" in reply:
            raise RemoteError(reply["error"])
        return reply["result"]

    async def respond(self, rid: int | str, result: Any) -> None:
        await self._http.post("/rpc", json={"jsonrpc": "2.0", "id": rid, "result": result})

    async def respond_error(self, rid: int | str, code: int, message: str) -> None:
        await self._http.post(
            "/rpc",
            json={"jsonrpc": "2.0", "id": rid, "error": {"code": code, "message": message}},
        )

    async def messages(self) -> AsyncIterator[JSONObject]:
        """Every message the bridge sends, reconnecting (without loss) when dropped."""
        while True:
            headers = {"Accept": "text/event-stream"}
            if self.last_event_id is not None:
                headers["Last-Event-ID"] = str(self.last_event_id)
            try:
                async with self._http.stream("GET", "/events", headers=headers) as response:
                    async for event_id, data in _sse(response):
                        if event_id is not None:
                            if self.last_event_id is not None and event_id <= self.last_event_id:
                                continue
                            self.last_event_id = event_id
                        yield json.loads(data)
            except (httpx.ReadError, httpx.RemoteProtocolError) as exc:
                log.info("event stream dropped (%s); reconnecting", exc)
            await asyncio.sleep(0.05)  # back off before reconnecting


async def _sse(response: httpx.Response) -> AsyncIterator[tuple[int | None, str]]:
    event_id: int | None = None
    data: list[str] = []
    async for line in response.aiter_lines():
        if not line:
            if data:
                yield event_id, "\n".join(data)
            event_id, data = None, []
            continue
        if line.startswith(":"):
            continue
        name, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if name == "data":
            data.append(value)
        elif name == "id":
            try:
                event_id = int(value)
            except ValueError:
                event_id = None
