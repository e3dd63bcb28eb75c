"""ModelClient against the scripted mock model on a real uvicorn on 127.0.0.1."""

from __future__ import annotations

import asyncio
import json
import logging
import random
import socket
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from email.utils import format_datetime
from typing import Any

import httpx
import pytest

from agent_shell_bridge.errors import ModelHTTPError, ModelStreamError, ModelUnavailable
from agent_shell_bridge.model.mock_script import MockScript
from agent_shell_bridge.model.mock_server import MockServer
from agent_shell_bridge.model.openai import ModelClient
from agent_shell_bridge.model.types import (
    Completion,
    InvalidToolArguments,
    ModelEvent,
    ModelSettings,
    ReasoningDelta,
    StreamRestart,
    TextDelta,
)

KEY = "sk-test-4f9c2e81d7a6b3c5"
USER = [{"role": "user", "content": "修复这个 bug"}]
TOOLS = [
    {
        "type": "function",
        "function": {"name": "read_file", "parameters": {"type": "object", "properties": {}}},
    }
]


@dataclass
class Rig:
    mock: MockServer
    client: ModelClient
    sleeps: list[float] = field(default_factory=list)

    async def run(
        self, messages: list[dict[str, Any]] | None = None, **kw: Any
    ) -> list[ModelEvent]:
        return [e async for e in self.client.stream_chat(messages or USER, **kw)]

    @property
    def requests(self) -> int:
        return len(self.mock.recorder.records)


Factory = Callable[..., Awaitable[Rig]]


@pytest.fixture
async def rig() -> AsyncIterator[Factory]:
    made: list[Rig] = []

    async def make(steps: list[dict[str, Any]], **settings: Any) -> Rig:
        mock = MockServer(MockScript.model_validate({"steps": steps}))
        await mock.start()
        sleeps: list[float] = []

        async def sleep(seconds: float) -> None:
            sleeps.append(seconds)

        settings.setdefault("api_base", mock.api_base)
        config = ModelSettings(model="mock-model", api_key=KEY, **settings)
        client = ModelClient(config, sleep=sleep, rng=random.Random(3))
        made.append(Rig(mock, client, sleeps))
        return made[-1]

    yield make
    for r in made:
        await r.client.aclose()
        await r.mock.stop()


def final(events: list[ModelEvent]) -> Completion:
    last = events[-1]
    assert isinstance(last, Completion)
    assert not any(isinstance(e, Completion) for e in events[:-1])
    return last


def text_of(events: list[ModelEvent]) -> str:
    return "".join(e.text for e in events if isinstance(e, TextDelta))


# --- the happy paths and provider quirks ---------------------------------------------


async def test_text_streams_in_deltas_with_usage_and_request_shape(rig: Factory) -> None:
    r = await rig([{"text": "你好，这是修复方案。", "chunk_size": 3}])
    events = await r.run(tools=TOOLS, tool_choice="auto", max_tokens=100)
    done = final(events)
    assert [e.text for e in events if isinstance(e, TextDelta)] == [
        "你好，",
        "这是修",
        "复方案",
        "。",
    ]
    assert done.content == "你好，这是修复方案。" and done.finish_reason == "stop"
    assert done.usage is not None and done.usage.prompt_tokens > 0
    assert done.usage.total_tokens == done.usage.prompt_tokens + done.usage.completion_tokens
    record = r.mock.recorder.records[0]
    assert record.body["stream"] is True
    assert record.body["stream_options"] == {"include_usage": True}
    assert record.body["tools"] == TOOLS and record.body["tool_choice"] == "auto"
    assert record.body["max_tokens"] == 100 and record.body["messages"] == USER
    assert record.auth_present and "authorization" not in record.headers
    assert KEY not in json.dumps(r.mock.recorder.to_json())


