"""Sandbox overhead: a small project's test run inside bubblewrap against outside it.

Both runs go through ``ProcessRunner.run_shell``, the path every agent command
takes: the baseline as an approved command runs (outside the sandbox, under the
guard), the value as an auto-allowed one runs (inside bubblewrap with every wall:
no network, the allowlisted filesystem, seccomp and Landlock's scopes). Runs
alternate so load on the machine hits both alike; the figure is the ratio of the
medians (the target is at most 1.15).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from agent_shell_bridge.process.runner import ProcessRunner
from agent_shell_bridge.sandbox import SANDBOX_ENV, SandboxSpec, detect_sandbox

from .common import Figure, Scale, median

__all__ = ["run"]

_TESTS = 40


def _make_project(root: Path) -> None:
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "__init__.py").write_text("", encoding="utf-8")
    (root / "pkg" / "calc.py").write_text(
        "def add(a: int, b: int) -> int:\n    return a + b\n", encoding="utf-8"
    )
    tests = ["from pkg.calc import add\n"]
    for n in range(_TESTS):
        tests.append(f"\ndef test_add_{n}() -> None:\n    assert add({n}, 1) == {n + 1}\n")
    (root / "test_calc.py").write_text("".join(tests), encoding="utf-8")
    git = ["git", "-c", "user.name=b", "-c", "user.email=b@example.invalid"]
    subprocess.run([*git, "init", "-q"], cwd=root, check=True)
    subprocess.run([*git, "add", "-A"], cwd=root, check=True)
    subprocess.run([*git, "commit", "-q", "-m", "init"], cwd=root, check=True)


async def run(scale: Scale, work: Path) -> list[Figure]:
    status = detect_sandbox({k: v for k, v in os.environ.items() if k != SANDBOX_ENV})
    if not status.available or status.kit is None:
        raise RuntimeError(f"bubblewrap cannot run here: {status.detail}")
    root = work / "project"
    _make_project(root)
    runner = ProcessRunner(work / "logs")
    spec = SandboxSpec(kit=status.kit, roots=(root,), home=Path.home())
    # As a user runs it: the project's virtualenv on PATH, its python by name.
    env = {"PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    command = "python -m pytest -q -p no:cacheprovider"
    outside: list[float] = []
    inside: list[float] = []
    for n in range(scale.sandbox_runs + 1):
        for sandbox, into in ((None, outside), (spec, inside)):
            result = await runner.run_shell(
                command, cwd=root, timeout_s=120, env=env, sandbox=sandbox
            )
            if result.exit_code != 0 or f"{_TESTS} passed" not in result.stdout:
                where = "inside" if sandbox else "outside"
                raise RuntimeError(f"the test run failed {where} the sandbox: {result.stdout}")
            if n:  # the first round warms caches
                into.append(result.duration_ms / 1000)
    return [
        Figure(
            key="sandbox_overhead",
            title="Sandbox: project test run",
            unit="s",
            value=median(inside),
            baseline=median(outside),
            baseline_label="the same run outside the sandbox",
            better="lower",
            details={"runs": scale.sandbox_runs, "tests": _TESTS, "target_ratio": 1.15},
        )
    ]
