"""A project's hook commands, ``.agent-shell/hooks.json``: read as data, used once trusted.

The file names commands to run around the agent's steps::

    {"pre_tool": [{"tools": ["run_command"], "command": "./scripts/check-cmd"}],
     "post_tool": [{"tools": ["write_file"], "command": "./scripts/fmt"}],
     "turn_end": [{"command": "./scripts/notify"}]}

``tools`` absent means every tool. The file arrives with a clone, so it counts only
while its bytes are the ones the user trusted (:mod:`.trust`, kind ``hooks``); the
check hashes the very bytes parsed here. Running the commands is the agent's
business (``agent/calls/project_hooks.py``), always inside the sandbox.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from .files import read_project_file
from .trust import TRUSTED_KINDS, TrustRecord

__all__ = [
    "EVENTS",
    "HookCommand",
    "HooksFile",
    "HooksStatus",
    "ProjectHooks",
    "hooks_path",
    "load_project_hooks",
    "parse_hooks",
]

Event = Literal["pre_tool", "post_tool", "turn_end"]
EVENTS: tuple[Event, ...] = ("pre_tool", "post_tool", "turn_end")
HooksStatus = Literal["none", "trusted", "untrusted", "invalid"]


class HookCommand(BaseModel):
    """One command of the file: which tools it applies to (None: all) and the line."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    command: str = Field(min_length=1, max_length=10_000)
    tools: tuple[str, ...] | None = Field(None, max_length=200)

    def applies_to(self, tool: str | None) -> bool:
        return self.tools is None or tool is None or tool in self.tools


class HooksFile(BaseModel):
    """The whole file; an unknown event is an error, not silently ignored."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    pre_tool: tuple[HookCommand, ...] = Field((), max_length=50)
    post_tool: tuple[HookCommand, ...] = Field((), max_length=50)
    turn_end: tuple[HookCommand, ...] = Field((), max_length=50)

    def commands(self, event: Event, tool: str | None = None) -> list[tuple[int, HookCommand]]:
        """The commands of ``event`` that apply to ``tool``, with their index in the file."""
        return [(i, h) for i, h in enumerate(getattr(self, event)) if h.applies_to(tool)]


@dataclass(frozen=True, slots=True)
class ProjectHooks:
    """What became of the project's hooks.json: its status and, once trusted, its hooks."""

    status: HooksStatus
    hooks: HooksFile | None = None
    error: str | None = None
    digest: str = ""


def hooks_path(root: Path) -> Path:
    return root / TRUSTED_KINDS["hooks"].path


def parse_hooks(content: bytes) -> HooksFile:
    """The hooks of ``content``; ValueError (with the reason) when it is not the format."""
    try:
        data = json.loads(content.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise ValueError(f"hooks.json is not UTF-8 JSON: {exc}") from exc
    try:
        return HooksFile.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(x) for x in e['loc']) or 'file'}: {e['msg']}"
            for e in exc.errors(include_url=False, include_input=False)
        )
        raise ValueError(f"hooks.json is not in the hooks format: {problems}") from exc


def load_project_hooks(root: Path, trust: TrustRecord) -> ProjectHooks:
    """The project's hooks when its file is trusted as it is on disk now."""
    content = read_project_file(hooks_path(root))
    if content is None:
        return ProjectHooks("none")
    digest = hashlib.sha256(content).hexdigest()
    if not trust.is_trusted_content(root, content):
        return ProjectHooks("untrusted", digest=digest)
    try:
        return ProjectHooks("trusted", parse_hooks(content), digest=digest)
    except ValueError as exc:
        return ProjectHooks("invalid", error=str(exc), digest=digest)
