"""Symbol search in Emacs on a generated repository of 100,000 files.

The bench writes a repository of small Python files (1,000 directories of 100 at
full scale) where one symbol is defined once and referenced in one file out of a
hundred, next to a longer name that contains it (which a word search must not
match), with Chinese comments throughout. A batch Emacs (``agent-shell-search-bench.el``)
then runs the real ``symbol_search`` handler on it, through the ripgrep path (no
xref backend, as with an unvisited project), and reports the median time of a
default search (definitions and references) and of a references-only search.

The baseline is ``rg -w`` of the same symbol on the same tree in the same run: what
a user would type in a terminal, printing every match. The repository is deleted
afterwards.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
import time
from pathlib import Path

from .common import Figure, Scale, bridge_command, median
from .emacs_batch import run_batch

__all__ = ["SYMBOL", "make_repository", "run"]


SYMBOL = "render_widget"
PER_DIR = 100
REFERENCE_EVERY = 100  # one file in a hundred calls the symbol
TIMEOUT_S = 1_800.0


def _module(n: int) -> str:
    lines = [
        f"# 模块 {n}：生成的测试文件，用于搜索基准\n",
        "import os\n",
        "\n",
        f"def helper_{n}(value):\n",
        f'    """把值加上 {n}。"""\n',
        f"    return value + {n}\n",
    ]
    if n % REFERENCE_EVERY == REFERENCE_EVERY // 2:
        lines.append(f"\nresult_{n} = {SYMBOL}(helper_{n}(1))  # 调用 {SYMBOL}\n")
    elif n % REFERENCE_EVERY == REFERENCE_EVERY // 4:
        lines.append(f"\n{SYMBOL}_cache = {{}}  # 不是同一个名字\n")
    return "".join(lines)


def make_repository(root: Path, files: int) -> int:
    """Write ``files`` modules under ``root``; return how many lines name the symbol."""
    references = 0
    for n in range(files):
        directory = root / "src" / f"pkg_{n // PER_DIR:04d}"
        if n % PER_DIR == 0:
            directory.mkdir(parents=True)
        text = _module(n)
        references += SYMBOL + "(" in text
        (directory / f"mod_{n % PER_DIR:02d}.py").write_text(text, encoding="utf-8")
    # The definition sits in the last directory a walk reaches.
    widgets = root / "src" / "widgets"
    widgets.mkdir(parents=True)
    (widgets / "render.py").write_text(
        f"# 组件渲染\n\ndef {SYMBOL}(value):\n    return f'<{{value}}>'\n", encoding="utf-8"
    )
    return references + 1


def _rg_seconds(root: Path, reps: int) -> tuple[float, int]:
    """Median wall time of ``rg -w SYMBOL`` printing every match, and the match count."""
    rg = shutil.which("rg")
    if rg is None:
        raise RuntimeError("ripgrep (rg) is not installed (make deps)")
    argv = [rg, "--no-config", "-w", SYMBOL, "."]
    times: list[float] = []
    lines = 0
    for _ in range(reps + 1):  # the first run warms the page cache
        started = time.perf_counter()
        out = subprocess.run(argv, cwd=root, capture_output=True, check=True).stdout
        times.append(time.perf_counter() - started)
        lines = out.count(b"\n")
    return median(times[1:]), lines


async def _emacs(root: Path, reps: int) -> dict[str, object]:
    bridge = json.dumps(bridge_command()[0])
    args = f"{json.dumps(str(root))} {json.dumps(SYMBOL)} {reps} {bridge}"
    form = f"(agent-shell-search-bench-batch {args})"
    return await run_batch("agent-shell-search-bench.el", form, cwd=root, timeout_s=TIMEOUT_S)


async def run(scale: Scale, work: Path) -> list[Figure]:
    root = work / "repository"
    root.mkdir(parents=True)
    try:
        references = await asyncio.to_thread(make_repository, root, scale.search_files)
        rg_s, rg_lines = await asyncio.to_thread(_rg_seconds, root, scale.search_reps)
        data = await _emacs(root, scale.search_reps)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    if rg_lines != references:
        raise RuntimeError(f"rg -w found {rg_lines} lines, expected {references}")
    both, refs = data["both"], data["references"]
    assert isinstance(both, dict) and isinstance(refs, dict)
    return [
        Figure(
            key="symbol_search_100k",
            title=f"Symbol search in Emacs, {scale.search_files:,} files",
            unit="s",
            value=float(both["seconds"]),
            baseline=rg_s,
            baseline_label="rg -w of the same symbol, every match printed",
            better="lower",
            details={
                "files": scale.search_files,
                "matching_lines": references,
                "runs": scale.search_reps,
                "definitions": both["definitions"],
                "references": both["references"],
                "truncated": both["truncated"],
                "references_only_s": refs["seconds"],
                "references_only_ratio": float(refs["seconds"]) / rg_s if rg_s else None,
            },
        )
    ]
