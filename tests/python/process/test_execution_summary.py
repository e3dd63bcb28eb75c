"""Test-output summaries: counts per runner, failure excerpts, and detection by files."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agent_rig import allow_once, make_project, running_rig, tool_messages
from agent_shell_bridge.process.runner import ProcessRunner
from agent_shell_bridge.process.test_summary import detect_test_command, summarize_test_output

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
    pytest_bin = Path(__file__).resolve().parents[3] / ".venv" / "bin" / "pytest"
    result = await runner.run_argv(
        [str(pytest_bin), "-q", "-p", "no:cacheprovider", "test_demo.py"],
        cwd=tmp_path,
        timeout_s=60,
    )
    summary = summarize_test_output(result.stdout)
    assert result.exit_code == 1
    assert (summary.passed, summary.failed) == (1, 1)
    assert not summary.ok(result.exit_code) and not summary.ok(0)


UNITTEST_MIXED = """\
import unittest


class T(unittest.TestCase):
    def test_ok(self):
        pass

    def test_fail(self):
        self.assertEqual(1, 2)

    def test_error(self):
        raise RuntimeError("出错了")

    @unittest.skip("later")
    def test_skip(self):
        pass

    @unittest.expectedFailure
    def test_expected(self):
        self.assertEqual(1, 2)
"""


async def _run(argv: list[str], cwd: Path) -> str:
    result = await ProcessRunner(cwd / ".logs").run_argv(argv, cwd=cwd, timeout_s=60)
    return result.stdout + "\n" + result.stderr


async def test_real_unittest_runs_are_counted(tmp_path: Path) -> None:
    """Regression: the demo's unittest run (3 tests, 1 failure) read "0 passed, 0 failed"."""
    demo = Path(__file__).resolve().parents[3] / "demo" / "project"
    for name in ("glossary.py", "test_glossary.py", "terms.txt"):
        (tmp_path / name).write_bytes((demo / name).read_bytes())
    summary = summarize_test_output(await _run(["python3", "-m", "unittest", "-v"], tmp_path))
    assert (summary.passed, summary.failed, summary.errors, summary.runner) == (
        2,
        1,
        0,
        "unittest",
    )
    assert any(line.startswith("FAIL: test_chinese_stays_readable") for line in summary.failures)

    mixed = tmp_path / "mixed"
    mixed.mkdir()
    (mixed / "test_mixed.py").write_text(UNITTEST_MIXED, encoding="utf-8")
    summary = summarize_test_output(await _run(["python3", "-m", "unittest"], mixed))
    # Ran 5: 1 failure, 1 error, 1 skipped, 1 expected failure -> 1 passed.
    assert (summary.passed, summary.failed, summary.errors) == (1, 1, 1)
    assert not summary.ok(0)

    (mixed / "test_mixed.py").write_text(
        "import unittest\n\nclass T(unittest.TestCase):\n    def test_a(self):\n        pass\n"
        "    def test_b(self):\n        pass\n",
        encoding="utf-8",
    )
    summary = summarize_test_output(await _run(["python3", "-m", "unittest"], mixed))
    assert (summary.passed, summary.failed, summary.errors) == (2, 0, 0) and summary.ok(0)


def test_unittest_summary_lines() -> None:
    text = "Ran 7 tests in 0.010s\n\nFAILED (failures=1, errors=2)\n"
    summary = summarize_test_output(text)
    assert (summary.passed, summary.failed, summary.errors) == (4, 1, 2)
    ok = summarize_test_output("...\n---\nRan 3 tests in 0.001s\n\nOK (skipped=1)\n")
    assert (ok.passed, ok.failed, ok.errors) == (2, 0, 0)


async def test_real_ert_run_is_counted(tmp_path: Path) -> None:
    (tmp_path / "t.el").write_text(
        ";;; t.el --- -*- lexical-binding: t -*-\n"
        "(require 'ert)\n"
        "(ert-deftest t-ok () (should (= 1 1)))\n"
        '(ert-deftest t-ok-too () (should (string= "中文" "中文")))\n'
        "(ert-deftest t-bad () (should (= 1 2)))\n",
        encoding="utf-8",
    )
    out = await _run(
        ["emacs", "-Q", "--batch", "-l", "t.el", "-f", "ert-run-tests-batch-and-exit"], tmp_path
    )
    summary = summarize_test_output(out)
    assert (summary.passed, summary.failed, summary.runner) == (2, 1, "ert")


@pytest.mark.parametrize(
    ("text", "counts", "runner"),
    [
        (
            "=== RUN   TestA\n--- PASS: TestA (0.00s)\n=== RUN   TestB\n--- FAIL: TestB (0.00s)\n"
            "FAIL\nFAIL\texample.com/pkg\t0.004s\n",
            (1, 1),
            "go",
        ),
        (
            "running 3 tests\ntest a ... ok\ntest b ... ok\ntest c ... FAILED\n\n"
            "test result: FAILED. 2 passed; 1 failed; 0 ignored; 0 measured; 0 filtered out\n",
            (2, 1),
            "cargo",
        ),
        (
            "Test Suites: 1 failed, 1 total\nTests:       1 failed, 4 passed, 5 total\n",
            (4, 1),
            "jest",
        ),
        (
            " ❯ src/a.test.ts (3 tests | 1 failed) 5ms\n\n Test Files  1 failed (1)\n"
            "      Tests  1 failed | 2 passed (3)\n   Start at  10:00:00\n",
            (2, 1),
            "vitest",
        ),
        ("  3 passing (12ms)\n  1 failing\n\n  1) a\n", (3, 1), "mocha"),
        (
            "==== 5 passed in 0.1s ====\nRan 2 tests, 2 results as expected, 0 unexpected\n",
            (7, 0),
            "pytest+ert",
        ),
    ],
)
def test_runner_formats(text: str, counts: tuple[int, int], runner: str) -> None:
    summary = summarize_test_output(text)
    assert (summary.passed, summary.failed) == counts
    assert summary.runner is not None and set(summary.runner.split("+")) == set(runner.split("+"))


def test_unknown_format_has_no_counts_not_zeros() -> None:
    summary = summarize_test_output("building…\nall good, I think\n")
    assert (summary.passed, summary.failed, summary.errors, summary.runner) == (
        None,
        None,
        None,
        None,
    )


async def test_demo_run_test_reports_unittest_counts(serve_app: Any, tmp_path: Path) -> None:
    """The demo's path end to end: run_test runs `make test` (unittest) in the demo
    project, and the client's tool_call_update carries the real counts."""
    demo = Path(__file__).resolve().parents[3] / "demo" / "project"
    files = {p.name: p.read_text(encoding="utf-8") for p in demo.iterdir() if p.is_file()}
    root = make_project(tmp_path / "glossary", files)
    async with running_rig(
        serve_app, root, [{"tool_calls": [{"name": "run_test", "arguments": {}}]}, {"text": "ok"}]
    ) as rig:
        sid = await rig.new_session()
        turn = await rig.turn(sid, "run the tests", answer=allow_once)
        (done,) = turn.tool_results()
        summary = done["rawOutput"]["summary"]
        assert summary["passed"] == 2 and summary["failed"] == 1 and summary["errors"] == 0
        assert summary["runner"] == "unittest" and summary["ok"] is False
        assert done["status"] == "failed"
        model_view = tool_messages(rig.requests[1])[-1]
        assert '"passed": 2, "failed": 1' in model_view
