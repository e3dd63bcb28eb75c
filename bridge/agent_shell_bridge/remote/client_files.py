"""A remote project's files as the session's "client files": read and written there.

A remote session's root here is its local mirror (:mod:`.mirror`); the tools
confine their paths to it as to any root, and this maps each confined path to the
same path under the remote root, where the host resolves links and confines it
again (:mod:`.files`). The bridge-side ``read_file`` and the edit tools read and
write through it exactly as they do through an editor's files.
"""

from __future__ import annotations

from pathlib import Path

from .errors import RemoteFailed
from .files import RemoteFiles

__all__ = ["RemoteClientFiles"]


class RemoteClientFiles:
    """``tools.client_files.ClientFiles`` for one remote project."""

    def __init__(self, files: RemoteFiles, mirror: Path) -> None:
        self._files = files
        self._mirror = mirror

    def relative(self, path: Path) -> str:
        """PATH (under the mirror) as a path relative to the remote root."""
        try:
            return path.relative_to(self._mirror).as_posix() or "."
        except ValueError:
            raise RemoteFailed(f"{path} is not in this remote project") from None

    async def read(self, session_id: str, path: Path) -> str | None:
        rel = self.relative(path)
        try:
            data = await self._files.read(rel)
        except RemoteFailed as exc:
            if "No such file" in exc.message:
                return None
            raise
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            raise RemoteFailed(f"{rel} is not UTF-8 text") from None

    async def write(self, session_id: str, path: Path, text: str) -> None:
        await self._files.write(self.relative(path), text.encode("utf-8"))
