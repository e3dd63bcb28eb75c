"""Files a project ships that take effect only once the user trusts their exact bytes.

A cloned repository controls its files, so the five that could change what the
agent may do — an allowlist letting commands run unasked, a ``config.el`` turning
the sandbox off, roles with their own prompts and tools, MCP servers to start,
hook commands run around every step —
count only after the user has reviewed and trusted them, and only while their
content is byte-for-byte what was trusted: any change needs trust again. The
records (the sha256 per project root) live with the user's data, never in the
project. One mechanism for all five: :data:`TRUSTED_KINDS` says what each kind is,
where it lives, which method trusts it and which Emacs command shows it; the
bridge sends the table in ``initialize``.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType

from .files import read_project_file

__all__ = [
    "TRUSTED_KINDS",
    "AllowlistTrust",
    "ProjectTrust",
    "TrustRecord",
    "TrustedKind",
    "allowlist_path",
    "default_trust_file",
    "project_trust",
]

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class TrustedKind:
    """One kind of file a project ships that needs the user's trust."""

    name: str
    # Where it lives, relative to the project root.
    path: str
    # The record of trusted contents, in the user's data directory.
    record: str
    # The bridge method that trusts it, and the Emacs command that shows it first.
    method: str
    command: str
    # What it does once trusted (in the log's "not applied yet" notices).
    effect: str

    def to_json(self) -> dict[str, str]:
        return {
            "kind": self.name,
            "path": self.path,
            "method": self.method,
            "command": self.command,
            "effect": self.effect,
        }


TRUSTED_KINDS = MappingProxyType(
    {
        kind.name: kind
        for kind in (
            TrustedKind(
                "allowlist",
                ".agent-shell/allowlist.el",
                "trusted-allowlists.json",
                "policy/trust_allowlist",
                "agent-shell-trust-allowlist",
                "lets the commands it names run without asking",
            ),
            TrustedKind(
                "config",
                ".agent-shell/config.el",
                "trusted-configs.json",
                "policy/trust_config",
                "agent-shell-trust-config",
                "applies the project's settings, such as turning the sandbox off",
            ),
            TrustedKind(
                "roles",
                ".agent-shell/roles.el",
                "trusted-roles.json",
                "roles/trust",
                "agent-shell-trust-roles",
                "adds or changes the roles the agent can delegate to",
            ),
            TrustedKind(
                "mcp",
                ".mcp.json",
                "trusted-mcp-configs.json",
                "mcp/trust",
                "agent-shell-trust-mcp",
                "starts the MCP servers it names",
            ),
            TrustedKind(
                "hooks",
                ".agent-shell/hooks.json",
                "trusted-hooks.json",
                "hooks/trust",
                "agent-shell-trust-hooks",
                "runs its commands around the agent's steps, in the sandbox",
            ),
        )
    }
)


def allowlist_path(root: Path) -> Path:
    return root / TRUSTED_KINDS["allowlist"].path


def default_trust_file(memory_dir: Path | None) -> Path:
    """The allowlists' record; the other kinds' records lie beside it."""
    if memory_dir is not None:
        return memory_dir / TRUSTED_KINDS["allowlist"].record
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "agent-shell" / TRUSTED_KINDS["allowlist"].record


class TrustRecord:
    """A small JSON map from project root to the sha256 of its trusted content."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def _load(self) -> dict[str, str]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {}
        except (OSError, ValueError) as exc:
            log.warning("ignoring unreadable trust file %s: %s", self.path, exc)
            return {}
        if not isinstance(data, dict):
            return {}
        return {str(k): str(v) for k, v in data.items()}

    def is_trusted_content(self, root: Path, content: bytes) -> bool:
        """Whether ``content`` (bytes already read) is what the user trusted.

        Callers that parse the file hash the very bytes they parsed, so the file
        cannot be swapped between the check and its use.
        """
        return self._load().get(str(root.resolve())) == hashlib.sha256(content).hexdigest()

    def trust(self, root: Path, content: bytes) -> str:
        """Record ``content`` (the bytes the user reviewed) as trusted for ``root``."""
        digest = hashlib.sha256(content).hexdigest()
        records = self._load()
        records[str(root.resolve())] = digest
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=".trust.", suffix=".tmp")
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(records, fh, indent=1, sort_keys=True)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, self.path)
        return digest


class ProjectTrust(TrustRecord):
    """The record of one :class:`TrustedKind`, which also knows where its file is."""

    def __init__(self, kind: TrustedKind, memory_dir: Path | None) -> None:
        super().__init__(default_trust_file(memory_dir).with_name(kind.record))
        self.kind = kind

    def file(self, root: Path) -> Path:
        return root / self.kind.path

    def read(self, root: Path) -> bytes | None:
        """The file's bytes; None if absent, a symlink or not a regular file."""
        return read_project_file(self.file(root))

    def is_trusted(self, root: Path) -> bool:
        """Whether the file now on disk for ``root`` is the one the user trusted."""
        try:
            content = self.read(root)
        except OSError:
            return False
        return content is not None and self.is_trusted_content(root, content)


class AllowlistTrust(ProjectTrust):
    """The allowlist's record at ``path`` (tests and old callers name the file)."""

    def __init__(self, path: Path) -> None:
        TrustRecord.__init__(self, path)
        self.kind = TRUSTED_KINDS["allowlist"]


def project_trust(kind: str, memory_dir: Path | None) -> ProjectTrust:
    """The trust record of the kind named ``kind`` (a key of :data:`TRUSTED_KINDS`)."""
    return ProjectTrust(TRUSTED_KINDS[kind], memory_dir)
