"""JSON text of a request's messages, kept by identity between requests.

A long session's every request carries the whole history; encoding it again for
each size check and each request costs tens of milliseconds of the event loop at
a few hundred turns. The conversation never edits a message in place (it replaces
it with a new object, see ``agent/conversation/messages.py``), so the text of a
message object, once made, stays right: a request encodes only its new messages
and joins the rest.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

__all__ = ["JsonCache"]


class JsonCache:
    """``json.dumps`` of values by identity; :meth:`array` equals ``json.dumps(list)``."""

    def __init__(self) -> None:
        self._texts: dict[int, tuple[Any, str]] = {}

    def text(self, value: Any) -> str:
        hit = self._texts.get(id(value))
        if hit is not None and hit[0] is value:
            return hit[1]
        text = json.dumps(value, ensure_ascii=False)
        self._texts[id(value)] = (value, text)
        return text

    def array(self, values: Sequence[Any]) -> str:
        """The JSON array of VALUES, as ``json.dumps(values, ensure_ascii=False)``."""
        out = "[" + ", ".join(self.text(v) for v in values) + "]"
        if len(self._texts) > 2 * len(values) + 64:  # drop what no request holds now
            keep = {id(v) for v in values}
            self._texts = {k: v for k, v in self._texts.items() if k in keep}
        return out

    def chars(self, values: Sequence[Any]) -> int:
        """``len(json.dumps(values, ensure_ascii=False))`` without joining the text."""
        if not values:
            return 2
        return sum(len(self.text(v)) for v in values) + 2 * (len(values) - 1) + 2

    def body(self, body: dict[str, Any]) -> bytes:
        """A request BODY as UTF-8 JSON, its ``messages`` from the cache."""
        rest = {k: v for k, v in body.items() if k != "messages"}
        head = '{"messages": ' + self.array(body.get("messages") or [])
        tail = json.dumps(rest, ensure_ascii=False)[1:]
        return (head + (", " + tail if tail != "}" else "}")).encode("utf-8")
