"""What one turn remembers about itself: guards, verification history, changes."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field

from ..types import JSONObject

__all__ = ["DEPENDENCY_FILES", "TurnState", "call_signature"]

DEPENDENCY_FILES = frozenset(
    {
        "pyproject.toml",
        "setup.py",
        "setup.cfg",
        "Pipfile",
        "poetry.lock",
        "package.json",
        "package-lock.json",
        "go.mod",
        "Cargo.toml",
        "Gemfile",
        "pom.xml",
        "build.gradle",
    }
)


def call_signature(name: str, args: JSONObject) -> str:
    return name + json.dumps(args, sort_keys=True, ensure_ascii=False)


@dataclass
class TurnState:
    turn_id: str
    task_entry: str
    prompt: str
    started_ms: float
    steps: int = 0
    model_calls: int = 0
    tool_calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cached_tokens: int = 0
    calls_seen: Counter[str] = field(default_factory=Counter)
    failures_by_tool: Counter[str] = field(default_factory=Counter)
    verification: list[bool] = field(default_factory=list)
    edits_after_failure: bool = False
    dependency_changes: list[str] = field(default_factory=list)
    files_changed: list[str] = field(default_factory=list)
    completed: str | None = None
    last_failure: str = ""
    branch_at_start: str | None = None
    # The mode this turn runs in, and the session's own mode to restore afterwards.
    mode: str = "act"
    restore_mode: str | None = None

    def record_edit(self, path: str) -> None:
        if path not in self.files_changed:
            self.files_changed.append(path)
        if self.verification and not self.verification[-1]:
            self.edits_after_failure = True
        name = path.rsplit("/", 1)[-1]
        if (name in DEPENDENCY_FILES or name.startswith("requirements")) and (
            path not in self.dependency_changes
        ):
            self.dependency_changes.append(path)
