"""``commands/list``: the custom /commands a project's prompt line offers."""

from __future__ import annotations

import asyncio
from typing import Any

from ..project.commands import CommandFileError, discover_commands, parse_command_file
from ..project.instructions import user_config_dir
from ..runtime import Runtime
from ..transport.rpc import Dispatcher
from ..wire import Params
from .session import project_root

__all__ = ["register"]


class ListParams(Params):
    cwd: str


def list_commands(rt: Runtime, cwd: str) -> dict[str, Any]:
    root = project_root(cwd)
    user_dir = rt.config.user_config_dir or user_config_dir()
    commands: list[dict[str, object]] = []
    errors: list[dict[str, str]] = []
    for name, (scope, path) in sorted(discover_commands(root, user_dir).items()):
        try:
            commands.append(parse_command_file(path, scope).describe())
        except CommandFileError as exc:
            errors.append({"name": name, "path": str(path), "message": exc.message})
    return {"commands": commands, "errors": errors}


def register(d: Dispatcher[Runtime]) -> None:
    @d.method("commands/list", ListParams)
    async def list_(rt: Runtime, p: ListParams) -> dict[str, Any]:
        return await asyncio.to_thread(list_commands, rt, p.cwd)
