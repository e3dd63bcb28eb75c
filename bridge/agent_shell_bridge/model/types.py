"""Value types of the model client: settings, stream events, tool calls, usage.

Plain frozen dataclasses: they travel inside the bridge only. The wire shapes
(OpenAI chat-completion messages) are produced by :meth:`Completion.to_message`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from ..errors import InvalidParams
from ..types import JSONObject, Prices

__all__ = [
    "Completion",
    "InvalidToolArguments",
    "ModelEvent",
    "ModelSettings",
    "Prices",
    "ReasoningDelta",
    "RefusalDelta",
    "StreamRestart",
    "TextDelta",
    "ToolCall",
    "Usage",
    "UsageCounts",
]


class InvalidToolArguments(InvalidParams):
    """The model sent tool arguments that are not a JSON object.

    The agent loop reports :attr:`message` back to the model as the tool result so
    it can correct itself; nothing is executed.
    """

    def __init__(self, message: str, *, tool: str, call_id: str) -> None:
        super().__init__(message, data={"tool": tool, "call_id": call_id})
        self.tool = tool
        self.call_id = call_id


@dataclass(frozen=True)
class ModelSettings:
    """Where and how to reach an OpenAI-compatible chat-completions API.

    ``api_key`` is excluded from ``repr`` and never written to logs or errors.
    ``trust_env`` is off by default: a flaky system proxy silently breaking long
    streams is worse than ignoring ``HTTP_PROXY``.
    """

    api_base: str = "https://api.deepseek.com/v1"
    model: str = "deepseek-chat"
    api_key: str | None = field(default=None, repr=False)
    context_window: int = 64000
    trust_env: bool = False
    connect_timeout_s: float = 10.0
    read_timeout_s: float = 120.0
    max_attempts: int = 3
    backoff_base_s: float = 0.5
    backoff_cap_s: float = 8.0
    retry_after_cap_s: float = 60.0
    prices: Prices | None = None
    # Send reasoning back on tool-call messages: None = as the provider's profile
    # says (see :mod:`.profiles`), True/False = always/never.
    echo_reasoning: bool | None = None
    reasoning_effort: str | None = None


@dataclass(frozen=True, slots=True)
class Usage:
    """Token counts as the provider reported them (the ground truth for budgets)."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0
    cached_tokens: int = 0
    reasoning_tokens: int = 0
    cache_hit_tokens: int = 0
    cache_miss_tokens: int = 0

    @classmethod
    def from_wire(cls, raw: JSONObject) -> Usage:
        """Read OpenAI's usage object plus DeepSeek's cache counters."""

        def num(obj: object, key: str) -> int:
            if isinstance(obj, dict):
                value = obj.get(key)
                if isinstance(value, int | float) and not isinstance(value, bool):
                    return int(value)
            return 0

        prompt = num(raw, "prompt_tokens")
        completion = num(raw, "completion_tokens")
        return cls(
            prompt_tokens=prompt,
            completion_tokens=completion,
            total_tokens=num(raw, "total_tokens") or prompt + completion,
            cached_tokens=num(raw.get("prompt_tokens_details"), "cached_tokens"),
            reasoning_tokens=num(raw.get("completion_tokens_details"), "reasoning_tokens"),
            cache_hit_tokens=num(raw, "prompt_cache_hit_tokens"),
            cache_miss_tokens=num(raw, "prompt_cache_miss_tokens"),
        )

    def to_json(self) -> JSONObject:
        return {
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "total_tokens": self.total_tokens,
            "cached_tokens": self.cached_tokens,
            "reasoning_tokens": self.reasoning_tokens,
            "cache_hit_tokens": self.cache_hit_tokens,
            "cache_miss_tokens": self.cache_miss_tokens,
        }

    @property
    def effective_cached(self) -> int:
        """Prompt tokens served from the cache, as OpenAI or DeepSeek report them."""
        return min(max(self.cache_hit_tokens, self.cached_tokens), self.prompt_tokens)

    def cost(self, prices: Prices) -> float:
        """Price of this call."""
        return prices.cost(self.prompt_tokens, self.effective_cached, self.completion_tokens)


