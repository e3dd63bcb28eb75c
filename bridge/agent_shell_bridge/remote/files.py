"""A remote project's files, read and written on its host through the connection.

Every path is confined on the host, after the host resolved every link in it
(:mod:`.helper`'s ``realpath``): a remote symlink out of the project is refused
like a local one (:class:`.RemoteEscape`). Writes are atomic there (a temporary
file renamed over the old one, its mode kept). These serve the bridge's own file
tools, for the files no Emacs buffer visits (:mod:`.client_files`).
"""

from __future__ import annotations

import base64
import binascii
import posixpath
from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel, ValidationError

from .connection import RemoteConnection
from .errors import RemoteEscape, RemoteFailed

__all__ = ["RemoteFiles", "ShippedFile"]


class ShippedFile(BaseModel):
    """A file the project ships, as the helper found it there (``project_files``):
    ``absent``, a regular ``file``, a ``link`` (its bytes only when it stays inside
    the project), ``escape`` (a link or a folder leading out of it) or ``other``
    (a directory, a FIFO, unreadable)."""

    path: str
    state: Literal["absent", "file", "link", "escape", "other"]
    data: str | None = None  # base64, at most the request's max bytes
    truncated: bool = False

    def content(self) -> bytes | None:
        """The bytes read there, or None when none were."""
        if self.data is None:
            return None
        try:
            return base64.b64decode(self.data, validate=True)
        except (binascii.Error, ValueError):
            return None


class _ShippedAnswer(BaseModel):
    files: list[ShippedFile]


class RemoteFiles:
    """The files under one remote root (already resolved on the host)."""

    def __init__(self, connection: RemoteConnection, root: str) -> None:
        self.connection = connection
        self.root = root

    def absolute(self, path: str) -> str:
        """PATH (relative to the root, or absolute on the host), normalised."""
        return posixpath.normpath(posixpath.join(self.root, path))

    async def resolve(self, path: str) -> str:
        """PATH resolved on the host, refused when it leads out of the project."""
        answer = await self.connection.call_json({"op": "realpath", "path": self.absolute(path)})
        real = str(answer["path"])
        if real != self.root and not real.startswith(self.root.rstrip("/") + "/"):
            raise RemoteEscape(f"{path} resolves to {real}, outside the project {self.root}")
        return real

    async def read(self, path: str) -> bytes:
        try:
            return await self.connection.call(
                {"op": "read", "path": self.absolute(path), "root": self.root}
            )
        except RemoteFailed as exc:
            raise _escape_or(exc) from None

    async def write(self, path: str, data: bytes) -> int:
        try:
            answer = await self.connection.call_json(
                {"op": "write", "path": self.absolute(path), "root": self.root}, data=data
            )
        except RemoteFailed as exc:
            raise _escape_or(exc) from None
        return int(str(answer["written"]))

    async def list(
        self, path: str = ".", *, depth: int = 1, skip: Sequence[str] = ()
    ) -> dict[str, object]:
        """The entries under PATH, DEPTH levels down (``dir/`` for directories), as
        the local ``list_directory`` gives them; links are listed, never followed."""
        request = {
            "op": "list",
            "path": self.absolute(path),
            "root": self.root,
            "depth": depth,
            "skip": sorted(skip),
        }
        try:
            return await self.connection.call_json(request)
        except RemoteFailed as exc:
            raise _escape_or(exc) from None

    async def grep(
        self,
        pattern: str,
        path: str = ".",
        *,
        glob: str | None = None,
        skip: Sequence[str] = (),
        limit: int = 200,
        timeout_s: float = 30.0,
    ) -> dict[str, object]:
        """Lines matching PATTERN (Python's re, there) under PATH: ``{matches:
        [{path, line, text}], truncated}``; links are never followed."""
        request = {
            "op": "grep",
            "pattern": pattern,
            "path": self.absolute(path),
            "root": self.root,
            "glob": glob,
            "skip": sorted(skip),
            "limit": limit,
        }
        try:
            return await self.connection.call_json(request, timeout_s=timeout_s)
        except RemoteFailed as exc:
            raise _escape_or(exc) from None

    async def shipped(self, paths: Sequence[str], *, max_bytes: int) -> dict[str, ShippedFile]:
        """The project's files at PATHS (relative to the root), in one request: what
        each is there and at most MAX_BYTES of it (see :class:`ShippedFile`)."""
        if not paths:
            return {}
        answer = await self.connection.call_json(
            {"op": "project_files", "root": self.root, "paths": list(paths), "max": max_bytes}
        )
        try:
            files = _ShippedAnswer.model_validate(answer).files
        except ValidationError as exc:
            raise RemoteFailed(f"the remote helper answered an unexpected shape: {exc}") from exc
        return {f.path: f for f in files}

    async def exists(self, path: str) -> bool:
        """Whether PATH exists there (links resolved; out of the project: refused)."""
        real = await self.resolve(path)
        answer = await self.connection.call_json({"op": "realpath", "path": real})
        return bool(answer.get("exists"))


def _escape_or(exc: RemoteFailed) -> Exception:
    if "outside the project" in exc.message:
        return RemoteEscape(exc.message)
    return exc
