"""Test-only methods, present when the bridge runs with AGENT_SHELL_BRIDGE_DEBUG=1.

They let client test suites provoke what is otherwise hard to trigger on demand:
arbitrary SSE messages and a dropped event stream.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from ..runtime import Runtime
from ..transport.rpc import Dispatcher
from ..types import JSONObject
from ..wire import Params


class EmitParams(Params):
    messages: list[JSONObject] = Field(min_length=1, max_length=10_000)
    count: int = Field(1, ge=1, le=10_000)


class DropParams(Params):
    pass


class EchoParams(Params):
    method: str
    params: JSONObject = Field(default_factory=dict)
    timeout_s: float = Field(10.0, gt=0, le=120)


def register(d: Dispatcher[Runtime]) -> None:
    @d.method("debug/emit", EmitParams)
    async def emit(rt: Runtime, p: EmitParams) -> dict[str, Any]:
        """Publish the messages (``count`` times over) on the event stream."""
        last = 0
        for _ in range(p.count):
            for message in p.messages:
                last = (await rt.hub.publish(message)).id
        return {"lastEventId": last}

    @d.method("debug/drop_streams", DropParams)
    async def drop(rt: Runtime, p: DropParams) -> dict[str, Any]:
        await rt.hub.drop_streams()
        return {"dropped": True}

    @d.method("debug/client_request", EchoParams)
    async def client_request(rt: Runtime, p: EchoParams) -> dict[str, Any]:
        """Send a request to the client and return what it answered."""
        result = await rt.hub.request(p.method, p.params, timeout_s=p.timeout_s)
        return {"result": result}