@dataclass(slots=True)
class UsageCounts:
    """What some work consumed: model and tool calls, tokens as the API reported them.

    The one counter: a session's totals, a turn's and a role's usage and a task's log
    summary are all made of it, and all priced by :class:`Prices`.
    """

    model_calls: int = 0
    tool_calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cached_tokens: int = 0

    def add_call(self, usage: Usage) -> None:
        """Count one model call and the tokens it reported."""
        self.model_calls += 1
        self.input_tokens += usage.prompt_tokens
        self.output_tokens += usage.completion_tokens
        self.cached_tokens += usage.effective_cached

    def add(self, other: UsageCounts) -> None:
        """Add ``other``'s counts to these."""
        self.model_calls += other.model_calls
        self.tool_calls += other.tool_calls
        self.input_tokens += other.input_tokens
        self.output_tokens += other.output_tokens
        self.cached_tokens += other.cached_tokens

    def counts(self) -> UsageCounts:
        """The bare counts (a copy), whatever subclass holds them."""
        return UsageCounts(
            self.model_calls,
            self.tool_calls,
            self.input_tokens,
            self.output_tokens,
            self.cached_tokens,
        )

    def __add__(self, other: UsageCounts) -> UsageCounts:
        total = self.counts()
        total.add(other)
        return total

    def __sub__(self, other: UsageCounts) -> UsageCounts:
        return UsageCounts(
            self.model_calls - other.model_calls,
            self.tool_calls - other.tool_calls,
            self.input_tokens - other.input_tokens,
            self.output_tokens - other.output_tokens,
            self.cached_tokens - other.cached_tokens,
        )

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    def cost_at(self, prices: Prices) -> float:
        """Price of these tokens (the one formula, :meth:`Prices.cost`)."""
        return prices.cost(self.input_tokens, self.cached_tokens, self.output_tokens)


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One function call requested by the model; ``arguments`` is the raw JSON text."""

    id: str
    name: str
    arguments: str

    def parsed_arguments(self) -> JSONObject:
        """The arguments as an object; empty or ``null`` means no arguments."""
        text = self.arguments.strip()
        if not text:
            return {}
        try:
            value = json.loads(text)
        except json.JSONDecodeError as exc:
            raise InvalidToolArguments(
                f"arguments of {self.name!r} are not valid JSON: {exc.msg} "
                f"at line {exc.lineno} column {exc.colno}",
                tool=self.name,
                call_id=self.id,
            ) from exc
        if value is None:
            return {}
        if not isinstance(value, dict):
            raise InvalidToolArguments(
                f"arguments of {self.name!r} must be a JSON object, got {type(value).__name__}",
                tool=self.name,
                call_id=self.id,
            )
        return value

    def to_wire(self) -> JSONObject:
        return {
            "id": self.id,
            "type": "function",
            "function": {"name": self.name, "arguments": self.arguments.strip() or "{}"},
        }


@dataclass(frozen=True, slots=True)
class TextDelta:
    """A fragment of the visible answer."""

    text: str


@dataclass(frozen=True, slots=True)
class ReasoningDelta:
    """A fragment of the model's thinking (``reasoning_content``, ``reasoning`` or
    the text of ``reasoning_details``)."""

    text: str


@dataclass(frozen=True, slots=True)
class RefusalDelta:
    """A fragment of a refusal (OpenAI's ``delta.refusal``): shown as the answer."""

    text: str


@dataclass(frozen=True, slots=True)
class StreamRestart:
    """The stream was cut and is being retried: discard partial text and reasoning."""


@dataclass(frozen=True, slots=True)
class Completion:
    """The whole answer; always the last event of a stream.

    ``finish_reason`` is the provider's own word: some say ``stop`` although they
    called tools, so callers should look at ``tool_calls``. ``refusal`` is the text
    of a refusal (OpenAI sends it instead of ``content``).
    """

    content: str
    reasoning: str | None
    tool_calls: list[ToolCall]
    finish_reason: str | None
    usage: Usage | None
    refusal: str | None = None

    @property
    def answer(self) -> str:
        """What the user reads as the answer: the content, else the refusal."""
        return self.content or self.refusal or ""

    def to_message(self) -> JSONObject:
        """The assistant message to append to the history.

        Keeps ``reasoning_content`` whenever reasoning was produced; whether a
        provider gets it back is decided per request (:mod:`.profiles`). A refusal
        becomes the content, which every provider accepts.
        """
        message: JSONObject = {"role": "assistant"}
        message["content"] = self.answer if (self.answer or not self.tool_calls) else None
        if self.reasoning:
            message["reasoning_content"] = self.reasoning
        if self.tool_calls:
            message["tool_calls"] = [call.to_wire() for call in self.tool_calls]
        return message

    def to_json(self) -> JSONObject:
        """A plain JSON form, used by recorded fixtures and logs."""
        return {
            "content": self.content,
            "reasoning": self.reasoning,
            "tool_calls": [
                {"id": c.id, "name": c.name, "arguments": c.arguments} for c in self.tool_calls
            ],
            "finish_reason": self.finish_reason,
            "usage": self.usage.to_json() if self.usage else None,
            **({"refusal": self.refusal} if self.refusal is not None else {}),
        }


ModelEvent = TextDelta | ReasoningDelta | RefusalDelta | StreamRestart | Completion
