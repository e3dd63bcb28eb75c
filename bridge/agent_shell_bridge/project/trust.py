"""Which project allowlists the user has reviewed and trusted.

A project's ``.agent-shell/allowlist.el`` can let dangerous commands run without
asking, and it arrives with the repository: a cloned project must not be able to
grant itself ``rm -rf ~``. So an allowlist takes effect in agent sessions only
after the user has trusted it (``M-x agent-shell-trust-allowlist``), and only while
its content is byte-for-byte what they trusted; any change needs trust again.
The record lives with the user's data, never inside the project.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import tempfile
from pathlib import Path

__all__ = ["AllowlistTrust", "allowlist_path", "default_trust_file"]

log = logging.getLogger(__name__)


def allowlist_path(root: Path) -> Path:
    return root / ".agent-shell" / "allowlist.el"


def default_trust_file(memory_dir: Path | None) -> Path:
    if memory_dir is not None:
        return memory_dir / "trusted-allowlists.json"
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "agent-shell" / "trusted-allowlists.json"


class AllowlistTrust:
    """A small JSON map from project root to the sha256 of its trusted allowlist."""

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

    def is_trusted(self, root: Path) -> bool:
        """Whether the allowlist now on disk for ``root`` is the one the user trusted."""
        path = allowlist_path(root)
        if not path.is_file() or path.is_symlink():
            return False
        try:
            content = path.read_bytes()
        except OSError:
            return False
        return self.is_trusted_content(root, content)

    def is_trusted_content(self, root: Path, content: bytes) -> bool:
        """Whether ``content`` (allowlist bytes already read) is what the user trusted.

        Callers that parse the allowlist hash the very bytes they parsed, so the file
        cannot be swapped between the check and its use.
        """
        return self._load().get(str(root.resolve())) == hashlib.sha256(content).hexdigest()

    def trust(self, root: Path, content: bytes) -> str:
        """Record CONTENT (the allowlist bytes the user reviewed) as trusted for ROOT."""
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
