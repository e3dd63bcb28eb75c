"""Run child processes safely: own process group, limits, scrubbed env, bounded output.

Every child starts in a new session (so its whole process group can be killed on
timeout, cancel or shutdown), reads stdin from ``/dev/null``, runs under CPU-time,
file-size and process-count limits, and sees an environment without keys, tokens or
passwords. Its output is streamed byte-for-byte to a log file while only the first
200 and last 100 lines of each stream stay in memory, so a command printing a
gigabyte costs disk, not RAM.

Nothing outlives the bridge, even when it is killed with SIGKILL: every child asks
the kernel for SIGKILL when the bridge dies (``PR_SET_PDEATHSIG``); a shell command
run in the sandbox gets bubblewrap's ``--die-with-parent`` and its own PID namespace,
and one run outside it gets a small guard parent (:mod:`.guard`) that kills the
command's descendants too, which the kernel's signal alone would leave behind.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import ctypes
import fcntl
import logging
import os
import re
import resource
import signal
import sys
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO, Literal

from .limits import HEAD_LINES, TAIL_LINES
from .sandbox import SandboxSpec

__all__ = [
    "HEAD_LINES",
    "TAIL_LINES",
    "ExecLimits",
    "ProcessResult",
    "ProcessRunner",
    "default_timeout",
    "scrubbed_environment",
    "timeout_for",
]

logger = logging.getLogger(__name__)

_MAX_LINE_CHARS = 4000
_CHUNK = 1 << 20
_FLUSH_BYTES = 1 << 20
_TERM_GRACE_S = 2.0
_DRAIN_AFTER_EXIT_S = 1.0
_SECRET_NAME_RE = re.compile(r"KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL", re.IGNORECASE)
_QUIET_ENV = {"PAGER": "cat", "GIT_PAGER": "cat", "GIT_TERMINAL_PROMPT": "0"}
_TIMEOUTS = {"command": 60.0, "test": 180.0, "build": 300.0}


@dataclass(frozen=True)
class ExecLimits:
    """Resource limits applied to each child (``None`` leaves a limit unchanged)."""

    cpu_seconds: int | None = 600
    file_size_bytes: int | None = 2 * 1024**3
    max_processes: int | None = 512
    address_space_bytes: int | None = None
    core_bytes: int | None = 0


@dataclass(frozen=True)
class ProcessResult:
    """Outcome of one child; ``stdout``/``stderr`` are bounded, ``log_path`` holds all."""

    exit_code: int | None
    stdout: str
    stderr: str
    duration_ms: int
    truncated: bool
    timed_out: bool
    cancelled: bool
    omitted_lines: int
    log_path: Path | None


def default_timeout(kind: Literal["command", "test", "build"]) -> float:
    """Default timeout in seconds for a kind of command."""
    return _TIMEOUTS[kind]


_BUILD_WORDS = re.compile(r"\b(build|make|compile|install)\b")


def timeout_for(kind: str, command: str) -> float:
    """The default timeout of ``command`` run as a test or as a plain command."""
    if kind == "test":
        return default_timeout("test")
    if _BUILD_WORDS.search(command):
        return default_timeout("build")
    return default_timeout("command")


def scrubbed_environment(base: Mapping[str, str], secrets: Sequence[str]) -> dict[str, str]:
    """Copy ``base`` without secret-looking names or values containing a known secret."""
    known = [s for s in secrets if s]
    return {
        name: value
        for name, value in base.items()
        if not _SECRET_NAME_RE.search(name) and not any(s in value for s in known)
    }


# The newest bytes kept for the tail: room for TAIL_LINES lines of the longest
# length shown (4 bytes a character at most), so the tail is always complete.
_TAIL_WINDOW = TAIL_LINES * (_MAX_LINE_CHARS * 4 + 1)
_LINE_BYTES = _MAX_LINE_CHARS * 4


def _cut(line: str) -> tuple[str, bool]:
    if len(line) > _MAX_LINE_CHARS:
        return line[:_MAX_LINE_CHARS] + " [... line cut ...]", True
    return line, False


@dataclass
class _StreamCapture:
    """Keeps the head and tail lines of one stream, decoding only what it keeps.

    The head is taken line by line until it is full; after that the stream is only
    counted (newlines, in bytes) and its newest bytes kept in a bounded window, which
    is decoded once, when the result is rendered. A gigabyte of output costs a
    newline count and a copy into the window per read, nothing per line.
    """

    head: list[str] = field(default_factory=list)
    line: bytearray = field(default_factory=bytearray)  # the head's unfinished line
    line_cut: bool = False
    # The newest reads after the head, kept as they came (no copy), about a window.
    tail: collections.deque[bytes] = field(default_factory=collections.deque)
    tail_bytes: int = 0
    tail_trimmed: bool = False
    tail_newlines: int = 0
    long_lines: bool = False
    _rendered: tuple[list[str], int] | None = None

    def feed(self, data: bytes, final: bool = False) -> None:
        view = memoryview(data)
        while view and len(self.head) < HEAD_LINES:
            nl = data.find(b"\n", len(data) - len(view))
            if nl < 0:
                self._grow(view)
                view = view[len(view) :]
                break
            start = len(data) - len(view)
            self._grow(view[: nl - start])
            self._head_line()
            view = view[nl - start + 1 :]
        if view:
            self.tail_newlines += data.count(b"\n", len(data) - len(view))
            piece = data if len(view) == len(data) else bytes(view)
            self.tail.append(piece)
            self.tail_bytes += len(piece)
            while self.tail_bytes - len(self.tail[0]) >= _TAIL_WINDOW:
                self.tail_bytes -= len(self.tail.popleft())
                self.tail_trimmed = True
        if final and self.line and len(self.head) < HEAD_LINES:
            self._head_line()

    def _grow(self, piece: memoryview) -> None:
        room = _LINE_BYTES - len(self.line)
        if len(piece) > room:
            self.line_cut = True
            piece = piece[: max(room, 0)]
        self.line += piece

    def _head_line(self) -> None:
        text, cut = _cut(self.line.decode("utf-8", errors="replace"))
        self.long_lines = self.long_lines or cut
        self.head.append(text)
        self.line.clear()
        self.line_cut = False

    def _tail(self) -> tuple[list[str], int]:
        """The tail lines to show, and how many lines came after the head in all."""
        if self._rendered is None:
            text = b"".join(self.tail).decode("utf-8", errors="replace")
            parts = text.split("\n")
            ends_open = bool(parts[-1])
            if not ends_open:
                parts.pop()
            if self.tail_trimmed and parts:
                parts.pop(0)  # the window starts inside a line
            shown = []
            for part in parts[-TAIL_LINES:]:
                line, cut = _cut(part)
                self.long_lines = self.long_lines or cut
                shown.append(line)
            self._rendered = (shown, self.tail_newlines + (1 if ends_open else 0))
        return self._rendered

    @property
    def omitted(self) -> int:
        shown, total = self._tail()
        return max(0, total - len(shown))

    def render(self) -> str:
        shown, _ = self._tail()
        parts = list(self.head)
        if self.omitted:
            parts.append(f"[... {self.omitted} lines omitted ...]")
        parts.extend(shown)
        return "\n".join(parts)


_F_SETPIPE_SZ = 1031  # Linux: a pipe's buffer size
_PIPE_BYTES = 1 << 20


def _widen_pipes(proc: asyncio.subprocess.Process) -> None:
    """Give the output pipes 1 MiB instead of 64 KiB: a loud command then needs a
    sixteenth of the reads. Best effort; without the call the pipes work as before."""
    transport = getattr(proc, "_transport", None)
    for fd_number in (1, 2):
        pipe = transport.get_pipe_transport(fd_number) if transport is not None else None
        handle = pipe.get_extra_info("pipe") if pipe is not None else None
        if handle is None:
            continue
        with contextlib.suppress(OSError, ValueError):  # ValueError: already closed
            fcntl.fcntl(handle.fileno(), _F_SETPIPE_SZ, _PIPE_BYTES)


_PR_SET_PDEATHSIG = 1
_GUARD = str(Path(__file__).with_name("guard.py"))


def _prctl() -> Callable[..., int] | None:
    """libc's prctl, looked up before any fork (nothing is loaded in the child)."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        fn: Callable[..., int] = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    return fn


