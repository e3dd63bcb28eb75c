"""The job table over a real runner: ends, reads, kills (no sandbox: the guard's path).

Real subprocesses; nothing waits by sleeping: each step waits on the job's own end,
its reported change, or a condition polled in ``/proc`` with a deadline.
"""

from __future__ import annotations

import asyncio
import os
import secrets
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from agent_shell_bridge.process.jobs import Job, JobLimitReached, JobTable, UnknownJob
from agent_shell_bridge.process.runner import ProcessRunner

DEADLINE_S = 15.0


def _marked(marker: str) -> set[int]:
    found = set()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
            state = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if marker.encode() in cmdline and state != "Z":
            found.add(int(entry))
    return found


async def _until(what: str, probe: Callable[[], bool]) -> None:
    deadline = time.monotonic() + DEADLINE_S
    while not probe():
        assert time.monotonic() < deadline, what
        await asyncio.sleep(0.02)  # polling, within the deadline


async def test_a_job_that_ends_by_itself_is_read_to_its_last_byte(tmp_path: Path) -> None:
    seen: list[tuple[str, str]] = []

    async def changed(job: Job) -> None:
        seen.append((job.id, job.state))

    runner = ProcessRunner(tmp_path / "logs")
    table = JobTable(on_change=changed)
    run = await runner.start_shell("printf '一\\n二\\n三'; exit 3", cwd=tmp_path)
    job = await table.add("printf …", run, sandbox="none")
    await run.ended
    await _until("its end reported", lambda: job.state != "running")
    assert (job.state, job.exit_code) == ("exited", 3)
    read = await table.read(job.id)
    # The unfinished last line comes too, once the job has ended.
    assert read.output == "一\n二\n三" and read.state == "exited" and read.exit_code == 3
    again = await table.read(job.id)
    assert again.output == "" and again.bytes_read == 0
    assert seen == [("job-1", "running"), ("job-1", "exited")]
    with pytest.raises(UnknownJob, match="its jobs: job-1"):
        await table.read("job-2")


async def test_kill_ends_a_job_that_ignores_sigterm_and_its_escaped_child(
    tmp_path: Path,
) -> None:
    marker = "jobmark-" + secrets.token_hex(6)
    runner = ProcessRunner(tmp_path / "logs")
    table = JobTable(limit=1)
    # A child that leaves the process group (setsid), and a leader deaf to SIGTERM.
    command = (
        f"setsid sh -c 'exec sleep 300 {marker}' & trap '' TERM; "
        f"echo ready; exec sh -c 'trap \"\" TERM; while :; do sleep 1; done; : {marker}'"
    )
    run = await runner.start_shell(command, cwd=tmp_path)
    job = await table.add(command, run, sandbox="none")
    await _until("both processes", lambda: len(_marked(marker)) >= 2)
    with pytest.raises(JobLimitReached, match="already runs 1 background jobs"):
        table.check_room()
    killed = await table.kill(job.id, runner.kill_group)
    assert (killed.state, killed.exit_code) == ("killed", None)
    await _until("no process of the job", lambda: not _marked(marker))
    table.check_room()  # room again
