"""The front ends over one core: ``serve`` (Emacs), ``run`` (headless), ``acp``.

- :mod:`.serve`: the bridge for one Emacs, over HTTP and SSE;
- :mod:`.headless`: one task from a terminal;
- :mod:`.client`: a small async client of the bridge protocol;
- :mod:`.acp`: the Agent Client Protocol over stdio;
- :mod:`.policy_cli`: ``agent-shell-bridge policy``.

"""

from __future__ import annotations

__all__: list[str] = []
