"""agent-shell bridge: the Python half of agent-shell.

Runs the agent loop, streaming model calls, the command-safety policy, process
execution and the memory index, and talks JSON-RPC 2.0 over HTTP + SSE to Emacs.
"""

from __future__ import annotations

__all__ = ["__version__"]

__version__ = "0.1.0"
