"""Summarise test-runner output so ``run_test`` reports failures, not just an exit code.

Runners differ (pytest, go test, cargo test, jest/npm, plain ``N passed, N failed``
lines), and wrappers sometimes swallow a failing exit status, so the summary is read
from the text: counts where a runner prints them, and excerpts around every
``FAILED``/``ERROR``/``AssertionError``/``Traceback``/``--- FAIL``/``panic:`` line.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["TestSummary", "detect_test_command", "summarize_test_output"]

_CONTEXT_AFTER = 5
_MAX_EXCERPT_LINES = 80
_FAILURE_RE = re.compile(
    r"(^FAILED\b|^ERROR\b|^E\s+\w*Error|AssertionError|^Traceback \(most recent call last\)"
    r"|^\s*--- FAIL:|^FAIL\b|^panic:|^thread '.*' panicked|^\s*●\s|^not ok\b|^error(\[E\d+\])?:)"
)
_COUNT_RE = re.compile(
    r"(\d+)\s+(passed|failed|errors?|error|failures?|skipped|xfailed|xpassed)", re.IGNORECASE
)
_CARGO_RE = re.compile(r"test result: \w+\. (\d+) passed; (\d+) failed")
_JEST_RE = re.compile(r"^Tests:\s+(.*)$", re.MULTILINE)
_PYTEST_TAIL_RE = re.compile(
    r"^(?:=+ )?(\d+ (?:passed|failed|errors?|skipped|deselected|xfailed|xpassed)\b.*?)"
    r" in [\d.]+s",
    re.MULTILINE,
)
_GO_PASS_RE = re.compile(r"^(ok)\s+\S+", re.MULTILINE)
_GO_FAIL_RE = re.compile(r"^(FAIL)\s+\S+", re.MULTILINE)


@dataclass
class TestSummary:
    """Counts (``None`` when the runner did not say) and failure excerpt lines."""

    __test__ = False  # not a pytest test class despite the name

    passed: int | None = None
    failed: int | None = None
    errors: int | None = None
    failures: list[str] = field(default_factory=list)

    def ok(self, exit_code: int | None) -> bool:
        """True only when the exit code is 0 and nothing in the output shows a failure."""
        return exit_code == 0 and not self.failed and not self.errors and not self.failures


def _add(current: int | None, value: int) -> int:
    return value if current is None else current + value


def _counts(text: str, summary: TestSummary) -> None:
    cargo = _CARGO_RE.findall(text)
    if cargo:
        summary.passed = sum(int(p) for p, _ in cargo)
        summary.failed = sum(int(f) for _, f in cargo)
        return
    lines: list[str] = [m.group(1) for m in _PYTEST_TAIL_RE.finditer(text)]
    lines += [m.group(1) for m in _JEST_RE.finditer(text)]
    if not lines:
        lines = [
            ln
            for ln in text.splitlines()
            if re.fullmatch(r"\s*(\w+:\s*)?\d+ passed, \d+ failed(, \d+ skipped)?\s*", ln)
        ]
    if lines:
        line = lines[-1]
        for num, word in _COUNT_RE.findall(line):
            kind = word.lower()
            if kind == "passed":
                summary.passed = _add(summary.passed, int(num))
            elif kind == "failed" or kind.startswith("failure"):
                summary.failed = _add(summary.failed, int(num))
            elif kind.startswith("error"):
                summary.errors = _add(summary.errors, int(num))
        return
    go_ok = len(_GO_PASS_RE.findall(text))
    go_fail = len(_GO_FAIL_RE.findall(text))
    if go_ok or go_fail:
        fails = len(re.findall(r"^\s*--- FAIL:", text, re.MULTILINE))
        passes = len(re.findall(r"^\s*--- PASS:", text, re.MULTILINE))
        summary.failed = fails or go_fail
        summary.passed = passes if passes else None


def summarize_test_output(text: str) -> TestSummary:
    """Read counts and failure excerpts from a test runner's output."""
    summary = TestSummary()
    _counts(text, summary)
    lines = text.splitlines()
    taken_until = -1
    for i, line in enumerate(lines):
        if len(summary.failures) >= _MAX_EXCERPT_LINES:
            break
        if i <= taken_until or not _FAILURE_RE.search(line):
            continue
        end = min(len(lines), i + 1 + _CONTEXT_AFTER)
        summary.failures.extend(lines[i:end][: _MAX_EXCERPT_LINES - len(summary.failures)])
        taken_until = end - 1
    return summary


def _has_make_target(makefile: Path, target: str) -> bool:
    try:
        text = makefile.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False
    return re.search(rf"^{re.escape(target)}\s*:", text, re.MULTILINE) is not None


def _npm_has_test(package_json: Path) -> bool:
    try:
        data = json.loads(package_json.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    scripts = data.get("scripts") if isinstance(data, dict) else None
    test = scripts.get("test") if isinstance(scripts, dict) else None
    return isinstance(test, str) and "no test specified" not in test


def detect_test_command(root: Path) -> str | None:
    """Guess the project's test command from the files at ``root``."""
    if (root / "Makefile").is_file() and _has_make_target(root / "Makefile", "test"):
        return "make test"
    python_markers = ("pytest.ini", "conftest.py", "tox.ini", "setup.cfg", "pyproject.toml")
    if any((root / m).is_file() for m in python_markers) or any(
        any(root.glob(pattern))
        for pattern in ("test_*.py", "*_test.py", "tests/test_*.py", "test/test_*.py")
    ):
        # `python -m pytest` also puts the root on sys.path, as a flat project needs.
        return "python -m pytest"
    if (root / "go.mod").is_file():
        return "go test ./..."
    if (root / "Cargo.toml").is_file():
        return "cargo test"
    if (root / "package.json").is_file() and _npm_has_test(root / "package.json"):
        return "npm test"
    return None
