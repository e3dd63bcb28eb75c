"""A container target's state, asked of its own program (``docker``/``podman``).

``docker exec``/``podman exec`` report a container that is stopped or gone with
exit statuses a command could give too (podman: 125 for a missing container, 255
for a stopped one; docker: 1), so a failed request is never read from its status
alone: :func:`container_down` asks ``KIND container inspect`` whether the
container runs, and a request that failed while it does not is the container's
fault, told in one line ("container web is not running (exited)").

A container stopped under a running ``exec`` ends it with 137 (SIGKILL) before its
program may say it stopped; after that status the question is asked again for a
few seconds (:data:`SETTLE_S`) before the status is taken for the command's own.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Sequence

from .target import RemoteTarget

__all__ = ["KILLED", "SETTLE_S", "container_argv", "container_down"]

_INSPECT_TIMEOUT_S = 20.0
KILLED = 128 + 9
SETTLE_S = 3.0
_SETTLE_POLL_S = 0.1


def container_argv(target: RemoteTarget, remote: Sequence[str]) -> list[str]:
    """The local argv that runs the argv REMOTE in TARGET's container."""
    user = ["-u", target.user] if target.user else []
    return [target.kind, "exec", "-i", *user, target.host, *remote]


async def container_down(target: RemoteTarget, *, settle_s: float = 0.0) -> str | None:
    """Why TARGET's container cannot take requests now (one line), or None when it
    runs — still, after asking again for SETTLE_S seconds."""
    deadline = time.monotonic() + settle_s
    while True:
        why = await _ask(target)
        if why is not None or time.monotonic() >= deadline:
            return why
        await asyncio.sleep(_SETTLE_POLL_S)  # its program has not seen it stop yet


async def _ask(target: RemoteTarget) -> str | None:
    argv = [target.kind, "container", "inspect", "--format", "{{.State.Running}} {{.State.Status}}"]
    try:
        proc = await asyncio.create_subprocess_exec(
            *argv,
            target.host,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            start_new_session=True,
        )
    except OSError as exc:
        return f"cannot run {target.kind}: {exc.strerror or exc}"
    try:
        out, err = await asyncio.wait_for(proc.communicate(), _INSPECT_TIMEOUT_S)
    except TimeoutError:
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
        await proc.wait()
        return f"{target.kind} did not say whether container {target.host} runs (timed out)"
    return read_state(
        target, proc.returncode, out.decode(errors="replace"), err.decode(errors="replace")
    )


def read_state(target: RemoteTarget, code: int | None, out: str, err: str) -> str | None:
    """What ``KIND container inspect`` answered (CODE, OUT, ERR), as :func:`container_down`'s."""
    name, kind = target.host, target.kind
    if code == 0:
        running, _, status = out.strip().partition(" ")
        if running == "true":
            return None
        return f"container {name} is not running ({status or 'stopped'}, says {kind})"
    lines = [line.strip() for line in err.splitlines() if line.strip()]
    last = lines[-1] if lines else f"{kind} exited with {code}"
    if "no such" in last.lower():
        return f"container {name} does not exist ({kind} knows no such container)"
    return f"{kind} cannot reach container {name}: {last}"
