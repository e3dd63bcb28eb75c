"""Streamed deltas leave the bridge in frames: nothing reordered, dropped or doubled.

The property tests drive the real :class:`EventHub` (its coalescer included) with a
fake clock: random delta sizes cut through CJK text and emoji, two sessions, text
and thought deltas, and other messages published in between. What comes out,
serialised as SSE and read back through the real SSE decoder in random byte pieces,
must be the same text in the same order with every boundary in its place. The
integration tests run a real bridge against the scripted model.
"""

from __future__ import annotations

import asyncio
import codecs
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from agent_rig import make_project, running_rig
from agent_shell_bridge.model.sse import SSEDecoder
from agent_shell_bridge.transport.events import EventHub, encode_events
from agent_shell_bridge.transport.frames import FrameSettings
from conftest import StreamEnded

TEXT = "中文测试🚀e\u0301 ascii 長い文章，标点。\u2028 tab\t 한국어 "
KINDS = ("agent_message_chunk", "agent_thought_chunk")


@dataclass
class FakeClock:
    now: float = 100.0

    def __call__(self) -> float:
        return self.now


# An op is ("delta", session, kind, text, gap_s) or ("boundary", n).
delta_op = st.tuples(
    st.just("delta"),
    st.sampled_from(["s1", "s2"]),
    st.sampled_from(KINDS),
    st.text(alphabet=TEXT, min_size=1, max_size=12),
    st.sampled_from([0.0, 0.0, 0.001, 0.004, 0.02, 0.1]),
)
boundary_op = st.tuples(st.just("boundary"), st.integers(0, 10**6))
ops_strategy = st.lists(st.one_of(delta_op, delta_op, delta_op, boundary_op), max_size=120)


