"""Sockets and FIFOs where the sandbox shows files, found before each command.

A bind mount, read-only or not, does not stop ``connect()`` on a Unix socket or a
write into a FIFO: a development database with its socket in the project, sbt's
server socket in ``~/.sbt``, a watcher's FIFO — each is a door to a process of the
user's outside the sandbox. So every socket and FIFO that exists when a command
starts, under the project's roots and the shown toolchains, is covered by
``/dev/null`` inside; those the command makes itself stay its own.

Toolchain trees hold a few hundred thousand files, so the walk is kept between
commands: a directory whose status-change time did not move has the same entries
as last time (an entry made or removed changes it, and no process can set it
back), and only changed directories are listed again. A full walk then costs one
``stat`` per directory.
"""

from __future__ import annotations

import os
import stat
import threading
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["SpecialFileIndex"]


@dataclass(frozen=True, slots=True)
class _Listing:
    ctime_ns: int
    specials: tuple[str, ...]
    subdirs: tuple[str, ...]


@dataclass(slots=True)
class SpecialFileIndex:
    """What each directory under some trees held when last looked at (see module doc).

    Shared by a session's commands; safe to use from several threads.
    """

    _listings: dict[str, _Listing] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def find(self, trees: Iterable[Path]) -> list[str]:
        """Every socket and FIFO under ``trees`` now, links not followed."""
        found: list[str] = []
        seen: set[str] = set()
        with self._lock:
            for tree in trees:
                found += self._walk(os.fspath(tree), seen)
        return found

    def _walk(self, top: str, seen: set[str]) -> list[str]:
        found: list[str] = []
        stack = [top]
        while stack:
            here = stack.pop()
            if here in seen:
                continue
            seen.add(here)
            listing = self._listing(here)
            if listing is None:
                continue
            found += listing.specials
            stack += listing.subdirs
        return found

    def _listing(self, directory: str) -> _Listing | None:
        try:
            ctime = os.lstat(directory).st_ctime_ns
        except OSError:
            self._listings.pop(directory, None)
            return None
        known = self._listings.get(directory)
        if known is not None and known.ctime_ns == ctime:
            return known
        specials: list[str] = []
        subdirs: list[str] = []
        try:
            with os.scandir(directory) as it:
                for entry in it:
                    _sort(entry, specials, subdirs)
        except OSError:
            return None
        listing = _Listing(ctime, tuple(specials), tuple(subdirs))
        self._listings[directory] = listing
        return listing


def _sort(entry: os.DirEntry[str], specials: list[str], subdirs: list[str]) -> None:
    try:
        if entry.is_dir(follow_symlinks=False):
            subdirs.append(entry.path)
        elif not entry.is_file(follow_symlinks=False) and not entry.is_symlink():
            mode = entry.stat(follow_symlinks=False).st_mode
            if stat.S_ISSOCK(mode) or stat.S_ISFIFO(mode):
                specials.append(entry.path)
    except OSError:
        return
