"""Looking at a project's experience directory: cheaply, or every file.

A turn must not pay for the memory's size, so the index tells changes apart in
three steps of rising cost (see :meth:`~.index.MemoryIndex.refresh_root`):

1. :func:`dir_stamp`, one ``stat`` of the directory: a file added, removed or
   renamed over another (how most editors save) changes the directory's mtime.
2. :func:`list_names`: the names and inode numbers of the directory, read from the
   directory itself with no ``stat`` per file; a file replaced by a rename has a new
   inode under the same name.
3. :func:`list_files`: every file ``stat``-ed (mtime, size), which also finds a file
   rewritten in place; the periodic full scan.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import NamedTuple

__all__ = ["FileStat", "Listing", "dir_stamp", "list_files", "list_names", "stat_file"]


class FileStat(NamedTuple):
    """What the index compares for one file."""

    inode: int
    mtime_ns: int
    size: int


class Listing(NamedTuple):
    """A directory as seen at ``listed_ns``; ``stamp`` is its mtime before the listing."""

    stamp: int
    listed_ns: int
    files: dict[str, FileStat]
    skipped: int


def dir_stamp(directory: Path) -> int:
    """The directory's mtime in ns; 0 when it is missing or not a real directory.

    A symlinked memory directory counts as missing: it could pull any files into prompts.
    """
    try:
        st = os.lstat(directory)
    except OSError:
        return 0
    import stat

    return st.st_mtime_ns if stat.S_ISDIR(st.st_mode) else 0


def _entries(directory: Path) -> list[os.DirEntry[str]]:
    from ..errors import MemoryError_

    try:
        with os.scandir(directory) as it:
            return [e for e in it if not e.name.startswith(".") and e.name.endswith(".md")]
    except FileNotFoundError:
        return []
    except OSError as exc:
        raise MemoryError_(f"cannot list {directory}: {exc}") from exc


def list_names(directory: Path) -> tuple[int, int, dict[str, int]]:
    """``(stamp, listed_ns, {path: inode})`` of the experience files, no ``stat`` per file.

    Entries of unknown type are kept (the index ``stat``-s them when it reads them).
    """
    listed_ns = time.time_ns()
    stamp = dir_stamp(directory)
    if not stamp:
        return stamp, listed_ns, {}
    out: dict[str, int] = {}
    prefix = str(directory) + os.sep
    for entry in _entries(directory):
        try:
            if entry.is_symlink() or entry.is_dir():
                continue
            out[prefix + entry.name] = entry.inode()
        except OSError:
            continue
    return stamp, listed_ns, out


def stat_file(path: str) -> FileStat | None:
    """The file's stat when it is a regular file (not a symlink); None otherwise."""
    import stat

    try:
        st = os.lstat(path)
    except OSError:
        return None
    if not stat.S_ISREG(st.st_mode):
        return None
    return FileStat(st.st_ino, st.st_mtime_ns, st.st_size)


def list_files(directory: Path) -> Listing:
    """Every experience file of ``directory`` with its stat (the full scan)."""
    listed_ns = time.time_ns()
    stamp = dir_stamp(directory)
    files: dict[str, FileStat] = {}
    skipped = 0
    if not stamp:
        return Listing(stamp, listed_ns, files, skipped)
    prefix = str(directory) + os.sep
    for entry in _entries(directory):
        try:
            if not entry.is_file(follow_symlinks=False):
                continue  # symlinks could pull any file into prompts
            st = entry.stat(follow_symlinks=False)
        except OSError:
            skipped += 1
            continue
        files[prefix + entry.name] = FileStat(st.st_ino, st.st_mtime_ns, st.st_size)
    return Listing(stamp, listed_ns, files, skipped)
