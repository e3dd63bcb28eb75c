"""The user's secrets under ``$HOME``: never read without asking, masked in the sandbox.

One list for the policy (path tools and commands) and the sandbox. Paths are
compared by components after resolving symlinks, so ``~/./.ssh``, ``~/x/../.ssh``
and a link pointing into ``~/.ssh`` all count; ``~/.authinfo*`` is a glob.
"""

from __future__ import annotations

import fnmatch
import os
from collections.abc import Sequence
from pathlib import Path

__all__ = [
    "SECRET_GLOBS",
    "SECRET_NAMES",
    "is_any_secret",
    "is_secret",
    "is_secret_resolved",
    "real_secret_roots",
    "secret_paths",
]

# Relative to $HOME: whole directories or single files.
SECRET_NAMES: tuple[str, ...] = (
    ".ssh",
    ".gnupg",
    ".aws",
    ".netrc",
    ".pypirc",
    ".docker/config.json",
    ".config/gh",
    ".kube",
    ".password-store",
    ".local/share/keyrings",
    ".gnome2/keyrings",
    ".config/gcloud",
    ".azure",
    ".git-credentials",
    ".npmrc",
    ".cargo/credentials",
    ".cargo/credentials.toml",
    ".config/hub",
    ".vault-token",
    ".authinfo",
    ".authinfo.gpg",
    ".emacs.d/authinfo",
    ".emacs.d/authinfo.gpg",
    ".local/share/kwalletd",
)
# Names directly under $HOME matched as globs (auth-source files).
SECRET_GLOBS: tuple[str, ...] = (".authinfo*", ".netrc*")
_SECRET_PARTS = tuple(tuple(name.casefold().split("/")) for name in SECRET_NAMES)


def secret_paths(home: Path) -> tuple[Path, ...]:
    """The secret files and directories under ``home`` (they need not exist)."""
    return tuple(home / name for name in SECRET_NAMES)


def real_secret_roots(home: Path) -> tuple[Path, ...]:
    """Where secrets really live when they are symlinks: a ``~/.ssh`` that points to
    ``~/dotfiles/ssh`` makes that folder a secret too, under any name."""
    found: list[Path] = []
    base = str(home)
    for name in SECRET_NAMES:
        path = os.path.join(base, name)  # str(home / name), without building a Path
        if os.path.lexists(path):
            real = _real(path)
            if real != Path(os.path.normpath(os.path.abspath(path))):
                found.append(real)
    return tuple(found)


def _under_any(path: Path, roots: tuple[Path, ...]) -> bool:
    return any(path == root or path.is_relative_to(root) for root in roots)


def _real(path: Path | str) -> Path:
    return Path(os.path.realpath(os.path.abspath(path)))


def is_secret_resolved(path: Path | str, home: Path) -> bool:
    """:func:`is_secret` for a ``path`` and ``home`` that are absolute and normalised
    already; looks at no file (fast enough for every operand of every command)."""
    text, base = str(path), str(home).rstrip("/") + "/"
    if not text.startswith(base):
        return False
    # Case-folded: on a case-insensitive file system ~/.SSH is ~/.ssh.
    rel = tuple(text[len(base) :].casefold().split("/"))
    if not rel[0]:
        return False
    if any(rel[: len(parts)] == parts for parts in _SECRET_PARTS):
        return True
    return any(fnmatch.fnmatchcase(rel[0], g) for g in SECRET_GLOBS)


def is_secret(path: Path, home: Path) -> bool:
    """Whether ``path`` is, or lies under, one of the secrets of ``home``.

    Both the path as written (``..`` folded) and where it really leads are checked.
    """
    return is_any_secret((path,), home)


def is_any_secret(paths: Sequence[Path], home: Path) -> bool:
    """Whether any of ``paths`` is a secret of ``home`` (:func:`is_secret` of each),
    looking at ``home`` and where its secrets really live once for all of them."""
    homes = {Path(os.path.normpath(os.path.abspath(home))), _real(home)}
    roots: tuple[Path, ...] | None = None
    for path in paths:
        real = _real(path)
        candidates = {Path(os.path.normpath(os.path.abspath(path))), real}
        if any(is_secret_resolved(c, h) for c in candidates for h in homes):
            return True
        if roots is None:
            roots = real_secret_roots(home)
        if _under_any(real, roots):
            return True
    return False
