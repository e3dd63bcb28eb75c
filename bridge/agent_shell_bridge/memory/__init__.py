"""The memory layer: experience files, their SQLite index, extraction and injection.

Experience files under ``<root>/.agent-shell/memory/`` are the source of truth;
:class:`MemoryIndex` is a rebuildable cross-project search index over them.
"""

from __future__ import annotations

from .experience import Experience, parse_experience, render_experience, write_experience
from .extract import EXTRACTION_SYSTEM_PROMPT, build_extraction_messages, parse_extraction_reply
from .index import MemoryHit, MemoryIndex, SyncStats
from .inject import injection_block
from .triggers import TaskEvents, extraction_decision

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
