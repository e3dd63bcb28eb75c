"""Streamed text goes to the client in frames, not one event per model delta.

A model answering fast sends thousands of small deltas a second; one SSE event
each would cost the client (Emacs) a parse and a redisplay per delta. The
:class:`FrameCoalescer` joins a session's consecutive deltas of one kind
(``agent_message_chunk``, ``agent_thought_chunk``) into one ``session/update``
carrying their concatenated text:

* the first delta of a turn, or one arriving after a quiet interval, goes out at
  once, so the first character is never held back;
* after that a frame is flushed every ``interval_s`` (16 ms by default), or as soon
  as it holds ``max_chars`` characters, whichever comes first;
* a frame is also flushed when the next delta is expected to arrive after its
  deadline (the delta gap is tracked), so in a steadily paced stream the newest text
  of every frame leaves as soon as it arrives instead of waiting for a timer;
* every other message is a boundary: the hub flushes all open frames before it
  publishes anything else (tool calls, log entries, ``turn_end``, requests), so the
  order seen by the client is exactly the order of production.

Text is only ever concatenated, never split or re-encoded, so characters (CJK
split across deltas included) arrive byte for byte. Frames are published through the
same hub as everything else: each gets an event id and a place in the replay ring,
so ``Last-Event-ID`` works unchanged.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from ..types import JSONObject

__all__ = ["FrameCoalescer", "FrameSettings"]

Clock = Callable[[], float]


@dataclass(frozen=True, slots=True)
class FrameSettings:
    """How long and how big a frame may grow before it is flushed."""

    interval_s: float = 0.016
    max_chars: int = 4096
    # Weight of the newest gap in the running estimate of the delta gap.
    gap_weight: float = 0.25


@dataclass(slots=True)
class _Stream:
    """One session's open frame and its timing."""

    kind: str | None = None
    parts: list[str] = field(default_factory=list)
    chars: int = 0
    last_flush: float | None = None  # None: the next delta is the first of a turn
    last_arrival: float | None = None
    gap: float = 0.0
    timer: asyncio.TimerHandle | None = None


def frame_message(session_id: str, kind: str, text: str) -> JSONObject:
    """The ``session/update`` notification carrying one frame's text."""
    return {
        "jsonrpc": "2.0",
        "method": "session/update",
        "params": {
            "sessionId": session_id,
            "update": {"sessionUpdate": kind, "content": {"type": "text", "text": text}},
        },
    }


class FrameCoalescer:
    """Joins text deltas per session into frames handed to ``emit``.

    ``emit`` publishes one message synchronously (the hub's append). Timers run on
    the event loop that is running when the first delta arrives.
    """

    def __init__(
        self,
        emit: Callable[[JSONObject], object],
        settings: FrameSettings | None = None,
        *,
        clock: Clock = time.monotonic,
    ) -> None:
        self._emit = emit
        self.settings = settings or FrameSettings()
        self._clock = clock
        self._streams: dict[str, _Stream] = {}
        self.frames = 0  # frames emitted, for tests and benchmarks
        self.deltas = 0

    def pending(self, session_id: str) -> str:
        """The text held back for ``session_id`` (empty when none)."""
        stream = self._streams.get(session_id)
        return "".join(stream.parts) if stream else ""

    def delta(self, session_id: str, kind: str, text: str) -> None:
        """Add one delta of ``kind`` for ``session_id``; may flush at once."""
        if not text:
            return
        self.deltas += 1
        now = self._clock()
        stream = self._streams.get(session_id)
        if stream is None:
            stream = self._streams[session_id] = _Stream()
        if stream.kind is not None and stream.kind != kind:
            self._flush(session_id, stream, now)
        if stream.last_arrival is not None:
            w = self.settings.gap_weight
            stream.gap = (1 - w) * stream.gap + w * (now - stream.last_arrival)
        stream.last_arrival = now
        stream.kind = kind
        stream.parts.append(text)
        stream.chars += len(text)
        if stream.last_flush is None or stream.chars >= self.settings.max_chars:
            self._flush(session_id, stream, now)
            return
        deadline = stream.last_flush + self.settings.interval_s
        if now >= deadline or now + stream.gap >= deadline:
            self._flush(session_id, stream, now)
        elif stream.timer is None:
            loop = asyncio.get_running_loop()
            # call_at uses the loop's clock; translate our deadline onto it.
            when = loop.time() + (deadline - now)
            stream.timer = loop.call_at(when, self._on_timer, session_id)

    def flush(self, session_id: str | None = None) -> None:
        """Send what is held back, for one session or (None) for all."""
        now = self._clock()
        if session_id is not None:
            stream = self._streams.get(session_id)
            if stream is not None:
                self._flush(session_id, stream, now)
            return
        for sid, stream in list(self._streams.items()):
            self._flush(sid, stream, now)

    def end_turn(self, session_id: str) -> None:
        """Flush and forget ``session_id``: its next delta opens a new turn."""
        stream = self._streams.pop(session_id, None)
        if stream is not None:
            self._flush(session_id, stream, self._clock())

    def close(self) -> None:
        """Flush everything and cancel the timers."""
        for sid in list(self._streams):
            self.end_turn(sid)

    def _on_timer(self, session_id: str) -> None:
        stream = self._streams.get(session_id)
        if stream is not None:
            stream.timer = None
            self._flush(session_id, stream, self._clock())

    def _flush(self, session_id: str, stream: _Stream, now: float) -> None:
        if stream.timer is not None:
            stream.timer.cancel()
            stream.timer = None
        if not stream.parts:
            return
        assert stream.kind is not None
        text = stream.parts[0] if len(stream.parts) == 1 else "".join(stream.parts)
        kind = stream.kind
        stream.parts = []
        stream.chars = 0
        stream.kind = None
        stream.last_flush = now
        self.frames += 1
        self._emit(frame_message(session_id, kind, text))
