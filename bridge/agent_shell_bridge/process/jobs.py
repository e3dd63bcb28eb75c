"""A session's background jobs: commands that go on running after their tool call.

A job is a :class:`~.runner.BackgroundRun` under an id (``job-1``, ``job-2`` …):
its output goes to its log file only, and :meth:`JobTable.read` hands out what was
written since the last read, cut to its head and tail lines as a command's output
is. A line still being written waits for the next read (unless the job has ended
or the line is longer than a kept line). At most :data:`MAX_JOBS` run at once;
:meth:`JobTable.aclose` ends them all (the session's end). Whoever owns the table
hears of every change through ``on_change``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Literal

from ..errors import ToolFailed
from .capture import LINE_BYTES, StreamCapture
from .runner import BackgroundRun

__all__ = ["MAX_JOBS", "Job", "JobLimitReached", "JobRead", "JobTable", "UnknownJob"]

log = logging.getLogger(__name__)

MAX_JOBS = 4
_READ_CHUNK = 1 << 20

State = Literal["running", "exited", "killed"]


class JobLimitReached(ToolFailed):
    """The session already runs as many jobs as it may."""


class UnknownJob(ToolFailed):
    """No job of this session has that id."""


@dataclass
class Job:
    id: str
    command: str
    run: BackgroundRun
    started_at: str
    # Where it runs, as the tool result said ("bubblewrap", "bubblewrap+net", "none").
    sandbox: str
    state: State = "running"
    exit_code: int | None = None
    kill_requested: bool = False
    # Bytes of the log already handed out.
    offset: int = 0
    # The full output's ref (request_log_view), and what its end left to say.
    log_ref: str | None = None
    warnings: list[str] = field(default_factory=list)
    read_lock: asyncio.Lock = field(default_factory=asyncio.Lock)

    @property
    def log_path(self) -> Path:
        return self.run.log_path

    def to_json(self) -> dict[str, object]:
        return {
            "id": self.id,
            "command": self.command,
            "state": self.state,
            "exitCode": self.exit_code,
            "startedAt": self.started_at,
            "sandbox": self.sandbox,
        }


@dataclass(frozen=True, slots=True)
class JobRead:
    """What one read of a job's output gives."""

    output: str
    omitted_lines: int
    truncated: bool
    bytes_read: int
    state: State
    exit_code: int | None


OnChange = Callable[[Job], Awaitable[None]]


