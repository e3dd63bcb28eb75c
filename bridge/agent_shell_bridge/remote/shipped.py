"""The files a remote project ships that steer its session, copied into its mirror.

A local session reads ``.agent-shell/config.el``, ``allowlist.el`` and ``roles.el``
and the root's ``AGENTS.md`` (or ``CLAUDE.md``) from its root; a remote session's
root is its mirror, so when it connects (and again when the user trusts one of
them) the helper reads them there, in one request, and they are copied into the
mirror as they are on the host. From then on the local code reads them exactly as
a local project's: as data, never evaluated, and the settings applied only once
the user trusted their exact bytes (``project/trust.py``; the record's key is the
mirror, which is one remote project's alone).

What the host has is kept as it is: a settings file that is a symlink there
becomes a symlink here (to a copy of what it pointed at, inside the project), so
it is treated as a local one (never trusted; ``config.el`` and ``roles.el``
ignored); a link out of the project, a FIFO, a directory, or no file at all leave
no copy. An instruction file may be a link inside the project, as locally.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Sequence
from pathlib import Path

from ..project.files import TRUST_LIMIT
from ..project.instructions import PROJECT_NAMES
from ..project.trust import TRUSTED_KINDS
from .files import RemoteFiles, ShippedFile

__all__ = ["SETTINGS", "sync_shipped"]

# The settings a remote project's session reads (the other trusted kinds, .mcp.json
# and hooks.json, would run programs on this machine or around steps: not read).
SETTINGS = tuple(TRUSTED_KINDS[kind].path for kind in ("config", "allowlist", "roles"))
_LINKED = ".agent-shell/.remote-links"


async def sync_shipped(
    files: RemoteFiles, mirror: Path, names: Sequence[str] = (*SETTINGS, *PROJECT_NAMES)
) -> dict[str, ShippedFile]:
    """Copy NAMES from the host into MIRROR as they are there; return what was found."""
    found = await files.shipped(names, max_bytes=TRUST_LIMIT + 1)
    for name in names:
        shipped = found.get(name) or ShippedFile(path=name, state="absent")
        if name in SETTINGS:
            _place_setting(mirror, name, shipped)
        else:
            _place(mirror / name, shipped.content())
    return found


def _place_setting(mirror: Path, name: str, shipped: ShippedFile) -> None:
    copy = mirror / name
    side = mirror / _LINKED / Path(name).name
    content = shipped.content()
    if shipped.state == "link" and content is not None:
        _place(side, content)
        _remove(copy)
        copy.symlink_to(os.path.relpath(side, copy.parent))
        return
    _remove(side)
    _place(copy, content if shipped.state == "file" else None)


def _place(path: Path, content: bytes | None) -> None:
    """PATH holding CONTENT (written whole, then renamed over it); gone for None."""
    if content is None:
        _remove(path)
        return
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_bytes(content)
    os.replace(tmp, path)


def _remove(path: Path) -> None:
    with contextlib.suppress(FileNotFoundError):
        path.unlink()
