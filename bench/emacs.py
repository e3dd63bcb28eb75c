"""Emacs streaming: chunks per second rendered into the shell buffer.

Drives the real handler of ``session/update`` in ``emacs --batch`` (see
``agent-shell-bench.el``): an empty buffer against plain ``insert``, a buffer with
megabytes of history against the empty one (the ratio should stay near 1), and point
at the start of a long buffer against point at its end. Batch Emacs does no
redisplay, so these figures cover the Lisp side of rendering only.
"""

from __future__ import annotations

from pathlib import Path

from .common import Figure, Scale
from .emacs_batch import run_batch

__all__ = ["run"]


async def run(scale: Scale, work: Path) -> list[Figure]:
    form = (
        f"(agent-shell-bench-batch {scale.emacs_chunks} {scale.emacs_history_bytes}"
        f" {scale.emacs_reps})"
    )
    data = await run_batch("agent-shell-bench.el", form, cwd=work.parent)
    empty, end, start = data["empty"], data["history_end"], data["history_start"]
    mib = scale.emacs_history_bytes / 1024**2
    chunks = {"chunks": data["chunks"], "runs": data["reps"]}
    return [
        Figure(
            key="emacs_rate_empty",
            title="Emacs: chunks rendered, empty buffer",
            unit="chunk/s",
            value=empty["rate"],
            baseline=data["plain_insert"],
            baseline_label="plain insert into a fundamental-mode buffer",
            better="higher",
            details=chunks,
        ),
        Figure(
            key="emacs_rate_history",
            title=f"Emacs: chunks rendered, {mib:g} MiB history",
            unit="chunk/s",
            value=end["rate"],
            baseline=empty["rate"],
            baseline_label="same stream into an empty buffer",
            better="higher",
            details={**chunks, "history_chars": end["history_chars"]},
        ),
        Figure(
            key="emacs_rate_point_start",
            title="Emacs: long buffer, point at start",
            unit="chunk/s",
            value=start["rate"],
            baseline=end["rate"],
            baseline_label="same buffer with point at its end",
            better="higher",
            details={**chunks, "history_chars": start["history_chars"]},
        ),
    ]
