"""How much of a long output anyone sees at once: its first and last lines.

One pair of numbers for every place that cuts output — what the model is sent, what
a command's result keeps in memory, what the org log shows — so they always agree
(agent-shell-log.el mirrors them).
"""

from __future__ import annotations

__all__ = ["HEAD_LINES", "TAIL_LINES"]

HEAD_LINES = 200
TAIL_LINES = 100
