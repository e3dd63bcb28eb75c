"""Shared pieces of the benchmarks: figures, sizes, statistics, machine facts.

Every benchmark reports :class:`Figure` objects: a measured value, a baseline measured
in the same run on the same machine, and their ratio, so numbers from different
machines can be compared by their ratios rather than their absolute values.
"""

from __future__ import annotations

import os
import platform
import shutil
import statistics
import subprocess
import sys
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

__all__ = [
    "SCALES",
    "Figure",
    "Scale",
    "bridge_command",
    "clean_env",
    "compile_bridge",
    "emacs_args",
    "machine_info",
    "median",
    "percentile",
    "ratio",
]

Better = Literal["higher", "lower"]


@dataclass(frozen=True)
class Scale:
    """Sizes of every benchmark; ``small`` keeps the harness exercised in seconds."""

    name: str
    startup_runs: int
    relay_chunks: int
    relay_reps: int
    relay_latency_chunks: int
    relay_latency_gap_ms: int
    emacs_chunks: int
    emacs_history_bytes: int
    emacs_reps: int
    stream_chars: int
    stream_deltas: int
    stream_reps: int
    policy_rounds: int
    capture_bytes: int
    memory_files: int
    memory_queries: int
    context_steps: int
    context_lines: int
    sandbox_runs: int
    search_files: int
    search_reps: int
    log_early_turns: int
    log_late_turns: int
    log_measured_turns: int
    log_open_bytes: int
    log_open_reps: int
    # @ completion: files in the repository, and runs of each measure.
    mention_files: int = 100_000
    mention_reps: int = 9
    growth_turns: int = 500
    growth_window: int = 10


SCALES: dict[str, Scale] = {
    "small": Scale(
        name="small",
        startup_runs=1,
        relay_chunks=200,
        relay_reps=1,
        relay_latency_chunks=30,
        relay_latency_gap_ms=2,
        emacs_chunks=300,
        emacs_history_bytes=200_000,
        emacs_reps=1,
        stream_chars=20_800,
        stream_deltas=2_000,
        stream_reps=1,
        policy_rounds=1,
        capture_bytes=4 * 1024**2,
        memory_files=150,
        memory_queries=20,
        context_steps=3,
        context_lines=400,
        sandbox_runs=2,
        search_files=2_000,
        search_reps=1,
        mention_files=2_000,
        mention_reps=3,
        growth_turns=12,
        growth_window=3,
        log_early_turns=3,
        log_late_turns=12,
        log_measured_turns=3,
        log_open_bytes=100_000,
        log_open_reps=1,
    ),
    "full": Scale(
        name="full",
        startup_runs=11,
        relay_chunks=10_000,
        relay_reps=3,
        relay_latency_chunks=1_000,
        relay_latency_gap_ms=5,
        emacs_chunks=20_000,
        emacs_history_bytes=5 * 1024**2,
        emacs_reps=3,
        stream_chars=208_000,
        stream_deltas=20_000,
        stream_reps=5,
        policy_rounds=5,
        capture_bytes=1024**3,
        memory_files=10_000,
        memory_queries=100,
        context_steps=15,
        context_lines=2_000,
        sandbox_runs=15,
        search_files=100_000,
        search_reps=5,
        log_early_turns=50,
        log_late_turns=5_000,
        log_measured_turns=50,
        log_open_bytes=16 * 1024**2,
        log_open_reps=3,
    ),
}


def ratio(value: float, baseline: float) -> float | None:
    return value / baseline if baseline else None


@dataclass
class Figure:
    """One measured figure against its baseline (``ratio = value / baseline``)."""

    key: str
    title: str
    unit: str
    value: float
    baseline: float
    baseline_label: str
    better: Better
    details: dict[str, Any] = field(default_factory=dict)

    @property
    def ratio(self) -> float | None:
        return ratio(self.value, self.baseline)

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["ratio"] = self.ratio
        return data


def median(values: list[float]) -> float:
    return statistics.median(values) if values else 0.0


def percentile(values: list[float], pct: float) -> float:
    """Nearest-rank percentile; ``pct`` in 0..100."""
    if not values:
        return 0.0
    ordered = sorted(values)
    rank = max(1, min(len(ordered), round(pct / 100 * len(ordered) + 0.5)))
    return ordered[rank - 1]


def bridge_command() -> list[str]:
    """The installed console script next to this interpreter, else on PATH."""
    beside = Path(sys.executable).parent / "agent-shell-bridge"
    if os.access(beside, os.X_OK):
        return [str(beside)]
    found = shutil.which("agent-shell-bridge")
    if found is None:
        raise RuntimeError("agent-shell-bridge is not installed (make deps)")
    return [found]


def compile_bridge() -> None:
    """Byte-compile the bridge package, as installing it from a wheel does.

    Its dependencies were compiled when pip installed them; the bridge itself is an
    editable install, which under ``PYTHONDONTWRITEBYTECODE`` (set in some shells and
    CI images) would compile every one of its modules again at every start. Start-up
    figures time the installed program, not the compiler.
    """
    import compileall

    import agent_shell_bridge

    package = Path(agent_shell_bridge.__file__).parent
    if not compileall.compile_dir(str(package), quiet=1):
        raise RuntimeError(f"cannot byte-compile {package}")


def clean_env(**extra: str) -> dict[str, str]:
    """The environment without model keys or settings, plus ``extra``."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("AGENT_SHELL_", "DEEPSEEK_", "OPENAI_"))
    }
    env["PYTHONUNBUFFERED"] = "1"
    env.update(extra)
    return env


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8").splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _emacs_version(emacs: str) -> str:
    try:
        out = subprocess.run(
            [emacs, "--version"], capture_output=True, text=True, timeout=30, check=True
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return "unavailable"
    return out.splitlines()[0] if out else "unknown"


def machine_info(emacs: str) -> dict[str, Any]:
    return {
        "cpu": _cpu_model(),
        "cores": os.cpu_count(),
        "python": platform.python_version(),
        "emacs": _emacs_version(emacs),
        "system": f"{platform.system()} {platform.release()}",
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        # Other work on the machine skews timings; ratios suffer less than values.
        "load_avg_1m": round(os.getloadavg()[0], 2),
    }


def emacs_args(emacs: str, bench_file: str, *evals: str, terminal: bool = False) -> list[str]:
    """An Emacs command line with the package and a bench file loaded, then ``evals``."""
    root = Path(__file__).resolve().parent.parent
    args = [emacs, "-nw", "-Q"] if terminal else [emacs, "-Q", "--batch"]
    args += ["-L", str(root / "elisp"), "-L", str(root / "bench")]
    args += ["-l", str(root / "bench" / bench_file)]
    for form in evals:
        args += ["--eval", form]
    return args
