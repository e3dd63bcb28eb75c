"""Test-output summaries: counts per runner, failure excerpts, and detection by files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agent_shell_bridge.execution import ProcessRunner
from agent_shell_bridge.testing_summary import detect_test_command, summarize_test_output

PYTEST_FAIL = """\
============================= test session starts ==============================
collected 3 items

tests/test_x.py .F.                                                      [100%]

=================================== FAILURES ===================================
___________________________________ test_two ___________________________________

    def test_two():
>       assert 1 == 2
E       AssertionError: assert 1 == 2

tests/test_x.py:5: AssertionError
=========================== short test summary info ============================
FAILED tests/test_x.py::test_two - AssertionError: assert 1 == 2
========================= 1 failed, 2 passed in 0.03s ==========================
"""


def test_pytest_counts_and_excerpts() -> None:
    summary = summarize_test_output(PYTEST_FAIL)
    assert (summary.passed, summary.failed, summary.errors) == (2, 1, None)
    assert any(line.startswith("FAILED tests/test_x.py::test_two") for line in summary.failures)
    assert any("AssertionError" in line for line in summary.failures)
    assert not summary.ok(1)
    assert not summary.ok(0), "exit 0 is not proof when failures appear"


def test_pytest_errors_and_pass() -> None:
    text = "==== 3 passed, 1 error in 0.10s ====\nERROR tests/test_y.py - ImportError\n"
    summary = summarize_test_output(text)
    assert (summary.passed, summary.errors) == (3, 1)
    assert not summary.ok(0)
    ok = summarize_test_output("==== 12 passed in 0.5s ====\n")
    assert ok.passed == 12 and ok.ok(0) and not ok.ok(1) and not ok.ok(None)


def test_go_test_output() -> None:
    text = (
        "=== RUN   TestA\n--- PASS: TestA (0.00s)\n=== RUN   TestB\n"
        "    b_test.go:9: got 1 want 2\n--- FAIL: TestB (0.00s)\nFAIL\n"
        "FAIL\texample.com/pkg\t0.004s\nok  \texample.com/other\t0.002s\n"
    )
    summary = summarize_test_output(text)
    assert summary.failed == 1 and summary.passed == 1
    assert any("--- FAIL: TestB" in line for line in summary.failures)


def test_cargo_and_jest_and_plain_lines() -> None:
    cargo = summarize_test_output(
        "test a ... ok\ntest b ... FAILED\n\ntest result: FAILED. 1 passed; 1 failed; 0 ignored\n"
    )
    assert (cargo.passed, cargo.failed) == (1, 1)
    jest = summarize_test_output("Tests:       2 failed, 8 passed, 10 total\n")
    assert (jest.passed, jest.failed) == (8, 2)
    plain = summarize_test_output("results: 4 passed, 0 failed\n")
    assert (plain.passed, plain.failed) == (4, 0) and plain.ok(0)


def test_traceback_without_counts_is_a_failure() -> None:
    text = "running\nTraceback (most recent call last):\n  File 'x.py'\nValueError: boom\n"
    summary = summarize_test_output(text)
    assert summary.passed is None and summary.failed is None
    assert summary.failures[0].startswith("Traceback") and "ValueError: boom" in summary.failures
    assert not summary.ok(0)


def test_chinese_failure_text_survives() -> None:
    summary = summarize_test_output("FAILED tests/test_中文.py::测试 - 断言失败\n")
    assert summary.failures == ["FAILED tests/test_中文.py::测试 - 断言失败"]


def test_excerpts_are_bounded() -> None:
    text = "\n".join(f"FAILED t.py::test_{i}" for i in range(1000))
    assert len(summarize_test_output(text).failures) <= 80


@pytest.mark.parametrize(
    ("files", "expected"),
    [
        ({"Makefile": "all:\n\ntest:\n\tpytest\n"}, "make test"),
        ({"Makefile": "all:\n\techo\n", "pyproject.toml": ""}, "python -m pytest"),
        ({"tests/test_a.py": ""}, "python -m pytest"),
        # Regression: a flat project with test_calc.py at its root found no command.
        ({"calc.py": "", "test_calc.py": ""}, "python -m pytest"),
        ({"go.mod": "module x\n"}, "go test ./..."),
        ({"Cargo.toml": "[package]\n"}, "cargo test"),
        ({"package.json": json.dumps({"scripts": {"test": "jest"}})}, "npm test"),
        (
            {"package.json": json.dumps({"scripts": {"test": 'echo "Error: no test specified"'}})},
            None,
        ),
        ({"README.md": "hi"}, None),
    ],
)
def test_detect_test_command(tmp_path: Path, files: dict[str, str], expected: str | None) -> None:
    for name, content in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(content, encoding="utf-8")
    assert detect_test_command(tmp_path) == expected


async def test_real_pytest_run_is_summarised(tmp_path: Path) -> None:
    """A real failing pytest run under the runner: the summary sees through the output."""
    (tmp_path / "test_demo.py").write_text(
        "def test_ok():\n    assert True\n\ndef test_bad():\n    assert 2 + 2 == 5\n",
        encoding="utf-8",
    )
    runner = ProcessRunner(tmp_path / "logs")
    pytest_bin = Path(__file__).resolve().parents[2] / ".venv" / "bin" / "pytest"
    result = await runner.run_argv(
        [str(pytest_bin), "-q", "-p", "no:cacheprovider", "test_demo.py"],
        cwd=tmp_path,
        timeout_s=60,
    )
    summary = summarize_test_output(result.stdout)
    assert result.exit_code == 1
    assert (summary.passed, summary.failed) == (1, 1)
    assert not summary.ok(result.exit_code) and not summary.ok(0)
