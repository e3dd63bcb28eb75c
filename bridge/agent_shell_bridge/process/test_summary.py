"""Summarise test-runner output so ``run_test`` reports failures, not just an exit code.

Runners differ (unittest, pytest, go test, cargo test, jest, vitest, mocha, ERT,
plain ``N passed, N failed`` lines), and wrappers sometimes swallow a failing exit
status, so the summary is read from the text: counts where a runner prints them
(summed when one command runs several), and excerpts around every
``FAILED``/``ERROR``/``AssertionError``/``Traceback``/``--- FAIL``/``panic:`` line.
Output in no known format has no counts at all -- "no summary", never zeros.
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
# vitest: "      Tests  1 failed | 2 passed (3)" (not "Test Files  …").
_VITEST_RE = re.compile(r"^\s*Tests\s{2,}(\d+ \w+(?: \| \d+ \w+)*) \(\d+\)\s*$", re.MULTILINE)
_PYTEST_TAIL_RE = re.compile(
    r"^(?:=+ )?(\d+ (?:passed|failed|errors?|skipped|deselected|xfailed|xpassed)\b.*?)"
    r" in [\d.]+s",
    re.MULTILINE,
)
# unittest: "Ran 3 tests in 0.001s", a blank line, then "OK" or "FAILED (failures=1, …)".
_UNITTEST_RE = re.compile(
    r"^Ran (\d+) tests? in [\d.]+s\s*\n(?:\s*\n)*(OK|FAILED)(?: \(([^)]*)\))?\s*$",
    re.MULTILINE,
)
# ERT: "Ran 12 tests, 11 results as expected, 1 unexpected, 2 skipped (2026-…)".
_ERT_RE = re.compile(
    r"^Ran (\d+) tests?, (\d+) results? as expected(?:, (\d+) unexpected)?"
    r"(?:, (\d+) skipped)?",
    re.MULTILINE,
)
_MOCHA_RE = re.compile(r"^\s*(\d+) (passing|failing|pending)\b", re.MULTILINE)
_GO_PASS_RE = re.compile(r"^(ok)\s+\S+", re.MULTILINE)
_GO_FAIL_RE = re.compile(r"^(FAIL)\s+\S+", re.MULTILINE)


@dataclass
class TestSummary:
    """Counts (``None`` when the runner did not say) and failure excerpt lines.

    ``runner`` names the format the counts were read from, or is None when no known
    summary was found: then the counts stay None ("no summary"), never zeros.
    """

    __test__ = False  # not a pytest test class despite the name

    passed: int | None = None
    failed: int | None = None
    errors: int | None = None
    failures: list[str] = field(default_factory=list)
    runner: str | None = None

    def ok(self, exit_code: int | None) -> bool:
        """True only when the exit code is 0 and nothing in the output shows a failure."""
        return exit_code == 0 and not self.failed and not self.errors and not self.failures

    def add(self, runner: str, passed: int | None, failed: int | None, errors: int | None) -> None:
        """Add one runner's counts (a ``make test`` may run several)."""
        if self.runner is None:
            self.runner = runner
        elif runner not in self.runner.split("+"):
            self.runner += "+" + runner
        if passed is not None:
            self.passed = _add(self.passed, passed)
        if failed is not None:
            self.failed = _add(self.failed, failed)
        if errors is not None:
            self.errors = _add(self.errors, errors)


def _add(current: int | None, value: int) -> int:
    return value if current is None else current + value


def _words(line: str) -> tuple[int | None, int | None, int | None]:
    """Counts from a "2 failed, 8 passed, 1 error" style line."""
    passed = failed = errors = None
    for num, word in _COUNT_RE.findall(line):
        kind = word.lower()
        if kind == "passed":
            passed = _add(passed, int(num))
        elif kind == "failed" or kind.startswith("failure"):
            failed = _add(failed, int(num))
        elif kind.startswith("error"):
            errors = _add(errors, int(num))
    return passed, failed, errors


def _unittest(text: str, summary: TestSummary) -> None:
    for m in _UNITTEST_RE.finditer(text):
        ran = int(m.group(1))
        detail = dict(
            (k.strip(), int(v)) for k, v in re.findall(r"([a-z ]+)=(\d+)", m.group(3) or "")
        )
        failed = detail.get("failures", 0) + detail.get("unexpected successes", 0)
        errors = detail.get("errors", 0)
        not_run = detail.get("skipped", 0) + detail.get("expected failures", 0)
        summary.add("unittest", max(0, ran - failed - errors - not_run), failed, errors)


def _ert(text: str, summary: TestSummary) -> None:
    for m in _ERT_RE.finditer(text):
        summary.add("ert", int(m.group(2)), int(m.group(3) or 0), None)


def _counts(text: str, summary: TestSummary) -> None:
    for passed, failed in _CARGO_RE.findall(text):
        summary.add("cargo", int(passed), int(failed), None)
    _unittest(text, summary)
    _ert(text, summary)
    pytest_lines = [m.group(1) for m in _PYTEST_TAIL_RE.finditer(text)]
    if pytest_lines:
        summary.add("pytest", *_words(pytest_lines[-1]))
    jest = [m.group(1) for m in _JEST_RE.finditer(text)]
    if jest:
        summary.add("jest", *_words(jest[-1]))
    vitest = [m.group(1) for m in _VITEST_RE.finditer(text)]
    if vitest:
        summary.add("vitest", *_words(vitest[-1]))
    mocha = dict((w, int(n)) for n, w in _MOCHA_RE.findall(text))
    if "passing" in mocha or "failing" in mocha:
        summary.add("mocha", mocha.get("passing", 0), mocha.get("failing", 0), None)
    if summary.runner is not None:
        return
    plain = [
        ln
        for ln in text.splitlines()
        if re.fullmatch(r"\s*(\w+:\s*)?\d+ passed, \d+ failed(, \d+ skipped)?\s*", ln)
    ]
    if plain:
        summary.add("plain", *_words(plain[-1]))
        return
    go_ok = len(_GO_PASS_RE.findall(text))
    go_fail = len(_GO_FAIL_RE.findall(text))
    if go_ok or go_fail:
        fails = len(re.findall(r"^\s*--- FAIL:", text, re.MULTILINE))
        passes = len(re.findall(r"^\s*--- PASS:", text, re.MULTILINE))
        summary.add("go", passes if passes else None, fails or go_fail, None)


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
