"""Commands of a remote project, run on its host through its one connection.

Where a command runs is still :func:`..sandbox.placement.place`'s to say, from the
remote host's sandbox: in its bubblewrap (:mod:`.walls`) when the host has a
working one, otherwise only what is strictly read-only runs unasked. Either way the
command starts under the remote helper's watchdog (:mod:`.helper`), whose standard
input is the channel: the local end of a pipe this runner holds for the run. A
timeout, a cancel or a dead bridge ends the local ssh client, the channel closes,
and the watchdog kills the command's process group and everything carrying its
mark on the host. A lost connection raises :class:`.RemoteDisconnected`.

A background job (:meth:`RemoteRunner.start_shell`) is the same run whose end is
not waited for: its channel stays open until it ends, :meth:`RemoteRunner.kill_job`
kills its processes there first, and a drop ends it there as it ends a foreground
command. A sandboxed run that could write the project is followed by the walk for
git metadata it planted (:mod:`.planted_git`), as locally.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING

from ..policy.shell_parse import ParsedCommand
from ..process.runner import _SECRET_NAME_RE, BackgroundRun, ProcessResult, ProcessRunner
from ..sandbox import IPC_VARIABLES
from ..sandbox.placement import Asked, Placement, place, unasked_verdict
from ..types import Decision, Verdict
from .connection import HELPER_FAILED, RemoteConnection, helper_error
from .errors import RemoteDisconnected, RemoteFailed
from .planted_git import GitBefore, git_before, set_aside_planted
from .probe import RemoteProbe
from .walls import remote_bwrap_argv

if TYPE_CHECKING:
    from ..policy.engine import PolicyEngine

__all__ = ["Judged", "RemoteRun", "RemoteRunner"]

log = logging.getLogger(__name__)

_QUIET = {"PAGER": "cat", "GIT_PAGER": "cat", "GIT_TERMINAL_PROMPT": "0"}
# How long a killed job's local end may take to see its channel close.
_KILL_GRACE_S = 10.0


@dataclass(frozen=True, slots=True)
class Judged:
    """What the policy said of a command, and the parse it judged."""

    verdict: Verdict
    parsed: ParsedCommand | None


@dataclass(frozen=True, slots=True)
class RemoteRun:
    """One run: where it was placed, and what came of it."""

    placement: Placement
    result: ProcessResult
    # What was set aside after it: git metadata it planted (:mod:`.planted_git`).
    set_aside: tuple[str, ...] = ()

    @property
    def label(self) -> str:
        if not self.placement.sandboxed:
            return "none (remote)"
        return "bubblewrap+net (remote)" if self.placement.network else "bubblewrap (remote)"


class RemoteRunner:
    """Runs a remote project's commands (see the module doc)."""

    def __init__(
        self,
        connection: RemoteConnection,
        probe: RemoteProbe,
        root: str,
        local: ProcessRunner,
        *,
        local_cwd: Path,
    ) -> None:
        self.connection = connection
        self.probe = probe
        self.root = root
        self._local = local
        self._local_cwd = local_cwd
        # The running jobs, by their local end's pid: (their mark there, that end).
        self._jobs: dict[int, tuple[str, BackgroundRun]] = {}

    def judge(self, policy: PolicyEngine, command: str, *, cwd: str = ".") -> Judged:
        """The policy's verdict on COMMAND run at CWD (relative to the root), narrowed
        as :func:`..sandbox.placement.unasked_verdict` narrows it for the host's sandbox.

        POLICY is the session's, for its local mirror: the project's relative paths
        mean the same there, so the rules (paths, families, allowlist) judge alike.
        """
        where = self.remote_cwd(cwd)
        relative = os.path.relpath(where, self.root)
        judged = policy.judge_command(command, cwd=self._local_cwd / relative)
        verdict = unasked_verdict(
            judged.verdict,
            command,
            parsed=judged.parsed,
            roots=(Path(self.root),),
            cwd=Path(where),
            sandbox=self.probe.status(),
        )
        return Judged(verdict, judged.parsed)

    def place(
        self,
        command: str,
        *,
        parsed: ParsedCommand | None,
        cwd: str,
        asked: Asked,
        confined: bool = False,
        sandbox_approved: bool = False,
    ) -> Placement:
        """Where COMMAND runs on the host: the local decision, from the host's sandbox."""
        root = Path(self.root)
        return place(
            command,
            parsed=parsed,
            cwd=Path(cwd),
            root=root,
            roots=(root,),
            sandbox=self.probe.status(),
            asked=asked,
            confined=confined,
            sandbox_approved=sandbox_approved,
        )

    async def run_placed(
        self,
        command: str,
        *,
        judged: Judged,
        cwd: str,
        timeout_s: float,
        asked: Asked,
        confined: bool = False,
        sandbox_approved: bool = False,
    ) -> RemoteRun:
        """Run COMMAND as JUDGED (:meth:`judge`) and placed; a denial, a confirm nobody
        answered with a yes, or a refused placement is :class:`.RemoteFailed`."""
        verdict = judged.verdict
        if verdict.decision is Decision.DENY:
            raise RemoteFailed(f"refused: {verdict.reason}")
        if verdict.decision is Decision.CONFIRM and not asked.by_user:
            raise RemoteFailed(f"needs the user's yes: {verdict.reason}")
        where = self.place(
            command,
            parsed=judged.parsed,
            cwd=cwd,
            asked=asked,
            confined=confined,
            sandbox_approved=sandbox_approved,
        )
        if where.refused is not None:
            raise RemoteFailed(where.refused.replace("no sandbox", "no sandbox (remote)", 1))
        return await self.run_placement(command, where, cwd=cwd, timeout_s=timeout_s)

    async def run_placement(
        self, command: str, where: Placement, *, cwd: str, timeout_s: float
    ) -> RemoteRun:
        """Run COMMAND as placed at WHERE; a sandboxed run that could write the
        project is followed by the walk for git metadata it planted."""
        watched = where.sandboxed and where.writable
        before = await git_before(self.connection, self.root) if watched else None
        try:
            result = await self.run_shell(
                command,
                cwd=cwd,
                timeout_s=timeout_s,
                sandboxed=where.sandboxed,
                network=where.network,
                writable=where.writable,
                settings=where.settings,
            )
        except RemoteDisconnected:
            raise  # nothing more goes through; the next run's walk finds it
        except BaseException:
            if before is not None:  # a cancelled run is walked after too
                with contextlib.suppress(Exception):
                    await asyncio.shield(self.set_aside_after(before))
            raise
        notes = await self.set_aside_after(before)
        return RemoteRun(where, result, tuple(notes))

    async def set_aside_after(self, before: GitBefore | None) -> list[str]:
        """After a run watched from BEFORE: what it planted, set aside (notes)."""
        if before is None:
            return []
        return await set_aside_planted(self.connection, self.root, before)

    def remote_cwd(self, cwd: str) -> str:
        """CWD as a remote path inside the root (a relative one is the root's)."""
        path = PurePosixPath(self.root, cwd)
        return os.path.normpath(str(path))

    async def run_argv(self, argv: Sequence[str], *, cwd: str, timeout_s: float) -> ProcessResult:
        """Run ARGV on the host without a shell and without a sandbox: the bridge's own
        small commands (``git status`` with the safe settings), as locally."""
        return await self._run(list(argv), self.remote_cwd(cwd), timeout_s, None)

    async def run_shell(
        self,
        command: str,
        *,
        cwd: str,
        timeout_s: float,
        sandboxed: bool,
        network: bool = False,
        writable: bool = True,
        settings: Mapping[str, str] | None = None,
    ) -> ProcessResult:
        """Run COMMAND with ``bash --noprofile --norc -c`` on the host, as placed."""
        argv, where = self._argv(
            command, cwd, sandboxed=sandboxed, network=network, writable=writable
        )
        return await self._run(argv, where, timeout_s, settings)

    def _argv(
        self,
        command: str,
        cwd: str,
        *,
        sandboxed: bool,
        network: bool,
        writable: bool,
    ) -> tuple[list[str], str]:
        """The remote argv of COMMAND as placed, and its remote working directory."""
        where = self.remote_cwd(cwd)
        shell = ["bash", "--noprofile", "--norc", "-c", command]
        if not sandboxed:
            return shell, where
        if not self.probe.sandboxed:
            raise RemoteFailed(f"{self.connection.target.label} has no working sandbox")
        argv = remote_bwrap_argv(
            self.probe, shell, root=self.root, cwd=where, network=network, writable=writable
        )
        return argv, where

    def _request(
        self, argv: list[str], where: str, settings: Mapping[str, str] | None, mark: str
    ) -> dict[str, object]:
        return {
            "op": "run",
            "argv": argv,
            "cwd": where,
            "root": self.root,
            "mark": mark,
            "drop": sorted(IPC_VARIABLES),
            "secret_re": _SECRET_NAME_RE.pattern,
            "set": {**_QUIET, **(settings or {})},
        }

    # -- background jobs --------------------------------------------------------

    async def start_shell(
        self,
        command: str,
        *,
        cwd: str,
        timeout_s: float | None,
        sandboxed: bool,
        network: bool = False,
        writable: bool = True,
        settings: Mapping[str, str] | None = None,
    ) -> BackgroundRun:
        """Start COMMAND on the host as :meth:`run_shell` would, and return once the
        local end runs: a job (:mod:`..process.jobs`). Its output goes to its local
        log as it comes; :meth:`kill_job` ends it there. The channel stays open
        until it ends: when it closes otherwise (a drop, a dead bridge, the timeout
        killing the local client), the watchdog there kills it as it kills a
        foreground command. A sandboxed one that could write the project is
        followed by the walk for planted git metadata (its notes: ``note``)."""
        argv, where = self._argv(
            command, cwd, sandboxed=sandboxed, network=network, writable=writable
        )
        if not self.connection.alive():
            raise self.connection.lost("not connected")
        before = await git_before(self.connection, self.root) if sandboxed and writable else None
        mark = uuid.uuid4().hex
        request = self._request(argv, where, settings, mark)
        channel_read, channel_write = os.pipe()
        try:
            local = await self._local.start_argv(
                self.connection.helper_argv(request),
                cwd=self._local_cwd,
                timeout_s=timeout_s,
                stdin_fd=channel_read,
            )
        except BaseException:
            os.close(channel_write)
            raise
        finally:
            os.close(channel_read)  # the client has its own
        run = BackgroundRun(local.pid, local.log_path)
        self._jobs[local.pid] = (mark, local)
        run.ended = asyncio.ensure_future(self._job_end(run, local, channel_write, before))
        return run

    async def _job_end(
        self,
        run: BackgroundRun,
        local: BackgroundRun,
        channel_write: int,
        before: GitBefore | None,
    ) -> int | None:
        try:
            code = await local.ended
        finally:
            self._jobs.pop(local.pid, None)
            with contextlib.suppress(OSError):
                os.close(channel_write)
        notes: list[str] = []
        lost = await self.connection.lost_by(code, "the job's channel closed")
        if lost is not None:
            notes.append(f"{lost.message} The job ended there with it.")
            code = None
        elif code == HELPER_FAILED:
            notes.append("the remote helper refused to start it (see its output)")
        try:
            notes += await self.set_aside_after(before)
        except RemoteDisconnected as exc:
            notes.append(f"git metadata it may have planted was not checked: {exc.message}")
        run.note = "; ".join(notes) or None
        return code

    async def kill_job(self, pid: int) -> None:
        """End the job whose local end is PID: its processes there (its group and
        whatever carries its mark, until none is left), then the local end."""
        entry = self._jobs.get(pid)
        if entry is not None:
            mark, local = entry
            try:
                await self.connection.call_json({"op": "kill", "mark": mark}, timeout_s=30)
            except (RemoteFailed, RemoteDisconnected) as exc:  # the channel's close ends it
                log.warning("killing a job on %s: %s", self.connection.target.label, exc)
            else:
                # The watchdog there saw its command end and exits; then so does
                # the local end, the channel closed behind it.
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(asyncio.shield(local.ended), _KILL_GRACE_S)
        await self._local.kill_group(pid)

    async def _run(
        self,
        argv: list[str],
        where: str,
        timeout_s: float,
        settings: Mapping[str, str] | None,
    ) -> ProcessResult:
        request = self._request(argv, where, settings, uuid.uuid4().hex)
        if not self.connection.alive():
            raise self.connection.lost("not connected")
        channel_read, channel_write = os.pipe()
        try:
            result = await self._local.run_argv(
                self.connection.helper_argv(request),
                cwd=self._local_cwd,
                timeout_s=timeout_s,
                stdin_fd=channel_read,
            )
        finally:
            for fd in (channel_read, channel_write):
                with contextlib.suppress(OSError):
                    os.close(fd)
        lost = await self.connection.lost_by(result.exit_code, result.stderr)
        if lost is not None:
            raise lost
        if result.exit_code == HELPER_FAILED:
            raise RemoteFailed(helper_error(result.stderr.encode()))
        return result
