"""Model-facing names of MCP tools: ``mcp__<server>__<tool>``.

Providers accept tool names matching ``^[a-zA-Z0-9_-]{1,64}$``. Server and tool
names are user or server text, so each part is sanitised (other characters become
``_``), the whole is cut to 64 characters, and a clash with a name already given
out gets a short hash suffix. A :class:`ToolNames` table never hands a name to
another tool and never renames a tool once named, so the list the model sees is
stable for the whole session (across refreshes and compaction).
"""

from __future__ import annotations

import hashlib
import re

__all__ = ["MAX_NAME", "PREFIX", "ToolNames", "is_mcp_name", "sanitise"]

PREFIX = "mcp__"
MAX_NAME = 64
_BAD = re.compile(r"[^A-Za-z0-9_-]")
VALID = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


def sanitise(part: str) -> str:
    """``part`` with every character outside ``[A-Za-z0-9_-]`` replaced by ``_``."""
    cleaned = _BAD.sub("_", part)
    return cleaned or "_"


def is_mcp_name(name: str) -> bool:
    return name.startswith(PREFIX)


def _candidate(server: str, tool: str) -> str:
    name = f"{PREFIX}{sanitise(server)}__{sanitise(tool)}"
    if len(name) <= MAX_NAME:
        return name
    digest = hashlib.sha256(f"{server}\x00{tool}".encode()).hexdigest()[:8]
    return name[: MAX_NAME - 9] + "_" + digest


class ToolNames:
    """The session's table from (server, tool) to model-facing name, and back."""

    def __init__(self) -> None:
        self._by_key: dict[tuple[str, str], str] = {}
        self._by_name: dict[str, tuple[str, str]] = {}

    def name_for(self, server: str, tool: str) -> str:
        key = (server, tool)
        known = self._by_key.get(key)
        if known is not None:
            return known
        base = name = _candidate(server, tool)
        counter = 1
        while name in self._by_name:
            digest = hashlib.sha256(f"{server}\x00{tool}\x00{counter}".encode()).hexdigest()[:8]
            name = base[: MAX_NAME - 9] + "_" + digest
            counter += 1
        assert VALID.match(name), name
        self._by_key[key] = name
        self._by_name[name] = key
        return name

    def lookup(self, name: str) -> tuple[str, str] | None:
        """The (server, tool) a model-facing name stands for, if it was ever given out."""
        return self._by_name.get(name)
