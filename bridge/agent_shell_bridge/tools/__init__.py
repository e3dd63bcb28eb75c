"""The tool catalogue (the model-facing contract) and the bridge-side file tools.

- :mod:`.catalogue`: every tool: name, side, arguments, risk;
- :mod:`.files`: reading, listing, searching and editing files on the bridge;
- :mod:`.results`: what a tool call returns;
- :mod:`.outputs`: full outputs on disk and the bounded views the model sees;
- :mod:`.client_files`: the protocol of an editor that serves file reads and writes;
- :mod:`.org_outline`: an org file's headings, read as text;
- :mod:`.args`: argument helpers.

The names below load with their module on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._face import lazy_face

if TYPE_CHECKING:
    from .catalogue import CATALOGUE, ToolSpec
    from .client_files import ClientFiles
    from .outputs import OutputStore
    from .results import Outcome, ToolResult

__all__ = [
    "CATALOGUE",
    "ClientFiles",
    "Outcome",
    "OutputStore",
    "ToolResult",
    "ToolSpec",
]

_WHERE = {
    "CATALOGUE": "catalogue",
    "ClientFiles": "client_files",
    "Outcome": "results",
    "OutputStore": "outputs",
    "ToolResult": "results",
    "ToolSpec": "catalogue",
}

__getattr__ = lazy_face(__name__, _WHERE)
