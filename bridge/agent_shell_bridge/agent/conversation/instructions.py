"""Nested AGENTS.md files join the system prompt when the agent first works under them."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from ...errors import BridgeError
from ...model.types import ToolCall
from ...project.instructions import (
    NESTED_NAME,
    READ_CAP,
    InstructionFile,
    paths_in_arguments,
    restored_dirs,
)
from ..session.reporter import src

if TYPE_CHECKING:
    from ..session.live import LiveSession

__all__ = [
    "activate_nested_instructions",
    "announce_instructions",
    "restore_remote_instructions",
    "session_instructions",
]


def session_instructions(live: LiveSession) -> list[InstructionFile]:
    return live.instructions.all_files() if live.instructions is not None else []


async def activate_nested_instructions(
    live: LiveSession, call: ToolCall, parent: str | None
) -> list[InstructionFile]:
    """Activate the AGENTS.md files governing the paths ``call`` touched, announcing each once."""
    if live.instructions is None:
        return []
    try:
        arguments = call.parsed_arguments()
    except BridgeError:
        return []
    paths = paths_in_arguments(arguments)
    if live.remote is None:
        found = live.instructions.activate_for(paths)
    else:  # read there, through the connection
        localized = [live.remote.localize(p) for p in paths]
        found = await _fetch_remote(live, live.instructions.pending_dirs(localized))
    for item in found:
        live.state.active_instructions.append(item.label)
        await live.reporter.entry(
            f"Instructions: {item.label} now applies",
            source="bridge",
            parent=parent,
            properties={"PATH": item.label},
            body=[src(item.text, "markdown")],
        )
    return found


async def announce_instructions(live: LiveSession) -> None:
    """Say in the log which instruction files the session starts with."""
    files = session_instructions(live)
    if not files:
        return
    await live.reporter.entry(
        "Instructions: " + ", ".join(f.label for f in files),
        source="bridge",
        parent=None,
        properties={"FILES": len(files)},
        body=[src(f"--- {f.label}\n{f.text}", "markdown") for f in files],
    )


async def restore_remote_instructions(live: LiveSession) -> None:
    """A resumed remote session's nested files, read again on the host."""
    if live.instructions is not None and live.remote is not None:
        await _fetch_remote(live, restored_dirs(live.state.active_instructions))


async def _fetch_remote(live: LiveSession, dirs: Sequence[Path]) -> list[InstructionFile]:
    """``AGENTS.md`` in each of DIRS on a remote project's host, in one request: the
    helper reads each only when it is a regular file inside the project after its
    links are resolved there (as :func:`...project.instructions._project_file`)."""
    if not dirs or live.remote is None or live.instructions is None:
        return []
    names = [(d / NESTED_NAME).as_posix() for d in dirs]
    try:
        shipped = await live.remote.files.shipped(names, max_bytes=READ_CAP)
    except BridgeError:  # a drop, a helper failure: looked at again the next time
        return []
    found: list[InstructionFile] = []
    for directory, name in zip(dirs, names, strict=True):
        item = shipped.get(name)
        raw = item.content() if item is not None and item.state in ("file", "link") else None
        nested = live.instructions.accept(directory, raw)
        if nested is not None:
            found.append(nested)
    return found
