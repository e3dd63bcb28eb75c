"""The editor's buffers visiting a remote project's files (Emacs, over TRAMP).

When Emacs has a live buffer visiting a remote file, the bridge reads that
buffer's text and writes through it (one undo unit, saved by TRAMP), instead of
reading and writing the host's file behind the buffer's back. The bridge sends
only a name it has already confined: the session's TRAMP root and a relative
path the tools confined and the host resolved inside the project. Emacs checks
again that the name is under the session's root and looks it up among its
buffers without expanding it: a name no buffer visits gets ``visited: false``,
no connection, and the bridge uses the host's file through its helper.

Requests (bridge → client, over SSE): ``remote/buffer_read`` ``{sessionId, path}``
→ ``{visited, text?, modified?}``; ``remote/buffer_write`` ``{sessionId, path,
text}`` → ``{visited, written?, refused?}`` (``refused``: the buffer holds the
user's unsaved changes or the file changed there since; nothing was written).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError

from ..errors import NotWritten, ToolFailed
from ..transport.events import ClientError, EventHub

__all__ = ["EditorBuffers"]

_M = TypeVar("_M", bound=BaseModel)


class _Read(BaseModel):
    model_config = ConfigDict(extra="ignore")
    visited: bool
    text: str | None = None


class _Write(BaseModel):
    model_config = ConfigDict(extra="ignore")
    visited: bool
    written: bool = False
    refused: str | None = None


class EditorBuffers:
    """Ask the connected editor for the buffer visiting a remote file's TRAMP name.

    ``served`` says, at each call, whether the client said it serves remote
    buffers (``initialize``'s ``clientCapabilities.remoteBuffers``); a client that
    initializes again changes it for every session.
    """

    def __init__(self, hub: EventHub, served: Callable[[], bool], timeout_s: float) -> None:
        self._hub = hub
        self._served = served
        self._timeout_s = timeout_s

    @property
    def served(self) -> bool:
        return self._served()

    async def read(self, session_id: str, name: str) -> str | None:
        """The text of the buffer visiting NAME, or None when no buffer visits it."""
        answer = await self._ask(
            "remote/buffer_read", {"sessionId": session_id, "path": name}, _Read
        )
        if not answer.visited:
            return None
        if answer.text is None:
            raise ToolFailed(f"the editor sent no text for {name}")
        return answer.text

    async def write(self, session_id: str, name: str, text: str) -> bool:
        """Write TEXT through the buffer visiting NAME; False when none visits it.

        Raises :class:`NotWritten` when the editor refused before changing anything.
        """
        answer = await self._ask(
            "remote/buffer_write", {"sessionId": session_id, "path": name, "text": text}, _Write
        )
        if answer.refused is not None:
            raise NotWritten(answer.refused)
        if answer.visited and not answer.written:
            raise ToolFailed(f"the editor did not write {name}")
        return answer.visited

    async def _ask(self, method: str, params: dict[str, str], model: type[_M]) -> _M:
        try:
            reply = await self._hub.request(method, dict(params), timeout_s=self._timeout_s)
        except ClientError as exc:
            raise ToolFailed(f"Emacs: {exc.message}") from exc
        try:
            return model.model_validate(reply)
        except ValidationError as exc:
            raise ToolFailed(f"the editor's answer to {method} is not understood") from exc
