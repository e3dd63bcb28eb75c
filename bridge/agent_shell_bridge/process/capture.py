"""A child's output: every byte to its log file, the head and tail lines kept in memory.

:class:`OutputPump` owns the two pipes a child writes its stdout and stderr into. A
thread per pipe reads large pieces into a few reusable buffers, hands each piece to
its stream's :class:`StreamCapture` and then to one writer thread, which appends it
to the log file (so the log holds both streams in the order their pieces arrived)
and gives the buffer back. Nothing of the byte path runs on the event loop, and
nothing is copied per line.

:class:`StreamCapture` keeps the first 200 lines of a stream, then only counts
newlines and keeps the newest bytes, which are cut into the last 100 lines (each
kept to its first :data:`LINE_BYTES` bytes) only when they pile up or when the
result is rendered. A gigabyte of output costs a newline count and a copy of a few
kilobytes per read.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import fcntl
import functools
import os
import queue
import select
import sys
import termios
import threading
from collections.abc import Callable
from dataclasses import dataclass

from ..errors import ToolFailed
from ..limits import HEAD_LINES, TAIL_LINES

__all__ = [
    "LINE_BYTES",
    "MAX_LINE_CHARS",
    "CaptureStartFailed",
    "OutputPump",
    "StreamCapture",
    "count_newlines",
]

MAX_LINE_CHARS = 4000
# Bytes kept of one line: enough for MAX_LINE_CHARS characters of at most 4 bytes.
LINE_BYTES = MAX_LINE_CHARS * 4
_CUT_MARK = " [... line cut ...]"

# The newest bytes of a read looked at first for the tail: when they hold more than
# TAIL_LINES newlines, they alone hold every tail line and the rest is only counted.
_RECENT_BYTES = 32 * 1024
# Raw bytes after the head kept before they are cut into tail lines.
_RAW_BUDGET = 1 << 20

_CHUNK = 1 << 20  # one read
_BUFFERS = 3  # per stream: one being read into, up to two waiting for the writer
_PIPE_BYTES = 1 << 20
_F_SETPIPE_SZ = 1031  # Linux: a pipe's buffer size

# bytes.count tests every byte; bytes.replace finds newlines with memchr, which is
# a few times faster (copy included) when lines are longer than a few dozen bytes.
# Its pieces stay below malloc's mmap threshold, so their memory is reused.
_PROBE = 4096
_DENSE = _PROBE // 64
_STEP = 64 * 1024


def count_newlines(buf: bytes | bytearray, start: int, end: int) -> int:
    """The number of ``\\n`` bytes in ``buf[start:end]``, by the faster way for its lines."""
    if end - start <= _PROBE or buf.count(b"\n", start, start + _PROBE) > _DENSE:
        return buf.count(b"\n", start, end)
    kept = 0
    with memoryview(buf) as view:
        for at in range(start, end, _STEP):
            kept += len(bytes(view[at : min(end, at + _STEP)]).replace(b"\n", b""))
    return (end - start) - kept


def _show(prefix: bytes | bytearray, longer: bool) -> tuple[str, bool]:
    """A kept line as shown: at most MAX_LINE_CHARS characters, cut visibly.

    ``prefix`` is the line's start (at most LINE_BYTES bytes, which decode to at least
    MAX_LINE_CHARS whole characters when the line is longer); ``longer`` says the
    line went on past it.
    """
    text = prefix.decode("utf-8", errors="replace")
    if len(text) > MAX_LINE_CHARS or longer:
        return text[:MAX_LINE_CHARS] + _CUT_MARK, True
    return text, False


class StreamCapture:
    """The head and tail lines of one stream, and how many lines it had.

    ``feed`` is given each read as a range of a buffer the caller reuses afterwards;
    what is kept is copied. ``recent_bytes`` and ``raw_budget`` exist for tests,
    which shrink them to reach every path with small inputs.
    """

    def __init__(self, *, recent_bytes: int = _RECENT_BYTES, raw_budget: int = _RAW_BUDGET) -> None:
        self.head: list[str] = []
        self.long_lines = False
        self._recent_bytes = recent_bytes
        self._raw_budget = raw_budget
        self._line = bytearray()  # the start of the line being read (head or tail)
        self._line_len = 0  # its whole length so far
        # After the head: complete lines (their starts, and whether they went on).
        self._done: collections.deque[tuple[bytes, bool]] = collections.deque(maxlen=TAIL_LINES)
        self._raw: list[bytes] = []  # newest bytes not yet cut into lines
        self._raw_bytes = 0
        self._raw_newlines = 0
        self._newlines = 0  # newlines after the head
        self._finished = False
        self._shown: list[str] | None = None

    def feed(self, buf: bytes | bytearray, start: int = 0, end: int | None = None) -> None:
        """Take ``buf[start:end]``, the next bytes of the stream."""
        end = len(buf) if end is None else end
        if len(self.head) < HEAD_LINES:
            start = self._feed_head(buf, start, end)
        if start < end:
            self._feed_tail(buf, start, end)

    def finish(self) -> None:
        """The stream ended: an unfinished last line still counts as a line."""
        if self._finished:
            return
        self._finished = True
        if len(self.head) < HEAD_LINES:
            if self._line_len:
                self._push_head()
            return
        self._cut_raw()

    def _feed_head(self, buf: bytes | bytearray, start: int, end: int) -> int:
        while start < end and len(self.head) < HEAD_LINES:
            nl = buf.find(b"\n", start, end)
            stop = end if nl < 0 else nl
            self._grow(buf, start, stop)
            if nl < 0:
                return end
            self._push_head()
            start = nl + 1
        return start

    def _grow(self, buf: bytes | bytearray, start: int, stop: int) -> None:
        room = LINE_BYTES - len(self._line)
        if room > 0:
            self._line += buf[start : min(stop, start + room)]
        self._line_len += stop - start

    def _push_head(self) -> None:
        text, cut = _show(self._line, self._line_len > len(self._line))
        self.long_lines = self.long_lines or cut
        self.head.append(text)
        self._line.clear()
        self._line_len = 0

    def _push_tail(self) -> None:
        self._done.append((bytes(self._line), self._line_len > len(self._line)))
        self._line.clear()
        self._line_len = 0

    def _feed_tail(self, buf: bytes | bytearray, start: int, end: int) -> None:
        split = max(start, end - self._recent_bytes)
        recent = count_newlines(buf, split, end)
        older = count_newlines(buf, start, split) if split > start else 0
        self._newlines += recent + older
        if recent > TAIL_LINES:
            # The newest bytes hold every tail line: forget all before them.
            self._restart(bytes(buf[split:end]), recent)
        elif recent + older > TAIL_LINES:
            self._restart(bytes(buf[start:end]), recent + older)
        else:
            self._raw.append(bytes(buf[start:end]))
            self._raw_bytes += end - start
            self._raw_newlines += recent + older
        if self._raw_bytes > self._raw_budget:
            self._cut_raw()

    def _restart(self, piece: bytes, newlines: int) -> None:
        """Keep only ``piece``: it holds more than TAIL_LINES newlines, so cutting it
        will forget every line kept before."""
        self._raw = [piece]
        self._raw_bytes = len(piece)
        self._raw_newlines = newlines

    def _cut_raw(self) -> None:
        """Cut the raw bytes into tail lines: the newest TAIL_LINES, each kept short."""
        if not self._raw:
            return
        data = self._raw[0] if len(self._raw) == 1 else b"".join(self._raw)
        newlines = self._raw_newlines
        self._raw, self._raw_bytes, self._raw_newlines = [], 0, 0
        ends: list[int] = []
        pos = len(data)
        while len(ends) <= TAIL_LINES and len(ends) < newlines:
            pos = data.rfind(b"\n", 0, pos)
            ends.append(pos)
        ends.reverse()
        start = 0
        if len(ends) > TAIL_LINES:
            # The line ending at the oldest of these is not shown, nor anything before.
            self._done.clear()
            self._line.clear()
            self._line_len = 0
            start = ends.pop(0) + 1
        for nl in ends:
            self._grow(data, start, nl)
            self._push_tail()
            start = nl + 1
        self._grow(data, start, len(data))

    def _tail(self) -> list[str]:
        if self._shown is None:
            self.finish()
            lines = list(self._done)
            if self._line_len and len(self.head) >= HEAD_LINES:
                lines.append((bytes(self._line), self._line_len > len(self._line)))
            shown = []
            for prefix, longer in lines[-TAIL_LINES:]:
                text, cut = _show(prefix, longer)
                self.long_lines = self.long_lines or cut
                shown.append(text)
            self._shown = shown
        return self._shown

    @property
    def total_after_head(self) -> int:
        """Lines after the head: its newlines, and an unfinished last line."""
        self.finish()
        if len(self.head) < HEAD_LINES:
            return 0
        return self._newlines + (1 if self._line_len else 0)

    @property
    def omitted(self) -> int:
        """Lines neither in the head nor in the tail."""
        return max(0, self.total_after_head - len(self._tail()))

    def render(self) -> str:
        """The head, a marker naming the omitted lines, the tail."""
        shown = self._tail()
        parts = list(self.head)
        if self.omitted:
            parts.append(f"[... {self.omitted} lines omitted ...]")
        parts.extend(shown)
        return "\n".join(parts)


class CaptureStartFailed(ToolFailed):
    """A thread of the output capture could not start (a process or memory limit)."""


def _pending(fd: int) -> int:
    """How many bytes the pipe ``fd`` holds (0 when that cannot be told)."""
    try:
        return int.from_bytes(fcntl.ioctl(fd, termios.FIONREAD, bytes(4)), sys.byteorder)
    except OSError:
        return 0


def _pipe() -> tuple[int, int]:
    """A pipe with a 1 MiB buffer (best effort) whose read end does not block."""
    read_end, write_end = os.pipe2(os.O_CLOEXEC)
    with contextlib.suppress(OSError):  # over the user's pipe quota: keep 64 KiB
        fcntl.fcntl(read_end, _F_SETPIPE_SZ, _PIPE_BYTES)
    os.set_blocking(read_end, False)
    return read_end, write_end


@dataclass
class _Reader:
    """One output pipe: its read end, its capture, its free buffers."""

    fd: int
    capture: StreamCapture
    free: queue.SimpleQueue[bytearray]
    made: int = 0
    cut: bool = False  # stopped with bytes still in the pipe

    def buffer(self) -> bytearray:
        """A free buffer; a new one while fewer than _BUFFERS exist."""
        try:
            return self.free.get_nowait()
        except queue.Empty:
            pass
        if self.made < _BUFFERS:
            self.made += 1
            return bytearray(_CHUNK)
        return self.free.get()


_Piece = tuple[bytearray, int, _Reader] | None


class OutputPump:
    """Moves a child's stdout and stderr into captures and one log file, off the loop.

    Create it, give the child :attr:`child_fds` as its stdout and stderr, then call
    :meth:`start` (which closes the parent's copies of those ends). After ``start``
    the threads own the pipes and the log file and close them when they end; they
    end at end of file on both pipes, or after :meth:`stop` once the pipes hold
    nothing more (bytes a process outside the run keeps writing are left, and
    :attr:`cut_short` says so). :meth:`finish` waits for that. A log that cannot
    be written stops being written while the pipes are still drained and captured
    (:attr:`log_error`). Before ``start``, :meth:`close` releases everything.
    """

    def __init__(self, log_fd: int) -> None:
        self.stdout = StreamCapture()
        self.stderr = StreamCapture()
        self._log_fd = log_fd
        self._fds: list[int] = []
        try:
            out_r, out_w = self._own(_pipe())
            err_r, err_w = self._own(_pipe())
            self._stop_r, self._stop_w = self._own(os.pipe2(os.O_CLOEXEC))
        except BaseException:
            self.close()
            raise
        self.child_fds = (out_w, err_w)
        self._readers = [
            _Reader(out_r, self.stdout, queue.SimpleQueue()),
            _Reader(err_r, self.stderr, queue.SimpleQueue()),
        ]
        self._stopping = threading.Event()
        self._pieces: queue.SimpleQueue[_Piece] = queue.SimpleQueue()
        self._write_error: OSError | None = None
        self._started = False
        self._closed = False
        self.readers: list[asyncio.Future[None]] = []
        self._writer: asyncio.Future[None] | None = None

    def _own(self, pair: tuple[int, int]) -> tuple[int, int]:
        self._fds.extend(pair)
        return pair

    def close(self) -> None:
        """Close every descriptor (only before :meth:`start`, or when it failed)."""
        if self._started or self._closed:
            return
        self._closed = True
        for fd in self._fds:
            with contextlib.suppress(OSError):
                os.close(fd)
        self._fds.clear()
        with contextlib.suppress(OSError):
            os.close(self._log_fd)

    def start(self) -> None:
        """Close the child's ends here and start the threads (:attr:`readers`).

        Raises :class:`CaptureStartFailed` when a thread cannot start; what did start
        is stopped and every descriptor is closed or handed to a thread that will.
        """
        loop = asyncio.get_running_loop()
        for fd in self.child_fds:
            if fd in self._fds:
                self._fds.remove(fd)
                os.close(fd)
        try:
            self._writer = self._thread(loop, self._write, "log")
        except BaseException as exc:
            self.close()
            raise self._failed("log", exc) from exc
        self._started = True
        names = ("stdout", "stderr")
        for at, (reader, name) in enumerate(zip(self._readers, names, strict=True)):
            try:
                self.readers.append(self._thread(loop, functools.partial(self._read, reader), name))
            except BaseException as exc:
                for left in self._readers[at:]:  # never started: close their pipes here
                    self._fds.remove(left.fd)
                    os.close(left.fd)
                    self._pieces.put(None)  # the writer counts it as ended
                self.stop()  # the started readers end soon; the writer then closes the rest
                raise self._failed(name, exc) from exc

    @staticmethod
    def _failed(name: str, exc: BaseException) -> BaseException:
        if not isinstance(exc, Exception):
            return exc  # KeyboardInterrupt and the like go on as they are
        return CaptureStartFailed(f"could not start the {name} output thread: {exc}")

    @staticmethod
    def _thread(
        loop: asyncio.AbstractEventLoop, body: Callable[[], None], name: str
    ) -> asyncio.Future[None]:
        done: asyncio.Future[None] = loop.create_future()

        def settle(exc: BaseException | None) -> None:
            if done.done():
                return
            if exc is None:
                done.set_result(None)
            else:
                done.set_exception(exc)

        def run() -> None:
            failure: BaseException | None = None
            try:
                body()
            except BaseException as exc:  # handed to the loop, raised by whoever awaits
                failure = exc
            with contextlib.suppress(RuntimeError):  # the loop is gone: nobody waits
                loop.call_soon_threadsafe(settle, failure)

        threading.Thread(target=run, name=f"agent-shell-{name}", daemon=True).start()
        return done

    def stop(self) -> None:
        """Make the readers stop soon, even if something still holds the pipes open."""
        self._stopping.set()
        if self._stop_w in self._fds:
            self._fds.remove(self._stop_w)
            os.close(self._stop_w)

    async def finish(self) -> None:
        """Wait for every thread; raise what stopped a reader (see :attr:`log_error`)."""
        self.stop()
        if not self._started:
            self.close()
            return
        if self.readers:
            await asyncio.wait(self.readers)
        if self._writer is not None:
            await self._writer
        for reader in self.readers:
            reader.result()

    @property
    def log_error(self) -> OSError | None:
        """What stopped the log file early (a full disk, say); the capture went on."""
        return self._write_error

    @property
    def cut_short(self) -> bool:
        """A reader was stopped while its pipe still held bytes (something outside the
        run kept writing): those bytes are neither captured nor logged."""
        return any(reader.cut for reader in self._readers)

    def _read(self, reader: _Reader) -> None:
        """Read the pipe to its end, or after :meth:`stop` until it is empty.

        A stop never drops what the pipe already holds (a reader can be behind only
        because a slow log write kept its buffers); it ends the reading once the pipe
        is empty, or once the bytes it held at the stop are read and more keep coming.
        """
        poll = select.poll()
        poll.register(reader.fd, select.POLLIN)
        poll.register(self._stop_r, select.POLLIN)
        buf = reader.buffer()
        owed: int | None = None  # after a stop: bytes the pipe held then, still to read
        try:
            while True:
                if self._stopping.is_set():
                    if owed is None:
                        owed = _pending(reader.fd)
                    elif owed <= 0:
                        reader.cut = _pending(reader.fd) > 0
                        break
                try:
                    n = os.readv(reader.fd, [buf])
                except BlockingIOError:
                    if self._stopping.is_set():
                        break  # stopped and nothing left to read
                    poll.poll()
                    continue
                if n == 0:
                    break
                if owed is not None:
                    owed -= n
                reader.capture.feed(buf, 0, n)
                self._pieces.put((buf, n, reader))
                buf = reader.buffer()
            reader.capture.finish()
        finally:
            os.close(reader.fd)
            self._pieces.put(None)

    def _write(self) -> None:
        running = len(self._readers)
        try:
            while running:
                piece = self._pieces.get()
                if piece is None:
                    running -= 1
                    continue
                buf, n, reader = piece
                if self._write_error is None:
                    try:
                        self._write_all(memoryview(buf)[:n])
                    except OSError as exc:  # keep draining the pipes and capturing
                        self._write_error = exc
                reader.free.put(buf)
        finally:
            os.close(self._log_fd)
            os.close(self._stop_r)

    def _write_all(self, data: memoryview) -> None:
        while data:
            data = data[os.write(self._log_fd, data) :]
