"""Turn decoded chat-completion chunks into events and one final Completion.

Tolerates what real providers send: tool-call fragments keyed by ``index``, a new
``id`` at an already used index (Ollama puts every parallel call at index 0), no
index and empty ids (Gemini: a fragment naming a function after a finished call
starts a new call), whole calls in one chunk, no ``arguments`` field (vLLM),
arguments given as an object, reasoning as ``reasoning_content`` (DeepSeek, GLM),
``reasoning`` (vLLM, Groq, OpenRouter) or only ``reasoning_details`` (OpenRouter
style, Snowflake), ``refusal`` text (OpenAI), ``choices: []`` chunks (Azure prompt
filter, the usage chunk), other choices than the first (``n > 1``: ignored) and an
``error`` object inside the stream.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from ..errors import ModelStreamError
from ..types import JSONObject
from .types import (
    Completion,
    ModelEvent,
    ReasoningDelta,
    RefusalDelta,
    TextDelta,
    ToolCall,
    Usage,
)

__all__ = ["CompletionAssembler", "provider_error_message"]


def provider_error_message(error: object) -> str:
    """The human message inside a provider's ``error`` value, whatever its shape."""
    if isinstance(error, dict):
        for key in ("message", "msg", "detail"):
            value = error.get(key)
            if isinstance(value, str) and value:
                return value
        inner = error.get("error")
        if inner is not None and inner is not error:
            return provider_error_message(inner)
        return json.dumps(error, ensure_ascii=False)[:500]
    if isinstance(error, str):
        return error
    return str(error)[:500]


def reasoning_text(delta: JSONObject) -> str:
    """The reasoning in one delta, from whichever field the provider uses.

    ``reasoning_content`` or ``reasoning`` when present (OpenRouter sends the same
    text in ``reasoning`` and ``reasoning_details``: it must count once), else the
    ``text`` (or ``summary``) of each ``reasoning_details`` entry; encrypted entries
    carry no text.
    """
    for key in ("reasoning_content", "reasoning"):
        text = delta.get(key)
        if isinstance(text, str) and text:
            return text
    details = delta.get("reasoning_details")
    if not isinstance(details, list):
        return ""
    parts: list[str] = []
    for item in details:
        if isinstance(item, dict):
            for key in ("text", "summary"):
                value = item.get(key)
                if isinstance(value, str) and value:
                    parts.append(value)
                    break
    return "".join(parts)


def _is_complete_json(text: str) -> bool:
    try:
        json.loads(text)
    except json.JSONDecodeError:
        return False
    return True


@dataclass(slots=True)
class _PartialCall:
    index: int | None
    id: str
    name: str
    arguments: str


class CompletionAssembler:
    """Feed chunk objects with :meth:`feed`; :meth:`finish` gives the Completion."""

    def __init__(self) -> None:
        self._content: list[str] = []
        self._reasoning: list[str] = []
        self._refusal: list[str] = []
        self._calls: list[_PartialCall] = []
        self._by_index: dict[int, _PartialCall] = {}
        self.finish_reason: str | None = None
        self.usage: Usage | None = None
        self.done = False

    @property
    def tool_call_started(self) -> bool:
        return bool(self._calls)

    @property
    def complete(self) -> bool:
        """True once the stream said it was over ([DONE] or a finish reason)."""
        return self.done or self.finish_reason is not None

    def feed_data(self, data: str) -> list[ModelEvent]:
        """Handle one SSE ``data`` payload (JSON text or ``[DONE]``)."""
        if data.strip() == "[DONE]":
            self.done = True
            return []
        try:
            chunk = json.loads(data)
        except json.JSONDecodeError as exc:
            raise ModelStreamError(
                f"the model stream sent invalid JSON: {exc.msg}", data={"payload": data[:200]}
            ) from exc
        if not isinstance(chunk, dict):
            raise ModelStreamError("the model stream sent a non-object chunk")
        return self.feed(chunk)

    def feed(self, chunk: JSONObject) -> list[ModelEvent]:
        error = chunk.get("error")
        if error:
            raise ModelStreamError(
                f"the model provider reported an error mid-stream: {provider_error_message(error)}",
                data={"provider_error": error},
            )
        usage = chunk.get("usage")
        if isinstance(usage, dict):
            self.usage = Usage.from_wire(usage)
        events: list[ModelEvent] = []
        choices = chunk.get("choices")
        if not isinstance(choices, list):
            return events
        for choice in choices:
            if not isinstance(choice, dict) or choice.get("index", 0) not in (0, None):
                continue
            delta = choice.get("delta")
            if not isinstance(delta, dict):
                delta = choice.get("message")
            if isinstance(delta, dict):
                events.extend(self._feed_delta(delta))
            reason = choice.get("finish_reason")
            if isinstance(reason, str) and reason:
                self.finish_reason = reason
        return events

    def _feed_delta(self, delta: JSONObject) -> list[ModelEvent]:
        events: list[ModelEvent] = []
        thought = reasoning_text(delta)
        if thought:
            self._reasoning.append(thought)
            events.append(ReasoningDelta(thought))
        text = delta.get("content")
        if isinstance(text, str) and text:
            self._content.append(text)
            events.append(TextDelta(text))
        refusal = delta.get("refusal")
        if isinstance(refusal, str) and refusal:
            self._refusal.append(refusal)
            events.append(RefusalDelta(refusal))
        calls = delta.get("tool_calls")
        if isinstance(calls, list):
            for raw in calls:
                if isinstance(raw, dict):
                    self._feed_tool_delta(raw)
        return events

    def _feed_tool_delta(self, raw: JSONObject) -> None:
        index = raw.get("index")
        if not isinstance(index, int) or isinstance(index, bool):
            index = None
        raw_id = raw.get("id")
        call_id = raw_id if isinstance(raw_id, str) else ""
        raw_function = raw.get("function")
        function: JSONObject = raw_function if isinstance(raw_function, dict) else {}
        name = function.get("name")
        name = name if isinstance(name, str) else ""
        call = self._slot(index, call_id, name)
        if name and not call.name:
            call.name = name
        args = function.get("arguments")
        if isinstance(args, str):
            call.arguments += args
        elif isinstance(args, dict | list):
            call.arguments += json.dumps(args, ensure_ascii=False)

    def _slot(self, index: int | None, call_id: str, name: str) -> _PartialCall:
        """Find the call this fragment continues, or start a new one.

        A known id continues its call; a new id at a used index starts one. Without
        an id, a fragment naming a function starts a new call when the call it
        would continue already has a name and either another one or finished
        arguments: some providers repeat the name on every fragment of one call.
        """
        if call_id:
            for call in self._calls:
                if call.id == call_id:
                    return call
        current = self._by_index.get(index) if index is not None else None
        if current is None and index is None and self._calls and not call_id:
            current = self._calls[-1]
        if (
            current is not None
            and not call_id
            and name
            and current.name
            and (name != current.name or _is_complete_json(current.arguments))
        ):
            current = None
        if current is not None and (not call_id or not current.id):
            if call_id:
                current.id = call_id
            return current
        call = _PartialCall(index=index, id=call_id, name="", arguments="")
        self._calls.append(call)
        if index is not None:
            self._by_index[index] = call
        return call

    def finish(self) -> Completion:
        calls = [
            ToolCall(id=c.id or f"call_{i}", name=c.name, arguments=c.arguments)
            for i, c in enumerate(self._calls)
        ]
        return Completion(
            content="".join(self._content),
            reasoning="".join(self._reasoning) or None,
            tool_calls=calls,
            finish_reason=self.finish_reason,
            usage=self.usage,
            refusal="".join(self._refusal) or None,
        )
