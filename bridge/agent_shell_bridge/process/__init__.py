"""Running child processes: own process group, limits, scrubbed environment, bounded capture.

- :mod:`.runner`: the runner (every command the agent runs goes through it);
- :mod:`.capture`: a child's output: its log file, head and tail;
- :mod:`.guard`: the watchdog of a command run outside the sandbox;
- :mod:`.test_summary`: what a test runner's output says (passed, failed, failures).

The names below load with their module on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._face import lazy_face

if TYPE_CHECKING:
    from .runner import ExecLimits, ProcessResult, ProcessRunner, scrubbed_environment, timeout_for
    from .test_summary import detect_test_command, summarize_test_output

__all__ = [
    "ExecLimits",
    "ProcessResult",
    "ProcessRunner",
    "detect_test_command",
    "scrubbed_environment",
    "summarize_test_output",
    "timeout_for",
]

_WHERE = {
    "ExecLimits": "runner",
    "ProcessResult": "runner",
    "ProcessRunner": "runner",
    "detect_test_command": "test_summary",
    "scrubbed_environment": "runner",
    "summarize_test_output": "test_summary",
    "timeout_for": "runner",
}

__getattr__ = lazy_face(__name__, _WHERE)
