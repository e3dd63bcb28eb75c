"""Turning the sandbox off for one project, only with the user's trust.

A project's ``.agent-shell/config.el`` may say ``(setq agent-shell-sandbox nil)``.
That file arrives with the repository, so the setting takes effect only after the
user has trusted the file's exact bytes (``M-x agent-shell-trust-config``); any
change needs trust again. The trust record lives with the user's data (next to the
allowlist's), never in the project, and the sandbox itself keeps ``config.el``
read-only, so sandboxed code cannot write its own way out either.

The file is data: read with the same reader as the allowlist, nothing evaluated.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from ..project.files import read_project_file
from ..project.sexp import SexpError, Symbol, read_all
from ..project.trust import TrustRecord
from . import SandboxStatus

__all__ = [
    "ProjectSandbox",
    "config_path",
    "project_sandbox",
    "wants_sandbox_off",
]

_VARIABLE = "agent-shell-sandbox"
_OFF = (Symbol("nil"), [Symbol("quote"), Symbol("off")], [Symbol("quote"), Symbol("nil")])

Setting = Literal["default", "off", "untrusted"]


def config_path(root: Path) -> Path:
    return root / ".agent-shell" / "config.el"


def read_config(root: Path) -> bytes | None:
    """The bytes of ``config.el``; ``None`` if absent, a symlink or not a regular file."""
    return read_project_file(config_path(root))


def wants_sandbox_off(content: bytes) -> bool:
    """Whether the config text sets ``agent-shell-sandbox`` to nil (or ``'off``)."""
    try:
        forms = read_all(content.decode("utf-8"))
    except (SexpError, UnicodeDecodeError):
        return False  # Emacs warns about a broken file; it turns nothing off
    off = False
    for form in forms:
        if not (isinstance(form, list) and form and form[0] == Symbol("setq")):
            continue
        pairs = form[1:]
        for var, value in zip(pairs[::2], pairs[1::2], strict=False):
            if var == Symbol(_VARIABLE):
                off = value in _OFF or value == []
    return off


@dataclass(frozen=True, slots=True)
class ProjectSandbox:
    """The session's sandbox after the project's setting, and what that setting was."""

    status: SandboxStatus
    setting: Setting
    sha256: str | None = None


def project_sandbox(root: Path, detected: SandboxStatus, trust: TrustRecord) -> ProjectSandbox:
    """Apply ``config.el``'s ``agent-shell-sandbox`` to the sandbox found at start."""
    try:
        content = read_config(root)
    except OSError:
        content = None
    if content is None or not wants_sandbox_off(content):
        return ProjectSandbox(detected, "default")
    digest = hashlib.sha256(content).hexdigest()
    if not trust.is_trusted_content(root, content):
        return ProjectSandbox(detected, "untrusted", digest)
    why = "turned off for this project by its trusted .agent-shell/config.el"
    return ProjectSandbox(SandboxStatus(False, why, remote=detected.remote), "off", digest)
