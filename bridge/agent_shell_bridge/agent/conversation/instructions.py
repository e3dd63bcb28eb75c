"""Nested AGENTS.md files join the system prompt when the agent first works under them."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...errors import BridgeError
from ...model.types import ToolCall
from ...project.instructions import InstructionFile, paths_in_arguments
from ..session.reporter import src

if TYPE_CHECKING:
    from ..session.live import LiveSession

__all__ = ["activate_nested_instructions", "announce_instructions", "session_instructions"]


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
    found = live.instructions.activate_for(paths_in_arguments(arguments))
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
