"""Whether commands can be sandboxed here, with which walls, found once at start.

:func:`detect_sandbox` looks at what this machine offers — bubblewrap and whether
it can ``--disable-userns``, libseccomp for the system call filter, the kernel's
Landlock ABI for socket and signal scopes — and then actually starts a trivial
sandbox with all of it, so a missing binary, a non-Linux system or disabled user
namespaces all come out as "no sandbox" with the reason. ``AGENT_SHELL_SANDBOX=off``
forces that outcome (tests of the fallback, users who cannot have one).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from . import landlock
from .kit import SandboxKit
from .seccomp import SeccompError, build_filter, libseccomp_version
from .spec import SandboxSpec

__all__ = ["SANDBOX_ENV", "SandboxStatus", "detect_sandbox", "sandbox_forced_off"]

SANDBOX_ENV = "AGENT_SHELL_SANDBOX"
_OFF_WORDS = frozenset({"off", "0", "no", "false", "none", "disabled"})
_PROBE_TIMEOUT_S = 15.0


@dataclass(frozen=True, slots=True)
class SandboxStatus:
    """Whether commands can be sandboxed here, and how (or why not)."""

    available: bool
    detail: str
    kit: SandboxKit | None = None
    # The sandbox of a remote project's host (remote/probe.py), not this machine's.
    remote: bool = False

    @property
    def bwrap(self) -> str | None:
        return self.kit.bwrap if self.kit is not None else None

    @property
    def label(self) -> str:
        """What the header line and the log say: ``bubblewrap`` or ``no sandbox``
        (with `` (remote)`` after it for a remote project's host)."""
        label = "bubblewrap" if self.available else "no sandbox"
        return f"{label} (remote)" if self.remote else label

    def to_json(self) -> dict[str, object]:
        return {
            "available": self.available,
            "kind": "bubblewrap" if self.available else "none",
            "label": self.label,
            "detail": self.detail,
        }

    @classmethod
    def off(cls, why: str) -> SandboxStatus:
        return cls(False, why)


def sandbox_forced_off(env: Mapping[str, str]) -> bool:
    """Whether ``AGENT_SHELL_SANDBOX`` asks for no sandbox."""
    return env.get(SANDBOX_ENV, "").strip().lower() in _OFF_WORDS


def detect_sandbox(env: Mapping[str, str] | None = None) -> SandboxStatus:
    """Find the parts (see the module doc) and run ``true`` inside them."""
    env = os.environ if env is None else env
    if sandbox_forced_off(env):
        return SandboxStatus.off(f"turned off by {SANDBOX_ENV}={env.get(SANDBOX_ENV)}")
    if not sys.platform.startswith("linux"):
        return SandboxStatus.off(f"bubblewrap needs Linux; this is {sys.platform}")
    bwrap = shutil.which("bwrap", path=env.get("PATH"))
    if bwrap is None:
        return SandboxStatus.off("bubblewrap (bwrap) is not installed")
    kit = _kit(bwrap)
    spec = SandboxSpec(kit=kit, roots=(), home=None)
    try:
        with spec.launch(["true"], cwd=Path("/"), env={"PATH": os.defpath}) as launch:
            done = subprocess.run(
                launch.argv,
                env=launch.env,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                timeout=_PROBE_TIMEOUT_S,
                check=False,
                pass_fds=launch.pass_fds,
                preexec_fn=launch.preexec,
            )
    except (OSError, subprocess.SubprocessError) as exc:
        return SandboxStatus.off(f"bubblewrap could not start: {exc}")
    if done.returncode != 0:
        why = done.stderr.decode("utf-8", "replace").strip().splitlines()
        reason = why[-1] if why else f"exit status {done.returncode}"
        return SandboxStatus.off(f"bubblewrap cannot run here (user namespaces?): {reason}")
    return SandboxStatus(True, kit.describe(), kit)


def _kit(bwrap: str) -> SandboxKit:
    version, helptext = _ask(bwrap, "--version"), _ask(bwrap, "--help")
    try:
        seccomp: bytes | None = build_filter(deny_unix=False)
        no_unix: bytes | None = build_filter(deny_unix=True)
        note = f"libseccomp {libseccomp_version()}".strip()
    except SeccompError as exc:
        seccomp = no_unix = None
        note = str(exc)
    return SandboxKit(
        bwrap=bwrap,
        version=version.strip().rpartition(" ")[2],
        disable_userns="--disable-userns" in helptext,
        landlock_abi=landlock.abi(),
        seccomp=seccomp,
        seccomp_no_unix=no_unix,
        seccomp_note=note,
    )


def _ask(bwrap: str, option: str) -> str:
    try:
        done = subprocess.run([bwrap, option], capture_output=True, timeout=5, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return (done.stdout + done.stderr).decode("utf-8", "replace")
