"""Reading a settings file a project ships, without being led elsewhere.

A cloned repository controls these files, so a read must not follow a symlink (to
``~/.ssh/id_rsa``, say), block on a FIFO, or swallow a file of any size.
"""

from __future__ import annotations

import asyncio
import errno
import hashlib
import os
import stat
from pathlib import Path

from ..errors import InvalidParams

__all__ = ["TRUST_LIMIT", "read_project_file", "reviewed_bytes"]

# A settings file to review and trust is small; a bigger one is refused, not cut.
TRUST_LIMIT = 4_000_000


def read_project_file(path: Path, limit: int = 1_000_000) -> bytes | None:
    """At most ``limit`` bytes of ``path``; None if absent, a symlink or not a regular file."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        if exc.errno in (errno.ENOENT, errno.ELOOP, errno.ENOTDIR, errno.EMLINK):
            return None
        raise
    with os.fdopen(fd, "rb") as fh:
        if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
            return None
        return fh.read(limit)


async def reviewed_bytes(path: Path, sha256: str | None) -> tuple[bytes, str]:
    """The bytes of ``path`` as the user reviewed them, read once, and their hash.

    Refused (invalid params) when the file is missing, a symlink, too big, or not
    the bytes the user reviewed (``sha256``): what is trusted is what was shown.
    """
    content = await asyncio.to_thread(read_project_file, path, TRUST_LIMIT + 1)
    if content is None:
        raise InvalidParams(f"{path} does not exist or is a symlink")
    if len(content) > TRUST_LIMIT:
        raise InvalidParams(f"{path} is larger than {TRUST_LIMIT} bytes")
    digest = hashlib.sha256(content).hexdigest()
    if sha256 is not None and sha256 != digest:
        raise InvalidParams(
            f"{path} changed after you reviewed it; review it again before trusting it"
        )
    return content, digest