def _merge(items: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """Join adjacent text items of the same kind; boundaries stay as they are."""
    out: list[tuple[str, str]] = []
    for kind, text in items:
        if out and kind in KINDS and out[-1][0] == kind:
            out[-1] = (kind, out[-1][1] + text)
        else:
            out.append((kind, text))
    return out


def _project(messages: list[dict[str, Any]], session: str) -> list[tuple[str, str]]:
    items: list[tuple[str, str]] = []
    for m in messages:
        params = m.get("params") or {}
        if m.get("method") == "session/update":
            if params["sessionId"] == session:
                update = params["update"]
                items.append((update["sessionUpdate"], update["content"]["text"]))
        else:
            items.append(("boundary", str(params["n"])))
    return items


@settings(max_examples=150, deadline=None)
@given(ops=ops_strategy, interval_ms=st.sampled_from([5, 16, 33]), max_chars=st.integers(1, 40))
def test_frames_keep_order_and_text(ops: list[Any], interval_ms: int, max_chars: int) -> None:
    async def run() -> None:
        clock = FakeClock()
        hub = EventHub(frames=FrameSettings(interval_s=interval_ms / 1000, max_chars=max_chars))
        hub.frames._clock = clock
        for op in ops:
            if op[0] == "delta":
                _, session, kind, text, gap = op
                clock.now += gap
                hub.stream_text(session, kind, text)
            else:
                hub.publish_nowait(
                    {"jsonrpc": "2.0", "method": "test/boundary", "params": {"n": op[1]}}
                )
        hub.frames.close()
        messages = [json.loads(e.data) for e in hub._ring]
        for session in ("s1", "s2"):
            expected = _merge(
                [
                    (op[2], op[3]) if op[0] == "delta" else ("boundary", str(op[1]))
                    for op in ops
                    if op[0] == "boundary" or op[1] == session
                ]
            )
            assert _merge(_project(messages, session)) == expected
        deltas = sum(1 for op in ops if op[0] == "delta")
        assert hub.frames.frames <= deltas
        assert [e.id for e in hub._ring] == list(range(1, len(hub._ring) + 1))

    asyncio.run(run())


@settings(max_examples=60, deadline=None)
@given(
    texts=st.lists(st.text(alphabet=TEXT, min_size=1, max_size=9), min_size=1, max_size=60),
    cuts=st.lists(st.integers(1, 9), min_size=1, max_size=20),
)
def test_frames_survive_the_wire_byte_for_byte(texts: list[str], cuts: list[int]) -> None:
    """Frames serialised as SSE and cut into byte pieces decode to the same text."""

    async def run() -> None:
        clock = FakeClock()
        hub = EventHub(frames=FrameSettings(interval_s=0.016, max_chars=16))
        hub.frames._clock = clock
        for text in texts:
            hub.stream_text("s1", "agent_message_chunk", text)
        hub.frames.close()
        wire = encode_events(list(hub._ring))
        # Cut the bytes anywhere, inside multi-byte characters too, and decode them
        # the way a streaming client does: an incremental UTF-8 decoder.
        utf8 = codecs.getincrementaldecoder("utf-8")()
        decoder = SSEDecoder()
        events = []
        pos, n = 0, 0
        while pos < len(wire):
            size = cuts[n % len(cuts)]
            n += 1
            events += decoder.feed(utf8.decode(wire[pos : pos + size]))
            pos += size
        events += decoder.feed(utf8.decode(b"", final=True)) + decoder.close()
        got = "".join(json.loads(e.data)["params"]["update"]["content"]["text"] for e in events)
        assert got.encode("utf-8") == "".join(texts).encode("utf-8")
        assert [int(e.id or 0) for e in events] == list(range(1, len(events) + 1))

    asyncio.run(run())


async def test_first_delta_leaves_at_once_and_the_rest_wait_for_the_interval() -> None:
    clock = FakeClock()
    hub = EventHub(frames=FrameSettings(interval_s=0.016, max_chars=1000))
    hub.frames._clock = clock
    hub.stream_text("s", "agent_message_chunk", "第一")
    assert hub.last_id == 1  # the first character is never held back
    for _ in range(5):
        clock.now += 0.001
        hub.stream_text("s", "agent_message_chunk", "字")
    assert hub.last_id == 1
    assert hub.frames.pending("s") == "字" * 5
    # The loop's timer flushes what waits, within the interval.
    stream = hub.subscribe(1)
    event = await asyncio.wait_for(anext(stream), 2)
    assert json.loads(event.data)["params"]["update"]["content"]["text"] == "字" * 5
    await stream.aclose()
    # A size limit flushes early; a quiet gap longer than the interval sends at once.
    clock.now += 0.002
    hub.stream_text("s", "agent_message_chunk", "x" * 1000)
    assert hub.last_id == 3
    clock.now += 1.0
    hub.stream_text("s", "agent_message_chunk", "y")
    assert hub.last_id == 4


async def test_steady_stream_flushes_on_arrival_of_the_newest_delta() -> None:
    """In a paced stream a frame leaves when its newest delta arrives, not on a timer."""
    clock = FakeClock()
    hub = EventHub(frames=FrameSettings(interval_s=0.016, max_chars=10_000))
    hub.frames._clock = clock
    flushed_on_arrival = 0
    for i in range(60):
        before = hub.last_id
        hub.stream_text("s", "agent_message_chunk", f"<{i}>")
        if hub.last_id > before:
            flushed_on_arrival += 1
            last = json.loads(hub._ring[-1].data)["params"]["update"]["content"]["text"]
            assert last.endswith(f"<{i}>")
        clock.now += 0.005
    # About one frame per interval (16 ms / 5 ms: every third or fourth delta).
    assert 15 <= flushed_on_arrival <= 25
    hub.frames.close()


async def test_other_messages_flush_the_open_frame_first() -> None:
    hub = EventHub(frames=FrameSettings(interval_s=10.0, max_chars=10_000))
    hub.stream_text("s", "agent_thought_chunk", "想")
    hub.stream_text("s", "agent_thought_chunk", "一想")
    hub.stream_text("s", "agent_message_chunk", "答")  # kind change: thought frame closes
    await hub.notify("session/update", {"sessionId": "s", "update": {"sessionUpdate": "tool_call"}})
    kinds = [json.loads(e.data)["params"]["update"]["sessionUpdate"] for e in hub._ring]
    texts = [
        json.loads(e.data)["params"]["update"].get("content", {}).get("text") for e in hub._ring
    ]
    assert kinds == [
        "agent_thought_chunk",
        "agent_thought_chunk",
        "agent_message_chunk",
        "tool_call",
    ]
    assert texts == ["想", "一想", "答", None]
    await hub.close()


# --- through a real bridge -------------------------------------------------------------

LONG = ("流式输出测试，中文与 ASCII mixed text; " * 400)[:12_000]


async def test_long_reply_arrives_whole_in_fewer_frames(serve_app: Any, tmp_path: Path) -> None:
    project = make_project(tmp_path / "p", {"a.txt": "a\n"})
    async with running_rig(serve_app, project, [{"text": LONG, "chunk_size": 3}]) as rig:
        sid = await rig.new_session()
        turn = await rig.turn(sid, "talk")
        chunks = turn.updates("agent_message_chunk")
        assert turn.text == LONG
        assert len(chunks) < len(LONG) // 3  # joined into frames
        assert chunks[0]["content"]["text"] == LONG[:3]  # the first delta alone, at once
        assert turn.end["stopReason"] == "end_turn"


async def test_cancel_mid_stream_sends_no_text_after_turn_end(
    serve_app: Any, tmp_path: Path
) -> None:
    """Regression guard: a frame held back must not trail the cancelled turn's end.

    Bounded events rather than a clock: frames already on their way when the cancel
    is sent may still arrive, but by the time the cancel is acknowledged the turn's
    ``turn_end`` is published (so the stop took one request's round trip, not a
    timer's), and no text of that turn comes after it. The next turn's events
    follow cleanly.
    """
    project = make_project(tmp_path / "p", {"a.txt": "a\n"})
    slow = {"text": "慢" * 4000, "chunk_size": 2, "delay_ms": 1}
    async with running_rig(serve_app, project, [slow, {"text": "second turn"}]) as rig:
        sid = await rig.new_session()
        hub = rig.runtime.hub
        marks: dict[str, int] = {}

        async def cancel_after_text(message: dict[str, Any], _stream: Any) -> None:
            update = (message.get("params") or {}).get("update") or {}
            if update.get("sessionUpdate") == "agent_message_chunk" and not marks:
                marks["sent"] = hub.last_id  # the bridge runs in this process
                result = await rig.client.result("session/cancel", {"sessionId": sid})
                assert result == {"cancelled": True}
                marks["acked"] = hub.last_id

        turn = await rig.turn(sid, "talk", on_message=cancel_after_text)
        assert turn.end["stopReason"] == "cancelled"
        events = [(e.id, json.loads(e.data)) for e in hub._ring]
        ours = [
            (i, m["params"]["update"])
            for i, m in events
            if m.get("method") == "session/update" and m["params"].get("sessionId") == sid
        ]
        end_id = next(i for i, u in ours if u["sessionUpdate"] == "turn_end")
        text_ids = [i for i, u in ours if u["sessionUpdate"] == "agent_message_chunk"]
        assert end_id <= marks["acked"]
        assert all(i < end_id for i in text_ids)
        assert text_ids and text_ids[0] <= marks["sent"]
        assert turn.text and set(turn.text) == {"慢"} and len(turn.text) < 8000
        second = await rig.turn(sid, "again")
        assert second.text == "second turn"
        assert all(u["content"]["text"] != "慢" for u in second.updates("agent_message_chunk"))


async def test_reconnect_mid_stream_loses_and_doubles_nothing(
    serve_app: Any, tmp_path: Path
) -> None:
    project = make_project(tmp_path / "p", {"a.txt": "a\n"})
    text = ("断线重连 reconnect " * 500)[:6000]
    step = {"text": text, "chunk_size": 3, "delay_ms": 1}
    async with running_rig(serve_app, project, [step]) as rig:
        sid = await rig.new_session()
        start = await rig.client.last_event_id()
        got: list[str] = []
        ids: list[int] = []
        ended = False
        dropped = 0
        last: int | str = start
        await rig.client.result("session/prompt", {"sessionId": sid, "prompt": "talk"})
        while not ended:
            async with rig.client.events(last) as stream:
                while True:
                    try:
                        event = await stream.next_event(timeout=30)
                    except StreamEnded:
                        break
                    ids.append(int(event.id or 0))
                    last = int(event.id or 0)
                    message = event.json()
                    update = (message.get("params") or {}).get("update") or {}
                    if update.get("sessionUpdate") == "agent_message_chunk":
                        got.append(update["content"]["text"])
                        if dropped < 3 and len(got) % 5 == 0:
                            dropped += 1
                            await rig.runtime.hub.drop_streams()
                    if update.get("sessionUpdate") == "turn_end":
                        ended = True
                        break
        assert dropped == 3
        assert "".join(got) == text
        assert ids == list(range(ids[0], ids[0] + len(ids)))
