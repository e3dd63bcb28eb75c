"""Commands of a remote project, run on its host through its one connection.

Where a command runs is still :func:`..sandbox.placement.place`'s to say, from the
remote host's sandbox: in its bubblewrap (:mod:`.walls`) when the host has a
working one, otherwise only what is strictly read-only runs unasked. Either way the
command starts under the remote helper's watchdog (:mod:`.helper`), whose standard
input is the channel: the local end of a pipe this runner holds for the run. A
timeout, a cancel or a dead bridge ends the local ssh client, the channel closes,
and the watchdog kills the command's process group and everything carrying its
mark on the host. A lost connection raises :class:`.RemoteDisconnected`.
"""

from __future__ import annotations

import contextlib
import os
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING

from ..policy.shell_parse import ParsedCommand
from ..process.runner import _SECRET_NAME_RE, ProcessResult, ProcessRunner
from ..sandbox import IPC_VARIABLES
from ..sandbox.placement import Asked, Placement, place, unasked_verdict
from ..types import Decision, Verdict
from .connection import HELPER_FAILED, RemoteConnection, helper_error
from .errors import RemoteFailed
from .probe import RemoteProbe
from .walls import remote_bwrap_argv

if TYPE_CHECKING:
    from ..policy.engine import PolicyEngine

__all__ = ["Judged", "RemoteRun", "RemoteRunner"]

_QUIET = {"PAGER": "cat", "GIT_PAGER": "cat", "GIT_TERMINAL_PROMPT": "0"}
_SSH_LOST = 255


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
        result = await self.run_shell(
            command,
            cwd=cwd,
            timeout_s=timeout_s,
            sandboxed=where.sandboxed,
            network=where.network,
            writable=where.writable,
            settings=where.settings,
        )
        return RemoteRun(where, result)

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
        where = self.remote_cwd(cwd)
        shell = ["bash", "--noprofile", "--norc", "-c", command]
        if sandboxed:
            if not self.probe.sandboxed:
                raise RemoteFailed(f"{self.connection.target.label} has no working sandbox")
            argv = remote_bwrap_argv(
                self.probe, shell, root=self.root, cwd=where, network=network, writable=writable
            )
        else:
            argv = shell
        return await self._run(argv, where, timeout_s, settings)

    async def _run(
        self,
        argv: list[str],
        where: str,
        timeout_s: float,
        settings: Mapping[str, str] | None,
    ) -> ProcessResult:
        request = {
            "op": "run",
            "argv": argv,
            "cwd": where,
            "root": self.root,
            "mark": uuid.uuid4().hex,
            "drop": sorted(IPC_VARIABLES),
            "secret_re": _SECRET_NAME_RE.pattern,
            "set": {**_QUIET, **(settings or {})},
        }
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
        if result.exit_code == _SSH_LOST and not await self.connection.check():
            raise self.connection.lost(result.stderr)
        if result.exit_code == HELPER_FAILED:
            raise RemoteFailed(helper_error(result.stderr.encode()))
        return result
