"""The user's secrets under ``$HOME``, expanded on disk for the sandbox's masks.

The names are the policy's own list (:mod:`.secrets`), so the two layers never
disagree about what a secret is: the policy asks before any tool or command reads
one, and the sandbox masks each with an empty file or directory.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from .secrets import BUILTIN, SECRET_GLOBS, SECRET_NAMES

__all__ = ["SECRET_GLOBS", "SECRET_NAMES", "secret_paths"]


def secret_paths(
    home: Path,
    *,
    extra: Sequence[str] = (),
    existing_only: bool = False,
) -> list[Path]:
    """Absolute paths of the secrets under ``home`` (plus the user's ``extra`` entries).

    Globs are expanded against the disk; with ``existing_only`` only paths present
    on disk (dangling symlinks' names, never) are returned, as the sandbox needs.
    Otherwise every literal entry is named, and a glob ``NAME*`` that matches nothing
    by its stem (``~/.authinfo``).
    """
    home = Path(os.path.abspath(home))
    secrets = BUILTIN.with_extra(extra)
    found = [p for p in secrets.existing(home) if not existing_only or p.exists()]
    if not existing_only:
        for entry in secrets.entries:
            stem = entry[:-1]
            if "*" not in entry:
                found.append(home / entry)
            elif entry.endswith("*") and "*" not in stem and not stem.endswith("/"):
                matched = any(str(p).startswith(str(home / stem)) for p in found)
                if not matched:
                    found.append(home / stem)
    unique: list[Path] = []
    seen: set[Path] = set()
    for path in found:
        if path not in seen:
            seen.add(path)
            unique.append(path)
    return unique
