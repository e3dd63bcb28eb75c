"""Git metadata a sandboxed remote run planted in the project, set aside there.

As after a local sandboxed run (:mod:`..sandbox.git_metadata`), and by the same
walk: its source goes with the request and runs on the host, on the host's
clock. Before the run :func:`git_before` asks for that clock and whether the
root has a ``.git`` of its own (the sandbox keeps it read-only); after it
:func:`set_aside_planted` renames what changed meanwhile and says so.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

from ..sandbox import git_metadata
from .connection import RemoteConnection
from .errors import RemoteFailed

__all__ = ["GitBefore", "git_before", "set_aside_planted"]

log = logging.getLogger(__name__)

_WALK = Path(git_metadata.__file__).read_text(encoding="utf-8")


@dataclass(frozen=True, slots=True)
class GitBefore:
    """The host's clock at the start of a run, and the root's own ``.git`` then."""

    since_ns: int
    protected: tuple[str, ...]


async def git_before(connection: RemoteConnection, root: str) -> GitBefore:
    answer = await connection.call_json({"op": "git_before", "root": root})
    protected = answer.get("protected")
    return GitBefore(
        int(str(answer["now_ns"])),
        tuple(str(p) for p in protected) if isinstance(protected, list) else (),
    )


async def set_aside_planted(
    connection: RemoteConnection, root: str, before: GitBefore
) -> list[str]:
    """Rename what the run planted (one note each); a failed check is a note too."""
    request = {
        "op": "set_aside",
        "root": root,
        "since_ns": before.since_ns,
        "protected": list(before.protected),
        "module": _WALK,
    }
    try:
        answer = await connection.call_json(request, timeout_s=60)
    except RemoteFailed as exc:
        log.warning("planted git metadata not checked on %s: %s", connection.target.label, exc)
        return [f"git metadata the command may have planted was not checked: {exc.message}"]
    notes = answer.get("notes")
    return [str(n) for n in notes] if isinstance(notes, list) else []
