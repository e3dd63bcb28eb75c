"""Extraction triggers: only key events cost a model call."""

from __future__ import annotations

import pytest

from agent_shell_bridge.memory.triggers import TaskEvents, extraction_decision, is_dependency_file


def test_fail_fix_pass_extracts() -> None:
    ok, reason = extraction_decision(
        TaskEvents(verification_results=[False, False, True], edits_after_failure=True)
    )
    assert ok and reason == "fail→fix→pass in this task"


def test_fail_then_pass_without_edits_is_flaky_not_a_lesson() -> None:
    ok, reason = extraction_decision(TaskEvents(verification_results=[False, True]))
    assert not ok and "flaky" in reason


def test_fix_that_never_passes_is_archived() -> None:
    ok, reason = extraction_decision(
        TaskEvents(verification_results=[False, False], edits_after_failure=True)
    )
    assert not ok and "never passed" in reason


@pytest.mark.parametrize("results", [[], [True], [True, True]])
def test_trivial_task_is_archived_without_a_model_call(results: list[bool]) -> None:
    ok, reason = extraction_decision(TaskEvents(verification_results=results))
    assert not ok and reason.startswith("no key event")


def test_user_request_always_extracts() -> None:
    ok, reason = extraction_decision(TaskEvents(user_requested=True))
    assert ok and "user" in reason


@pytest.mark.parametrize(
    "path",
    [
        "pyproject.toml",
        "sub/dir/package.json",
        "go.mod",
        "Cargo.toml",
        "requirements.txt",
        "requirements-dev.txt",
        "C:\\work\\requirements_test.txt",
    ],
)
def test_dependency_change_extracts(path: str) -> None:
    ok, reason = extraction_decision(TaskEvents(dependency_files_changed=[path]))
    assert (
        ok
        and reason.startswith("stack change:")
        and path.replace("\\", "/").split("/")[-1] in reason
    )


@pytest.mark.parametrize("path", ["src/main.go", "README.md", "go.sum", "notes/pyproject.toml.bak"])
def test_other_files_are_not_a_stack_change(path: str) -> None:
    assert not is_dependency_file(path)
    assert extraction_decision(TaskEvents(dependency_files_changed=[path]))[0] is False


def test_branch_switch_extracts() -> None:
    ok, reason = extraction_decision(TaskEvents(branch_changed=True))
    assert ok and reason == "stack change: branch switched"
