"""Where a remote project is: a TRAMP file name read into a :class:`RemoteTarget`.

``/ssh:user@host#2222:/srv/app`` and ``/scp:…`` are hosts reached over OpenSSH;
``/docker:container:/app`` and ``/podman:…`` are containers reached with
``docker exec`` / ``podman exec``. Every other method (``sudo``, ``smb``, ``ftp``,
multi-hops …) is refused with a one-line reason: it either runs no processes or
would need a hop this bridge does not drive.
"""

from __future__ import annotations

import hashlib
import re
import shutil
from dataclasses import dataclass
from typing import Literal

from .errors import RemoteRefused

__all__ = ["CONTAINER_METHODS", "SSH_METHODS", "RemoteTarget", "parse_tramp"]

SSH_METHODS = frozenset({"ssh", "scp", "sshx", "scpx"})
CONTAINER_METHODS = frozenset({"docker", "podman"})
# /METHOD:[USER@]HOST[#PORT]:/PATH  (one hop only)
_TRAMP_RE = re.compile(
    r"\A/(?P<method>[A-Za-z0-9-]+):(?:(?P<user>[^@:/|]+)@)?(?P<host>[^:#|/]*)"
    r"(?:#(?P<port>[0-9]+))?:(?P<path>/.*)?\Z",
    re.DOTALL,
)
_HOST_RE = re.compile(r"\A[A-Za-z0-9][A-Za-z0-9._-]*\Z")  # no leading "-": never an option
_USER_RE = re.compile(r"\A[A-Za-z0-9._][A-Za-z0-9._-]*\Z")


@dataclass(frozen=True, slots=True)
class RemoteTarget:
    """One remote project: how to reach its host, and the directory there."""

    kind: Literal["ssh", "docker", "podman"]
    host: str
    path: str
    user: str | None = None
    port: int | None = None

    @property
    def label(self) -> str:
        """``user@host`` (``host`` without a user), for messages and the header."""
        who = f"{self.user}@{self.host}" if self.user else self.host
        return f"{who}#{self.port}" if self.port else who

    @property
    def tramp_prefix(self) -> str:
        """The TRAMP prefix Emacs visits the project's files with."""
        method = "ssh" if self.kind == "ssh" else self.kind
        who = f"{self.user}@{self.host}" if self.user else self.host
        port = f"#{self.port}" if self.port else ""
        return f"/{method}:{who}{port}:"

    def tramp_name(self, remote_path: str) -> str:
        return self.tramp_prefix + remote_path

    def key(self) -> str:
        """A directory name for this project's local records: host, then a hash."""
        digest = hashlib.sha256(f"{self.kind}\0{self.label}\0{self.path}".encode()).hexdigest()
        tail = self.path.rstrip("/").rsplit("/", 1)[-1] or "root"
        safe = re.sub(r"[^A-Za-z0-9._-]", "_", tail)[:40]
        return f"{safe}-{digest[:16]}"


def parse_tramp(name: str, *, which: object = shutil.which) -> RemoteTarget:
    """The target a TRAMP file name NAME points at, or :class:`RemoteRefused`.

    ``which`` finds ``docker``/``podman`` on this machine (a container method needs
    its program here: TRAMP and the bridge both run it locally).
    """
    match = _TRAMP_RE.match(name)
    if match is None:
        raise RemoteRefused(f"not a single-hop TRAMP file name: {name!r}")
    method = match["method"]
    host, user, path = match["host"], match["user"], match["path"] or "/"
    port = int(match["port"]) if match["port"] else None
    if not host or not _HOST_RE.match(host):
        raise RemoteRefused(f"remote projects need a plain host name, not {host!r}")
    if user is not None and not _USER_RE.match(user):
        raise RemoteRefused(f"remote projects need a plain user name, not {user!r}")
    if "\0" in path or "\n" in path:
        raise RemoteRefused("a remote project's path may hold neither NUL nor newline")
    path = "/" + path.strip("/") if path != "/" else "/"
    if method in SSH_METHODS:
        return RemoteTarget("ssh", host, path, user=user, port=port)
    if method in CONTAINER_METHODS:
        assert callable(which)
        if which(method) is None:
            raise RemoteRefused(f"/{method}: needs the {method} program on this machine")
        if port is not None:
            raise RemoteRefused(f"/{method}: takes no port")
        return RemoteTarget("docker" if method == "docker" else "podman", host, path, user=user)
    raise RemoteRefused(
        f"/{method}: is not supported for remote projects (only ssh, scp, docker "
        "and podman run the project's commands there)"
    )