async def test_parallel_tool_calls_fragmented_by_index(rig: Factory) -> None:
    r = await rig(
        [
            {
                "tool_calls": [
                    {"name": "read_file", "arguments": {"path": "src/主.py"}},
                    {"name": "run_command", "arguments": {"command": "pytest -q"}},
                ],
                "chunk_size": 4,
            }
        ]
    )
    done = final(await r.run())
    assert [c.name for c in done.tool_calls] == ["read_file", "run_command"]
    assert done.tool_calls[0].parsed_arguments() == {"path": "src/主.py"}
    assert done.tool_calls[1].parsed_arguments() == {"command": "pytest -q"}
    assert len({c.id for c in done.tool_calls}) == 2
    assert done.finish_reason == "tool_calls"


async def test_ollama_parallel_calls_all_at_index_zero(rig: Factory) -> None:
    r = await rig(
        [
            {
                "style": "ollama",
                "tool_calls": [
                    {"name": "read_file", "arguments": {"path": "a.py"}, "id": "o1"},
                    {"name": "read_file", "arguments": {"path": "b.py"}, "id": "o2"},
                ],
            }
        ]
    )
    done = final(await r.run())
    assert [(c.id, c.parsed_arguments()) for c in done.tool_calls] == [
        ("o1", {"path": "a.py"}),
        ("o2", {"path": "b.py"}),
    ]


