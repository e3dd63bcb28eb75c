"""Recognising a provider's "your request is over the context length" answer.

Providers say it differently, all with HTTP 400 (some with 413):

* OpenAI: ``{"error": {"code": "context_length_exceeded", "message": "This model's
  maximum context length is 8192 tokens. However, your messages resulted in …"}}``
* DeepSeek: the same sentence with ``"code": "invalid_request_error"``
* vLLM: ``{"object": "error", "type": "BadRequestError", "code": 400, "message":
  "This model's maximum context length is 4096 tokens. However, you requested …"}``
  (newer versions wrap it in ``error``), or "… is longer than the maximum model length"
* OpenRouter: ``{"error": {"code": 400, "message": "This endpoint's maximum context
  length is 8192 tokens. However, you requested about …"}}``
* llama.cpp: ``exceed_context_size_error`` / "exceeds the available context size"

Recognising it lets the agent compact its history and retry instead of dying.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

__all__ = ["context_limit_of", "is_context_overflow", "requested_tokens_of"]

_STATUSES = frozenset({400, 413})
_CODES = frozenset(
    {"context_length_exceeded", "exceed_context_size_error", "string_above_max_length"}
)
_TEXT = re.compile(
    r"maximum context length"
    r"|context[ _]length[ _]exceeded"
    r"|context window (?:is )?exceeded|exceeds? the (?:model'?s? )?context window"
    r"|exceeds? the available context size"
    r"|longer than the maximum model length"
    r"|prompt is too long"
    r"|too many tokens in the prompt"
    r"|input (?:prompt )?\(?\d* ?tokens?\)? is too long",
    re.IGNORECASE,
)
_LIMIT = re.compile(
    r"(?:maximum context length is|context length of|context size of|maximum model length is"
    r"|context window of)\s*(?:about\s*)?(\d{3,8})",
    re.IGNORECASE,
)


_REQUESTED = re.compile(
    r"(?:resulted in|you requested|requested about|requested)\s*(?:about\s*)?(\d{3,9}) tokens",
    re.IGNORECASE,
)


def is_context_overflow(status: int, message: str, detail: Mapping[str, Any]) -> bool:
    """True when an error answer means the request was too long for the model."""
    if status not in _STATUSES:
        return False
    for key in ("code", "type"):
        value = detail.get(key)
        if isinstance(value, str) and value in _CODES:
            return True
    return _TEXT.search(message) is not None


def context_limit_of(message: str) -> int | None:
    """The window size the provider named in its message, if it named one."""
    match = _LIMIT.search(message)
    return int(match.group(1)) if match else None


def requested_tokens_of(message: str) -> int | None:
    """How many tokens the provider counted in the refused request, if it said."""
    match = _REQUESTED.search(message)
    return int(match.group(1)) if match else None