def _limits_preexec(limits: ExecLimits) -> Callable[[], None]:
    prctl = _prctl()
    parent = os.getpid()
    pairs = [
        (resource.RLIMIT_CPU, limits.cpu_seconds),
        (resource.RLIMIT_FSIZE, limits.file_size_bytes),
        (resource.RLIMIT_NPROC, limits.max_processes),
        (resource.RLIMIT_AS, limits.address_space_bytes),
        (resource.RLIMIT_CORE, limits.core_bytes),
    ]

    def apply() -> None:  # runs in the child between fork and exec
        if prctl is not None:
            prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
            if os.getppid() != parent:  # the bridge died before the request took hold
                os.kill(os.getpid(), signal.SIGKILL)
        for which, value in pairs:
            if value is None:
                continue
            _, hard = resource.getrlimit(which)
            soft = value if hard == resource.RLIM_INFINITY else min(value, hard)
            with contextlib.suppress(ValueError, OSError):
                resource.setrlimit(which, (soft, hard))
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)

    return apply


_RUN_MARK = "AGENT_SHELL_RUN"


def _kill_marked(run_id: str) -> int:
    """SIGKILL every process of ours whose environment carries this run's mark.

    Catches descendants that left the process group with setsid; reads /proc, so it
    is a no-op where there is none. Returns how many were signalled.
    """
    if not run_id:
        return 0
    needle = f"{_RUN_MARK}={run_id}".encode()
    killed = 0
    try:
        entries = os.listdir("/proc")
    except OSError:
        return 0
    for entry in entries:
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            with open(f"/proc/{entry}/environ", "rb") as fh:
                environ = fh.read()
        except OSError:
            continue
        if needle in environ.split(b"\0"):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(int(entry), signal.SIGKILL)
                killed += 1
    return killed


