"""Background jobs: ``run_command`` with ``background``, ``job_output`` and ``job_kill``.

A job is placed exactly as the same command in the foreground would be (the
policy's verdict, the user's yes, :mod:`....sandbox.placement`), with every wall of
its sandbox; only its end is not waited for. Without network, it and the
session's later sandboxed commands share one network namespace
(:mod:`....sandbox.netns`), so a server it starts answers them and nothing
outside the session; where that cannot be, the result says so. Its output is
read as it grows (:mod:`....process.jobs`) and framed for the model like any
command's. A remote project's job runs on its host (:mod:`....remote.runner`),
in that host's sandbox when it is placed in one.
"""

from __future__ import annotations

import asyncio
import time

from ....process.jobs import Job
from ....sandbox import placement, protected_git, set_aside_after_run
from ....tools.catalogue import JobKillArgs, JobOutputArgs, RunCommandArgs
from ....tools.results import ToolResult
from ....types import JSONObject
from .base import Run

__all__ = ["job_kill", "job_output", "start_job"]


def _network_note(where: placement.Placement, shared: bool, why_not: str | None) -> str:
    if not where.sandboxed:
        return (
            "No sandbox: the job runs with the user's permissions and the machine's "
            "network; a server it starts is reachable by anything on this machine."
        )
    if where.network:
        return (
            "The job has the machine's network (it was approved with network access): "
            "a server it starts listens on the host, where sandboxed commands without "
            "network do not reach it and other programs on this machine do."
        )
    if shared:
        return (
            "The job shares this session's network namespace (a loopback only): a "
            "server it starts on 127.0.0.1/localhost is reachable by this session's "
            "later sandboxed commands, and by nothing outside the session."
        )
    return (
        f"The sandbox cannot share a network namespace here ({why_not}): the job has a "
        "loopback of its own, so a server it starts is NOT reachable by later commands."
    )


def remote_cwd(run: Run) -> str:
    """The prepared command's working directory, relative to a remote project's root."""
    live, p = run.live, run.prepared
    assert p.cwd is not None
    return p.cwd.relative_to(live.root).as_posix() if p.cwd.is_relative_to(live.root) else "."


def _remote_network_note(where: placement.Placement) -> str:
    if not where.sandboxed:
        return (
            "No sandbox: the job runs on the remote host with the user's permissions "
            "there and that host's network."
        )
    if where.network:
        return "The job has the remote host's network (it was approved with network access)."
    return (
        "The job runs in the remote host's sandbox with a loopback of its own: a server "
        "it starts is NOT reachable by later commands (no shared network namespace there)."
    )


async def _start_remote_job(
    run: Run, args: RunCommandArgs, where: placement.Placement
) -> ToolResult:
    """A remote project's job: started on the host through its connection."""
    live, p = run.live, run.prepared
    assert p.command is not None and live.remote is not None
    started = await live.remote.runner.start_shell(
        p.command,
        cwd=remote_cwd(run),
        timeout_s=args.timeout_s,
        sandboxed=where.sandboxed,
        network=where.network,
        writable=where.writable,
        settings=where.settings,
    )
    ref, path = live.outputs.adopt(started.log_path)
    started.log_path = path  # the writer's descriptor follows the rename
    label = where.label + " (remote)"
    job = await live.jobs.add(p.command, started, sandbox=label)
    job.log_ref = ref

    async def noted() -> None:
        # Its end's notes: a lost connection, git metadata it planted, set aside.
        await asyncio.wait([started.ended])
        if started.note:
            job.warnings.append(started.note)

    live.in_background(noted())
    return _started(job, label, _remote_network_note(where), ref, p.command)


def _started(job: Job, label: str, network: str, ref: str, command: str) -> ToolResult:
    payload: JSONObject = {
        "job_id": job.id,
        "state": job.state,
        "sandbox": label,
        "network": network,
        "log_ref": ref,
        "note": "Running in the background: read it with job_output, end it with "
        "job_kill; it ends with the session.",
    }
    return ToolResult(payload, log_text=f"{job.id} started: {command}")


async def start_job(run: Run, args: RunCommandArgs, where: placement.Placement) -> ToolResult:
    """Start the prepared command, placed at ``where``, as a job; the result names it
    at once."""
    live, p = run.live, run.prepared
    assert p.command is not None and p.cwd is not None
    live.jobs.check_room()
    if live.remote is not None:
        return await _start_remote_job(run, args, where)
    shared = False
    if where.sandboxed and not where.network:
        shared = await live.shared_network() is not None
    spec = (
        live.sandbox_spec(network=where.network, writable=where.writable)
        if where.sandboxed
        else None
    )
    label = "none" if spec is None else where.label
    protected = protected_git(spec.roots) if spec is not None else []
    since = time.time_ns()
    started = await live.runner.start_shell(
        p.command, cwd=p.cwd, timeout_s=args.timeout_s, sandbox=spec, settings=where.settings
    )
    ref, path = live.outputs.adopt(started.log_path)
    started.log_path = path  # the writer's descriptor follows the rename
    job = await live.jobs.add(p.command, started, sandbox=label)
    job.log_ref = ref
    if spec is not None and not spec.roots_read_only:

        async def set_aside() -> None:
            # As after a foreground run: repositories it planted are set aside.
            await asyncio.wait([started.ended])
            found = await asyncio.to_thread(
                set_aside_after_run,
                spec.roots,
                since_ns=since,
                protected=protected,
                display=live.root,
            )
            job.warnings.extend(found)

        live.in_background(set_aside())
    network = _network_note(where, shared, live.shared_net_error)
    return _started(job, label, network, ref, p.command)


async def job_output(run: Run, args: JobOutputArgs) -> ToolResult:
    live = run.live
    job = live.jobs.get(args.job_id)
    read = await live.jobs.read(args.job_id)
    payload: JSONObject = {
        "job_id": job.id,
        "state": read.state,
        "running": read.state == "running",
        "exit_code": read.exit_code,
        "output": read.output,
        "truncated": read.truncated,
    }
    if read.omitted_lines:
        payload["omitted_lines"] = read.omitted_lines
    if job.log_ref:
        payload["log_ref"] = job.log_ref
    if not read.bytes_read:
        payload["note"] = (
            "nothing new since the last read"
            if read.state == "running"
            else "nothing new: the job has ended"
        )
    if job.warnings:
        payload["warning"] = "; ".join(job.warnings)
    failed = read.state != "running" and read.exit_code != 0
    return ToolResult(payload, failed=failed, log_text=read.output, log_omitted=read.omitted_lines)


async def job_kill(run: Run, args: JobKillArgs) -> ToolResult:
    live = run.live
    before = live.jobs.get(args.job_id).state
    job = await live.jobs.kill(args.job_id, live.kill_job_group)
    payload: JSONObject = {"job_id": job.id, "state": job.state, "exit_code": job.exit_code}
    if before != "running":
        payload["note"] = f"the job had already ended ({before})"
    return ToolResult(payload, log_text=f"{job.id}: {job.state}")
