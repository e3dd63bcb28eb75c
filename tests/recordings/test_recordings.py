"""Real provider streams replayed through the model client, checked against the SDK.

Run with ``make test-recordings`` (``RECORDINGS=<dir>``): every ``<name>.sse`` in the
directory, with its ``<name>.json`` (``content_type``, optional ``pieces``: the read
boundaries the recorder saw), is served byte for byte to

* :class:`~agent_shell_bridge.model.openai.ModelClient`, the bridge's client, and
* the official ``openai`` SDK (``chat.completions.create(stream=True)`` accumulated
  with its own ``ChatCompletionStreamState``), an independent reference,

three ways: as sent, in 7-byte pieces and in 1-byte pieces (splitting JSON, lines
and multi-byte characters). Text, refusal, reasoning, tool calls (ids, names,
arguments), finish reason, token counts and mid-stream errors must agree, and the
client's incremental events must add up to its final completion. Where the
metadata names keys the provider refuses in the follow-up request
(``followup_must_not_have``), the request the bridge would send next to that
provider's API base (named in ``provider``) must not carry them.

The bytes go through an ``httpx`` transport that yields exactly the given pieces
(the remote API is the one part that is not ours); everything from the HTTP
response on is the real client. The recordings are never copied here: they are
other projects' captures, read from the directory the variable names.
"""

from __future__ import annotations

import itertools
import json
import os
import re
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest
from openai.lib.streaming.chat import ChatCompletionStreamState

from agent_shell_bridge.errors import ModelError
from agent_shell_bridge.model.openai import ModelClient
from agent_shell_bridge.model.types import (
    Completion,
    ModelSettings,
    ReasoningDelta,
    RefusalDelta,
    StreamRestart,
    TextDelta,
)

API_BASE = "http://provider.invalid/v1"
MESSAGES = [{"role": "user", "content": "replay"}]


def _recordings_dir() -> Path:
    raw = os.environ.get("RECORDINGS", "")
    if not raw:
        raise pytest.UsageError("set RECORDINGS to the directory of recorded .sse streams")
    path = Path(raw).expanduser()
    if not path.is_dir() or not any(path.glob("*.sse")):
        raise pytest.UsageError(f"RECORDINGS={raw}: no .sse recordings there")
    return path


RECORDINGS = _recordings_dir()
NAMES = sorted(p.stem for p in RECORDINGS.glob("*.sse"))
SPLITS = ["as-sent", "7-byte", "1-byte"]


@dataclass(frozen=True)
class Recording:
    name: str
    body: bytes
    content_type: str
    cuts: list[int]
    meta: dict[str, Any]

    @classmethod
    def load(cls, name: str) -> Recording:
        body = (RECORDINGS / f"{name}.sse").read_bytes()
        meta_path = RECORDINGS / f"{name}.json"
        meta: dict[str, Any] = (
            json.loads(meta_path.read_text(encoding="utf-8")) if meta_path.exists() else {}
        )
        cuts = [c for c in meta.get("pieces", []) if isinstance(c, int) and 0 < c < len(body)]
        content_type = str(meta.get("content_type", "text/event-stream"))
        return cls(name, body, content_type, sorted(cuts), meta)

    @property
    def api_base(self) -> str | None:
        """The provider's API base when ``provider`` names one: "Groq (api.groq.com/…, …)"."""
        found = re.search(
            r"\(([a-z0-9-]+(?:\.[a-z0-9-]+)+(?:/[^,)\s]*)?)", self.meta.get("provider", "")
        )
        return f"https://{found.group(1)}" if found else None

    def pieces(self, split: str) -> list[bytes]:
        if split == "as-sent":
            edges = [0, *self.cuts, len(self.body)]
            return [self.body[a:b] for a, b in itertools.pairwise(edges) if b > a]
        size = {"7-byte": 7, "1-byte": 1}[split]
        return [self.body[i : i + size] for i in range(0, len(self.body), size)]


def _transport(recording: Recording, split: str) -> httpx.MockTransport:
    """Answers every POST with the recording, yielded in exactly these pieces."""

    def handler(request: httpx.Request) -> httpx.Response:
        async def body() -> AsyncIterator[bytes]:
            for piece in recording.pieces(split):
                yield piece

        return httpx.Response(200, headers={"content-type": recording.content_type}, content=body())

    return httpx.MockTransport(handler)


@dataclass
class Assembly:
    """What one side made of a stream, in comparable terms."""

    content: str = ""
    refusal: str | None = None
    reasoning: str | None = None
    tool_calls: list[tuple[str, str, str]] | None = None
    finish_reason: str | None = None
    usage: tuple[int, int, int, int, int] | None = None
    error: str | None = None


def _details_text(details: object) -> str:
    if not isinstance(details, list):
        return ""
    out = []
    for item in details:
        if isinstance(item, dict):
            value = item.get("text") or item.get("summary")
            if isinstance(value, str):
                out.append(value)
    return "".join(out)


