"""Which project a ``*/trust`` request means: a local directory, or a remote one.

A local ``cwd`` is the project itself. A TRAMP ``cwd`` (``/ssh:dev@build:/srv/app``,
what Emacs sends from a remote session's buffer) means that remote project, whose
root for the bridge is its mirror: the file to trust is read again from the host
through the connection of a session open on it (so what is hashed is what is
there now, which is what the user was shown), copied into the mirror, and then
trusted there like a local file. Without such a session nothing is connected,
and the request is refused, saying so.
"""

from __future__ import annotations

import re
from pathlib import Path

from ..errors import InvalidParams
from ..runtime import Runtime
from .session import project_root

__all__ = ["local_trust_root", "trust_root"]

_TRAMP_RE = re.compile(r"\A/[A-Za-z0-9-]+:")


def local_trust_root(cwd: str, name: str) -> Path:
    """CWD's project, for a file NAME that a remote project's session does not use."""
    if _TRAMP_RE.match(cwd):
        raise InvalidParams(f"a remote project's {name} is not used, so it is not trusted")
    return project_root(cwd)


async def trust_root(rt: Runtime, cwd: str, name: str) -> Path:
    """The root whose file NAME (relative to it) the user trusts, for CWD."""
    if not _TRAMP_RE.match(cwd):
        return project_root(cwd)
    from ..remote.mirror import mirror_dir
    from ..remote.shipped import sync_shipped
    from ..remote.target import parse_tramp

    mirror = mirror_dir(parse_tramp(cwd))
    for live in rt.sessions.values():
        if live.remote is not None and live.root == mirror:
            await live.remote.ready()
            await sync_shipped(live.remote.files, mirror, [name])
            return mirror
    raise InvalidParams(
        f"no session of the remote project {cwd} is open here: start one, then trust its files"
    )
