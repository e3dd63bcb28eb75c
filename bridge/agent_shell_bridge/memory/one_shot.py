"""One search from a fresh process (``agent-shell-bridge memory search``): plain
``sqlite3`` on a current index, and the writer only when the index is missing, old
or damaged (it checks, rebuilds and reports)."""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Sequence
from pathlib import Path

from .hit import MemoryHit
from .search import DB_NAME, find, normalise, open_current

__all__ = ["search_once"]


def search_once(
    memory_dir: str | Path,
    query: str,
    *,
    project: str | None = None,
    symbols: Sequence[str] = (),
    limit: int = 5,
) -> list[MemoryHit]:
    """One search of the index in ``memory_dir``, as :meth:`MemoryIndex.search` does it.

    Raises :class:`~agent_shell_bridge.errors.MemoryError_` as ``MemoryIndex`` does.
    """
    plan, syms, n = normalise(query, symbols, limit)
    conn = open_current(os.path.join(memory_dir, DB_NAME))
    if conn is not None:
        try:
            return find(conn, plan, project, syms, n)
        except sqlite3.Error:
            pass  # damaged, or changed underneath: the writer checks, repairs, reports
        finally:
            conn.close()
    # Loaded only now: a one-shot search of a current index never pays for the writer.
    from .index import MemoryIndex

    with MemoryIndex(Path(memory_dir)) as index:
        return index.search(query, project=project, symbols=syms, limit=limit)
