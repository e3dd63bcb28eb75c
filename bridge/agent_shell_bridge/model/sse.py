"""Incremental Server-Sent Events decoding, as the WHATWG spec defines it.

Text arrives in arbitrary pieces (a line may be split anywhere, even between
``\\r`` and ``\\n``); :class:`SSEDecoder` buffers until lines are complete and emits
one :class:`SSEEvent` per blank-line-terminated block. Comment lines (``: keep-alive``,
``: OPENROUTER PROCESSING``) are dropped; several ``data:`` lines join with ``\\n``.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["SSEDecoder", "SSEEvent"]


@dataclass(frozen=True, slots=True)
class SSEEvent:
    data: str
    event: str | None = None
    id: str | None = None


class SSEDecoder:
    """Feed text with :meth:`feed`; call :meth:`close` at end of stream."""

    def __init__(self) -> None:
        self._buffer = ""
        self._data: list[str] = []
        self._event: str | None = None
        self._id: str | None = None
        self.comments = 0

    def feed(self, text: str) -> list[SSEEvent]:
        buf = self._buffer + text if self._buffer else text
        events: list[SSEEvent] = []
        pos = 0
        if "\r" not in buf:
            # The usual case (LF line ends): one split, no rescanning of the rest.
            lines = buf.split("\n")
            self._buffer = lines.pop()
            for line in lines:
                event = self.feed_line(line)
                if event is not None:
                    events.append(event)
            return events
        while True:
            cut = self._line_end(buf, pos)
            if cut is None:
                self._buffer = buf[pos:]
                return events
            end, skip = cut
            event = self.feed_line(buf[pos:end])
            pos = end + skip
            if event is not None:
                events.append(event)

    def close(self) -> list[SSEEvent]:
        """Flush what is left at end of stream.

        Leniently dispatches a last event that lacks its blank line: some servers
        end with ``data: [DONE]`` and no terminator.
        """
        events: list[SSEEvent] = []
        if self._buffer:
            line, self._buffer = self._buffer, ""
            self.feed_line(line.rstrip("\r"))
        event = self._dispatch()
        if event is not None:
            events.append(event)
        return events

    def feed_line(self, line: str) -> SSEEvent | None:
        """Process one line (without its terminator); return an event on a blank line."""
        if not line:
            return self._dispatch()
        if line.startswith(":"):
            self.comments += 1
            return None
        name, sep, value = line.partition(":")
        if sep and value.startswith(" "):
            value = value[1:]
        if name == "data":
            self._data.append(value)
        elif name == "event":
            self._event = value
        elif name == "id" and "\0" not in value:
            self._id = value
        return None

    def _dispatch(self) -> SSEEvent | None:
        if not self._data:
            self._event = None
            return None
        event = SSEEvent(data="\n".join(self._data), event=self._event, id=self._id)
        self._data = []
        self._event = None
        return event

    @staticmethod
    def _line_end(buf: str, pos: int) -> tuple[int, int] | None:
        lf = buf.find("\n", pos)
        cr = buf.find("\r", pos)
        if cr == -1 or (lf != -1 and lf < cr):
            return None if lf == -1 else (lf, 1)
        if cr + 1 == len(buf):
            return None  # a following "\n" may still arrive
        return (cr, 2) if buf[cr + 1] == "\n" else (cr, 1)
