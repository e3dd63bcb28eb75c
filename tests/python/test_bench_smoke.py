"""Keep the benchmark harness from rotting: run it at its smallest size.

Only the shape of ``results.json`` is checked (every figure has a value, a baseline
and their ratio, plus the machine line); timings are never asserted.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

# Selectable alone (pytest -m bench_smoke); make test runs it with the rest.
pytestmark = pytest.mark.bench_smoke

ROOT = Path(__file__).resolve().parents[2]

EXPECTED = {
    "bridge_start",
    "cli_start",
    "relay_rate",
    "relay_latency_median",
    "relay_latency_p99",
    "emacs_rate_empty",
    "emacs_rate_history",
    "emacs_rate_point_start",
    "stream_end_to_end",
    "stream_end_to_end_history",
    "stream_first_char",
    "stream_input_lag_p99",
    "policy_rate",
    "capture_throughput",
    "capture_peak_memory",
    "memory_reindex",
    "memory_search_median",
    "memory_search_p95",
    "memory_recall",
    "memory_search_cli",
    "memory_recall_corpus",
    "memory_recall_mrr",
    "memory_recall_search_median",
    "memory_search_oneshot",
    "memory_turn_cost",
    "memory_session_new",
    "context_bytes",
    "sandbox_overhead",
    "symbol_search_100k",
    "mention_candidates",
    "context_auto_cost",
    "context_auto_chars",
    "session_growth_bytes_early",
    "session_growth_bytes_late",
    "session_growth_bytes_all",
    "session_growth_disk_early",
    "session_growth_disk_late",
    "session_growth_cpu",
    "session_growth_ping_p99",
    "log_buffer_growth",
    "log_buffer_open",
    "dashboard_timer_lag_p99",
    "dashboard_timer_lag_p99_large_gc",
    "dashboard_redraw_share",
}


def test_bench_small_scale_writes_every_figure(tmp_path: Path) -> None:
    """``python -m bench --scale small`` exits 0 and reports each figure with its baseline."""
    out = tmp_path / "results.json"
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENT_SHELL_")}
    proc = subprocess.run(
        [sys.executable, "-m", "bench", "--scale", "small", "--out", str(out)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    data = json.loads(out.read_text(encoding="utf-8"))
    assert data["scale"] == "small"
    assert data["failures"] == []
    assert set(data["machine"]) >= {"cpu", "cores", "python", "emacs", "date"}
    assert data["machine"]["emacs"].startswith("GNU Emacs")
    assert set(data["figures"]) == EXPECTED
    for key, fig in data["figures"].items():
        for field in ("value", "baseline", "ratio"):
            assert isinstance(fig[field], int | float), (key, field, fig)
            assert math.isfinite(fig[field]), (key, field, fig)
        assert fig["baseline"] > 0, (key, fig)
        assert fig["ratio"] == pytest.approx(fig["value"] / fig["baseline"]), key
        assert fig["title"] in proc.stdout, key
    assert proc.stdout.startswith("Machine: ")
    # The README's table is regenerated from this JSON, between its markers only.
    readme = tmp_path / "README.org"
    original = (ROOT / "README.org").read_text(encoding="utf-8")
    readme.write_text(original, encoding="utf-8")
    gen = subprocess.run(
        [sys.executable, "-m", "bench.readme", "--results", str(out), "--readme", str(readme)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert "README.org" in gen.stdout
    updated = readme.read_text(encoding="utf-8")
    begin, end = updated.index("# bench-table: begin"), updated.index("# bench-table: end")
    table = updated[begin:end]
    assert "=BENCH_SCALE=small=" in table
    for fig in data["figures"].values():
        assert f"| {fig['title']} " in table, fig["key"]
    assert updated[:begin] == original[: original.index("# bench-table: begin")]
    assert updated[end:] == original[original.index("# bench-table: end") :]


def test_bench_memory_turn_cost_at_small_size(tmp_path: Path) -> None:
    """``memory_turn_cost`` alone: 0 vs 500 experiences, both figures, and no
    generated experience left behind in the bench's temporary directory."""
    out = tmp_path / "results.json"
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENT_SHELL_")}
    env["TMPDIR"] = str(scratch)
    args = ["--scale", "small", "--only", "memory_turn_cost", "--out", str(out)]
    proc = subprocess.run(
        [sys.executable, "-m", "bench", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    figures = json.loads(out.read_text(encoding="utf-8"))["figures"]
    assert set(figures) == {"memory_turn_cost", "memory_session_new"}
    for fig in figures.values():
        assert fig["value"] > 0 and fig["baseline"] > 0, fig
        assert fig["details"]["experiences"] == 500
        assert fig["details"]["without"]["reindex_s"] >= 0
    assert not list(scratch.rglob("*.md"))


def test_bench_dashboard_at_small_size(tmp_path: Path) -> None:
    """``dashboard`` alone: the open dashboard redrew rows in every round (it
    followed the sessions), and both the open and the closed rounds were probed."""
    out = tmp_path / "results.json"
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENT_SHELL_")}
    args = ["--scale", "small", "--only", "dashboard", "--out", str(out)]
    proc = subprocess.run(
        [sys.executable, "-m", "bench", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    figures = json.loads(out.read_text(encoding="utf-8"))["figures"]
    assert set(figures) == {
        "dashboard_timer_lag_p99",
        "dashboard_timer_lag_p99_large_gc",
        "dashboard_redraw_share",
    }
    details = figures["dashboard_timer_lag_p99"]["details"]
    assert details["sessions"] == 3
    assert all(rows > 0 for rows in details["rows_redrawn"])
    assert all(run["ticks"] > 0 for run in details["open"] + details["closed"])
    assert all(run["rows"] == 0 and run["flush_ms"] == 0 for run in details["closed"])
    large = figures["dashboard_timer_lag_p99_large_gc"]["details"]
    assert large["gc_cons_threshold"] == 16 * 1024 * 1024
    assert all(run["rows"] > 0 for run in large["open"])
    assert all(run["ticks"] > 0 for run in large["open"] + large["closed"])


def test_bench_merge_replaces_only_the_figures_it_measured(tmp_path: Path) -> None:
    """``--only policy --merge`` rewrites policy_rate and keeps every other figure."""
    out = tmp_path / "results.json"
    kept = {"key": "relay_rate", "value": 1.0, "baseline": 2.0, "ratio": 0.5, "title": "R"}
    stale = {**kept, "key": "policy_rate", "title": "P"}
    earlier = {"scale": "full", "figures": {"relay_rate": kept, "policy_rate": stale}}
    out.write_text(json.dumps(earlier), encoding="utf-8")
    args = ["--scale", "small", "--only", "policy", "--merge", "--out", str(out)]
    subprocess.run(
        [sys.executable, "-m", "bench", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=240,
        check=True,
    )
    data = json.loads(out.read_text(encoding="utf-8"))
    assert list(data["figures"]) == ["relay_rate", "policy_rate"]
    assert data["figures"]["relay_rate"] == kept
    policy = data["figures"]["policy_rate"]
    assert policy["title"] != "P" and policy["measured"]["scale"] == "small"
    assert policy["value"] > 0 and policy["measured"]["date"] == data["machine"]["date"]


def test_bench_rejects_a_figure_without_a_number(monkeypatch: pytest.MonkeyPatch) -> None:
    """A benchmark that reports NaN is a broken harness, not a slow result."""
    monkeypatch.syspath_prepend(str(ROOT))
    from bench.__main__ import _check
    from bench.common import Figure

    broken = Figure("x", "X", "ms", float("nan"), 1.0, "b", "lower")
    with pytest.raises(RuntimeError, match="not a finite number"):
        _check("x", [broken])
    with pytest.raises(RuntimeError, match="no figures"):
        _check("x", [])


def test_log_buffer_growth_runs_small_and_leaves_no_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The log buffer bench feeds real turns, opens its generated log, and deletes it all.

    Checked: both figures have a finite value and baseline, every notification reached
    the live buffer (six entries a turn), it holds no overlay, and the work directory
    with the generated notifications and log files is gone afterwards.
    """
    import asyncio

    monkeypatch.syspath_prepend(str(ROOT))
    from bench import log_buffer_growth
    from bench.common import SCALES

    scale = SCALES["small"]
    work = tmp_path / "work"
    figures = asyncio.run(log_buffer_growth.run(scale, work))
    assert [f.key for f in figures] == ["log_buffer_growth", "log_buffer_open"]
    for fig in figures:
        assert math.isfinite(fig.value) and fig.value > 0, fig
        assert math.isfinite(fig.baseline) and fig.baseline > 0, fig
    growth, opened = figures
    turns = scale.log_late_turns + scale.log_measured_turns
    assert growth.details["entries"] == 6 * turns
    assert growth.details["overlays"] == 0
    assert opened.details["bytes"] >= scale.log_open_bytes
    assert not work.exists()
