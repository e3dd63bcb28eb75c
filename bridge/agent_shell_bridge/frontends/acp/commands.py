"""The ``/`` commands an ACP client completes: built-ins and the command files.

Sent as ``available_commands_update`` after ``session/new`` and ``session/load``,
and again whenever the project's or the user's command files change (a small poll
of the two folders: names, sizes and times, no file read until one changed).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from ...project.commands import command_dirs
from ...project.instructions import user_config_dir
from ...runtime import Runtime
from ...types import JSONObject

__all__ = ["BUILTIN_COMMANDS", "CommandWatch", "available_commands", "commands_signature"]

log = logging.getLogger(__name__)

# The prompt prefixes the core itself understands (methods/session.py).
BUILTIN_COMMANDS: tuple[JSONObject, ...] = (
    {
        "name": "ask",
        "description": "Run this one prompt in ask mode: answers only, no edits, no commands",
        "input": {"hint": "question"},
    },
    {
        "name": "act",
        "description": "Run this one prompt in act mode: edits and commands, risky steps ask",
        "input": {"hint": "task"},
    },
)
POLL_S = 1.0


def _user_dir(rt: Runtime) -> Path:
    return rt.config.user_config_dir or user_config_dir()


def commands_signature(rt: Runtime, root: Path) -> tuple[tuple[str, int, int], ...]:
    """What changes when a command file is added, removed or edited (blocking)."""
    found: list[tuple[str, int, int]] = []
    for _scope, directory in command_dirs(root, _user_dir(rt)):
        try:
            entries = sorted(directory.glob("*.md"))
        except OSError:
            continue
        for path in entries:
            try:
                st = path.stat()
            except OSError:
                continue
            found.append((str(path), st.st_mtime_ns, st.st_size))
    return tuple(found)


def available_commands(rt: Runtime, root: Path) -> JSONObject:
    """The ``available_commands_update`` for ROOT (blocking: reads the command files)."""
    from ...methods.commands import list_commands

    listed: dict[str, Any] = list_commands(rt, str(root))
    commands: list[JSONObject] = [dict(c) for c in BUILTIN_COMMANDS]
    for command in listed["commands"]:
        description = str(command.get("description") or "")
        scope = "your command" if command.get("scope") == "user" else "project command"
        commands.append(
            {
                "name": str(command["name"]),
                "description": description or f"{scope} {command['name']}",
                "input": {"hint": str(command.get("hint") or "text")},
            }
        )
    return {"sessionUpdate": "available_commands_update", "availableCommands": commands}


Send = Callable[[JSONObject], Awaitable[None]]


class CommandWatch:
    """Sends the command list now, then again after every change, until stopped."""

    def __init__(self, rt: Runtime, root: Path, send: Send, poll_s: float = POLL_S) -> None:
        self.rt = rt
        self.root = root
        self.send = send
        self.poll_s = poll_s
        self._task: asyncio.Task[None] | None = None
        self._seen: tuple[tuple[str, int, int], ...] | None = None

    async def publish(self) -> None:
        self._seen = await asyncio.to_thread(commands_signature, self.rt, self.root)
        await self.send(await asyncio.to_thread(available_commands, self.rt, self.root))

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.create_task(self._poll(), name="acp-commands")

    async def _poll(self) -> None:
        while True:
            await asyncio.sleep(self.poll_s)
            try:
                now = await asyncio.to_thread(commands_signature, self.rt, self.root)
                if now != self._seen:
                    await self.publish()
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("could not send the command list")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None
