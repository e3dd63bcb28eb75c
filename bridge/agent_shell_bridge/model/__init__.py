"""Talking to the model: a streaming OpenAI-compatible client and a scripted mock.

``ModelClient(settings).stream_chat(messages, tools)`` yields text and reasoning
deltas and ends with a :class:`Completion`; ``create_mock_app(script)`` and
:class:`MockServer` serve scripted answers for tests and the demo.
"""

from __future__ import annotations

from .openai import ModelClient
from .types import (
    Completion,
    InvalidToolArguments,
    ModelEvent,
    ModelSettings,
    Prices,
    ReasoningDelta,
    StreamRestart,
    TextDelta,
    ToolCall,
    Usage,
)

__all__ = [
    "Completion",
    "InvalidToolArguments",
    "ModelClient",
    "ModelEvent",
    "ModelSettings",
    "Prices",
    "ReasoningDelta",
    "StreamRestart",
    "TextDelta",
    "ToolCall",
    "Usage",
]
