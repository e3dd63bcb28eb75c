"""The memory layer: experience files, their SQLite index, extraction and injection.

Experience files under ``<root>/.agent-shell/memory/`` are the source of truth;
:class:`MemoryIndex` is a rebuildable cross-project search index over them.

The names below are loaded on first use (PEP 562), so importing one sub-module, as
the ``memory search`` command does, does not load the rest.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .experience import Experience, parse_experience, render_experience, write_experience
    from .extract import (
        EXTRACTION_SYSTEM_PROMPT,
        build_extraction_messages,
        parse_extraction_reply,
    )
    from .index import MemoryHit, MemoryIndex, SyncStats
    from .inject import injection_block
    from .triggers import TaskEvents, extraction_decision

_WHERE = {
    "EXTRACTION_SYSTEM_PROMPT": "extract",
    "Experience": "experience",
    "MemoryHit": "hit",
    "MemoryIndex": "index",
    "SyncStats": "index",
    "TaskEvents": "triggers",
    "build_extraction_messages": "extract",
    "extraction_decision": "triggers",
    "injection_block": "inject",
    "parse_experience": "experience",
    "parse_extraction_reply": "extract",
    "render_experience": "experience",
    "write_experience": "experience",
}

__all__ = [
    "EXTRACTION_SYSTEM_PROMPT",
    "Experience",
    "MemoryHit",
    "MemoryIndex",
    "SyncStats",
    "TaskEvents",
    "build_extraction_messages",
    "extraction_decision",
    "injection_block",
    "parse_experience",
    "parse_extraction_reply",
    "render_experience",
    "write_experience",
]


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{module}"), name)
