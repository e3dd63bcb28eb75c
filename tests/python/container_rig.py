"""A real podman container for remote-project tests, made without any image.

``container()`` runs ``sleep infinity`` as PID 1 of a podman container whose root
file system is an overlay of this machine's own ``/`` (``--rootfs``: nothing is
pulled), so its writes stay in the overlay and a path made there is seen by the
container alone. The project is a directory here mounted at :data:`MOUNT` there,
a path that does not exist on this machine. It needs root (to mount the overlay)
and podman with a runtime that starts there; it skips, saying why, without them.
"""

from __future__ import annotations

import contextlib
import os
import resource
import shutil
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

MOUNT = "/srv/agent-shell-container-app"
# Runtimes tried in order: crun refuses cgroup v1/v2 hybrid hosts, runc copes.
_RUNTIMES = ("runc", "crun")


def podman(*args: str, check: bool = True, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["podman", *args], capture_output=True, text=True, check=check, timeout=timeout
    )


@dataclass
class ContainerRig:
    name: str
    project: Path  # here; MOUNT in the container
    hostname: str  # the container's, not this machine's

    @property
    def path(self) -> str:
        return MOUNT

    def tramp(self, sub: str = "") -> str:
        return f"/podman:{self.name}:{MOUNT}{sub}"

    def exec(self, *argv: str) -> str:
        return podman("exec", "-i", self.name, *argv).stdout

    def stop(self) -> None:
        podman("stop", "-t", "0", self.name)

    def start(self) -> None:
        podman("start", self.name)

    def state(self) -> str:
        return podman("container", "inspect", "--format", "{{.State.Status}}", self.name).stdout


def _limits() -> list[str]:
    """``--ulimit`` values this machine lets a container set (lower than its own):
    podman's defaults are higher than some hosts' hard limits."""
    flags = []
    for name, which in (("nofile", resource.RLIMIT_NOFILE), ("nproc", resource.RLIMIT_NPROC)):
        _, hard = resource.getrlimit(which)
        value = 4096 if hard == resource.RLIM_INFINITY else min(hard, 4096)
        flags += ["--ulimit", f"{name}={value}:{value}"]
    return flags


@contextlib.contextmanager
def container(*, start: bool = True) -> Iterator[ContainerRig]:
    """A running (or, with START false, created and never started) container."""
    if shutil.which("podman") is None:
        pytest.skip("podman is not installed (Debian: apt-get install podman runc)")
    if os.getuid() != 0:
        pytest.skip("the container rig mounts an overlay root file system: needs root")
    base = Path(tempfile.mkdtemp(prefix="asctr-"))
    layers = base / "layers"
    layers.mkdir()
    mounted: list[Path] = []
    name = f"agent-shell-test-{uuid.uuid4().hex[:10]}"
    try:
        # The overlay's upper layer on a tmpfs of its own: never inside its lower "/".
        subprocess.run(["mount", "-t", "tmpfs", "tmpfs", str(layers)], check=True)
        mounted.append(layers)
        for sub in ("up", "work", "root"):
            (layers / sub).mkdir()
        options = f"lowerdir=/,upperdir={layers / 'up'},workdir={layers / 'work'}"
        subprocess.run(
            ["mount", "-t", "overlay", "overlay", "-o", options, str(layers / "root")], check=True
        )
        mounted.append(layers / "root")
        project = base / "app"
        project.mkdir()
        flags = ["--name", name, "--network", "none", *_limits(), "--tmpfs", "/sys/fs/cgroup"]
        flags += ["-v", f"{project}:{MOUNT}", "--rootfs", str(layers / "root")]
        errors = []
        for runtime in [r for r in _RUNTIMES if shutil.which(r)]:
            verb = ["run", "-d"] if start else ["create"]
            done = podman(*verb, "--runtime", runtime, *flags, "sleep", "infinity", check=False)
            if done.returncode == 0:
                break
            errors.append(f"{runtime}: {done.stderr.strip().splitlines()[-1:]}")
            podman("rm", "-f", name, check=False)
        else:
            pytest.skip(
                f"podman cannot start a container here: {'; '.join(errors) or 'no runtime'}"
            )
        hostname = podman("container", "inspect", "--format", "{{.Config.Hostname}}", name).stdout
        yield ContainerRig(name, project, hostname.strip())
    finally:
        podman("rm", "-f", "-t", "0", name, check=False)
        for path in reversed(mounted):
            subprocess.run(["umount", "-l", str(path)], check=False)
        shutil.rmtree(base, ignore_errors=True)
