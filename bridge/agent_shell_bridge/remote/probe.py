"""What a remote host offers, asked once per connection."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..policy.secrets import SECRET_PATHS
from ..sandbox import HOME_TOOLCHAINS, SandboxStatus
from .connection import RemoteConnection
from .errors import RemoteFailed

__all__ = ["NO_REMOTE_SANDBOX", "RemoteProbe", "probe_host"]

NO_REMOTE_SANDBOX = "no sandbox (remote)"


@dataclass(frozen=True, slots=True)
class RemoteProbe:
    """The answer of the helper's ``probe`` (see :mod:`.helper`)."""

    uid: int
    user: str
    home: str
    python: str
    bwrap: str | None
    bwrap_works: bool
    bwrap_detail: str
    # "/bin" → "dir" or "link:usr/bin", for the system directories there.
    system: dict[str, str] = field(default_factory=dict)
    # Toolchains under the remote $HOME (relative: ".cargo", ".local/bin") shown
    # read-only in its sandbox, and the credential files in them, masked there.
    toolchains: tuple[str, ...] = ()
    masked: tuple[tuple[str, str], ...] = ()

    @property
    def sandboxed(self) -> bool:
        return self.bwrap is not None and self.bwrap_works

    def status(self) -> SandboxStatus:
        """The session's sandbox as the header and the placement see it."""
        if self.sandboxed:
            return SandboxStatus(True, f"bubblewrap on the remote host ({self.bwrap})", remote=True)
        return SandboxStatus(False, f"{NO_REMOTE_SANDBOX}: {self.bwrap_detail}", remote=True)

    @property
    def label(self) -> str:
        return "bubblewrap (remote)" if self.sandboxed else NO_REMOTE_SANDBOX


async def probe_host(connection: RemoteConnection) -> RemoteProbe:
    """Ask the host what it offers (python3, bubblewrap and whether it works there)."""
    request = {
        "op": "probe",
        "toolchains": list(HOME_TOOLCHAINS),
        "secrets": [e for e in SECRET_PATHS if any(e.startswith(t + "/") for t in HOME_TOOLCHAINS)],
    }
    raw = await connection.call_json(request, timeout_s=40)
    try:
        system = raw.get("system") or {}
        assert isinstance(system, dict)
        bwrap = raw.get("bwrap")
        return RemoteProbe(
            uid=int(str(raw["uid"])),
            user=str(raw["user"]),
            home=str(raw["home"]),
            python=str(raw["python"]),
            bwrap=str(bwrap) if bwrap else None,
            bwrap_works=bool(raw["bwrap_works"]),
            bwrap_detail=str(raw["bwrap_detail"]),
            system={str(k): str(v) for k, v in system.items()},
            toolchains=tuple(str(t) for t in _list(raw.get("toolchains"))),
            masked=tuple((str(m[0]), str(m[1])) for m in _list(raw.get("masked"))),
        )
    except (KeyError, ValueError, AssertionError, IndexError, TypeError) as exc:
        raise RemoteFailed(f"the remote probe answered in an unknown shape: {exc}") from exc


def _list(value: object) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise ValueError(f"expected a list, got {type(value).__name__}")
    return value
