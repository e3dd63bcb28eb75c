"""Streaming client for OpenAI-compatible chat-completions APIs (DeepSeek first).

One request = one :meth:`ModelClient.stream_chat` call, an async generator of
:class:`~.types.ModelEvent` ending with a :class:`~.types.Completion`.

Failure handling:

* connection errors, timeouts and retryable statuses are retried with backoff
  (:mod:`.retry`); exhausted retries raise :class:`ModelUnavailable`;
* 400/401/403/404/422 raise :class:`ModelHTTPError` with the provider's message;
  a request over the context length raises its subclass :class:`ModelContextLimit`;
  a 400 that names ``reasoning_content`` is sent once more with the other echo
  choice (:mod:`.profiles`), which the client keeps;
* a stream cut before any tool call began is restarted once, announced by a
  :class:`StreamRestart` event; a cut after that, or an ``error`` object inside the
  stream, raises :class:`ModelStreamError`.

Cancelling the consuming task, or closing the generator, closes the HTTP stream at
once so the provider stops generating. The API key never appears in logs, reprs
or error messages (provider messages are scrubbed of it too).
"""

from __future__ import annotations

import asyncio
import json
import logging
import random
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import httpx

from ..errors import ModelContextLimit, ModelHTTPError, ModelStreamError, ModelUnavailable
from ..types import JSONObject
from .assemble import CompletionAssembler, provider_error_message
from .encoding import JsonCache
from .overflow import context_limit_of, is_context_overflow
from .profiles import flip_for_error, profile_for, wire_messages
from .retry import RetryPolicy
from .sse import SSEDecoder
from .types import ModelEvent, ModelSettings, StreamRestart

__all__ = ["ModelClient", "Sleep"]

log = logging.getLogger(__name__)

Sleep = Callable[[float], Awaitable[None]]

_MAX_ERROR_BODY = 64 * 1024


class _StreamCut(Exception):
    """The body ended (or broke) before the stream said it was complete."""


class _RetryableStatus(Exception):
    def __init__(self, status: int, message: str, headers: httpx.Headers) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.headers = headers