async def test_whole_tool_calls_without_index(rig: Factory) -> None:
    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {"choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

    calls = [
        {"id": "x1", "type": "function", "function": {"name": "list_directory", "arguments": "{}"}},
        {"id": "x2", "function": {"name": "read_file", "arguments": '{"path": "c"}'}},
    ]
    r = await rig(
        [
            {
                "raw_chunks": [
                    chunk({"role": "assistant", "tool_calls": [calls[0]]}),
                    chunk({"tool_calls": [calls[1]]}),
                    chunk({}, "tool_calls"),
                    "data: [DONE]\n\n",
                ]
            }
        ]
    )
    done = final(await r.run())
    assert [(c.id, c.name, c.arguments) for c in done.tool_calls] == [
        ("x1", "list_directory", "{}"),
        ("x2", "read_file", '{"path": "c"}'),
    ]


async def test_vllm_missing_arguments_and_reasoning_field(rig: Factory) -> None:
    r = await rig(
        [{"style": "vllm", "reasoning": "先看状态", "tool_calls": [{"name": "project_status"}]}]
    )
    events = await r.run()
    done = final(events)
    assert [e.text for e in events if isinstance(e, ReasoningDelta)] == ["先看状态"]
    assert done.tool_calls[0].arguments == ""
    assert done.tool_calls[0].parsed_arguments() == {}
    wire = done.to_message()["tool_calls"][0]["function"]
    assert wire == {"name": "project_status", "arguments": "{}"}


async def test_reasoning_round_trip_carries_reasoning_content(rig: Factory) -> None:
    """With echoing on (DeepSeek's profile), the tool-call message keeps its reasoning."""
    r = await rig(
        [
            {
                "reasoning": "需要读取文件。",
                "tool_calls": [{"name": "read_file", "arguments": {"path": "a.py"}}],
                "chunk_size": 2,
            },
            {"text": "完成"},
        ],
        echo_reasoning=True,
    )
    done = final(await r.run())
    message = done.to_message()
    assert message["reasoning_content"] == "需要读取文件。"
    history = [
        *USER,
        message,
        {"role": "tool", "tool_call_id": done.tool_calls[0].id, "content": "print(1)"},
    ]
    assert final(await r.run(history)).content == "完成"
    sent = r.mock.recorder.records[1].body["messages"][1]
    assert sent["reasoning_content"] == "需要读取文件。"
    assert sent["tool_calls"][0]["function"]["name"] == "read_file"


async def test_keepalive_comments_are_ignored(rig: Factory) -> None:
    r = await rig([{"text": "ok", "keepalive": True}])
    done = final(await r.run())
    assert done.content == "ok" and done.finish_reason == "stop"


async def test_comments_multiline_data_crlf_and_empty_choices(rig: Factory) -> None:
    r = await rig(
        [
            {
                "raw_chunks": [
                    ": OPENROUTER PROCESSING\r\n\r\n",
                    {"choices": [], "prompt_filter_results": [{"prompt_index": 0}]},
                    'data: {"choices": [{"index": 0,\r\n'
                    'data:  "delta": {"content": "多行"}}]}\r\n\r\n',
                    {
                        "choices": [
                            {"index": 0, "delta": {"content": "数据"}, "finish_reason": "stop"}
                        ]
                    },
                    {"choices": [], "usage": {"prompt_tokens": 5, "completion_tokens": 2}},
                    "data: [DONE]\r\n\r\n",
                ]
            }
        ]
    )
    done = final(await r.run())
    assert done.content == "多行数据"
    assert done.usage is not None and done.usage.total_tokens == 7


async def test_stop_finish_reason_with_tool_calls_keeps_the_calls(rig: Factory) -> None:
    r = await rig([{"finish_reason": "stop", "tool_calls": [{"name": "project_status"}]}])
    done = final(await r.run(tools=TOOLS, tool_choice="required"))
    assert done.finish_reason == "stop"
    assert [c.name for c in done.tool_calls] == ["project_status"]


async def test_finish_reason_without_done_is_a_complete_answer(rig: Factory) -> None:
    chunk = {"choices": [{"index": 0, "delta": {"content": "完"}, "finish_reason": "length"}]}
    r = await rig([{"raw_chunks": [chunk]}])
    done = final(await r.run())
    assert (done.content, done.finish_reason, r.requests) == ("完", "length", 1)


async def test_invalid_tool_arguments_are_a_typed_error(rig: Factory) -> None:
    r = await rig([{"tool_calls": [{"name": "read_file", "arguments": '{"path": "a.py'}]}])
    done = final(await r.run())
    with pytest.raises(InvalidToolArguments, match="read_file"):
        done.tool_calls[0].parsed_arguments()


async def test_path_without_v1_prefix(rig: Factory) -> None:
    r = await rig([{"text": "ok"}])
    r.client.settings = ModelSettings(api_base=r.mock.api_base.removesuffix("/v1"), api_key=KEY)
    assert final(await r.run()).content == "ok"
    assert r.mock.recorder.records[0].path == "/chat/completions"


# --- faults ---------------------------------------------------------------------------


async def test_error_object_mid_stream_raises_with_provider_message(rig: Factory) -> None:
    r = await rig(
        [
            {
                "text": "abcdef",
                "chunk_size": 2,
                "fault": "error_in_stream",
                "cut_after": 2,
                "error_message": "上游模型过载",
            }
        ]
    )
    events: list[ModelEvent] = []
    with pytest.raises(ModelStreamError, match="上游模型过载"):
        async for event in r.client.stream_chat(USER):
            events.append(event)
    assert text_of(events) == "ab"
    assert r.requests == 1 and r.sleeps == []


async def test_cut_before_tool_call_restarts_once(rig: Factory) -> None:
    r = await rig(
        [{"text": "abcdefgh", "chunk_size": 2, "fault": "cut", "times": 1, "cut_after": 3}]
    )
    events = await r.run()
    restart = next(i for i, e in enumerate(events) if isinstance(e, StreamRestart))
    assert text_of(events[:restart]) == "abcd"  # role chunk + two text chunks
    assert text_of(events[restart:]) == "abcdefgh"
    assert final(events).content == "abcdefgh"
    assert r.requests == 2 and len(r.sleeps) == 1
    assert r.mock.recorder.records[0].completed is False


async def test_cut_after_tool_call_started_is_reported(rig: Factory) -> None:
    r = await rig(
        [
            {
                "tool_calls": [{"name": "read_file", "arguments": {"path": "a.py"}}],
                "chunk_size": 3,
                "fault": "cut",
                "times": 1,
                "cut_after": 3,
            }
        ]
    )
    with pytest.raises(ModelStreamError, match="cut off") as err:
        await r.run()
    assert err.value.data == {"tool_call_started": True}
    assert r.requests == 1


async def test_second_cut_is_reported(rig: Factory) -> None:
    r = await rig([{"text": "abcdef", "chunk_size": 2, "fault": "cut", "times": 2}])
    events: list[ModelEvent] = []
    with pytest.raises(ModelStreamError):
        async for event in r.client.stream_chat(USER):
            events.append(event)
    assert sum(isinstance(e, StreamRestart) for e in events) == 1
    assert r.requests == 2


async def test_body_ending_without_done_or_finish_counts_as_cut(rig: Factory) -> None:
    partial = {"choices": [{"index": 0, "delta": {"content": "半"}}]}
    r = await rig([{"raw_chunks": [partial]}, {"text": "全部"}])
    events = await r.run()
    assert any(isinstance(e, StreamRestart) for e in events)
    assert final(events).content == "全部"


@pytest.mark.parametrize("status", ["429", "500", "503", "529"])
async def test_retryable_status_is_retried(rig: Factory, status: str) -> None:
    r = await rig([{"text": "恢复了", "fault": status, "times": 1}])
    done = final(await r.run())
    assert done.content == "恢复了"
    assert [rec.status for rec in r.mock.recorder.records] == [int(status), 200]
    assert len(r.sleeps) == 1 and 0.375 <= r.sleeps[0] <= 0.5


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        ({"retry_after": 7}, 7.0),
        ({"retry_after_ms": 1500}, 1.5),
        ({"retry_after": 3600}, 60.0),
    ],
)
async def test_retry_after_is_honoured(
    rig: Factory, headers: dict[str, Any], expected: float
) -> None:
    r = await rig([{"text": "ok", "fault": "429", "times": 1, **headers}])
    assert final(await r.run()).content == "ok"
    assert r.sleeps == [expected]


