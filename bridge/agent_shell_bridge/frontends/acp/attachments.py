"""ACP ``resource`` and ``resource_link`` blocks as the prompt's attachments.

An editor embeds a file (``resource`` with its text) or names one (``resource_link``)
in ``session/prompt``. Both become attachments of our ``session/prompt`` (see
``agent/conversation/attachments.py``), so they get the same framing as data, the
same cap, the same path rules and the same log record as what Emacs sends. They are
never ``explicit``: like an ``@`` mention, an editor's block does not attach a file
outside the project or among the user's secrets (the bridge refuses it).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

from ...agent.conversation.attachments import CEILING_CHARS
from ...types import JSONObject

__all__ = ["prompt_parts"]

#: A linked file longer than this is read only up to it (the bridge cuts further).
_READ_LIMIT = CEILING_CHARS


def _file_path(uri: str) -> str | None:
    parsed = urlparse(uri)
    if parsed.scheme != "file" or parsed.netloc not in ("", "localhost"):
        return None
    return unquote(parsed.path) or None


def _name(uri: str, given: object) -> str:
    path = _file_path(uri)
    if isinstance(given, str) and given.strip():
        return given.strip()
    return Path(path).name if path else uri


def _embedded(block: Mapping[str, Any]) -> JSONObject | None:
    resource = block.get("resource")
    if not isinstance(resource, Mapping) or not isinstance(resource.get("text"), str):
        return None
    uri = str(resource.get("uri", ""))
    item: JSONObject = {"name": _name(uri, None), "kind": "file", "text": resource["text"]}
    path = _file_path(uri)
    if path:
        item["path"] = path
    return item


def _linked(block: Mapping[str, Any]) -> JSONObject | None:
    uri = str(block.get("uri", ""))
    path = _file_path(uri)
    if path is None:
        return None
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            text = handle.read(_READ_LIMIT + 1)
    except OSError:
        return None
    item: JSONObject = {"name": _name(uri, block.get("name")), "kind": "file", "path": path}
    item["text"] = text[:_READ_LIMIT]
    if len(text) > _READ_LIMIT:
        item["originalChars"] = len(text)
    return item


def prompt_parts(blocks: Sequence[Mapping[str, Any]]) -> tuple[str, list[JSONObject]]:
    """The prompt's words, and its resources as attachments.

    Text blocks join as the prompt. An embedded text resource and a link to a local
    file become attachments; a binary resource, a link that cannot be read, an image
    or audio leave a note in the text instead.
    """
    parts: list[str] = []
    attachments: list[JSONObject] = []
    for block in blocks:
        kind = block.get("type")
        item: JSONObject | None = None
        if kind == "text":
            parts.append(str(block.get("text", "")))
        elif kind == "resource":
            item = _embedded(block)
            if item is None:
                uri = (block.get("resource") or {}).get("uri", "")
                parts.append(f"(attached binary resource {uri}, not shown)")
        elif kind == "resource_link":
            item = _linked(block)
            if item is None:
                name = block.get("name") or block.get("uri")
                parts.append(f"(referenced: {name} at {block.get('uri')})")
        elif kind in ("image", "audio"):
            parts.append(f"(an attached {kind} was left out: this agent reads text only)")
        if item is not None:
            attachments.append(item)
            parts.append(f"@{item['name']}")
    return "\n\n".join(p for p in parts if p), attachments