class JobTable:
    """The jobs of one session (see the module doc)."""

    def __init__(self, *, limit: int = MAX_JOBS, on_change: OnChange | None = None) -> None:
        self.limit = limit
        self.on_change = on_change
        self._jobs: dict[str, Job] = {}
        self._next = 1
        self._watchers: set[asyncio.Task[None]] = set()
        self.closed = False

    def running(self) -> list[Job]:
        return [job for job in self._jobs.values() if job.state == "running"]

    def all(self) -> list[Job]:
        return list(self._jobs.values())

    def check_room(self) -> None:
        """Raise :class:`JobLimitReached` when no other job may start now."""
        if self.closed:
            raise ToolFailed("the session is ending: no job can start")
        running = self.running()
        if len(running) >= self.limit:
            names = ", ".join(f"{j.id} ({j.command[:40]})" for j in running)
            raise JobLimitReached(
                f"this session already runs {len(running)} background jobs, the most it "
                f"may: {names}. End one with job_kill first, or run the command in the "
                "foreground."
            )

    async def add(self, command: str, run: BackgroundRun, *, sandbox: str) -> Job:
        """Register a started run as the next job and watch for its end."""
        job = Job(
            id=f"job-{self._next}",
            command=command,
            run=run,
            started_at=datetime.now().astimezone().isoformat(timespec="seconds"),
            sandbox=sandbox,
        )
        self._next += 1
        self._jobs[job.id] = job
        watcher = asyncio.ensure_future(self._watch(job))
        self._watchers.add(watcher)
        watcher.add_done_callback(self._watchers.discard)
        await self._changed(job)
        return job

    def get(self, job_id: str) -> Job:
        job = self._jobs.get(job_id)
        if job is None:
            known = ", ".join(self._jobs) or "none"
            raise UnknownJob(f"no job {job_id!r} in this session (its jobs: {known})")
        return job

    async def read(self, job_id: str) -> JobRead:
        """What ``job_id`` wrote since the last read, head and tail cut."""
        job = self.get(job_id)
        async with job.read_lock:
            # Its log is complete once its end was seen: read it to the last byte.
            ended = job.state != "running"
            capture, taken = await asyncio.to_thread(_read_from, job.log_path, job.offset, ended)
            job.offset += taken
        return JobRead(
            output=capture.render(),
            omitted_lines=capture.omitted,
            truncated=bool(capture.omitted) or capture.long_lines,
            bytes_read=taken,
            state=job.state,
            exit_code=job.exit_code,
        )

    async def kill(self, job_id: str, killer: Callable[[int], Awaitable[None]]) -> Job:
        """End ``job_id`` and its whole group by ``killer`` (the runner's); waits for it."""
        job = self.get(job_id)
        if job.state == "running":
            job.kill_requested = True
            await killer(job.run.pid)
            await asyncio.shield(job.run.ended)
            await self._settled(job)
        return job

    async def aclose(self, killer: Callable[[int], Awaitable[None]]) -> None:
        """End every job (the session ends); each change is still reported."""
        self.closed = True
        running = self.running()
        for job in running:
            job.kill_requested = True
        await asyncio.gather(*(killer(job.run.pid) for job in running))
        for job in running:
            with contextlib.suppress(Exception):
                await asyncio.shield(job.run.ended)
        if self._watchers:
            await asyncio.wait(list(self._watchers))

    async def _watch(self, job: Job) -> None:
        with contextlib.suppress(Exception):
            await asyncio.shield(job.run.ended)
        await self._settled(job)

    async def _settled(self, job: Job) -> None:
        """Record the job's end once, and report it."""
        if job.state != "running":
            return
        code: int | None
        try:
            code = job.run.ended.result()
        except Exception:
            log.exception("background job %s failed", job.id)
            code = None
        job.exit_code = code
        job.state = "killed" if (job.kill_requested or code is None) else "exited"
        await self._changed(job)

    async def _changed(self, job: Job) -> None:
        if self.on_change is None:
            return
        try:
            await self.on_change(job)
        except Exception:
            log.exception("reporting a change of job %s failed", job.id)


def _read_from(path: Path, offset: int, to_end: bool) -> tuple[StreamCapture, int]:
    """The log's bytes after ``offset`` fed through a capture; how many were taken.

    Unless ``to_end``, an unfinished last line is left for the next read (when it is
    short enough to be kept whole).
    """
    capture = StreamCapture()
    taken = 0
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except FileNotFoundError:
        capture.finish()
        return capture, 0
    try:
        size = os.fstat(fd).st_size
        end = size
        if not to_end and size > offset:
            end = _last_line_end(fd, offset, size)
        at = offset
        while at < end:
            piece = os.pread(fd, min(_READ_CHUNK, end - at), at)
            if not piece:
                break
            capture.feed(piece)
            at += len(piece)
        taken = at - offset
    finally:
        os.close(fd)
    capture.finish()
    return capture, taken


def _last_line_end(fd: int, offset: int, size: int) -> int:
    """Where the last complete line ends in ``[offset, size)``; ``size`` when the
    unfinished rest is longer than a kept line (it is shown, cut, as it is)."""
    start = max(offset, size - LINE_BYTES)
    tail = os.pread(fd, size - start, start)
    nl = tail.rfind(b"\n")
    if nl >= 0:
        return start + nl + 1
    return size if start > offset else offset