async def test_retry_after_http_date(rig: Factory) -> None:
    when = format_datetime(datetime.fromtimestamp(time.time() + 30, tz=UTC), usegmt=True)
    r = await rig([{"text": "ok", "fault": "503", "times": 1, "retry_after": when}])
    assert final(await r.run()).content == "ok"
    assert len(r.sleeps) == 1 and 27 <= r.sleeps[0] <= 30


async def test_exponential_backoff_then_unavailable(rig: Factory) -> None:
    r = await rig(
        [{"text": "never", "fault": "503", "times": 9, "error_message": "服务繁忙"}], max_attempts=3
    )
    with pytest.raises(ModelUnavailable, match="服务繁忙") as err:
        await r.run()
    assert err.value.data == {"status": 503, "attempts": 3}
    assert r.requests == 3
    assert len(r.sleeps) == 2
    assert 0.375 <= r.sleeps[0] <= 0.5 and 0.75 <= r.sleeps[1] <= 1.0


async def test_400_is_not_retried_and_carries_provider_message(rig: Factory) -> None:
    message = "Missing `reasoning_content` field in the assistant message"
    r = await rig([{"fault": "400", "error_message": message}, {"text": "unused"}])
    with pytest.raises(ModelHTTPError) as err:
        await r.run()
    assert err.value.status == 400 and message in err.value.message
    assert err.value.data == {"status": 400, "type": "invalid_request_error", "code": "400"}
    assert r.requests == 1 and r.sleeps == []


async def test_connection_refused_is_retried_then_unavailable() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    sleeps: list[float] = []

    async def sleep(seconds: float) -> None:
        sleeps.append(seconds)

    settings = ModelSettings(api_base=f"http://127.0.0.1:{port}/v1", api_key=KEY, max_attempts=2)
    client = ModelClient(settings, sleep=sleep)
    try:
        with pytest.raises(ModelUnavailable, match="ConnectError"):
            [e async for e in client.stream_chat(USER)]
    finally:
        await client.aclose()
    assert len(sleeps) == 1


async def test_read_timeout_is_retried_and_server_sees_the_disconnect(rig: Factory) -> None:
    r = await rig(
        [{"text": "慢", "fault": "slow", "times": 1, "slow_ms": 5000}], read_timeout_s=0.3
    )
    assert final(await r.run()).content == "慢"
    assert r.requests == 2
    async with asyncio.timeout(5):
        await r.mock.recorder.wait_for(lambda recs: recs[0].disconnected)


