"""What one turn remembers about itself: guards, verification history, changes."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field

from ...model.types import UsageCounts
from ...types import JSONObject, Prices
from .roles import Role

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
    started: float  # time.monotonic() when the turn began, in seconds
    steps: int = 0
    # What the turn consumed, its roles' sub-sessions included.
    usage: UsageCounts = field(default_factory=UsageCounts)
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
    # Set when this is a role's sub-session: what it may use, where it may write.
    role: Role | None = None
    # The reviewer's answer, when this is the reviewer's sub-session.
    verdict: JSONObject | None = None
    # Each edit's unified diff, in order: the turn's change as the reviewer sees it.
    diffs: list[str] = field(default_factory=list)
    # The newest test run's output (tail) and summary, for the reviewer.
    last_test_report: str = ""
    # Usage of the roles this turn ran, by role name (the lead's own is the rest).
    role_usage: dict[str, UsageCounts] = field(default_factory=dict)
    review_rounds: int = 0
    # Usage and prices per model, when the turn used more than one.
    usage_by_model: dict[str, UsageCounts] = field(default_factory=dict)
    prices_by_model: dict[str, Prices | None] = field(default_factory=dict)

    def add_usage_of(self, name: str, sub: TurnState) -> None:
        """Count a role's sub-session in this turn, in total and under its name."""
        self.usage.add(sub.usage)
        self.role_usage.setdefault(name, UsageCounts()).add(sub.usage)

    def usage_by_role(self) -> dict[str, UsageCounts] | None:
        """The turn's usage split into the lead's own and each role's (None: no roles)."""
        if not self.role_usage:
            return None
        lead = self.usage.counts()
        for part in self.role_usage.values():
            lead = lead - part
        return {"lead": lead, **{name: part.counts() for name, part in self.role_usage.items()}}

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
