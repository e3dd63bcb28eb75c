"""One tool call from the model, end to end, read top-down in this folder.

- :mod:`.executor`: the pipeline: refuse → dry run → approve → run → record;
- :mod:`.decide`: the policy's say before anything runs;
- :mod:`.prepared`: the call as the policy left it (a leaf);
- :mod:`.edit_plan`: an edit planned against the file as the user sees it;
- :mod:`.dispatch`: running it: MCP, Emacs, or a bridge-side handler;
- :mod:`.handlers`: the bridge-side handlers, bound to their catalogue entries;
- :mod:`.record`: the log entry and the client update of a call.

The names below load with their module on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..._face import lazy_face

if TYPE_CHECKING:
    from .decide import decide
    from .executor import ToolExecutor
    from .prepared import Prepared

__all__ = [
    "Prepared",
    "ToolExecutor",
    "decide",
]

_WHERE = {
    "Prepared": "prepared",
    "ToolExecutor": "executor",
    "decide": "decide",
}

__getattr__ = lazy_face(__name__, _WHERE)
