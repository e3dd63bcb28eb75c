"""Which working tree keeps a project's records when the root is a linked worktree.

A session started in a linked git worktree (``git worktree add``) edits that tree,
but its memory and its allowlist are the main project's: the one working tree of
the repository's common directory.  The files git writes are read here (the
worktree's ``.git`` file, the ``commondir`` it points to), so no git process runs
and no configuration of the repository is obeyed.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["main_worktree"]

_MAX_POINTER_BYTES = 4096


def _read_small(path: Path) -> str | None:
    """The text of a small regular file, or None (missing, a link, too large, binary)."""
    try:
        if path.is_symlink() or not path.is_file():
            return None
        data = path.read_bytes()[: _MAX_POINTER_BYTES + 1]
    except OSError:
        return None
    if len(data) > _MAX_POINTER_BYTES:
        return None
    try:
        return data.decode("utf-8").strip()
    except UnicodeDecodeError:
        return None


def main_worktree(root: Path) -> Path:
    """The main working tree of the repository whose linked worktree is ``root``.

    ``root`` itself when it is not a linked worktree: a plain checkout (``.git`` is
    a directory), no repository, a submodule (its common directory is not a
    ``.git`` directory of a working tree), or anything git did not write.
    """
    pointer = _read_small(root / ".git")
    if pointer is None or not pointer.startswith("gitdir:"):
        return root
    gitdir = Path(pointer.removeprefix("gitdir:").strip())
    if not gitdir.is_absolute():
        gitdir = root / gitdir
    common_text = _read_small(gitdir / "commondir")
    if common_text is None:
        return root
    common = Path(common_text)
    if not common.is_absolute():
        common = gitdir / common
    try:
        common = common.resolve(strict=True)
        # The worktree's admin directory must be one of the common dir's worktrees.
        if gitdir.resolve(strict=True).parent != common / "worktrees":
            return root
    except OSError:
        return root
    if common.name != ".git" or not common.is_dir():
        return root
    main = common.parent
    if _read_small(gitdir / "gitdir") is None:
        return root
    return main
