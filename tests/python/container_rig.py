"""Real podman and docker containers for remote-project tests, made without a registry.

Nothing is pulled. ``podman_container()`` runs ``sleep infinity`` as PID 1 of a
podman container whose root file system is an overlay of this machine's own ``/``
(``--rootfs``), so its writes stay in the overlay. ``docker_container()`` starts a
``dockerd`` of its own (its socket, data and state in a temporary directory, no
bridge network, no iptables rules; ``DOCKER_HOST`` points the clients at it),
imports an image holding only directories and the ``/bin``-style links, and runs
it with this machine's ``/usr`` and ``/etc`` mounted read-only.

In both the project is a directory here mounted at :data:`MOUNT` there, a path
that does not exist on this machine, and the container's hostname is its own.
They need root and the programs (Debian: podman runc docker.io); they skip,
saying why, without them.
"""

from __future__ import annotations

import contextlib
import io
import os
import resource
import shutil
import signal
import subprocess
import tarfile
import tempfile
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from sshd_rig import wait_for

MOUNT = "/srv/agent-shell-container-app"
# Runtimes podman tries in order: crun refuses cgroup v1/v2 hybrid hosts, runc copes.
_RUNTIMES = ("runc", "crun")
_IMAGE = "agent-shell-test-hostroot:1"


@dataclass
class ContainerRig:
    kind: str  # "podman" or "docker": the program and the TRAMP method
    name: str
    project: Path  # here; MOUNT in the container
    hostname: str = ""  # the container's, not this machine's
    env: Mapping[str, str] = field(default_factory=dict)  # DOCKER_HOST for docker

    def tramp(self) -> str:
        return f"/{self.kind}:{self.name}:{MOUNT}"

    def cli(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [self.kind, *args],
            capture_output=True,
            text=True,
            check=check,
            timeout=60,
            env={**os.environ, **self.env},
        )

    def exec(self, *argv: str) -> str:
        return self.cli("exec", "-i", self.name, *argv).stdout

    def stop(self) -> None:
        self.cli("stop", "-t", "0", self.name)

    def start(self) -> None:
        self.cli("start", self.name)


def _needs(*programs: str) -> None:
    for program in programs:
        if shutil.which(program) is None:
            pytest.skip(f"{program} is not installed (Debian: podman runc docker.io)")
    if os.getuid() != 0:
        pytest.skip("the container rigs mount file systems and start daemons: need root")


def _limits() -> list[str]:
    """``--ulimit`` values this machine lets a container set (lower than its own):
    podman's defaults are higher than some hosts' hard limits."""
    flags = []
    for name, which in (("nofile", resource.RLIMIT_NOFILE), ("nproc", resource.RLIMIT_NPROC)):
        _, hard = resource.getrlimit(which)
        value = 4096 if hard == resource.RLIM_INFINITY else min(hard, 4096)
        flags += ["--ulimit", f"{name}={value}:{value}"]
    return flags


def _unmount_under(base: Path) -> None:
    """Unmount whatever is still mounted under BASE (deepest first), so that
    removing BASE can never reach into a mounted file system."""
    with open("/proc/self/mountinfo", encoding="utf-8") as info:
        points = [line.split()[4] for line in info]
    for point in sorted((p for p in points if Path(p).is_relative_to(base)), reverse=True):
        subprocess.run(["umount", "-l", point], check=False)


@contextlib.contextmanager
def podman_container() -> Iterator[ContainerRig]:
    """A running podman container on an overlay of this machine's root."""
    _needs("podman")
    base = Path(tempfile.mkdtemp(prefix="asctr-"))
    layers = base / "layers"
    layers.mkdir()
    rig = ContainerRig("podman", f"agent-shell-test-{uuid.uuid4().hex[:10]}", base / "app")
    rig.project.mkdir()
    try:
        # The overlay's upper layer on a tmpfs of its own: never inside its lower "/".
        subprocess.run(["mount", "-t", "tmpfs", "tmpfs", str(layers)], check=True)
        for sub in ("up", "work", "root"):
            (layers / sub).mkdir()
        options = f"lowerdir=/,upperdir={layers / 'up'},workdir={layers / 'work'}"
        root = layers / "root"
        subprocess.run(["mount", "-t", "overlay", "overlay", "-o", options, str(root)], check=True)
        flags = ["--name", rig.name, "--network", "none", *_limits(), "--tmpfs", "/sys/fs/cgroup"]
        flags += ["-v", f"{rig.project}:{MOUNT}", "--rootfs", str(root)]
        errors = []
        for runtime in [r for r in _RUNTIMES if shutil.which(r)]:
            done = rig.cli(
                "run", "-d", "--runtime", runtime, *flags, "sleep", "infinity", check=False
            )
            if done.returncode == 0:
                break
            errors.append(f"{runtime}: {done.stderr.strip().splitlines()[-1:]}")
            rig.cli("rm", "-f", rig.name, check=False)
        else:
            pytest.skip(
                f"podman cannot start a container here: {'; '.join(errors) or 'no runc/crun'}"
            )
        rig.hostname = rig.cli(
            "inspect", "--format", "{{.Config.Hostname}}", rig.name
        ).stdout.strip()
        yield rig
    finally:
        rig.cli("rm", "-f", "-t", "0", rig.name, check=False)
        _unmount_under(base)
        shutil.rmtree(base, ignore_errors=True)


