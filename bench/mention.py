"""@ completion and the automatic context of a prompt, in a batch Emacs.

``agent-shell-context-bench.el`` makes a git repository whose index names
``scale.mention_files`` files, lists it once, then times the candidates of a prefix
from the cache against ``project-files`` listing the repository again for the same
keystroke (completion without a cache). It also times the automatic context of a
prompt (visible buffers, clocked task, branch, latest compilation) and measures its
JSON, against the snapshot a prompt carried before it.
"""

from __future__ import annotations

from pathlib import Path

from .common import Figure, Scale
from .emacs_batch import run_batch

__all__ = ["run"]

#: What the issue allows a prompt's automatic context when nothing was sent.
CONTEXT_BUDGET_CHARS = 1_500


async def run(scale: Scale, work: Path) -> list[Figure]:
    form = f"(agent-shell-context-bench-batch {scale.mention_files} {scale.mention_reps})"
    data = await run_batch("agent-shell-context-bench.el", form, cwd=work.parent)
    comp, ctx = data["completion"], data["context"]
    return [
        Figure(
            key="mention_candidates",
            title=f"@ completion: candidates at {comp['files']:,} files",
            unit="ms",
            value=comp["cached_ms"],
            baseline=comp["rescan_ms"],
            baseline_label="project-files listing the repository again per keystroke",
            better="lower",
            details={
                "files": comp["files"],
                "first_listing_ms": comp["first_listing_ms"],
                "matches": comp["matches"],
                "target_ms": 100,
            },
        ),
        Figure(
            key="context_auto_cost",
            title="Automatic context of a prompt: time in Emacs",
            unit="ms",
            value=ctx["automatic_ms"],
            baseline=ctx["snapshot_ms"],
            baseline_label="the editing snapshot a prompt carried before",
            better="lower",
            details={"target_ms": 5},
        ),
        Figure(
            key="context_auto_chars",
            title="Automatic context of a prompt: characters sent",
            unit="chars",
            value=ctx["total_chars"],
            baseline=ctx["snapshot_chars"],
            baseline_label="the editing snapshot alone",
            better="lower",
            details={"budget_chars": CONTEXT_BUDGET_CHARS},
        ),
    ]
