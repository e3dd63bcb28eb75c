"""When a finished task is worth a model call to extract an experience.

Extraction costs a model call, so it runs only on key events: a failure that was
fixed and then verified in the same task, the user's explicit save, or a change of
stack (a dependency manifest added or changed, a branch switch).  Every other task is
archived as-is.  :func:`extraction_decision` is pure so the rule is easy to test.
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass, field
from pathlib import PurePath

__all__ = ["DEPENDENCY_FILES", "TaskEvents", "extraction_decision", "is_dependency_file"]

# Manifests that declare a project's stack; lock files follow them and add nothing.
DEPENDENCY_FILES: tuple[str, ...] = (
    "pyproject.toml",
    "setup.py",
    "setup.cfg",
    "Pipfile",
    "requirements*.txt",
    "requirements*.in",
    "environment.yml",
    "package.json",
    "go.mod",
    "Cargo.toml",
    "Gemfile",
    "pom.xml",
    "build.gradle",
    "build.gradle.kts",
    "composer.json",
    "mix.exs",
    "deps.edn",
    "Eask",
    "Cask",
)


@dataclass
class TaskEvents:
    """What happened during one task, as the agent loop observed it."""

    verification_results: list[bool] = field(default_factory=list)  # in order; True = passed
    edits_after_failure: bool = False
    user_requested: bool = False
    dependency_files_changed: list[str] = field(default_factory=list)
    branch_changed: bool = False


def is_dependency_file(path: str) -> bool:
    """True when ``path`` names a dependency manifest (by its base name)."""
    name = PurePath(path.replace("\\", "/")).name
    return any(fnmatch.fnmatchcase(name, pattern) for pattern in DEPENDENCY_FILES)


def _failure_then_pass(results: list[bool]) -> bool:
    seen_failure = False
    for ok in results:
        if not ok:
            seen_failure = True
        elif seen_failure:
            return True
    return False


def extraction_decision(ev: TaskEvents) -> tuple[bool, str]:
    """``(extract?, reason)`` for a finished task; the reason is shown to the user."""
    if ev.user_requested:
        return True, "user asked to save this experience"
    if _failure_then_pass(ev.verification_results):
        if ev.edits_after_failure:
            return True, "fail→fix→pass in this task"
        flaky = "verification failed then passed with no edit in between (flaky?)"
    else:
        flaky = ""
    deps = sorted({PurePath(p).name for p in ev.dependency_files_changed if is_dependency_file(p)})
    if deps:
        return True, "stack change: " + ", ".join(deps) + " changed"
    if ev.branch_changed:
        return True, "stack change: branch switched"
    if flaky:
        return False, f"no key event: {flaky}; archived without extraction"
    if ev.verification_results and not all(ev.verification_results):
        return False, "no key event: verification never passed after failing; archived"
    return False, "no key event: routine task archived without extraction"
