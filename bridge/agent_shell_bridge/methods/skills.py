"""``skills/list``: the Agent Skills a project and the user's directories hold."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from pydantic import Field

from ..project.skills import find_skills
from ..runtime import Runtime
from ..transport.rpc import Dispatcher
from ..wire import Params
from .session import project_root

__all__ = ["register"]


class SkillsParams(Params):
    cwd: str
    directories: list[str] = Field(default_factory=list, max_length=50)


def register(d: Dispatcher[Runtime]) -> None:
    @d.method("skills/list", SkillsParams)
    async def skills(rt: Runtime, p: SkillsParams) -> dict[str, Any]:
        root = project_root(p.cwd)
        found = await asyncio.to_thread(find_skills, root, [Path(x) for x in p.directories])
        return {"skills": [s.to_json() for s in found]}
