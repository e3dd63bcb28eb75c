"""A watchdog for commands run outside the sandbox, so none outlives the bridge.

Run as ``python -I -S guard.py BRIDGE_PID -- ARGV...`` (standard library only, no
package import). ``PR_SET_PDEATHSIG`` alone covers one process: the kernel signals
the direct child of a dead parent, never that child's children (``make test → sh →
sleep``). So this process starts a watchdog and then *becomes* the command (exec,
so the command keeps its pid, its process group and ``$$``). The watchdog waits on
a pidfd of the bridge; when the bridge dies it kills every process of the run: the
process group, and anything carrying the run's environment mark
(``AGENT_SHELL_RUN``) that left the group with ``setsid``. It stays in the run's
process group, which the bridge kills at the end of every run, so it never
outlives the run either.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import sys
import time

RUN_MARK = "AGENT_SHELL_RUN"


def kill_marked(run_id: str) -> int:
    """SIGKILL every process whose environment carries this run's mark.

    Catches descendants that left the process group with ``setsid``; reads
    ``/proc``, so it is a no-op where there is none. The runner calls it too (this
    module imports nothing of the package, so it can be both). Returns how many
    were signalled.
    """
    if not run_id:
        return 0
    needle = f"{RUN_MARK}={run_id}".encode()
    me = os.getpid()
    killed = 0
    try:
        entries = os.listdir("/proc")
    except OSError:
        return 0
    for entry in entries:
        if not entry.isdigit() or int(entry) == me:
            continue
        try:
            with open(f"/proc/{entry}/environ", "rb") as fh:
                environ = fh.read()
        except OSError:
            continue
        if needle in environ.split(b"\0"):
            with contextlib.suppress(OSError):
                os.kill(int(entry), signal.SIGKILL)
                killed += 1
    return killed


def _kill_run() -> None:
    """SIGKILL the run: marked processes first (they may have left the group)."""
    kill_marked(os.environ.get(RUN_MARK, ""))
    with contextlib.suppress(OSError):
        os.killpg(os.getpgrp(), signal.SIGKILL)  # the watchdog goes with its group
    os._exit(137)


def _watch(bridge: int, bridge_fd: int | None) -> None:
    """The watchdog: wait for the bridge to die, then kill the run.

    It never has to notice the command ending: the bridge kills the whole process
    group (this watchdog included) at the end of every run.
    """
    # Hold none of the command's pipes: its output must end when it does.
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    os.close(null)
    if bridge_fd is not None:
        poller = select.poll()
        poller.register(bridge_fd, select.POLLIN)
        while not poller.poll():
            pass
    else:  # no pidfd (an old kernel): look now and then
        while True:
            time.sleep(0.5)
            try:
                os.kill(bridge, 0)
            except ProcessLookupError:
                break
            except PermissionError:
                continue
    _kill_run()


def main(argv: list[str]) -> int:
    if len(argv) < 4 or argv[2] != "--":
        sys.stderr.write("usage: guard.py BRIDGE_PID -- COMMAND...\n")
        return 2
    bridge = int(argv[1])
    command = argv[3:]
    bridge_fd: int | None
    try:
        bridge_fd = os.pidfd_open(bridge)
    except ProcessLookupError:
        return 137
    except (OSError, AttributeError):
        bridge_fd = None
    if os.getppid() != bridge:  # the bridge died before we started
        return 137
    # The watchdog is a grandchild left to init (double fork): not a child of the
    # command, so a command waiting for all its children never waits for it.
    first = os.fork()
    if first == 0:
        try:
            if os.fork() == 0:
                _watch(bridge, bridge_fd)
        finally:
            os._exit(0)
    os.waitpid(first, 0)
    if bridge_fd is not None:
        os.close(bridge_fd)
    # Python ignores these at start-up, and an ignored signal stays ignored across
    # exec: give the command the defaults a shell would have.
    for sig in (signal.SIGPIPE, signal.SIGXFSZ):
        signal.signal(sig, signal.SIG_DFL)
    try:
        os.execvp(command[0], command)  # noqa: S606 - the argv the runner was given
    except OSError as exc:
        sys.stderr.write(f"{command[0]}: {exc.strerror}\n")
    return 127


if __name__ == "__main__":
    sys.exit(main(sys.argv))
