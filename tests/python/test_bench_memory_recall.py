"""The recall corpus and its benchmark, at the smallest size.

The corpus must stay what its figures claim (enough lessons and distractors, a
third of the queries sharing no content word with their lesson, every labelled
lesson present); the benchmark must report its three figures with baselines.
Timings and recall are never asserted here: ``make bench`` reports them.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.bench_smoke

ROOT = Path(__file__).resolve().parents[1].parent
CORPUS = ROOT / "tests" / "fixtures" / "memory" / "recall"


def test_corpus_is_as_described() -> None:
    data = json.loads((CORPUS / "queries.json").read_text(encoding="utf-8"))
    files = list(CORPUS.glob("*/.agent-shell/memory/*.md"))
    assert data["lessons"] >= 60
    assert data["distractors"] >= 400
    assert len(files) == data["lessons"] + data["distractors"]
    projects = {f.parts[-4] for f in files}
    assert len(projects) == 3
    queries = data["queries"]
    assert sum(not q["shares_content_word"] for q in queries) * 3 >= len(queries)
    assert {q["split"] for q in queries} == {"tuning", "held_out", "fresh"}
    for q in queries:
        assert (CORPUS / q["lesson"]).is_file(), q


def test_memory_recall_bench_small(tmp_path: Path) -> None:
    out = tmp_path / "results.json"
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENT_SHELL_")}
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "bench",
            "--scale",
            "small",
            "--only",
            "memory_recall",
            "--out",
            str(out),
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    figures = json.loads(out.read_text(encoding="utf-8"))["figures"]
    assert set(figures) == {
        "memory_recall_corpus",
        "memory_recall_mrr",
        "memory_recall_search_median",
    }
    for f in figures.values():
        assert math.isfinite(f["value"]) and math.isfinite(f["baseline"])
    details = figures["memory_recall_corpus"]["details"]
    assert details["files"] == 510
    assert set(details["ours"]) >= {"all", "tuning", "held_out", "no_shared_word"}
