"""Reading a settings file a project ships, without being led elsewhere.

A cloned repository controls these files, so a read must not follow a symlink (to
``~/.ssh/id_rsa``, say), block on a FIFO, or swallow a file of any size.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

__all__ = ["read_project_file"]


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