def _image_tar() -> bytes:
    """An image of directories, the links a merged-/usr system has at its root, and
    this machine's users (``exec -u`` looks them up in the image, not the mounts)."""
    data = io.BytesIO()
    with tarfile.open(fileobj=data, mode="w") as tar:
        for name in ("usr", "etc", "proc", "sys", "dev", "tmp", "root", "srv", "run", "var/tmp"):
            info = tarfile.TarInfo(name)
            info.type, info.mode = tarfile.DIRTYPE, 0o1777 if "tmp" in name else 0o755
            tar.addfile(info)
        for name in ("etc/passwd", "etc/group"):  # docker exec -u reads the image's
            text = Path("/", name).read_bytes()
            info = tarfile.TarInfo(name)
            info.size, info.mode = len(text), 0o644
            tar.addfile(info, io.BytesIO(text))
        for name in ("bin", "sbin", "lib", "lib32", "lib64", "libx32"):
            if Path("/", name).is_symlink():
                info = tarfile.TarInfo(name)
                info.type, info.linkname = tarfile.SYMTYPE, os.readlink(Path("/", name))
                tar.addfile(info)
    return data.getvalue()


@contextlib.contextmanager
def docker_container() -> Iterator[ContainerRig]:
    """A running docker container, from a dockerd of its own."""
    _needs("docker", "dockerd")
    if not Path("/bin").is_symlink():
        pytest.skip("the docker rig's image needs a merged /usr (/bin a link to usr/bin)")
    base = Path(tempfile.mkdtemp(prefix="asdk-"))
    sock = base / "docker.sock"
    rig = ContainerRig(
        "docker",
        f"agent-shell-test-{uuid.uuid4().hex[:10]}",
        base / "app",
        env={"DOCKER_HOST": f"unix://{sock}"},
    )
    rig.project.mkdir()
    argv = ["dockerd", "--data-root", str(base / "data"), "--exec-root", str(base / "exec")]
    argv += ["--pidfile", str(base / "pid"), "-H", f"unix://{sock}", "--iptables=false"]
    argv += ["--ip6tables=false", "--bridge=none", "--ip-masq=false"]
    with open(base / "dockerd.log", "wb") as log:
        daemon = subprocess.Popen(argv, stdout=log, stderr=log, start_new_session=True)
    try:
        wait_for(
            lambda: daemon.poll() is not None or rig.cli("version", check=False).returncode == 0,
            60,
            "dockerd to answer",
        )
        if daemon.poll() is not None:
            tail = (base / "dockerd.log").read_text(errors="replace").strip().splitlines()[-1:]
            pytest.skip(f"dockerd cannot run here: {tail}")
        subprocess.run(
            ["docker", "import", "-", _IMAGE],
            input=_image_tar(),
            capture_output=True,
            check=True,
            env={**os.environ, **rig.env},
        )
        flags = [
            "--name",
            rig.name,
            "--network",
            "none",
            "-v",
            "/usr:/usr:ro",
            "-v",
            "/etc:/etc:ro",
        ]
        flags += ["-v", f"{rig.project}:{MOUNT}"]
        rig.cli("run", "-d", *flags, _IMAGE, "sleep", "infinity")
        rig.hostname = rig.cli(
            "inspect", "--format", "{{.Config.Hostname}}", rig.name
        ).stdout.strip()
        yield rig
    finally:
        with contextlib.suppress(subprocess.SubprocessError):
            rig.cli("rm", "-f", rig.name, check=False)
        if daemon.poll() is None:
            daemon.send_signal(signal.SIGTERM)
            try:
                daemon.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(daemon.pid, signal.SIGKILL)
                daemon.wait()
        _unmount_under(base)
        shutil.rmtree(base, ignore_errors=True)


@contextlib.contextmanager
def container(kind: str) -> Iterator[ContainerRig]:
    """A running container of KIND ("podman" or "docker")."""
    made = podman_container() if kind == "podman" else docker_container()
    with made as rig:
        yield rig
