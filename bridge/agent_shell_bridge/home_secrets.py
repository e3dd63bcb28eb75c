"""The user's secrets under ``$HOME``: one list for the sandbox and the policy.

The sandbox masks these paths with empty files and directories; the policy asks
before any tool or command reads them. Both import :func:`secret_paths`, so the
two layers never disagree about what a secret is.
"""

from __future__ import annotations

import glob
import os
from collections.abc import Sequence
from pathlib import Path

__all__ = ["SECRET_GLOBS", "SECRET_NAMES", "secret_paths"]

# Relative to $HOME. Directories and files alike; a trailing "*" is a glob.
SECRET_NAMES: tuple[str, ...] = (
    ".ssh",
    ".gnupg",
    ".aws",
    ".azure",
    ".netrc",
    ".pypirc",
    ".npmrc",
    ".git-credentials",
    ".docker/config.json",
    ".config/gh",
    ".config/hub",
    ".config/gcloud",
    ".kube",
    ".password-store",
    ".cargo/credentials",
    ".cargo/credentials.toml",
    ".local/share/keyrings",
    ".gnome2/keyrings",
    ".local/share/kwalletd",
)

# auth-source files: ~/.authinfo, ~/.authinfo.gpg, ~/.authinfo.enc …
SECRET_GLOBS: tuple[str, ...] = (".authinfo*",)


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
