"""Git metadata a sandboxed command planted, found and set aside after it ends.

Git runs code from a repository's configuration and hooks (``core.fsmonitor``,
``core.hooksPath``, filters, aliases), and it finds a repository by walking up
from where it runs — for the user's shell, for Emacs's vc-git when a file is
visited, for magit. The root's own ``.git`` is read-only in the sandbox, but the
project is writable, so a sandboxed command could leave behind:

- a new ``.git`` directory (with the ``config`` and hooks that make it dangerous),
  file (``gitdir:`` pointer) or link in any subdirectory;
- a bare-repository layout (``HEAD``, ``objects``, ``refs``, with a ``config``
  that sets ``core.worktree``) in any directory;
- a changed submodule pointer (the ``.git`` file of a submodule's work tree), or a
  changed ``config``, hook or ``commondir`` inside a nested repository that was
  there before;
- a ``.git`` of any kind at a root that had none.

After every sandboxed command the writable roots are walked once and whatever of
that kind changed during the command (its status-change time, which no process
can set back, is after the command started) is renamed out of git's way and
reported. Repositories that were there before and were not touched stay as they are.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "ASIDE_SUFFIX",
    "PlantedGit",
    "find_planted_git",
    "protected_git",
    "set_aside_after_run",
    "set_aside_planted_git",
]

ASIDE_SUFFIX = ".made-by-a-sandboxed-command"
# Inside a .git directory: what git reads as configuration or runs as code.
_CODE_IN_GITDIR = ("config", "config.worktree", "commondir", "gitdir", "hooks")
# A directory is a bare repository to git when it holds all three.
_BARE_LAYOUT = ("HEAD", "objects", "refs")
# The clock behind file status times may lag the one behind time.time_ns() by a tick.
CLOCK_MARGIN_NS = 50_000_000


@dataclass(frozen=True, slots=True)
class PlantedGit:
    """One piece of git metadata the command left: what it is and where."""

    path: Path
    kind: str  # "repository" (a .git directory, file or link) or "bare repository"


def find_planted_git(
    roots: Sequence[Path], *, since_ns: int, skip: Sequence[Path] = ()
) -> list[PlantedGit]:
    """The git metadata under ``roots`` changed at or after ``since_ns`` (see module doc).

    ``skip`` holds paths the sandbox kept read-only (each root's own ``.git``): their
    contents could not change, only the entry that names them is looked at.
    """
    since = since_ns - CLOCK_MARGIN_NS
    skipped = {os.fspath(p) for p in skip}
    found: list[PlantedGit] = []
    for root in roots:
        made = root / ".git"
        if os.fspath(made) not in skipped and os.path.lexists(made):
            # The root had none (else the sandbox kept it read-only): all of it is new.
            found.append(PlantedGit(made, "repository"))
            skipped.add(os.fspath(made))
        found += _walk(os.fspath(root), since, skipped)
    return found


def _walk(root: str, since: int, skipped: set[str]) -> Iterator[PlantedGit]:
    stack = [root]
    while stack:
        here = stack.pop()
        try:
            with os.scandir(here) as it:
                entries = list(it)
        except OSError:
            continue
        names = {e.name for e in entries}
        if all(n in names for n in _BARE_LAYOUT) and _changed_bare(here, since):
            yield PlantedGit(Path(here), "bare repository")
        for entry in entries:
            if entry.name.casefold() == ".git":
                yield from _dotgit(entry, since, entry.path in skipped)
            elif entry.is_dir(follow_symlinks=False):
                stack.append(entry.path)


def _ctime(path: str) -> int | None:
    try:
        return os.lstat(path).st_ctime_ns
    except OSError:
        return None


def _changed_path(path: str, since: int) -> bool:
    ctime = _ctime(path)
    return ctime is not None and ctime >= since


def _changed_bare(here: str, since: int) -> bool:
    """A bare layout whose ``HEAD``, ``config`` or hooks changed: made, or armed."""
    if any(_changed_path(os.path.join(here, n), since) for n in ("HEAD", "config")):
        return True
    return next(_changed_entries(os.path.join(here, "hooks"), since), None) is not None


def _dotgit(entry: os.DirEntry[str], since: int, read_only: bool) -> Iterator[PlantedGit]:
    """A ``.git`` file or link is looked at whole; a directory by what runs from it.

    A directory's own status time changes with every commit made in it (by the
    user, meanwhile), so it says nothing; its configuration and hooks do, and any
    of them changed sets the whole ``.git`` aside. The root's own ``.git`` is a
    read-only mount in the sandbox: only a link there could have been replaced.
    """
    if read_only and not entry.is_symlink():
        return
    if entry.is_dir(follow_symlinks=False):
        changed = next(_changed_inside(entry.path, since), None) is not None
    else:
        changed = _changed_path(entry.path, since)  # a pointer or link, made or re-aimed
    if changed:
        yield PlantedGit(Path(entry.path), "repository")


def _changed_inside(gitdir: str, since: int) -> Iterator[str]:
    """Changed configuration or code inside a repository directory, its worktrees'
    and its submodules' git directories included."""
    for name in _CODE_IN_GITDIR:
        path = os.path.join(gitdir, name)
        try:
            info = os.lstat(path)
        except OSError:
            continue
        if info.st_ctime_ns >= since:
            yield path
        elif stat.S_ISDIR(info.st_mode):
            yield from _changed_entries(path, since)
    for nest in ("worktrees", "modules"):
        base = os.path.join(gitdir, nest)
        try:
            with os.scandir(base) as it:
                subdirs = [e.path for e in it if e.is_dir(follow_symlinks=False)]
        except OSError:
            continue
        for sub in subdirs:
            yield from _changed_inside(sub, since)


