"""Where a remote project's records live: a local mirror keyed by host and path.

The action log, the sessions, the snapshots, the outputs and the memory of a
remote project stay on this machine, under
``DATA/agent-shell/remote/HOST/NAME-HASH/`` (``DATA`` is ``$XDG_DATA_HOME`` or
``~/.local/share``; ``NAME`` the project directory's name, ``HASH`` that of the
method, user, host, port and path). The mirror's ``.agent-shell/`` has the layout
of a local project's, so everything that keeps records works on it unchanged; a
dropped connection loses nothing written there. ``project.txt`` names the remote
project the mirror is of.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path

from .target import RemoteTarget

__all__ = ["mirror_dir", "open_mirror"]


def _data_home(env: Mapping[str, str]) -> Path:
    xdg = env.get("XDG_DATA_HOME")
    return Path(xdg) if xdg else Path(env.get("HOME", str(Path.home()))) / ".local" / "share"


def mirror_dir(target: RemoteTarget, env: Mapping[str, str] | None = None) -> Path:
    """The local directory of TARGET's records (not created)."""
    host = re.sub(r"[^A-Za-z0-9._@#-]", "_", target.label)
    return (
        _data_home(env if env is not None else os.environ)
        / "agent-shell"
        / "remote"
        / host
        / target.key()
    )


def open_mirror(target: RemoteTarget, env: Mapping[str, str] | None = None) -> Path:
    """The mirror of TARGET, made (0700) with its ``project.txt``."""
    path = mirror_dir(target, env)
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    (path / ".agent-shell").mkdir(exist_ok=True, mode=0o700)
    note = path / "project.txt"
    text = target.tramp_name(target.path) + "\n"
    if not note.exists() or note.read_text(encoding="utf-8") != text:
        note.write_text(text, encoding="utf-8")
    return path
