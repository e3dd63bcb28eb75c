"""Which repository git would use: the project's own, or another found on the way.

git looks for its repository from the directory it starts in upwards: the first
``.git`` directory, ``.git`` file (a ``gitdir:`` pointer) or bare-repository layout
it meets is the one whose configuration, hooks and ``core.fsmonitor`` it runs. Only
the project root's own ``.git`` is kept from the agent (read-only in the sandbox,
refused to every writing command); one planted further down, a bare layout, or a
start outside the project means code the agent may have written runs. The file
system is looked at when the command is judged, like every other path check of the
policy.
"""

from __future__ import annotations

import os

__all__ = ["foreign_repository"]


def _bare_layout(directory: str) -> bool:
    """Whether ``directory`` looks like a bare repository to git's discovery."""
    return (
        os.path.isfile(os.path.join(directory, "HEAD"))
        and os.path.isdir(os.path.join(directory, "objects"))
        and os.path.isdir(os.path.join(directory, "refs"))
    )


def _under(path: str, root: str) -> bool:
    return path == root or path.startswith(root if root.endswith("/") else root + "/")


def foreign_repository(start: str, root: str) -> str | None:
    """Why git started in ``start`` would not use ``root``'s own ``.git``, or ``None``.

    Both are physical absolute paths (symlinks resolved). A start that does not exist
    yet is judged by the part of it that does: git fails there, or finds what lies
    above it.
    """
    if not _under(start, root):
        return f"git would start in {start}, outside the project, and use any repository there"
    own = os.path.join(root, ".git")
    here = start
    while here != root:
        if here == own:
            return None  # inside the project's own .git directory: that repository
        if os.path.lexists(os.path.join(here, ".git")):
            return f"git would use the repository at {here}, not the project's own .git"
        if _bare_layout(here):
            return f"git would use the bare repository at {here}, not the project's own .git"
        parent = os.path.dirname(here)
        if parent == here:
            break
        here = parent
    if not os.path.lexists(os.path.join(root, ".git")) and _bare_layout(root):
        return "the project root is laid out as a bare repository, not a work tree with its .git"
    # Without a .git of its own, git looks above the project: nothing the agent can
    # write (the sandbox and the write checks keep it inside the allowed roots).
    return None
