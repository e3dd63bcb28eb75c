"""``agent-shell-bridge memory reindex|search``: the memory index from a shell.

Each sub-command imports what it uses when it runs: a search of a current index
loads neither the index writer nor sqlite-utils.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from ..errors import MemoryError_

__all__ = ["register"]


def register(sub: argparse._SubParsersAction[Any]) -> None:
    """Add ``memory`` and its sub-commands to the bridge CLI."""
    memory = sub.add_parser("memory", help="rebuild or search the experience index")
    msub = memory.add_subparsers(dest="memory_command", metavar="SUBCOMMAND", required=True)

    reindex = msub.add_parser(
        "reindex", help="drop the index and rebuild it from experience files (prints JSON stats)"
    )
    # Paths stay strings until a handler runs: a search does not need pathlib.
    reindex.add_argument("--memory-dir", required=True, help="directory of the index")
    reindex.add_argument("roots", nargs="*", metavar="ROOT", help="project roots (plus known ones)")
    reindex.set_defaults(func=_reindex)

    search = msub.add_parser("search", help="search experiences")
    search.add_argument("--memory-dir", required=True, help="directory of the index")
    search.add_argument("--project", help="current project; its experiences rank higher")
    search.add_argument("--symbol", action="append", default=[], help="a symbol to favour")
    search.add_argument("--limit", type=int, default=5, help="how many hits (default 5)")
    search.add_argument("--json", action="store_true", help="print a JSON array")
    search.add_argument("query", nargs="+", metavar="QUERY")
    search.set_defaults(func=_search)


def _reindex(args: argparse.Namespace) -> int:
    from pathlib import Path

    from .index import MemoryIndex

    try:
        with MemoryIndex(Path(args.memory_dir)) as index:
            stats = index.reindex([Path(r) for r in args.roots])
    except MemoryError_ as exc:
        print(f"agent-shell-bridge memory reindex: {exc.message}", file=sys.stderr)
        return 1
    import json

    print(json.dumps(stats.to_dict(), ensure_ascii=False))
    return 0


def _search(args: argparse.Namespace) -> int:
    query = " ".join(args.query)
    # A current index is read with sqlite3 alone; the writer loads only when the
    # index must be created, migrated or rebuilt.
    from .one_shot import search_once

    try:
        hits = search_once(
            args.memory_dir, query, project=args.project, symbols=args.symbol, limit=args.limit
        )
    except MemoryError_ as exc:
        print(f"agent-shell-bridge memory search: {exc.message}", file=sys.stderr)
        return 1
    if args.json:
        import json

        print(json.dumps([h.to_dict() for h in hits], ensure_ascii=False, indent=2))
        return 0
    for h in hits:
        print(
            f"{h.score:.3f}  {h.path}\n       {h.title} [{h.project}, {h.date}]\n       {h.summary}"
        )
    return 0
