"""A session's background jobs as the client sees them.

Each change of a job (started, ended by itself, killed) is a ``session/job``
notification; an end nobody's tool call asked for (by itself, its time limit, the
session's end) is also an entry of the action log (a start, a read and a kill are
entries as the tool calls they are). The session's network namespace, which its
sandboxed commands share once a job needs it, is :meth:`.live.LiveSession.shared_network`.
"""

from __future__ import annotations

from ...process.jobs import Job, JobTable
from ...transport.events import EventHub
from .reporter import Reporter, text

__all__ = ["report_job"]


async def report_job(
    hub: EventHub, session_id: str, reporter: Reporter, jobs: JobTable, job: Job
) -> None:
    """Tell the client of ``job``'s change; log an end nobody's tool call asked for."""
    await hub.notify("session/job", {"sessionId": session_id, "job": job.to_json()})
    if job.state == "running" or (job.kill_requested and not jobs.closed):
        return
    if job.state == "exited":
        title = f"Job {job.id} exited ({job.exit_code}): {job.command}"
        why = "It ended by itself; job_output still returns what it printed last."
    else:
        title = f"Job {job.id} killed: {job.command}"
        why = (
            "The session ended, and its jobs with it."
            if jobs.closed
            else "It was killed by its time limit."
        )
    await reporter.entry(
        title,
        source="bridge",
        parent=None,
        todo="DONE" if job.state == "exited" and job.exit_code == 0 else "FAILED",
        properties={"JOB": job.id, "SANDBOX": job.sandbox},
        body=[text(why)],
    )
