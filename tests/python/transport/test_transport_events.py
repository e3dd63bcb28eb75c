"""EventHub on its own: ids, the ring, subscribers, and requests awaiting the client."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable

import pytest

from agent_shell_bridge.errors import ClientGone
from agent_shell_bridge.transport.events import ClientError, Event, EventHub


async def take(events: AsyncIterator[Event], n: int) -> list[Event]:
    async with asyncio.timeout(2):
        return [await anext(events) for _ in range(n)]


async def test_ids_start_at_one_and_grow_by_one() -> None:
    hub = EventHub()
    assert hub.last_id == 0
    published = [await hub.notify("n", {"i": i}) for i in range(3)]
    assert [e.id for e in published] == [1, 2, 3]
    assert hub.last_id == 3
    assert json.loads(published[0].data) == {"jsonrpc": "2.0", "method": "n", "params": {"i": 0}}


async def test_data_is_one_line_of_utf8_json() -> None:
    hub = EventHub()
    event = await hub.publish({"text": "你好\n世界"})
    assert "你好" in event.data  # not \\u escapes
    assert "\n" not in event.data  # one SSE data line
    assert json.loads(event.data) == {"text": "你好\n世界"}


async def test_ring_keeps_only_the_newest() -> None:
    hub = EventHub(ring_size=3)
    for i in range(10):
        await hub.notify("n", {"i": i})
    stream = hub.subscribe(0)
    assert [e.id for e in await take(stream, 3)] == [8, 9, 10]
    await stream.aclose()


async def test_subscriber_gets_replay_then_live_events_in_order() -> None:
    hub = EventHub()
    for i in range(3):
        await hub.notify("n", {"i": i})
    stream = hub.subscribe(1)
    replay = await take(stream, 2)
    later = asyncio.create_task(take(stream, 2))
    await hub.notify("n", {"i": 3})
    await hub.notify("n", {"i": 4})
    assert [e.id for e in replay + await later] == [2, 3, 4, 5]
    assert hub.subscribers == 1
    await stream.aclose()
    assert hub.subscribers == 0


async def test_drop_streams_ends_current_subscribers_only() -> None:
    hub = EventHub()
    old = hub.subscribe(None)
    waiting = asyncio.create_task(anext(old))
    await asyncio.wait_for(_until(lambda: hub.subscribers == 1), 2)
    await hub.drop_streams()
    with pytest.raises(StopAsyncIteration):
        await asyncio.wait_for(waiting, 2)
    new = hub.subscribe(None)
    await hub.notify("n", {})
    assert [e.id for e in await take(new, 1)] == [1]
    await new.aclose()


async def test_close_ends_streams_and_fails_waiting_requests() -> None:
    hub = EventHub()
    stream = hub.subscribe(None)
    request = asyncio.create_task(hub.request("tool/call", {}, timeout_s=None))
    (sent,) = await take(stream, 1)
    assert json.loads(sent.data)["method"] == "tool/call"
    await hub.close()
    with pytest.raises(ClientGone):
        await asyncio.wait_for(request, 2)
    with pytest.raises(StopAsyncIteration):
        await asyncio.wait_for(anext(stream), 2)


async def test_request_resolves_with_the_result_and_ids_are_strings() -> None:
    hub = EventHub()
    stream = hub.subscribe(None)
    request = asyncio.create_task(hub.request("tool/call", {"a": 1}, timeout_s=5))
    (sent,) = await take(stream, 1)
    message = json.loads(sent.data)
    assert isinstance(message["id"], str)
    assert hub.resolve(message["id"], {"ok": "好"}, None) is True
    assert await request == {"ok": "好"}
    assert hub.resolve(message["id"], {"ok": 2}, None) is False  # finished already
    await stream.aclose()


async def test_request_error_answer_raises_client_error_with_its_code() -> None:
    hub = EventHub()
    stream = hub.subscribe(None)
    request = asyncio.create_task(hub.request("tool/call", {}, timeout_s=5))
    message = json.loads((await take(stream, 1))[0].data)
    hub.resolve(message["id"], None, {"code": -32005, "message": "坏了", "data": [1]})
    with pytest.raises(ClientError) as caught:
        await request
    assert (caught.value.client_code, caught.value.message, caught.value.data) == (
        -32005,
        "坏了",
        [1],
    )
    await stream.aclose()


async def test_request_times_out_with_client_gone_and_forgets_the_id() -> None:
    hub = EventHub()
    with pytest.raises(ClientGone, match=r"within 0\.05 s"):
        await hub.request("session/request_permission", {}, timeout_s=0.05)
    assert hub.resolve("b1", {}, None) is False


async def test_fail_pending_fails_every_waiting_request() -> None:
    hub = EventHub()
    requests = [asyncio.create_task(hub.request("m", {}, timeout_s=None)) for _ in range(3)]
    await asyncio.wait_for(_until(lambda: hub.last_id == 3), 2)
    hub.fail_pending("turn cancelled")
    for request in requests:
        with pytest.raises(ClientGone, match="turn cancelled"):
            await request


async def test_unknown_response_id_is_ignored() -> None:
    hub = EventHub()
    assert hub.resolve("b42", {}, None) is False
    assert hub.resolve(42, {}, None) is False


async def _until(predicate: Callable[[], bool]) -> None:
    while not predicate():
        await asyncio.sleep(0)
