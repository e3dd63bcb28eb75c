"""The user's secrets under ``$HOME``, expanded on disk for the sandbox's masks.

The names are the policy's own list (:mod:`.secrets`), so the two layers never
disagree about what a secret is: the policy asks before any tool or command reads
one, and the sandbox masks each with an empty file or directory.
"""

from __future__ import annotations

import glob
import os
from collections.abc import Sequence
from pathlib import Path

from .secrets import SECRET_GLOBS, SECRET_NAMES

__all__ = ["SECRET_GLOBS", "SECRET_NAMES", "secret_paths"]


def secret_paths(
    home: Path,
    *,
    extra: Sequence[str] = (),
    existing_only: bool = False,
) -> list[Path]:
    """Absolute paths of the secrets under ``home`` (plus ``extra`` names, same form).

    Globs are expanded against the disk; with ``existing_only`` only paths present
    on disk (or dangling symlinks' names, never) are returned, as the sandbox needs.
    """
    home = Path(os.path.abspath(home))
    found: list[Path] = []
    names = [*SECRET_NAMES, *extra]
    for name in names:
        if "*" in name:
            continue
        path = home / name
        if not existing_only or path.exists():
            found.append(path)
    for pattern in [*SECRET_GLOBS, *(n for n in extra if "*" in n)]:
        matches = sorted(glob.glob(glob.escape(str(home)) + os.sep + pattern))
        if not matches and not existing_only:
            # The pattern's stem (~/.authinfo) still names a secret for the policy.
            found.append(home / pattern.rstrip("*"))
        found.extend(Path(m) for m in matches if not existing_only or Path(m).exists())
    unique: list[Path] = []
    for path in found:
        if path not in unique:
            unique.append(path)
    return unique