async def test_trust_env_off_ignores_proxy_variables(
    rig: Factory, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HTTP_PROXY", "http://127.0.0.1:9")
    monkeypatch.setenv("ALL_PROXY", "http://127.0.0.1:9")
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    r = await rig([{"text": "direct"}])
    assert final(await r.run()).content == "direct"


# --- cancellation ---------------------------------------------------------------------


async def test_cancelling_the_consumer_closes_the_stream(rig: Factory) -> None:
    r = await rig([{"text": "x" * 200, "chunk_size": 1, "delay_ms": 50}])
    got_first = asyncio.Event()

    async def consume() -> None:
        async for event in r.client.stream_chat(USER):
            if isinstance(event, TextDelta):
                got_first.set()

    task = asyncio.create_task(consume())
    async with asyncio.timeout(5):
        await got_first.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    async with asyncio.timeout(5):
        await r.mock.recorder.wait_for(lambda recs: recs[0].disconnected)
    assert not r.mock.recorder.records[0].completed


async def test_closing_the_generator_closes_the_stream(rig: Factory) -> None:
    r = await rig([{"text": "y" * 200, "chunk_size": 1, "delay_ms": 50}])
    stream = r.client.stream_chat(USER)
    async for event in stream:
        if isinstance(event, TextDelta):
            break
    await stream.aclose()  # type: ignore[attr-defined]
    async with asyncio.timeout(5):
        await r.mock.recorder.wait_for(lambda recs: recs[0].disconnected)


# --- the key never leaks --------------------------------------------------------------


async def test_api_key_never_leaks(rig: Factory, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    echo = f"Incorrect API key provided: {KEY}"
    r = await rig(
        [
            {"fault": "400", "error_message": echo},
            {"text": "ab", "fault": "error_in_stream", "error_message": echo},
            {"fault": "429", "times": 2, "error_message": echo},
        ],
        max_attempts=2,
    )
    errors: list[Exception] = []
    for _ in range(3):
        try:
            await r.run()
        except (ModelHTTPError, ModelUnavailable, ModelStreamError) as exc:
            errors.append(exc)
    assert [type(e) for e in errors] == [ModelHTTPError, ModelStreamError, ModelUnavailable]
    for exc in errors:
        assert "Incorrect API key provided" in str(exc)
        for text in (str(exc), repr(exc), json.dumps(exc.data, ensure_ascii=False)):  # type: ignore[attr-defined]
            assert KEY not in text
        assert exc.__cause__ is None or KEY not in str(exc.__cause__)
    assert caplog.records, "DEBUG logging should have captured the requests"
    for record in caplog.records:
        assert KEY not in record.getMessage()
    assert KEY not in repr(r.client) and KEY not in repr(r.client.settings)


async def test_http_client_can_be_injected(rig: Factory) -> None:
    r = await rig([{"text": "shared"}])
    async with httpx.AsyncClient() as http:
        client = ModelClient(r.client.settings, http=http)
        events = [e async for e in client.stream_chat(USER)]
        await client.aclose()
        assert not http.is_closed
    assert final(events).content == "shared"


async def test_non_streaming_json_answer_is_accepted(rig: Factory) -> None:
    """A provider that ignores ``stream: true`` and sends one JSON completion."""
    r = await rig(
        [
            {
                "non_streaming": True,
                "reasoning": "想",
                "text": "整段回答",
                "tool_calls": [{"name": "read_file", "arguments": {"path": "a"}, "id": "j1"}],
            }
        ]
    )
    events = await r.run()
    done = final(events)
    assert [type(e) for e in events[:-1]] == [ReasoningDelta, TextDelta]
    assert (done.content, done.reasoning, done.finish_reason) == ("整段回答", "想", "tool_calls")
    assert [(c.id, c.parsed_arguments()) for c in done.tool_calls] == [("j1", {"path": "a"})]
    assert done.usage is not None and done.usage.prompt_tokens > 0
