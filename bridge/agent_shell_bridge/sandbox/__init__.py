"""The OS sandbox (bubblewrap) for commands that run without the user's yes.

The policy decides what must ask; the sandbox limits what runs without asking, so
a command the parser misjudged, or project code run by an allowed test command,
still cannot do harm: it sees an allowlisted filesystem (:mod:`.layout`), keeps no
capability, reaches none of the user's sockets, keyrings or terminals (:mod:`.spec`,
:mod:`.seccomp`, :mod:`.landlock`), and the git metadata it plants is set aside
after it ends (:mod:`.git_metadata`). :func:`detect_sandbox` finds the parts once.
"""

from __future__ import annotations

from .git_metadata import (
    PlantedGit,
    find_planted_git,
    protected_git,
    set_aside_after_run,
    set_aside_planted_git,
)
from .kit import SandboxKit
from .layout import HOME_TOOLCHAINS
from .spec import IPC_VARIABLES, SandboxLaunch, SandboxSpec, sandbox_environment
from .special_files import SpecialFileIndex
from .status import SANDBOX_ENV, SandboxStatus, detect_sandbox, sandbox_forced_off

__all__ = [
    "HOME_TOOLCHAINS",
    "IPC_VARIABLES",
    "SANDBOX_ENV",
    "PlantedGit",
    "SandboxKit",
    "SandboxLaunch",
    "SandboxSpec",
    "SandboxStatus",
    "SpecialFileIndex",
    "detect_sandbox",
    "find_planted_git",
    "protected_git",
    "sandbox_environment",
    "sandbox_forced_off",
    "set_aside_after_run",
    "set_aside_planted_git",
]
