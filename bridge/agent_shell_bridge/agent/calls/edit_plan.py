"""An edit planned against the file as the user sees it: the editor's buffer where
the client serves files (ACP), else the disk; the decision shows its diff."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import TYPE_CHECKING

from ...tools import files
from ...tools.catalogue import EditArgs

if TYPE_CHECKING:
    from ..session.live import LiveSession

__all__ = ["plan_edit"]


async def plan_edit(
    live: LiveSession, args: EditArgs, resolved: Path, display: str, expected: str | None
) -> files.PlannedEdit:
    """The edit against the file as the client has it, else as the disk has it."""
    client = live.client.files
    if client is None:
        return await asyncio.to_thread(files.plan_edit, args, resolved, display, expected)
    text = await client.read(live.state.id, resolved)
    current = text.encode("utf-8") if text is not None else None
    return files.plan_edit(args, resolved, display, expected, current=current)