def _signal_group(pgid: int, sig: int) -> bool:
    """Send ``sig`` to a group; False when the group no longer exists."""
    try:
        os.killpg(pgid, sig)
    except ProcessLookupError:
        return False
    except PermissionError:
        return False
    return True


async def _leader_exit(proc: asyncio.subprocess.Process) -> None:
    """Wait for the child itself to exit, even while its pipes stay open.

    ``Process.wait()`` also waits for the pipes to close, which a backgrounded
    grandchild can delay forever; a pidfd becomes readable when the process ends.
    """
    try:
        fd = os.pidfd_open(proc.pid)
    except ProcessLookupError:
        return
    except OSError:
        await proc.wait()  # no pidfd (old kernel): fall back to waiting for the pipes too
        return
    loop = asyncio.get_running_loop()
    exited: asyncio.Future[None] = loop.create_future()

    def on_exit() -> None:
        if not exited.done():
            exited.set_result(None)

    loop.add_reader(fd, on_exit)
    try:
        if proc.returncode is None:
            await exited
    finally:
        loop.remove_reader(fd)
        os.close(fd)


class ProcessRunner:
    """Starts children for the tools and tracks them so shutdown can kill them all."""

    def __init__(
        self,
        log_dir: Path,
        *,
        secrets: Sequence[str] = (),
        limits: ExecLimits = ExecLimits(),
    ) -> None:
        self._log_dir = log_dir
        self._secrets = tuple(secrets)
        self._limits = limits
        self._groups: dict[int, asyncio.subprocess.Process] = {}
        self._marks: dict[int, str] = {}
        self._killed: set[int] = set()
        # Bumped by kill_all, so a child spawned while it ran is killed as well.
        self._generation = 0

    async def run_shell(
        self,
        command: str,
        *,
        cwd: Path,
        timeout_s: float,
        env: Mapping[str, str] | None = None,
        sandbox: SandboxSpec | None = None,
    ) -> ProcessResult:
        """Run ``command`` with ``bash --noprofile --norc -c``; only for policy-accepted ones.

        ``env`` adds variables over the bridge's own environment before scrubbing.
        With ``sandbox`` the shell runs inside bubblewrap; without, under the guard
        that kills its descendants if the bridge dies.
        """
        shell = ["bash", "--noprofile", "--norc", "-c", command]
        if sandbox is not None:
            argv = sandbox.wrap(shell, cwd=cwd)
        else:
            argv = [sys.executable, "-I", "-S", _GUARD, str(os.getpid()), "--", *shell]
        return await self._run(argv, cwd, timeout_s, env)

    async def run_argv(self, argv: Sequence[str], *, cwd: Path, timeout_s: float) -> ProcessResult:
        """Run ``argv`` directly, without a shell."""
        if not argv:
            raise ValueError("empty argv")
        return await self._run(list(argv), cwd, timeout_s, None)

    async def kill_all(self) -> None:
        """Kill every live child process group (used at shutdown)."""
        self._generation += 1
        groups = list(self._groups)
        self._killed.update(groups)
        for pgid in groups:
            _signal_group(pgid, signal.SIGTERM)
        await asyncio.gather(*(self._reap(pgid) for pgid in groups))

    async def _reap(self, pgid: int) -> None:
        proc = self._groups.get(pgid)
        if proc is not None:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(proc.wait(), _TERM_GRACE_S)
        _signal_group(pgid, signal.SIGKILL)
        await asyncio.to_thread(_kill_marked, self._marks.get(pgid, ""))
        if proc is not None:
            await proc.wait()

    def _environment(self, extra: Mapping[str, str] | None) -> dict[str, str]:
        base = dict(os.environ)
        if extra:
            base.update(extra)
        base.update(_QUIET_ENV)
        return scrubbed_environment(base, self._secrets)

    async def _run(
        self,
        argv: list[str],
        cwd: Path,
        timeout_s: float,
        extra_env: Mapping[str, str] | None,
    ) -> ProcessResult:
        await asyncio.to_thread(self._log_dir.mkdir, parents=True, exist_ok=True)
        stamp = time.strftime("%Y%m%dT%H%M%S")
        log_path = self._log_dir / f"{stamp}-{uuid.uuid4().hex[:12]}.log"
        # Opened on the loop, not in a thread: a cancel arriving during a threaded
        # open would leak the file object the thread goes on to create.
        log: BinaryIO = log_path.open("wb")
        started = time.monotonic()
        generation = self._generation
        out, err = _StreamCapture(), _StreamCapture()
        timed_out = False
        # Spawning is shielded: cancelling inside create_subprocess_exec would make
        # asyncio wait for pipes that the new group's other members keep open.
        run_id = uuid.uuid4().hex
        env = self._environment(extra_env)
        # Descendants inherit this mark even when they leave the process group (setsid),
        # so a kill can still find them.
        env[_RUN_MARK] = run_id
        spawn = asyncio.ensure_future(
            asyncio.create_subprocess_exec(
                *argv,
                cwd=str(cwd),
                env=env,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                start_new_session=True,
                preexec_fn=_limits_preexec(self._limits),
            )
        )
        try:
            proc = await asyncio.shield(spawn)
        except asyncio.CancelledError:
            await asyncio.shield(self._abandon(spawn, log))
            raise
        except BaseException:
            await asyncio.to_thread(log.close)
            raise
        pgid = proc.pid
        self._groups[pgid] = proc
        self._marks[pgid] = run_id
        if generation != self._generation:
            self._killed.add(pgid)
            _signal_group(pgid, signal.SIGKILL)
        lock = asyncio.Lock()
        assert proc.stdout is not None and proc.stderr is not None
        _widen_pipes(proc)
        readers = [
            asyncio.create_task(self._pump(proc.stdout, out, log, lock)),
            asyncio.create_task(self._pump(proc.stderr, err, log, lock)),
        ]
        try:
            try:
                await asyncio.wait_for(self._wait(proc, pgid, readers, run_id), timeout_s)
            except TimeoutError:
                timed_out = True
                await self._terminate(proc, pgid, readers)
        except asyncio.CancelledError:
            await asyncio.shield(self._terminate(proc, pgid, readers))
            await asyncio.shield(asyncio.to_thread(log.close))
            self._groups.pop(pgid, None)
            self._marks.pop(pgid, None)
            raise
        finally:
            if not log.closed:
                await asyncio.to_thread(log.close)
        self._groups.pop(pgid, None)
        self._marks.pop(pgid, None)
        cancelled = pgid in self._killed
        self._killed.discard(pgid)
        omitted = out.omitted + err.omitted
        return ProcessResult(
            exit_code=None if (timed_out or cancelled) else proc.returncode,
            stdout=out.render(),
            stderr=err.render(),
            duration_ms=int((time.monotonic() - started) * 1000),
            truncated=bool(omitted) or out.long_lines or err.long_lines,
            timed_out=timed_out,
            cancelled=cancelled,
            omitted_lines=omitted,
            log_path=log_path,
        )

    async def _abandon(
        self, spawn: asyncio.Future[asyncio.subprocess.Process], log: BinaryIO
    ) -> None:
        """Kill a child whose start was cancelled, once it has started."""
        try:
            proc = await spawn
        except Exception:
            proc = None
        if proc is not None:
            _signal_group(proc.pid, signal.SIGKILL)
            await proc.wait()
        await asyncio.to_thread(log.close)

    async def _wait(
        self,
        proc: asyncio.subprocess.Process,
        pgid: int,
        readers: list[asyncio.Task[None]],
        run_id: str,
    ) -> None:
        await _leader_exit(proc)
        # Background children may still hold the pipes open; give them a moment, then
        # end the group (and anything that left it) so the command's call returns.
        _done, pending = await asyncio.wait(readers, timeout=_DRAIN_AFTER_EXIT_S)
        if pending:
            _signal_group(pgid, signal.SIGKILL)
            await asyncio.to_thread(_kill_marked, run_id)
        await asyncio.wait(readers)
        _signal_group(pgid, signal.SIGKILL)
        await asyncio.to_thread(_kill_marked, run_id)  # nothing of the run outlives it
        await proc.wait()
        for task in readers:
            task.result()

    async def _terminate(
        self, proc: asyncio.subprocess.Process, pgid: int, readers: list[asyncio.Task[None]]
    ) -> None:
        _signal_group(pgid, signal.SIGTERM)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(proc.wait(), _TERM_GRACE_S)
        _signal_group(pgid, signal.SIGKILL)
        await asyncio.to_thread(_kill_marked, self._marks.get(pgid, ""))
        await proc.wait()
        _done, pending = await asyncio.wait(readers, timeout=_TERM_GRACE_S)
        for task in pending:
            task.cancel()
        await asyncio.gather(*readers, return_exceptions=True)

    @staticmethod
    async def _pump(
        stream: asyncio.StreamReader,
        capture: _StreamCapture,
        log: BinaryIO,
        lock: asyncio.Lock,
    ) -> None:
        pending: list[bytes] = []
        size = 0
        # One write in flight while the next megabyte is read: reading never waits
        # for the disk unless the disk falls a whole write behind.
        writing: asyncio.Task[None] | None = None

        async def write(data: bytes) -> None:
            async with lock:
                await asyncio.to_thread(log.write, data)

        try:
            while True:
                chunk = await stream.read(_CHUNK)
                if chunk:
                    capture.feed(chunk)
                    pending.append(chunk)
                    size += len(chunk)
                if size >= _FLUSH_BYTES or (not chunk and pending):
                    data = pending[0] if len(pending) == 1 else b"".join(pending)
                    pending, size = [], 0
                    if writing is not None:
                        await writing
                    writing = asyncio.create_task(write(data))
                if not chunk:
                    capture.feed(b"", final=True)
                    return
        finally:
            if writing is not None:  # the log keeps every byte read, even on a cancel
                await writing
