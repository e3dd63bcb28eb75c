"""The script format of the mock model (a JSON file validated here).

``{"steps": [...]}``: each step answers one request, in order. A step with a
``match`` answers the first request that passes it, wherever the step stands, so a
compaction or memory-extraction call can have its own answer. A step with a
``fault`` fails that way (``times`` times, then serves its answer; without
``times`` the fault alone uses the step up). ``context_limit`` makes the model
refuse over-long requests as a real provider does (``overflow_style``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ..errors import InvalidParams
from ..types import JSONObject
from .mock_overflow import OverflowStyle

__all__ = ["Fault", "MockMatch", "MockScript", "MockStep", "MockToolCall", "load_script"]

Fault = Literal["429", "500", "503", "529", "400", "401", "cut", "error_in_stream", "slow"]
Style = Literal["openai", "ollama", "vllm"]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class MockMatch(_Strict):
    """All given conditions must hold (substring tests on message text)."""

    last_user_contains: str | None = None
    system_contains: str | None = None
    any_message_contains: str | None = None

    def passes(self, messages: list[JSONObject]) -> bool:
        texts = [(str(m.get("role", "")), _message_text(m)) for m in messages]
        if self.last_user_contains is not None:
            users = [t for role, t in texts if role == "user"]
            if not users or self.last_user_contains not in users[-1]:
                return False
        if self.system_contains is not None and not any(
            self.system_contains in t for role, t in texts if role in ("system", "developer")
        ):
            return False
        return self.any_message_contains is None or any(
            self.any_message_contains in t for _, t in texts
        )


class MockToolCall(_Strict):
    name: str
    arguments: dict[str, Any] | str = Field(default_factory=dict)
    id: str | None = None

    def arguments_text(self) -> str:
        if isinstance(self.arguments, str):
            return self.arguments
        return json.dumps(self.arguments, ensure_ascii=False) if self.arguments else "{}"


class MockStep(_Strict):
    match: MockMatch | None = None
    text: str = ""
    reasoning: str | None = None
    tool_calls: list[MockToolCall] = Field(default_factory=list)
    finish_reason: str | None = None
    usage: dict[str, Any] | None = None
    chunk_size: int | None = Field(default=None, ge=1)
    fault: Fault | None = None
    times: int | None = Field(default=None, ge=1)
    retry_after: float | str | None = None
    retry_after_ms: int | None = None
    error_message: str | None = None
    cut_after: int | None = Field(default=None, ge=0)
    slow_ms: int = Field(default=3000, ge=0)
    delay_ms: int = Field(default=0, ge=0)
    keepalive: bool = False
    raw_chunks: list[JSONObject | str] | None = None
    style: Style = "openai"
    non_streaming: bool = False


class MockScript(_Strict):
    """The steps, plus what the emulated provider says about the history it gets.

    ``reject_message_fields``: any message carrying one of these keys is answered
    400, as Groq answers an echoed ``reasoning_content``. ``require_on_tool_calls``:
    an assistant message with tool calls that lacks one of these keys is answered
    400, as DeepSeek's thinking mode does. Neither uses up a step.
    """

    steps: list[MockStep] = Field(default_factory=list)
    # Refuse (HTTP 400, no step used) any request whose prompt is over this many tokens.
    context_limit: int | None = Field(default=None, ge=1)
    overflow_style: OverflowStyle = "openai"
    reject_message_fields: list[str] = Field(default_factory=list)
    require_on_tool_calls: list[str] = Field(default_factory=list)

    def history_error(self, messages: list[JSONObject]) -> str | None:
        """The provider's complaint about ``messages``, or None when it accepts them."""
        for n, message in enumerate(messages):
            if not isinstance(message, dict) or message.get("role") != "assistant":
                continue
            for key in self.reject_message_fields:
                if key in message:
                    return (
                        f"'messages.{n}' : for 'role:assistant' the following must be "
                        f"satisfied[('messages.{n}' : property '{key}' is unsupported)]"
                    )
            if message.get("tool_calls"):
                for key in self.require_on_tool_calls:
                    if key not in message:
                        return f"Missing `{key}` field in the assistant message at index {n}"
        return None


def load_script(path: str | Path) -> MockScript:
    """Read and validate a script file; errors name the file and the bad field."""
    try:
        raw = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise InvalidParams(f"cannot read mock script {path}: {exc.strerror}") from exc
    try:
        return MockScript.model_validate_json(raw)
    except ValidationError as exc:
        raise InvalidParams(f"invalid mock script {path}: {exc}") from exc


def _message_text(message: JSONObject) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return ""
