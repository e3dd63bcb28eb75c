"""Run one MCP server so that it dies with the bridge, even a SIGKILLed bridge.

Usage: ``python -I -S supervise.py BRIDGE_PID COMMAND [ARG...]``. The MCP SDK's
stdio client spawns this script in a new process group, with the server's pipes.
It asks Linux for SIGTERM when its parent (the bridge) dies (``PR_SET_PDEATHSIG``),
gives up at once if the bridge is already gone, then starts the server in the same
process group (the server inherits the pipes and talks to the bridge directly) and
waits for it; when the server exits, the rest of its group is sent SIGTERM. A
SIGTERM, SIGHUP or SIGINT -- the bridge's death, or the SDK's own shutdown
escalation -- kills the whole group, grandchildren included (an ``npx`` or ``uvx``
launcher's real server). The server itself also gets SIGKILL if this supervisor
dies first. Standard library only, and nothing of the bridge's: it must start fast
and import nothing heavy.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
from types import FrameType

_PR_SET_PDEATHSIG = 1


def _die_with_parent(sig: int) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(_PR_SET_PDEATHSIG, sig, 0, 0, 0) != 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))


def _kill_group(signum: int, frame: FrameType | None) -> None:
    del signum, frame
    os.killpg(0, signal.SIGKILL)  # the server, its children, and this supervisor


def main(argv: list[str]) -> int:
    if len(argv) < 2 or not argv[0].isdigit():
        sys.stderr.write("usage: supervise.py BRIDGE_PID COMMAND [ARG...]\n")
        return 2
    bridge, command = int(argv[0]), argv[1:]
    _die_with_parent(signal.SIGTERM)
    for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
        signal.signal(sig, _kill_group)
    if os.getppid() != bridge:  # the bridge died before the request took effect
        return 1
    if os.getpgrp() != os.getpid():  # not our own group: killpg would hit the bridge
        os.setpgid(0, 0)
    me = os.getpid()
    child = os.fork()
    if child == 0:
        try:
            for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
                signal.signal(sig, signal.SIG_DFL)
            _die_with_parent(signal.SIGKILL)
            if os.getppid() != me:
                os._exit(1)
            os.execvp(command[0], command)  # noqa: S606 (an argv, no shell)
        except OSError as exc:
            os.write(2, f"agent-shell: cannot run {command[0]}: {exc.strerror}\n".encode())
        os._exit(127)
    # The server holds the pipes now; ours would only keep them open after it exits.
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)
    os.dup2(null, 1)
    while True:
        try:
            _, status = os.waitpid(child, 0)
        except InterruptedError:
            continue
        break
    # Whatever the server left behind in its group goes with it.
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    os.killpg(0, signal.SIGTERM)
    return os.waitstatus_to_exitcode(status) & 0xFF


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
