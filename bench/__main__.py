"""``python -m bench``: run the benchmarks, print a table, write ``bench/results.json``.

Sizes come from ``--scale`` or ``BENCH_SCALE`` (``small`` or ``full``); ``--only``
picks benchmarks by name. ``--merge`` keeps the figures of an existing ``--out`` file
that this run did not measure (each figure records the date, scale and load of the
run that measured it), so re-running some benchmarks does not drop the others. Slow
numbers never fail the run; a benchmark that breaks (an exception, a missing figure)
makes the exit status non-zero.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import json
import logging
import math
import os
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

from .common import SCALES, Figure, Scale, machine_info

BENCHMARKS: tuple[str, ...] = (
    "startup",
    "relay",
    "emacs",
    "stream",
    "policy",
    "capture",
    "memory",
    "memory_turn_cost",
    "memory_recall",
    "context",
    "sandbox",
    "search",
    "mention",
    "session_growth",
    "log_buffer_growth",
    "dashboard",
)

Runner = Callable[[Scale, Path], Awaitable[list[Figure]]]


def _fmt(value: float | None) -> str:
    if value is None or math.isnan(value):
        return "–"
    if value == 0:
        return "0"
    magnitude = abs(value)
    if magnitude >= 100:
        return f"{value:,.0f}"
    if magnitude >= 10:
        return f"{value:.1f}"
    if magnitude >= 0.01:
        return f"{value:.3g}"
    return f"{value:.2e}"


def render_table(machine: dict[str, Any], figures: Sequence[Figure]) -> str:
    rows = [("Figure", "Value", "Baseline", "Ratio", "Baseline is")]
    for f in figures:
        rows.append(
            (
                f.title,
                f"{_fmt(f.value)} {f.unit}",
                f"{_fmt(f.baseline)} {f.unit}",
                f"{_fmt(f.ratio)}×",
                f"{f.baseline_label} ({f.better} is better)",
            )
        )
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = [
        f"Machine: {machine['cpu']}, {machine['cores']} cores, Python {machine['python']}, "
        f"{machine['emacs']}, {machine['system']}, {machine['date']}, "
        f"load {machine['load_avg_1m']}",
        "",
    ]
    for n, row in enumerate(rows):
        cells = [
            cell.ljust(widths[i]) if i in (0, 4) else cell.rjust(widths[i])
            for i, cell in enumerate(row)
        ]
        lines.append("| " + " | ".join(cells) + " |")
        if n == 0:
            lines.append("|-" + "-+-".join("-" * w for w in widths) + "-|")
    return "\n".join(lines)


def _check(name: str, figures: Sequence[Figure]) -> None:
    if not figures:
        raise RuntimeError(f"benchmark {name} reported no figures")
    for f in figures:
        for label, number in (("value", f.value), ("baseline", f.baseline)):
            if not isinstance(number, int | float) or not math.isfinite(number):
                raise RuntimeError(f"{f.key}: {label} is not a finite number: {number!r}")


async def run_all(names: Sequence[str], scale: Scale, work: Path) -> tuple[list[Figure], list[str]]:
    figures: list[Figure] = []
    failures: list[str] = []
    for name in names:
        module = importlib.import_module(f"bench.{name}")
        runner: Runner = module.run
        started = time.monotonic()
        print(f"[bench] {name} …", file=sys.stderr, flush=True)
        try:
            got = await runner(scale, work / name)
            _check(name, got)
        except Exception as exc:
            logging.getLogger("bench").exception("benchmark %s failed", name)
            failures.append(f"{name}: {exc}")
            continue
        figures.extend(got)
        print(f"[bench] {name} done in {time.monotonic() - started:.1f} s", file=sys.stderr)
    return figures, failures


def _previous(path: Path) -> dict[str, Any]:
    """The figures of an earlier results file (none when there is none)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    figures = data.get("figures") if isinstance(data, dict) else None
    if not isinstance(figures, dict):
        raise ValueError(f"{path} has no figures to merge with")
    return figures


def _merged(kept: dict[str, Any], measured: dict[str, Any]) -> dict[str, Any]:
    """``kept`` with ``measured`` in place of the figures measured again (in their
    place); figures new to the file go at the end."""
    return {**kept, **measured}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    parser.add_argument(
        "--scale", choices=sorted(SCALES), default=os.environ.get("BENCH_SCALE", "full")
    )
    parser.add_argument("--out", type=Path, default=Path("bench/results.json"))
    parser.add_argument("--only", nargs="*", choices=BENCHMARKS, default=list(BENCHMARKS))
    parser.add_argument("--emacs", default=os.environ.get("EMACS", "emacs"))
    parser.add_argument(
        "--merge",
        action="store_true",
        help="keep the figures of an existing --out file that this run does not measure",
    )
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    os.environ["BENCH_EMACS"] = args.emacs
    scale = SCALES[args.scale]
    machine = machine_info(args.emacs)
    with tempfile.TemporaryDirectory(prefix="agent-shell-bench-") as tmp:
        figures, failures = asyncio.run(run_all(args.only, scale, Path(tmp)))
    run = {"date": machine["date"], "scale": scale.name, "load_avg_1m": machine["load_avg_1m"]}
    measured = {f.key: {**f.to_json(), "measured": run} for f in figures}
    kept = _previous(args.out) if args.merge else {}
    result = {
        "scale": scale.name,
        "machine": machine,
        "figures": _merged(kept, measured),
        "failures": failures,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    print(render_table(machine, figures))
    print(f"\nwritten to {args.out}")
    for failure in failures:
        print(f"FAILED: {failure}", file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
