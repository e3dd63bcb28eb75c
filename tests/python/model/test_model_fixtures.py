"""Recorded model streams: one contract, two sides.

``tests/fixtures/model/<case>.sse`` holds the exact bytes the mock model streams for
a case, ``<case>.json`` the request and what the client decodes from those bytes
(events, Completion, history message). This test regenerates both and fails when a
stored file is stale, so the mock, the decoder and the fixtures cannot drift apart.
Other suites (the Emacs side) may replay the ``.sse`` files as real provider output.

Refresh after an intended change with::

    AGENT_SHELL_REFRESH_FIXTURES=1 .venv/bin/pytest -q tests/python/test_model_fixtures.py
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import httpx
import pytest

from agent_shell_bridge.model.assemble import CompletionAssembler
from agent_shell_bridge.model.mock_script import MockScript
from agent_shell_bridge.model.mock_server import MockServer
from agent_shell_bridge.model.openai import ModelClient
from agent_shell_bridge.model.sse import SSEDecoder
from agent_shell_bridge.model.types import (
    Completion,
    ModelEvent,
    ModelSettings,
    ReasoningDelta,
    RefusalDelta,
    StreamRestart,
    TextDelta,
)

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "model"
REFRESH = os.environ.get("AGENT_SHELL_REFRESH_FIXTURES") == "1"
MESSAGES = [
    {"role": "system", "content": "You are agent-shell."},
    {"role": "user", "content": "输入参数含中文字符时 JSON 解析失败，请修复。"},
]
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "read_file",
            "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
        },
    }
]
CASES: dict[str, dict[str, Any]] = {
    "text_reasoning_zh": {
        "reasoning": "先复现问题，再定位按字节遍历的循环。",
        "text": "原因是按字节而不是按 rune 遍历字符串 🙂",
        "chunk_size": 4,
    },
    "parallel_tool_calls": {
        "text": "先看两个文件。",
        "tool_calls": [
            {"name": "read_file", "arguments": {"path": "internal/jsonutil/parser.go"}},
            {"name": "read_file", "arguments": {"path": "internal/jsonutil/解析_test.go"}},
        ],
        "chunk_size": 6,
    },
    "ollama_style": {
        "style": "ollama",
        "tool_calls": [
            {"name": "read_file", "arguments": {"path": "a.go"}},
            {"name": "project_status"},
        ],
    },
    "vllm_style": {
        "style": "vllm",
        "reasoning": "需要项目状态。",
        "tool_calls": [{"name": "project_status"}],
    },
    "keepalive": {"keepalive": True, "text": "排队后回答", "chunk_size": 3},
    # Written from the providers' documented chunk formats (see the helpers below).
    "refusal_openai": {"raw_chunks": "refusal"},
    "reasoning_details_openrouter": {"raw_chunks": "reasoning_details"},
    "reasoning_details_only": {"raw_chunks": "details_only"},
    "indexless_parallel_calls": {"raw_chunks": "indexless"},
}


def _chunk(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> dict[str, Any]:
    return {
        "id": "chatcmpl-fixture",
        "object": "chat.completion.chunk",
        "created": 1_700_000_000,
        "model": "fixture-model",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        **extra,
    }


DONE = "data: [DONE]\n\n"


def _details(text: str) -> list[dict[str, Any]]:
    return [{"type": "reasoning.text", "text": text, "format": "unknown", "index": 0}]


RAW: dict[str, list[dict[str, Any] | str]] = {
    # OpenAI: a refusal streams in ``delta.refusal`` with ``content: null``.
    "refusal": [
        _chunk({"role": "assistant", "content": None, "refusal": ""}),
        _chunk({"refusal": "抱歉，"}),
        _chunk({"refusal": "I can't help with that."}),
        _chunk({}, "stop"),
        DONE,
    ],
    # OpenRouter: the same thinking in ``reasoning`` and in ``reasoning_details``
    # (it must count once); an encrypted detail carries no text.
    "reasoning_details": [
        _chunk({"role": "assistant", "content": "", "reasoning": None, "reasoning_details": []}),
        _chunk({"content": "", "reasoning": "先想", "reasoning_details": _details("先想")}),
        _chunk({"content": "", "reasoning": "一想。", "reasoning_details": _details("一想。")}),
        _chunk(
            {
                "content": "",
                "reasoning": None,
                "reasoning_details": [
                    {"type": "reasoning.encrypted", "data": "b64==", "format": "unknown"}
                ],
            }
        ),
        _chunk({"content": "答案是 42。"}),
        _chunk({"content": ""}, "stop"),
        DONE,
    ],
    # Only ``reasoning_details`` (Snowflake via Claude): summary entries count too.
    "details_only": [
        _chunk({"role": "assistant", "content": "", "reasoning_details": _details("15 × 27")}),
        _chunk({"content": "", "reasoning_details": _details(" = 405")}),
        _chunk(
            {
                "content": "",
                "reasoning_details": [{"type": "reasoning.summary", "summary": "；核对完毕"}],
            }
        ),
        _chunk({"content": "405"}),
        _chunk({}, "stop"),
        DONE,
    ],
    # Gemini's OpenAI-compatible endpoint: whole calls, no ``index``, empty ids.
    "indexless": [
        _chunk(
            {
                "role": "assistant",
                "tool_calls": [
                    {
                        "id": "",
                        "type": "function",
                        "function": {"name": "get_weather", "arguments": '{"city": "台北"}'},
                    }
                ],
            }
        ),
        _chunk(
            {
                "tool_calls": [
                    {
                        "id": "",
                        "type": "function",
                        "function": {"name": "get_weather", "arguments": '{"city": "Tokyo"}'},
                    },
                    {
                        "id": "",
                        "type": "function",
                        "function": {"name": "read_file", "arguments": '{"path": "a.py"}'},
                    },
                ]
            }
        ),
        _chunk({}, "tool_calls"),
        DONE,
    ],
}


def _step(case: str) -> dict[str, Any]:
    step = dict(CASES[case])
    if isinstance(step.get("raw_chunks"), str):
        step["raw_chunks"] = RAW[step["raw_chunks"]]
    return step


def event_json(event: ModelEvent) -> dict[str, Any]:
    if isinstance(event, TextDelta):
        return {"type": "text", "text": event.text}
    if isinstance(event, ReasoningDelta):
        return {"type": "reasoning", "text": event.text}
    if isinstance(event, RefusalDelta):
        return {"type": "refusal", "text": event.text}
    if isinstance(event, StreamRestart):
        return {"type": "restart"}
    return {"type": "completion"}


def decode(sse: str, piece: int = 7) -> tuple[list[ModelEvent], Completion]:
    """Decode recorded bytes the way the client does, fed in small pieces."""
    decoder = SSEDecoder()
    assembler = CompletionAssembler()
    events: list[ModelEvent] = []
    for start in range(0, len(sse), piece):
        for item in decoder.feed(sse[start : start + piece]):
            events.extend(assembler.feed_data(item.data))
    for item in decoder.close():
        events.extend(assembler.feed_data(item.data))
    assert assembler.done, "a recorded stream must end with [DONE]"
    return events, assembler.finish()


def check(path: Path, fresh: bytes) -> None:
    if REFRESH:
        path.write_bytes(fresh)
        return
    assert path.exists(), f"missing {path.name}; run with AGENT_SHELL_REFRESH_FIXTURES=1"
    assert path.read_bytes() == fresh, (
        f"{path.name} is stale; refresh with AGENT_SHELL_REFRESH_FIXTURES=1"
    )


@pytest.mark.parametrize("case", sorted(CASES))
async def test_recorded_stream_is_current(case: str) -> None:
    script = MockScript.model_validate({"steps": [_step(case)]})
    async with MockServer(script) as mock, httpx.AsyncClient() as http:
        settings = ModelSettings(api_base=mock.api_base, model="deepseek-chat")
        body = ModelClient(settings, http=http).build_body(MESSAGES, TOOLS, tool_choice="auto")
        raw = (await http.post(f"{mock.api_base}/chat/completions", json=body)).content

    events, completion = decode(raw.decode("utf-8"))
    expected = {
        "request": body,
        "events": [event_json(e) for e in events],
        "completion": completion.to_json(),
        "message": completion.to_message(),
    }
    check(FIXTURES / f"{case}.sse", raw)
    text = json.dumps(expected, ensure_ascii=False, indent=2) + "\n"
    check(FIXTURES / f"{case}.json", text.encode("utf-8"))


@pytest.mark.parametrize("case", sorted(CASES))
async def test_live_client_decodes_the_recording_identically(case: str) -> None:
    """Replay the stored bytes over real HTTP, in odd-sized pieces, to the real client."""
    sse = (FIXTURES / f"{case}.sse").read_text(encoding="utf-8")
    stored = json.loads((FIXTURES / f"{case}.json").read_text(encoding="utf-8"))
    pieces = [sse[i : i + 37] for i in range(0, len(sse), 37)]
    script = MockScript.model_validate({"steps": [{"raw_chunks": pieces}]})
    async with MockServer(script) as mock:
        client = ModelClient(ModelSettings(api_base=mock.api_base, model="deepseek-chat"))
        try:
            live = [e async for e in client.stream_chat(MESSAGES, TOOLS, tool_choice="auto")]
        finally:
            await client.aclose()
    last = live[-1]
    assert isinstance(last, Completion)
    assert [event_json(e) for e in live[:-1]] == stored["events"]
    assert last.to_json() == stored["completion"]
    assert last.to_message() == stored["message"]
    assert mock.recorder.records[0].body == stored["request"]


def test_every_fixture_file_belongs_to_a_case() -> None:
    stored = {p.stem for p in FIXTURES.glob("*.sse")} | {p.stem for p in FIXTURES.glob("*.json")}
    assert stored == set(CASES)
