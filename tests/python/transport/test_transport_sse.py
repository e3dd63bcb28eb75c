"""``GET /events``: ids, replay after a dropped stream, the bounded ring, client requests.

Against a real ``agent-shell-bridge serve`` with debug methods (``debug/emit``,
``debug/drop_streams``, ``debug/client_request``), or uvicorn in-process when a test
needs settings of its own (a short ping, a small ring).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from typing import Any

from agent_shell_bridge.errors import ClientGone
from conftest import (
    BridgeClient,
    BridgeProcess,
    EventStream,
    InProcessServer,
    StreamEnded,
    make_runtime,
)

ServeApp = Callable[..., Awaitable[InProcessServer]]


def note(n: int, **extra: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "method": "test/note", "params": {"n": n, **extra}}


async def emit(client: BridgeClient, *messages: dict[str, Any], count: int = 1) -> int:
    result = await client.result("debug/emit", {"messages": list(messages), "count": count})
    return int(result["lastEventId"])


def numbers(events: list[Any]) -> list[int]:
    return [event.json()["params"]["n"] for event in events]


def ids(events: list[Any]) -> list[int]:
    return [int(event.id) for event in events]


async def test_events_carry_increasing_ids(shared_bridge: BridgeProcess) -> None:
    async with shared_bridge.client() as client, client.events(from_now=True) as stream:
        start = await client.last_event_id()
        last = await emit(client, *(note(i) for i in range(5)))
        events = await stream.take(5)
    assert ids(events) == list(range(start + 1, start + 6))
    assert last == start + 5
    assert numbers(events) == [0, 1, 2, 3, 4]
    assert all(event.event is None for event in events)  # plain "message" events


async def test_every_event_is_one_json_rpc_message(shared_bridge: BridgeProcess) -> None:
    async with shared_bridge.client() as client, client.events(from_now=True) as stream:
        await emit(client, note(1))
        (event,) = await stream.take(1)
    assert b"\n" not in event.raw_data
    assert event.json() == note(1)


async def test_reconnect_with_last_event_id_gets_exactly_the_missed_events(
    shared_bridge: BridgeProcess,
) -> None:
    async with shared_bridge.client() as client:
        async with client.events(from_now=True) as stream:
            await emit(client, note(1), note(2))
            seen = await stream.take(2)
            await client.result("debug/drop_streams")
            seen += await stream.until_closed()
        # Missed while disconnected:
        await emit(client, note(3), note(4), note(5))
        async with client.events(seen[-1].id) as stream:
            replayed = await stream.take(3)
            await emit(client, note(6))
            replayed += await stream.take(1)
    assert numbers(seen) == [1, 2]
    assert numbers(replayed) == [3, 4, 5, 6]
    all_ids = ids(seen + replayed)
    assert all_ids == list(range(all_ids[0], all_ids[0] + 6))


async def test_drops_during_a_stream_of_emits_lose_and_repeat_nothing(
    shared_bridge: BridgeProcess,
) -> None:
    """Streams are dropped between emits while the reader keeps reconnecting."""
    async with shared_bridge.client() as client, shared_bridge.client() as control:

        async def pour() -> int:
            for i in range(16):
                await emit(control, note(i), count=20)
                if i % 3 == 1:
                    await control.result("debug/drop_streams")
            return await emit(control, note(-1))

        first = await client.last_event_id()
        received: list[Any] = []
        reconnects = 0
        poured: asyncio.Task[int] | None = None
        while not received or numbers(received)[-1] != -1:
            async with client.events(received[-1].id if received else first) as stream:
                poured = poured or asyncio.create_task(pour())
                try:
                    while not received or numbers(received)[-1] != -1:
                        received.append(await stream.next_event(timeout=10))
                except StreamEnded:
                    reconnects += 1
        assert poured is not None
        last = await poured
    assert reconnects >= 1
    assert ids(received) == list(range(first + 1, last + 1))
    assert numbers(received) == [i for i in range(16) for _ in range(20)] + [-1]


async def test_without_last_event_id_every_retained_event_is_sent(serve_app: ServeApp) -> None:
    server = await serve_app(make_runtime(ring_size=16))
    async with server.client() as client:
        await emit(client, note(0), count=5)
        async with client.events() as stream:
            events = await stream.take(5)
    assert ids(events) == [1, 2, 3, 4, 5]


async def test_replay_ring_is_bounded_and_evicts_the_oldest(serve_app: ServeApp) -> None:
    runtime = make_runtime(ring_size=16)
    server = await serve_app(runtime)
    async with server.client() as client:
        await emit(client, *(note(i) for i in range(40)))
        assert len(runtime.hub._ring) == 16
        async with client.events(0) as stream:
            oldest_kept = await stream.take(16)
            await emit(client, note(40))
            (live,) = await stream.take(1)
        async with client.events(35) as stream:
            recent = await stream.take(5)
    assert ids(oldest_kept) == list(range(25, 41))
    assert ids([live]) == [41]
    assert ids(recent) == [36, 37, 38, 39, 40]


async def test_unreadable_last_event_id_replays_the_whole_ring(serve_app: ServeApp) -> None:
    server = await serve_app(make_runtime(ring_size=8))
    async with server.client() as client:
        await emit(client, note(0), count=3)
        for value in ("abc", "", "9" * 5000, "-4"):
            async with client.events(value) as stream:
                assert ids(await stream.take(3)) == [1, 2, 3]


async def test_regression_subsecond_ping_interval_disabled_pings(serve_app: ServeApp) -> None:
    """ServerSettings.sse_ping_s=0.2 was passed on as int(0.2) == 0, i.e. no pings at all."""
    server = await serve_app(sse_ping_s=0.2)
    async with server.client() as client, client.events() as stream:
        first = await stream.wait_comment(timeout=3)
        second = await stream.wait_comment(timeout=3)
    assert first.strip().startswith(b"ping")
    assert second.strip().startswith(b"ping")


async def test_chinese_text_round_trips_byte_for_byte(shared_bridge: BridgeProcess) -> None:
    text = "中文：你好，世界！「引号」—— 𠀋 🚀 e\u0301 \u2028 行\r\n尾\t\\\"'"
    message = {"jsonrpc": "2.0", "method": "session/update", "params": {"text": text, "键": "值"}}
    async with shared_bridge.client() as client, client.events(from_now=True) as stream:
        await emit(client, message)
        (event,) = await stream.take(1)
    assert event.raw_data == json.dumps(message, ensure_ascii=False).encode("utf-8")
    assert "你好，世界".encode() in event.raw_data  # sent as UTF-8, not \\u escapes
    assert event.json()["params"]["text"].encode("utf-8") == text.encode("utf-8")


# ------------------------------------------------------------ client requests


async def next_request(stream: EventStream, method: str) -> dict[str, Any]:
    while True:
        message: dict[str, Any] = (await stream.next_event()).json()
        if message.get("method") == method and "id" in message:
            return message


async def test_client_request_is_resolved_by_a_posted_response(
    shared_bridge: BridgeProcess,
) -> None:
    async with shared_bridge.client() as client, client.events(from_now=True) as stream:
        pending = asyncio.create_task(
            client.rpc(
                "debug/client_request",
                {"method": "tool/call", "params": {"name": "open_file"}, "timeout_s": 10},
            )
        )
        request = await next_request(stream, "tool/call")
        assert request["params"] == {"name": "open_file"}
        assert isinstance(request["id"], str)
        answer = {"jsonrpc": "2.0", "id": request["id"], "result": {"打开": "好的"}}
        response = await client.post_rpc(answer)
        assert (response.status_code, response.content) == (202, b"")
        reply = await asyncio.wait_for(pending, 5)
        assert reply["result"] == {"result": {"打开": "好的"}}
        # A second answer to the same request is for an unknown id now.
        again = await client.post_rpc(answer)
        assert (again.status_code, again.content) == (202, b"")


async def test_client_error_answer_fails_the_request(shared_bridge: BridgeProcess) -> None:
    async with shared_bridge.client() as client, client.events(from_now=True) as stream:
        pending = asyncio.create_task(
            client.rpc("debug/client_request", {"method": "tool/call", "timeout_s": 10})
        )
        request = await next_request(stream, "tool/call")
        error = {"code": -32005, "message": "文件不存在", "data": {"path": "/x"}}
        response = await client.post_rpc({"jsonrpc": "2.0", "id": request["id"], "error": error})
        assert response.status_code == 202
        reply = await asyncio.wait_for(pending, 5)
    assert reply["error"]["message"] == "文件不存在"
    assert reply["error"]["data"] == {"path": "/x"}


async def test_client_request_times_out_with_client_gone(shared_bridge: BridgeProcess) -> None:
    async with shared_bridge.client() as client, client.events(from_now=True) as stream:
        reply = await client.rpc(
            "debug/client_request", {"method": "session/request_permission", "timeout_s": 0.2}
        )
        assert reply["error"]["code"] == ClientGone.code == -32031
        request = await next_request(stream, "session/request_permission")
        # The late answer is harmless: 202, and the bridge carries on.
        late = await client.post_rpc({"jsonrpc": "2.0", "id": request["id"], "result": {}})
        assert (late.status_code, late.content) == (202, b"")
        assert (await client.result("ping"))["pong"] is True


async def test_regression_nan_answer_to_a_client_request_was_a_500(
    shared_bridge: BridgeProcess,
) -> None:
    """A client answering ``"result": NaN`` made the waiting response unrenderable (500).

    Such a body is now a parse error; the request still waits for a proper answer.
    """
    async with shared_bridge.client() as client, client.events(from_now=True) as stream:
        pending = asyncio.create_task(
            client.rpc("debug/client_request", {"method": "tool/call", "timeout_s": 10})
        )
        request = await next_request(stream, "tool/call")
        bad = b'{"jsonrpc": "2.0", "id": "%s", "result": NaN}' % request["id"].encode()
        response = await client.post_rpc(bad)
        assert response.status_code == 200
        assert response.json()["error"]["code"] == -32700
        assert not pending.done()
        await client.post_rpc({"jsonrpc": "2.0", "id": request["id"], "result": 1.5})
        reply = await asyncio.wait_for(pending, 5)
    assert reply["result"] == {"result": 1.5}


# ------------------------------------------------------------------ probes


async def wait_until(predicate: Callable[[], bool], timeout: float = 3.0) -> None:
    """Poll a condition with a deadline (the hub offers nothing to await for this)."""
    async with asyncio.timeout(timeout):
        while not predicate():
            await asyncio.sleep(0.01)


async def test_closed_streams_do_not_leave_subscribers_behind(serve_app: ServeApp) -> None:
    runtime = make_runtime()
    server = await serve_app(runtime)
    for _ in range(5):
        async with server.client() as client, client.events() as stream:
            await emit(client, note(0))
            await stream.take(1)
            assert runtime.hub.subscribers == 1
    await wait_until(lambda: runtime.hub.subscribers == 0)


async def test_regression_last_event_id_from_the_future_silenced_the_stream(
    serve_app: ServeApp,
) -> None:
    """A Last-Event-ID the bridge never issued (one kept from an earlier bridge) made
    the stream wait, silently, until new ids caught up with it.

    Now every retained event is sent: the client has seen none of this bridge's.
    """
    server = await serve_app(make_runtime())
    async with server.client() as client:
        await emit(client, note(0), count=3)
        async with client.events(500) as stream:
            replayed = await stream.take(3)
            await emit(client, note(1))
            (live,) = await stream.take(1)
    assert ids(replayed) == [1, 2, 3]
    assert ids([live]) == [4]