def _changed_entries(directory: str, since: int) -> Iterator[str]:
    try:
        with os.scandir(directory) as it:
            entries = list(it)
    except OSError:
        return
    for entry in entries:
        if _changed_path(entry.path, since):
            yield entry.path


def protected_git(roots: Sequence[Path]) -> list[Path]:
    """Each root's own ``.git`` as it is now: the sandbox binds it read-only."""
    return [root / ".git" for root in roots if os.path.lexists(root / ".git")]


def set_aside_after_run(
    roots: Sequence[Path], *, since_ns: int, protected: Sequence[Path], display: Path
) -> list[str]:
    """Find and set aside what a sandboxed command that started at ``since_ns``
    planted in ``roots``; one note per rename."""
    return set_aside_planted_git(
        find_planted_git(roots, since_ns=since_ns, skip=protected), display
    )


def set_aside_planted_git(found: Sequence[PlantedGit], display: Path) -> list[str]:
    """Rename each finding out of git's way; say what was done, relative to ``display``.

    A bare layout loses its ``HEAD`` and ``config`` (git no longer sees a repository
    there, and the rest of the directory is left alone); anything else is renamed
    whole, beside where it was.
    """
    notes: list[str] = []
    for item in found:
        targets = (
            [item.path / "HEAD", item.path / "config"]
            if item.kind == "bare repository"
            else [item.path]
        )
        for path in targets:
            if os.path.lexists(path):
                notes.append(_rename(path, item.kind, display))
    return notes


def _rename(path: Path, kind: str, display: Path) -> str:
    n = 0
    while os.path.lexists(target := path.with_name(f"{path.name}{ASIDE_SUFFIX}-{n}")):
        n += 1
    shown = _relative(path, display)
    try:
        os.rename(path, target)
    except OSError as exc:
        return f"{shown} ({kind}) was planted by the command and could not be renamed: {exc}"
    return f"{shown} ({kind}) was planted by the command; renamed to {target.name}"


def _relative(path: Path, base: Path) -> str:
    try:
        return path.relative_to(base).as_posix()
    except ValueError:
        return str(path)
