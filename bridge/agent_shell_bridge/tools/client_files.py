"""Files as the client's editor has them: a front end may serve reads and writes.

An ACP client that offers ``fs/read_text_file`` and ``fs/write_text_file`` shows the
agent its unsaved buffers and applies edits where the user sees them. The policy
and path confinement still run first; this only replaces the disk I/O.
"""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

__all__ = ["ClientFiles"]


class ClientFiles(Protocol):
    async def read(self, session_id: str, path: Path) -> str | None:
        """The file's text as the client has it; None when there is no such file."""
        ...

    async def write(self, session_id: str, path: Path, text: str) -> None:
        """Replace the file's text in the client (which saves or shows it).

        :class:`..errors.NotWritten` says nothing was changed; any other error may come after
        the file changed."""
        ...
