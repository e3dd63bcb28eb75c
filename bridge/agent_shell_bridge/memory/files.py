"""Crash-safe file writes for the memory layer.

A half-written experience file or roots list would be worse than none, so every write
goes to a temporary file in the same directory, is fsync'ed, and is then moved into
place in one step; the directory is fsync'ed too so the new name survives a crash.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

__all__ = ["atomic_create_bytes", "atomic_write_bytes"]


def _fsync_dir(directory: Path) -> None:
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass  # some filesystems refuse fsync on directories; the data is synced
    finally:
        os.close(fd)


def _write_temp(directory: Path, data: bytes) -> Path:
    import tempfile  # only writers pay for it; a one-shot search never writes

    fd, name = tempfile.mkstemp(prefix=".tmp-", suffix=".part", dir=directory)
    try:
        os.fchmod(fd, 0o644)  # mkstemp's 0600 would surprise people sharing the files
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(name)
        raise
    return Path(name)


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Replace ``path`` with ``data`` atomically (readers see old or new, never half)."""
    tmp = _write_temp(path.parent, data)
    try:
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    _fsync_dir(path.parent)


def atomic_create_bytes(path: Path, data: bytes) -> bool:
    """Create ``path`` with ``data`` atomically unless it already exists.

    Returns False when the name is taken, so a caller can try the next one without
    a check-then-write race.  A hard link is the no-clobber move; filesystems without
    hard links fall back to an exclusive-create check before the rename.
    """
    tmp = _write_temp(path.parent, data)
    try:
        try:
            os.link(tmp, path)
        except FileExistsError:
            return False
        except OSError:
            try:
                fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
            except FileExistsError:
                return False
            os.close(fd)
            os.replace(tmp, path)
    finally:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
    _fsync_dir(path.parent)
    return True