class ModelClient:
    """Talks to one chat-completions endpoint; share one per session."""

    def __init__(
        self,
        settings: ModelSettings,
        *,
        http: httpx.AsyncClient | None = None,
        sleep: Sleep = asyncio.sleep,
        rng: random.Random | None = None,
    ) -> None:
        self.settings = settings
        self._owns_http = http is None
        self._http = http or httpx.AsyncClient(trust_env=settings.trust_env)
        self._sleep = sleep
        self._policy = RetryPolicy(
            max_attempts=max(1, settings.max_attempts),
            backoff_base_s=settings.backoff_base_s,
            backoff_cap_s=settings.backoff_cap_s,
            retry_after_cap_s=settings.retry_after_cap_s,
            rng=rng or random.Random(),  # noqa: S311 - jitter, not cryptography
        )
        echo = settings.echo_reasoning
        if echo is None:
            echo = profile_for(settings.api_base).echo_reasoning
        self.echo_reasoning = echo
        # The history's JSON between requests (also the budget's size checks).
        self.json_cache = JsonCache()

    def __repr__(self) -> str:
        return f"ModelClient(api_base={self.settings.api_base!r}, model={self.settings.model!r})"

    async def aclose(self) -> None:
        if self._owns_http:
            await self._http.aclose()

    @property
    def url(self) -> str:
        return self.settings.api_base.rstrip("/") + "/chat/completions"

    def build_body(
        self,
        messages: list[JSONObject],
        tools: list[JSONObject] | None = None,
        *,
        tool_choice: str | None = None,
        max_tokens: int | None = None,
    ) -> JSONObject:
        body: JSONObject = {
            "model": self.settings.model,
            "messages": wire_messages(
                messages, echo_reasoning=self.echo_reasoning, provider=self.settings.api_base
            ),
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        if tools:
            body["tools"] = tools
            if tool_choice is not None:
                body["tool_choice"] = tool_choice
        if max_tokens is not None:
            body["max_tokens"] = max_tokens
        if self.settings.reasoning_effort:
            body["reasoning_effort"] = self.settings.reasoning_effort
        return body

    async def stream_chat(
        self,
        messages: list[JSONObject],
        tools: list[JSONObject] | None = None,
        *,
        tool_choice: str | None = None,
        max_tokens: int | None = None,
    ) -> AsyncIterator[ModelEvent]:
        """Stream one answer; the last event is always a Completion."""
        body = self.build_body(messages, tools, tool_choice=tool_choice, max_tokens=max_tokens)
        retries = 0
        restarted = False
        flipped = False
        while True:
            assembler = CompletionAssembler()
            try:
                async for event in self._attempt(body, assembler):
                    yield event
                yield assembler.finish()
                return
            except ModelHTTPError as exc:
                echo = flip_for_error(
                    exc.status, exc.message, messages, echo_reasoning=self.echo_reasoning
                )
                if flipped or echo is None:
                    raise
                flipped = True
                log.warning("the provider rejected the reasoning echo choice; retrying once")
                self.echo_reasoning = echo
                body = {
                    **body,
                    "messages": wire_messages(
                        messages, echo_reasoning=echo, provider=self.settings.api_base
                    ),
                }
            except ModelStreamError as exc:
                raise ModelStreamError(
                    self._scrub(exc.message), data=self._scrub_data(exc.data)
                ) from None
            except _RetryableStatus as exc:
                retries += 1
                if retries >= self._policy.max_attempts:
                    raise ModelUnavailable(
                        self._scrub(
                            f"model API still failing after {retries} attempts: "
                            f"HTTP {exc.status}: {exc.message}"
                        ),
                        data={"status": exc.status, "attempts": retries},
                    ) from None
                log.warning("model API answered HTTP %d; retry %d", exc.status, retries)
                await self._sleep(self._policy.delay(retries - 1, exc.headers))
            except (httpx.TimeoutException, httpx.TransportError) as exc:
                retries += 1
                kind = type(exc).__name__
                if retries >= self._policy.max_attempts:
                    raise ModelUnavailable(
                        self._scrub(
                            f"model API unreachable after {retries} attempts ({kind}) at {self.url}"
                        ),
                        data={"attempts": retries, "error": kind},
                    ) from None
                log.warning("model request failed (%s); retry %d", kind, retries)
                await self._sleep(self._policy.delay(retries - 1))
            except _StreamCut as exc:
                if assembler.tool_call_started or restarted:
                    raise ModelStreamError(
                        self._scrub(f"the model stream was cut off: {exc}"),
                        data={"tool_call_started": assembler.tool_call_started},
                    ) from None
                restarted = True
                log.warning("model stream cut (%s); restarting once", exc)
                await self._sleep(self._policy.backoff(0))
                yield StreamRestart()

    async def _attempt(
        self, body: JSONObject, assembler: CompletionAssembler
    ) -> AsyncIterator[ModelEvent]:
        timeout = httpx.Timeout(
            connect=self.settings.connect_timeout_s,
            read=self.settings.read_timeout_s,
            write=self.settings.read_timeout_s,
            pool=self.settings.connect_timeout_s,
        )
        headers = {"Accept": "text/event-stream", "Content-Type": "application/json"}
        if self.settings.api_key:
            headers["Authorization"] = f"Bearer {self.settings.api_key}"
        payload = self.json_cache.body(body)
        log.debug("POST %s model=%s messages=%d", self.url, body["model"], len(body["messages"]))
        async with self._http.stream(
            "POST", self.url, content=payload, headers=headers, timeout=timeout
        ) as response:
            if response.status_code != 200:
                await self._raise_for_status(response)
            if response.headers.get("content-type", "").startswith("application/json"):
                # A provider that ignored ``stream: true`` sent one whole completion.
                for event in assembler.feed_data((await response.aread()).decode("utf-8")):
                    yield event
                assembler.done = True
                return
            decoder = SSEDecoder()
            try:
                async for text in response.aiter_text():
                    for sse in decoder.feed(text):
                        for event in assembler.feed_data(sse.data):
                            yield event
                        if assembler.done:
                            return
                for sse in decoder.close():
                    for event in assembler.feed_data(sse.data):
                        yield event
            except (httpx.TimeoutException, httpx.TransportError) as exc:
                raise _StreamCut(type(exc).__name__) from exc
            if not assembler.complete:
                raise _StreamCut("the body ended without [DONE] or a finish reason")

    async def _raise_for_status(self, response: httpx.Response) -> None:
        status = response.status_code
        raw = b""
        async for part in response.aiter_bytes():
            raw += part
            if len(raw) > _MAX_ERROR_BODY:
                break
        message, detail = _error_from_body(raw, response.reason_phrase)
        message = self._scrub(message)
        if self._policy.should_retry_status(status, response.headers):
            raise _RetryableStatus(status, message, response.headers)
        if is_context_overflow(status, message, detail):
            limit = context_limit_of(message)
            raise ModelContextLimit(
                f"the request is over the model's context length (HTTP {status}): {message}",
                status=status,
                limit=limit,
                data={"status": status, "context_limit": limit, **detail},
            )
        raise ModelHTTPError(
            f"model API answered HTTP {status}: {message}",
            status=status,
            data={"status": status, **detail},
        )

    def _scrub(self, text: str) -> str:
        key = self.settings.api_key
        if key and key in text:
            text = text.replace(key, "[redacted]")
        return text

    def _scrub_data(self, data: Any) -> Any:
        key = self.settings.api_key
        if data is None or not key:
            return data
        text = json.dumps(data, ensure_ascii=False)
        if key not in text:
            return data
        return json.loads(text.replace(json.dumps(key)[1:-1], "[redacted]"))


def _error_from_body(raw: bytes, reason: str) -> tuple[str, dict[str, Any]]:
    """The provider's message and error type/code from an error response body."""
    text = raw.decode("utf-8", errors="replace")
    try:
        parsed = json.loads(text)
    except json.JSONDecodeError:
        return (text.strip()[:500] or reason or "no error message"), {}
    detail: dict[str, Any] = {}
    error = parsed.get("error", parsed) if isinstance(parsed, dict) else parsed
    if isinstance(error, dict):
        for key in ("type", "code"):
            if isinstance(error.get(key), str | int):
                detail[key] = error[key]
    return provider_error_message(error), detail
