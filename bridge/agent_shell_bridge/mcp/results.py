"""An MCP ``tools/call`` result as text for the model, the log and the shell.

``content`` items become text: text parts as they are, images and audio described
(type and size, never inlined), resource links and embedded resources named (an
embedded text resource is included). ``structuredContent`` is added as JSON unless
the text already says the same. ``isError: true`` makes the step a failure. Works on
the result as plain JSON (``model_dump(by_alias=True)``), so it needs no SDK.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from ..types import JSONObject

__all__ = ["Rendered", "render"]


@dataclass(frozen=True, slots=True)
class Rendered:
    text: str
    structured: JSONObject | None
    is_error: bool
    images: int


def _size(data: Any) -> str:
    if not isinstance(data, str):
        return "unknown size"
    data = data.strip()
    padding = len(data) - len(data.rstrip("="))
    return f"{len(data) * 3 // 4 - padding} bytes"


def _item_text(item: JSONObject) -> tuple[str, bool]:
    """One content item as text, and whether it was an image."""
    kind = item.get("type")
    if kind == "text":
        return str(item.get("text", "")), False
    if kind in ("image", "audio"):
        mime = item.get("mimeType") or "unknown type"
        return f"[{kind}: {mime}, {_size(item.get('data'))}; not shown]", kind == "image"
    if kind == "resource_link":
        label = item.get("title") or item.get("name") or ""
        return f"[resource link: {label} {item.get('uri', '')}]".replace("  ", " "), False
    if kind == "resource":
        resource = item.get("resource") or {}
        uri = resource.get("uri", "")
        if isinstance(resource.get("text"), str):
            return f"[resource {uri}]\n{resource['text']}", False
        mime = resource.get("mimeType") or "binary"
        return f"[resource {uri}: {mime}, {_size(resource.get('blob'))}; not shown]", False
    return f"[{kind or 'unknown'} content; not shown]", False


def _same_as_text(structured: JSONObject, text: str) -> bool:
    """Whether ``structured`` only repeats the text (as SDK servers' ``{"result": …}`` do)."""
    candidates: list[Any] = [structured]
    if len(structured) == 1:
        candidates.append(next(iter(structured.values())))
    try:
        parsed: Any = json.loads(text)
    except ValueError:
        parsed = None
    return any(c == text or (parsed is not None and c == parsed) for c in candidates)


def render(result: JSONObject) -> Rendered:
    """Text of a ``CallToolResult`` given as JSON (camelCase keys)."""
    parts: list[str] = []
    images = 0
    for item in result.get("content") or []:
        if not isinstance(item, dict):
            continue
        piece, is_image = _item_text(item)
        images += is_image
        parts.append(piece)
    text = "\n".join(parts)
    structured = result.get("structuredContent")
    if not isinstance(structured, dict):
        structured = None
    if structured is not None and not _same_as_text(structured, text):
        shown = json.dumps(structured, ensure_ascii=False, indent=1)
        text = f"{text}\n[structuredContent]\n{shown}" if text else shown
    return Rendered(text, structured, result.get("isError") is True, images)
