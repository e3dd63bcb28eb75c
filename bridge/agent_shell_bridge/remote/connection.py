"""One persistent connection per remote host, reused by every command and file.

For ssh it is an OpenSSH ControlMaster started by the bridge (``-M -N``,
``BatchMode=yes``: no password prompt ever reaches a terminal), its socket in a
0700 directory of the bridge's own; every request is a client of that master
(``ControlMaster=no``) whose fallback to a connection of its own is closed off
(``ProxyCommand=false``), so a lost master fails the request instead of quietly
dialling again. For a container it is the ``docker``/``podman`` program itself,
and whether the container runs is asked of that program (:mod:`.container`): a
stopped or missing container is told apart from a failed command.

Every remote command line is one :func:`shlex.join`: ssh hands the remote login
shell a string, and nothing here builds that string by hand.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import hashlib
import json
import os
import secrets
import shlex
import signal
import stat
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from .container import KILLED, SETTLE_S, container_argv, container_down
from .errors import RemoteDisconnected, RemoteFailed
from .target import RemoteTarget

__all__ = ["HELPER_FAILED", "SSH_LOST", "RemoteConnection", "control_dir", "default_runtime_dir"]

HELPER_FAILED = 120
_HELPER = Path(__file__).with_name("helper.py")
_READY_POLL_S = 0.02
_PR_SET_PDEATHSIG = 1
# ssh's own exit status: the connection, not the remote command, failed.
SSH_LOST = 255


def default_runtime_dir(env: Mapping[str, str] | None = None) -> Path:
    """Where this user's control sockets go: ``$XDG_RUNTIME_DIR/agent-shell``, else
    ``/tmp/agent-shell-UID`` (short: a socket's path has room for about 100 bytes)."""
    env = os.environ if env is None else env
    runtime = env.get("XDG_RUNTIME_DIR")
    if runtime and Path(runtime).is_dir():
        return Path(runtime) / "agent-shell"
    return Path("/tmp") / f"agent-shell-{os.getuid()}"  # noqa: S108 - checked 0700, owned


def control_dir(base: Path) -> Path:
    """The directory of the control sockets under BASE, made 0700 and checked."""
    base.mkdir(parents=True, exist_ok=True, mode=0o700)
    path = base / "ssh-control"
    path.mkdir(exist_ok=True, mode=0o700)
    for each in (base, path):  # neither may be a link, or another user's
        info = each.lstat()
        if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid():
            raise RemoteFailed(f"{each} is not a directory of this user's")
        if stat.S_IMODE(info.st_mode) != 0o700:
            each.chmod(0o700)
    return path


def _die_with_bridge() -> Callable[[], None] | None:
    """The master's pre-exec: it goes when the bridge goes (Linux), not left behind."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None

    def apply() -> None:
        prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)

    return apply


class RemoteConnection:
    """The connection to one target's host (see the module doc)."""

    def __init__(
        self,
        target: RemoteTarget,
        runtime_dir: Path,
        *,
        ssh_options: Sequence[str] = (),
        connect_timeout_s: float = 20.0,
    ) -> None:
        self.target = target
        self._runtime_dir = runtime_dir
        self._options = tuple(ssh_options)
        self._timeout = connect_timeout_s
        self._master: asyncio.subprocess.Process | None = None
        # Set when a request found the connection gone; cleared by the next open().
        self.dropped: RemoteDisconnected | None = None
        self._helper_source = _HELPER.read_text(encoding="utf-8")
        who = f"{target.kind}\0{target.label}"
        # Short: a Unix socket's path has room for about 100 bytes.
        self._socket_name = "c-" + hashlib.sha256(who.encode()).hexdigest()[:12]

    @property
    def socket(self) -> Path:
        return self._runtime_dir / "ssh-control" / self._socket_name

    def _ssh_common(self) -> list[str]:
        t = self.target
        argv = ["ssh", "-o", "BatchMode=yes", "-o", f"ControlPath={self.socket}"]
        argv += ["-o", f"ConnectTimeout={int(self._timeout)}"]
        if t.port is not None:
            argv += ["-p", str(t.port)]
        if t.user is not None:
            argv += ["-l", t.user]
        for option in self._options:
            argv += ["-o", option]
        return argv

    # -- the connection ---------------------------------------------------------

    def alive(self) -> bool:
        """Whether requests can go through now (the master runs and listens; for a
        container, nothing is held here: :meth:`check` asks whether it runs)."""
        if self.target.kind != "ssh":
            return True
        master = self._master
        return master is not None and master.returncode is None and self.socket.exists()

    async def check(self) -> bool:
        """Ask the master itself whether it still holds the connection (for a
        container, its program whether it runs)."""
        if self.target.kind != "ssh":
            return await container_down(self.target) is None
        if not self.alive():
            return False
        proc = await asyncio.create_subprocess_exec(
            *self._ssh_common(),
            "-O",
            "check",
            self.target.host,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.DEVNULL,
        )
        return await proc.wait() == 0

    async def open(self) -> None:
        """Connect (again): start the master and wait until its socket listens; for a
        container, see that it runs (:class:`RemoteDisconnected` saying why not)."""
        if self.target.kind != "ssh":
            why = await container_down(self.target)
            if why is not None:
                raise RemoteDisconnected(f"cannot reach {self.target.label}: {why}")
            self.dropped = None
            return
        if self.alive():
            return
        await self.close()
        await asyncio.to_thread(control_dir, self._runtime_dir)
        with contextlib.suppress(FileNotFoundError):
            self.socket.unlink()  # a dead master's socket
        argv = [*self._ssh_common(), "-M", "-N", "-T", "-o", "ControlPersist=no"]
        argv += [
            "-o",
            "ServerAliveInterval=5",
            "-o",
            "ServerAliveCountMax=3",
            "-o",
            "LogLevel=ERROR",
        ]
        # Nothing of this machine's reaches the host through it, whatever the user's
        # ~/.ssh/config says for that host: no agent, no X, no port forwards.
        argv += ["-o", "ForwardAgent=no", "-o", "ForwardX11=no", "-o", "ClearAllForwardings=yes"]
        argv += ["-o", "PermitLocalCommand=no", self.target.host]
        master = await asyncio.create_subprocess_exec(
            *argv,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.PIPE,
            start_new_session=True,
            preexec_fn=_die_with_bridge(),
        )
        self._master = master
        deadline = time.monotonic() + self._timeout + 5
        while not self.socket.exists():
            if master.returncode is not None or time.monotonic() > deadline:
                why = await self._master_error(master)
                raise RemoteDisconnected(f"cannot connect to {self.target.label}: {why}")
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(master.wait(), _READY_POLL_S)
        self.dropped = None

    async def _master_error(self, master: asyncio.subprocess.Process) -> str:
        if master.returncode is None:
            master.kill()
            await master.wait()
            return "timed out"
        assert master.stderr is not None
        err = (await master.stderr.read()).decode(errors="replace").strip()
        return err.splitlines()[-1] if err else f"ssh exited with {master.returncode}"

    async def close(self) -> None:
        """End the master (and with it every request still using it)."""
        master, self._master = self._master, None
        if master is None:
            return
        if master.returncode is None:
            master.terminate()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(master.wait(), 5)
            if master.returncode is None:
                master.kill()
                await master.wait()
        with contextlib.suppress(FileNotFoundError):
            self.socket.unlink()

    def lost(self, detail: str) -> RemoteDisconnected:
        """The error of a request that failed because the connection is gone."""
        last = detail.strip().splitlines()[-1] if detail.strip() else "no answer"
        self.dropped = RemoteDisconnected(
            f"the connection to {self.target.label} was lost ({last}); the turn ended. "
            "The next prompt (or resuming the session) connects again."
        )
        return self.dropped

    def container_lost(self, why: str) -> RemoteDisconnected:
        """The error of a request that failed because its container stopped (WHY)."""
        self.dropped = RemoteDisconnected(
            f"{why}; the turn ended. Once it runs again, the next prompt (or resuming "
            "the session) reaches it again."
        )
        return self.dropped

    async def lost_by(self, code: int | None, detail: str) -> RemoteDisconnected | None:
        """The error when a request that ended with CODE failed because the
        connection (ssh: its status 255 and a master that no longer answers) or the
        container (it does not run now) is gone; None when the request itself failed.

        A container's program gives no status of its own for it (see
        :mod:`.container`), so every failed request there asks whether it runs
        (after 137, for a few seconds: a container stopped under it ends it so).
        """
        if code in (0, HELPER_FAILED):
            return None
        if self.target.kind == "ssh":
            if code == SSH_LOST and not await self.check():
                return self.lost(detail)
            return None
        why = await container_down(self.target, settle_s=SETTLE_S if code == KILLED else 0.0)
        return None if why is None else self.container_lost(why)

    # -- requests ---------------------------------------------------------------

    def argv(self, remote: Sequence[str]) -> list[str]:
        """The local argv that runs the argv REMOTE on the target."""
        t = self.target
        if t.kind == "ssh":
            argv = [*self._ssh_common(), "-o", "ControlMaster=no", "-o", "ProxyCommand=false"]
            return [*argv, "-T", t.host, "--", shlex.join(remote)]
        return container_argv(t, remote)

    def helper_argv(self, request: Mapping[str, object]) -> list[str]:
        """The local argv of one helper request (:mod:`.helper`)."""
        remote = ["python3", "-I", "-S", "-c", self._helper_source, json.dumps(request)]
        return self.argv(remote)

    async def call(
        self, request: Mapping[str, object], *, data: bytes = b"", timeout_s: float = 30.0
    ) -> bytes:
        """One short helper request; its standard output, or a typed error.

        The helper answers after a line holding this request's nonce: whatever the
        remote login shell printed first (a chatty ``.bashrc``) is cut off, so it
        can never be taken for a file's content.
        """
        if not self.alive():
            raise self.lost("not connected")
        nonce = secrets.token_hex(16)
        proc = await asyncio.create_subprocess_exec(
            *self.helper_argv({**request, "nonce": nonce}),
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            start_new_session=True,
        )
        try:
            out, err = await asyncio.wait_for(proc.communicate(data), timeout_s)
        except BaseException:
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
            await proc.wait()
            raise
        if proc.returncode == HELPER_FAILED:
            raise RemoteFailed(helper_error(err))
        if proc.returncode != 0:
            text = err.decode(errors="replace")
            if self.target.kind == "ssh" and (proc.returncode == SSH_LOST or not self.alive()):
                raise self.lost(text)
            gone = await self.lost_by(proc.returncode, text)
            if gone is not None:
                raise gone
            if "python3" in text and ("not found" in text or "No such file" in text):
                raise RemoteFailed(
                    f"{self.target.label} has no python3, which remote projects need"
                )
            raise RemoteFailed(f"remote request failed ({proc.returncode}): {text.strip()[-300:]}")
        mark = nonce.encode() + b"\n"
        at = out.find(mark)
        if at < 0:
            raise RemoteFailed("the remote helper did not answer (its output never began)")
        return out[at + len(mark) :]

    async def call_json(
        self, request: Mapping[str, object], *, data: bytes = b"", timeout_s: float = 30.0
    ) -> dict[str, object]:
        out = await self.call(request, data=data, timeout_s=timeout_s)
        try:
            value = json.loads(out)
        except ValueError as exc:
            raise RemoteFailed(f"the remote helper answered no JSON: {out[:200]!r}") from exc
        if not isinstance(value, dict):
            raise RemoteFailed("the remote helper answered no object")
        return value


def helper_error(stderr: bytes) -> str:
    """The helper's own one-line refusal (its last JSON line on stderr)."""
    for line in reversed(stderr.decode(errors="replace").splitlines()):
        with contextlib.suppress(ValueError):
            value = json.loads(line)
            if isinstance(value, dict) and "error" in value:
                return str(value["error"])
    return stderr.decode(errors="replace").strip()[-300:] or "the remote helper failed"
