"""The parts of this machine every sandboxed command is built from (found by .status)."""

from __future__ import annotations

from dataclasses import dataclass, field

from .landlock import SCOPES_ABI

__all__ = ["SandboxKit"]


@dataclass(frozen=True, slots=True)
class SandboxKit:
    """The parts found on this machine that every sandboxed command is built from."""

    bwrap: str
    version: str = ""
    # bubblewrap 0.8+: no user namespace can be made inside (no way back to capabilities).
    disable_userns: bool = False
    landlock_abi: int = 0
    # The seccomp programs (see .seccomp): the usual one, and the one that also
    # refuses AF_UNIX sockets, for a shared network without Landlock's scopes.
    seccomp: bytes | None = field(default=None, repr=False)
    seccomp_no_unix: bytes | None = field(default=None, repr=False)
    seccomp_note: str = ""

    @property
    def scopes(self) -> bool:
        """Whether Landlock can scope abstract sockets and signals to the sandbox."""
        return self.landlock_abi >= SCOPES_ABI

    def describe(self) -> str:
        parts = [f"bubblewrap {self.version}".strip()]
        parts.append(f"seccomp ({self.seccomp_note})" if self.seccomp else "no seccomp filter")
        if self.scopes:
            parts.append(f"landlock ABI {self.landlock_abi}")
        return ", ".join(parts)
