"""A remote project's files as the session's "client files": the editor's buffer
where Emacs has one visiting the file, else the host's file.

A remote session's root here is its local mirror (:mod:`.mirror`); the tools
confine their paths to it as to any root, and this maps each confined path to the
same path under the remote root. Where the client serves remote buffers
(:mod:`.buffers`), the path is first resolved on the host and refused when a link
leads out of the project (as the helper's own reads and writes are), then its
TRAMP name (the session's remote root and that path) is asked for: a buffer
visiting it is read, or written through (Emacs refuses when it holds the user's
unsaved changes). Without such a buffer, the host's file is read and written
through the connection (:mod:`.files`), where the host confines it again.
"""

from __future__ import annotations

from pathlib import Path

from .buffers import EditorBuffers
from .errors import RemoteFailed
from .files import RemoteFiles

__all__ = ["RemoteClientFiles"]


class RemoteClientFiles:
    """``tools.client_files.ClientFiles`` for one remote project."""

    def __init__(
        self,
        files: RemoteFiles,
        mirror: Path,
        *,
        tramp_root: str = "",
        buffers: EditorBuffers | None = None,
    ) -> None:
        self._files = files
        self._mirror = mirror
        self._tramp_root = tramp_root.rstrip("/")
        self._buffers = buffers if tramp_root else None

    def relative(self, path: Path) -> str:
        """PATH (under the mirror) as a path relative to the remote root."""
        try:
            return path.relative_to(self._mirror).as_posix() or "."
        except ValueError:
            raise RemoteFailed(f"{path} is not in this remote project") from None

    def tramp_name(self, rel: str) -> str:
        """The TRAMP name Emacs visits REL (relative to the root) with."""
        return f"{self._tramp_root}/{rel}"

    async def _buffers_for(self, rel: str) -> EditorBuffers | None:
        """The client's buffers, when one may visit REL; the path is confined on the
        host first (a link out of the project is refused)."""
        if self._buffers is None or not self._buffers.served or rel == ".":
            return None
        await self._files.resolve(rel)
        return self._buffers

    async def read(self, session_id: str, path: Path) -> str | None:
        rel = self.relative(path)
        buffers = await self._buffers_for(rel)
        if buffers is not None:
            text = await buffers.read(session_id, self.tramp_name(rel))
            if text is not None:
                return text
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
        rel = self.relative(path)
        buffers = await self._buffers_for(rel)
        if buffers is not None and await buffers.write(session_id, self.tramp_name(rel), text):
            return
        await self._files.write(rel, text.encode("utf-8"))