async def _bridge(recording: Recording, split: str) -> tuple[Assembly, list[object]]:
    async with httpx.AsyncClient(transport=_transport(recording, split)) as http:
        client = ModelClient(
            ModelSettings(api_base=API_BASE, model="replay", max_attempts=1), http=http
        )
        events: list[object] = []
        try:
            async for event in client.stream_chat(MESSAGES):
                events.append(event)
        except ModelError as exc:
            return Assembly(error=exc.message), events
    done = events[-1]
    assert isinstance(done, Completion)
    usage = done.usage
    return (
        Assembly(
            content=done.content,
            refusal=done.refusal,
            reasoning=done.reasoning,
            tool_calls=[(c.id, c.name, c.arguments) for c in done.tool_calls],
            finish_reason=done.finish_reason,
            usage=(
                usage.prompt_tokens,
                usage.completion_tokens,
                usage.total_tokens,
                usage.cached_tokens,
                usage.reasoning_tokens,
            )
            if usage
            else None,
        ),
        events,
    )


async def _reference(recording: Recording, split: str) -> Assembly:
    async with httpx.AsyncClient(transport=_transport(recording, split)) as http:
        sdk = openai.AsyncOpenAI(api_key="replay", base_url=API_BASE, http_client=http)
        sdk = sdk.with_options(max_retries=0)
        state: ChatCompletionStreamState[Any] = ChatCompletionStreamState()
        try:
            stream = await sdk.chat.completions.create(
                model="replay",
                messages=MESSAGES,  # type: ignore[arg-type]
                stream=True,
            )
            async for chunk in stream:
                state.handle_chunk(chunk)
        except openai.APIError as exc:
            return Assembly(error=exc.message)
    snapshot = state.current_completion_snapshot
    choice = next(c for c in snapshot.choices if c.index == 0)
    message = choice.message.to_dict()
    reasoning = (
        message.get("reasoning_content")
        or message.get("reasoning")
        or _details_text(message.get("reasoning_details"))
        or None
    )
    calls = [
        (
            c.get("id") or "",
            (c.get("function") or {}).get("name") or "",
            (c.get("function") or {}).get("arguments") or "",
        )
        for c in message.get("tool_calls") or []
    ]
    usage = snapshot.usage
    return Assembly(
        content=message.get("content") or "",
        refusal=message.get("refusal") or None,
        reasoning=reasoning,
        tool_calls=calls,
        finish_reason=choice.finish_reason,
        usage=(
            usage.prompt_tokens,
            usage.completion_tokens,
            usage.total_tokens,
            (usage.prompt_tokens_details.cached_tokens or 0) if usage.prompt_tokens_details else 0,
            (usage.completion_tokens_details.reasoning_tokens or 0)
            if usage.completion_tokens_details
            else 0,
        )
        if usage
        else None,
    )


def _joined(events: list[object], kind: type) -> str | None:
    text = "".join(e.text for e in events if isinstance(e, kind))  # type: ignore[attr-defined]
    return text or None


Check = Callable[[Assembly, Assembly], None]


@pytest.mark.parametrize("split", SPLITS)
@pytest.mark.parametrize("name", NAMES)
async def test_recording_assembles_like_the_sdk(name: str, split: str) -> None:
    recording = Recording.load(name)
    ours, events = await _bridge(recording, split)
    ref = await _reference(recording, split)
    if ref.error is not None or ours.error is not None:
        assert ref.error is not None, f"only the bridge failed: {ours.error}"
        assert ours.error is not None, f"only the SDK failed: {ref.error}"
        assert ref.error in ours.error
        return
    assert not any(isinstance(e, StreamRestart) for e in events)
    assert ours.content == ref.content
    assert ours.refusal == ref.refusal
    assert ours.reasoning == ref.reasoning
    assert ours.finish_reason == ref.finish_reason
    assert ours.usage == ref.usage
    assert ours.tool_calls is not None and ref.tool_calls is not None
    assert len(ours.tool_calls) == len(ref.tool_calls)
    for (our_id, our_name, our_args), (ref_id, ref_name, ref_args) in zip(
        ours.tool_calls, ref.tool_calls, strict=True
    ):
        assert our_name == ref_name
        assert our_args == ref_args
        if ref_id:
            assert our_id == ref_id
        assert our_id, "every call the bridge reports has an id"
    # The incremental events add up to the final completion.
    assert (_joined(events, TextDelta) or "") == ours.content
    assert _joined(events, ReasoningDelta) == ours.reasoning
    assert _joined(events, RefusalDelta) == ours.refusal
    _check_followup(recording, events[-1])


def _check_followup(recording: Recording, done: object) -> None:
    refused = recording.meta.get("followup_must_not_have") or []
    if not refused:
        return
    assert isinstance(done, Completion) and done.tool_calls
    assert recording.api_base, f"{recording.name}: no API base in 'provider'"
    client = ModelClient(ModelSettings(api_base=recording.api_base))
    history = [
        *MESSAGES,
        done.to_message(),
        *({"role": "tool", "tool_call_id": c.id, "content": "ok"} for c in done.tool_calls),
    ]
    sent = client.build_body(history)["messages"][1]
    assert sent["tool_calls"], "the follow-up carries the calls"
    assert not [k for k in refused if k in sent], f"{recording.api_base} refuses {refused}"
