"""The OS sandbox (bubblewrap) for commands that run without the user's yes.

The policy decides what must ask; the sandbox limits what runs without asking, so
a command the parser misjudged, or project code run by an allowed test command,
still cannot do harm. Inside:

- the whole filesystem is read-only, with a fresh ``/dev``, ``/proc`` and a private
  ``/tmp``;
- the project root(s) are writable, except ``.git`` (its config and hooks run code
  the next time the user runs git) and ``.agent-shell`` (the bridge's records and
  the project's trusted settings), which are bound read-only over them; only
  ``.agent-shell/workspace`` stays writable;
- ``$HOME`` is read-only (toolchains live there) with its secrets masked by empty
  files and directories (:mod:`.home_secrets`), and a private writable ``~/.cache``;
- no network (unless the user approved the command and asked for approved commands
  to be sandboxed too), its own PID namespace, and ``--die-with-parent``.

:func:`detect_sandbox` runs once when the bridge starts: it actually starts a
trivial sandbox, so a missing binary, a non-Linux system or disabled user namespaces
all come out as "no sandbox" with the reason. ``AGENT_SHELL_SANDBOX=off`` forces
that outcome (tests of the fallback, users who cannot have one).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from .home_secrets import secret_paths

__all__ = [
    "SANDBOX_ENV",
    "SandboxSpec",
    "SandboxStatus",
    "detect_sandbox",
    "roots_without_git",
    "sandbox_forced_off",
    "set_aside_new_git",
]

SANDBOX_ENV = "AGENT_SHELL_SANDBOX"
_OFF_WORDS = frozenset({"off", "0", "no", "false", "none", "disabled"})
_PROBE_TIMEOUT_S = 15.0
# Project directories bound read-only over the writable root, and the one
# re-opened for writing inside the read-only .agent-shell.
_READ_ONLY_IN_ROOT = (".git", ".agent-shell")
_WRITABLE_IN_RECORDS = ".agent-shell/workspace"


@dataclass(frozen=True, slots=True)
class SandboxStatus:
    """Whether commands can be sandboxed here, and how (or why not)."""

    available: bool
    detail: str
    bwrap: str | None = None

    @property
    def label(self) -> str:
        """What the header line and the log say: ``bubblewrap`` or ``no sandbox``."""
        return "bubblewrap" if self.available else "no sandbox"

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
    """Find out whether bubblewrap works here by running ``true`` inside it."""
    env = os.environ if env is None else env
    if sandbox_forced_off(env):
        return SandboxStatus.off(f"turned off by {SANDBOX_ENV}={env.get(SANDBOX_ENV)}")
    if not sys.platform.startswith("linux"):
        return SandboxStatus.off(f"bubblewrap needs Linux; this is {sys.platform}")
    bwrap = shutil.which("bwrap", path=env.get("PATH"))
    if bwrap is None:
        return SandboxStatus.off("bubblewrap (bwrap) is not installed")
    probe = SandboxSpec(bwrap=bwrap, roots=(), home=None).wrap(["true"], cwd=Path("/"))
    try:
        done = subprocess.run(
            probe,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=_PROBE_TIMEOUT_S,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return SandboxStatus.off(f"bubblewrap could not start: {exc}")
    if done.returncode != 0:
        why = done.stderr.decode("utf-8", "replace").strip().splitlines()
        reason = why[-1] if why else f"exit status {done.returncode}"
        return SandboxStatus.off(f"bubblewrap cannot run here (user namespaces?): {reason}")
    version = _version(bwrap)
    return SandboxStatus(True, f"bubblewrap {version}".strip(), bwrap)


def _version(bwrap: str) -> str:
    try:
        out = subprocess.run(
            [bwrap, "--version"], capture_output=True, timeout=5, check=False
        ).stdout.decode("utf-8", "replace")
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return out.strip().rpartition(" ")[2]


@dataclass(frozen=True, slots=True)
class SandboxSpec:
    """How to wrap one command: the writable roots, the home to protect, the network."""

    bwrap: str
    roots: tuple[Path, ...]
    home: Path | None
    network: bool = False
    extra_secrets: tuple[str, ...] = ()
    # The roots are shown read-only (a role confined to some files, the tester).
    roots_read_only: bool = False

    def wrap(self, argv: Sequence[str], *, cwd: Path) -> list[str]:
        """The bwrap argv that runs ``argv`` in ``cwd`` inside the sandbox."""
        out = [
            self.bwrap,
            "--die-with-parent",
            "--unshare-pid",
            "--unshare-ipc",
            "--unshare-uts",
            "--unshare-cgroup-try",
        ]
        if not self.network:
            out.append("--unshare-net")
        out += ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
        # Private, empty mounts inside the sandbox, not files of ours.
        private_tmp = ["--tmpfs", "/tmp", "--tmpfs", "/dev/shm", "--setenv", "TMPDIR", "/tmp"]  # noqa: S108
        out += private_tmp
        home = self.home
        if home is not None and home.is_dir():
            # Re-shown when $HOME lives under /tmp (the private /tmp hid it).
            out += ["--ro-bind", str(home), str(home)]
            cache = home / ".cache"
            if cache.is_dir() and not cache.is_symlink():
                out += ["--tmpfs", str(cache)]
        for root in self.roots:
            out += ["--ro-bind" if self.roots_read_only else "--bind", str(root), str(root)]
            for name in _READ_ONLY_IN_ROOT:
                inner = root / name
                if inner.exists():
                    out += ["--ro-bind", str(inner), str(inner)]
            workspace = root / _WRITABLE_IN_RECORDS
            if workspace.is_dir() and not workspace.is_symlink():
                out += ["--bind", str(workspace), str(workspace)]
        if home is not None:
            for secret in secret_paths(home, extra=self.extra_secrets, existing_only=True):
                if secret.is_dir():
                    out += ["--tmpfs", str(secret), "--remount-ro", str(secret)]
                else:
                    out += ["--ro-bind", "/dev/null", str(secret)]
        out += ["--chdir", str(cwd), "--", *argv]
        return out


def roots_without_git(roots: Sequence[Path]) -> list[Path]:
    """The roots with no ``.git`` now (a sandboxed command must not create one)."""
    return [root for root in roots if not os.path.lexists(root / ".git")]


def set_aside_new_git(roots: Sequence[Path]) -> list[str]:
    """Rename a ``.git`` that appeared in these roots during a sandboxed command.

    A project that is not a repository has no ``.git`` to bind read-only, so code
    in the sandbox could create one with hooks and a config that git would run for
    the user later. Whatever appeared is renamed out of git's way and reported.
    """
    moved: list[str] = []
    for root in roots:
        made = root / ".git"
        if not os.path.lexists(made):
            continue
        n = 0
        while os.path.lexists(target := root / f".git-made-by-a-sandboxed-command-{n}"):
            n += 1
        try:
            os.rename(made, target)
        except OSError as exc:
            moved.append(f"{made} was created by the command and could not be renamed: {exc}")
            continue
        moved.append(f"{made} was created by the command; renamed to {target.name}")
    return moved
