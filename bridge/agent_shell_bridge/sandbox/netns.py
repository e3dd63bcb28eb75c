"""One network namespace for a session's sandboxed commands, so a job's server is
reachable by the session's later commands and by nothing else.

Every sandboxed command without network gets a namespace of its own with only a
loopback, so a server a background job starts would listen where no later command
can reach it. :class:`SharedNetwork` holds one namespace for the session instead: a
holder (bubblewrap with a new user and network namespace, running a shell that
waits for its standard input to close) whose namespaces later commands enter
before their own bubblewrap starts, which then makes everything else new as usual
(user, PID, IPC, mounts, the seccomp filter, Landlock) and leaves out
``--unshare-net``. The holder's loopback is all the namespace has; the host's
interfaces, and so anything outside the session, are not in it.

The holder dies with the bridge (``PR_SET_PDEATHSIG``, ``--die-with-parent``, and
the end of its standard input), and with the session (:meth:`SharedNetwork.aclose`).
Where it cannot start (no user namespaces, say), :class:`SharedNetworkUnavailable`
says why, and the session's commands keep a namespace each.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import json
import os
import select
import signal
import sys
from collections.abc import Callable

from ..errors import ToolFailed
from .kit import SandboxKit

__all__ = ["SharedNetwork", "SharedNetworkUnavailable"]

_CLONE_NEWUSER = 0x10000000
_CLONE_NEWNET = 0x40000000
_PR_SET_PDEATHSIG = 1
_START_S = 10.0


class SharedNetworkUnavailable(ToolFailed):
    """The session's network namespace could not be made (the reason is the message)."""


def _libc_call(name: str) -> Callable[..., int] | None:
    """A libc function, looked up before any fork (nothing is loaded in the child)."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        fn: Callable[..., int] = getattr(ctypes.CDLL(None, use_errno=True), name)
    except (OSError, AttributeError):
        return None
    return fn


class SharedNetwork:
    """The holder of a session's network namespace (see the module doc)."""

    def __init__(self, proc: asyncio.subprocess.Process, pid: int, user_fd: int, net_fd: int):
        self._proc = proc
        self.pid = pid  # the holder's process inside its namespaces
        self._user_fd = user_fd
        self._net_fd = net_fd
        self._setns = _libc_call("setns")
        self.closed = False
        # To wait, at the end, for the holder inside (bubblewrap's child) too.
        self._pidfd = self._inner_fd()

    @classmethod
    async def start(cls, kit: SandboxKit) -> SharedNetwork:
        """Start the holder; :class:`SharedNetworkUnavailable` when it cannot run."""
        prctl = _libc_call("prctl")
        if prctl is None or _libc_call("setns") is None:
            raise SharedNetworkUnavailable("no setns() here (not Linux)")
        bridge = os.getpid()

        def die_with_bridge() -> None:  # in the child, between fork and exec
            prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
            if os.getppid() != bridge:
                os.kill(os.getpid(), signal.SIGKILL)

        info_r, info_w = os.pipe2(os.O_CLOEXEC)
        argv = [
            kit.bwrap,
            "--unshare-user",
            "--unshare-net",
            "--die-with-parent",
            "--ro-bind",
            "/",
            "/",
            "--info-fd",
            str(info_w),
            "--",
            "sh",
            "-c",
            "read -r _",
        ]
        try:
            proc = await asyncio.create_subprocess_exec(
                *argv,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.DEVNULL,
                stderr=asyncio.subprocess.PIPE,
                pass_fds=(info_w,),
                start_new_session=True,
                preexec_fn=die_with_bridge,
                env={"PATH": os.environ.get("PATH", os.defpath)},
            )
        except OSError as exc:
            os.close(info_r)
            os.close(info_w)
            raise SharedNetworkUnavailable(f"bubblewrap did not start: {exc.strerror}") from exc
        os.close(info_w)
        try:
            info = await asyncio.wait_for(asyncio.to_thread(_read_all, info_r), _START_S)
        except TimeoutError as exc:
            await _end(proc)
            raise SharedNetworkUnavailable("bubblewrap did not report its namespaces") from exc
        finally:
            os.close(info_r)
        try:
            pid = int(json.loads(info)["child-pid"])
            user_fd = os.open(f"/proc/{pid}/ns/user", os.O_RDONLY | os.O_CLOEXEC)
        except (ValueError, KeyError, TypeError, OSError) as exc:
            await _end(proc)
            err = await proc.stderr.read() if proc.stderr is not None else b""
            why = err.decode("utf-8", "replace").strip() or "it reported no namespace"
            raise SharedNetworkUnavailable(f"bubblewrap could not make one: {why}") from exc
        try:
            net_fd = os.open(f"/proc/{pid}/ns/net", os.O_RDONLY | os.O_CLOEXEC)
        except OSError as exc:
            os.close(user_fd)
            await _end(proc)
            raise SharedNetworkUnavailable(f"its namespace vanished: {exc.strerror}") from exc
        return cls(proc, pid, user_fd, net_fd)

    def _inner_fd(self) -> int | None:
        try:
            return os.pidfd_open(self.pid)
        except OSError:
            return None

    @property
    def alive(self) -> bool:
        return not self.closed and self._proc.returncode is None

    def entrant(self, then: Callable[[], None] | None = None) -> Callable[[], None]:
        """What a child runs between fork and exec to enter the namespace (its user
        namespace first: the network namespace belongs to it), then ``then``."""
        setns, user_fd, net_fd = self._setns, self._user_fd, self._net_fd
        assert setns is not None

        def enter() -> None:
            for fd, kind in ((user_fd, _CLONE_NEWUSER), (net_fd, _CLONE_NEWNET)):
                if setns(fd, kind) != 0:
                    os.write(2, b"agent-shell: could not enter the session's network\n")
                    os._exit(126)
            if then is not None:
                then()

        return enter

    async def aclose(self) -> None:
        """End the holder (and so the namespace, once no command is left in it)."""
        if self.closed:
            return
        self.closed = True
        for fd in (self._user_fd, self._net_fd):
            with contextlib.suppress(OSError):
                os.close(fd)
        await _end(self._proc)
        if self._pidfd is not None:
            # It gets SIGKILL as its parent dies (--die-with-parent); see it gone.
            with contextlib.suppress(OSError):
                signal.pidfd_send_signal(self._pidfd, signal.SIGKILL)
            await asyncio.to_thread(select.select, [self._pidfd], [], [], _START_S)
            os.close(self._pidfd)
            self._pidfd = None


def _read_all(fd: int) -> bytes:
    """bubblewrap's JSON on its info descriptor (it closes it once written)."""
    out = b""
    while True:
        piece = os.read(fd, 4096)
        if not piece:
            return out
        out += piece
        if out.rstrip().endswith(b"}"):
            return out


async def _end(proc: asyncio.subprocess.Process) -> None:
    if proc.stdin is not None:
        with contextlib.suppress(OSError, RuntimeError):
            proc.stdin.close()
    if proc.returncode is None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
    with contextlib.suppress(ProcessLookupError):
        await proc.wait()
