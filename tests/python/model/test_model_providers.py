"""What real providers differ on: reasoning echo, refusals, reasoning_details, tool ids.

The provider side is the scripted mock model on a real uvicorn on 127.0.0.1, set up
to answer as the provider's documentation and its users' bug reports describe:
Groq rejects an echoed ``reasoning_content`` with 400, DeepSeek's thinking mode
rejects a tool-call message without it.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import pytest

from agent_shell_bridge.config import BridgeConfig, echo_setting
from agent_shell_bridge.errors import ModelHTTPError
from agent_shell_bridge.model.assemble import CompletionAssembler, reasoning_text
from agent_shell_bridge.model.mock_script import MockScript
from agent_shell_bridge.model.mock_server import MockServer
from agent_shell_bridge.model.openai import ModelClient
from agent_shell_bridge.model.profiles import flip_for_error, profile_for, wire_messages
from agent_shell_bridge.model.types import (
    Completion,
    ModelSettings,
    ReasoningDelta,
    RefusalDelta,
    ToolCall,
)
from agent_shell_bridge.wire import ModelConfig

THOUGHT = "先读文件再改。"
CALL = ToolCall(id="call_1", name="read_file", arguments='{"path": "a.py"}')
HISTORY: list[dict[str, Any]] = [
    {"role": "user", "content": "修复 a.py"},
    Completion(
        content="", reasoning=THOUGHT, tool_calls=[CALL], finish_reason="tool_calls", usage=None
    ).to_message(),
    {"role": "tool", "tool_call_id": "call_1", "content": "print(1)"},
]
GROQ = "'messages.1' : for 'role:assistant' ... property 'reasoning_content' is unsupported"


async def _run(client: ModelClient, messages: list[dict[str, Any]]) -> Completion:
    last = None
    async for event in client.stream_chat(messages):
        last = event
    assert isinstance(last, Completion)
    return last


def _sent(mock: MockServer) -> list[dict[str, Any]]:
    """The assistant message of every request the mock received."""
    out = []
    for record in mock.recorder.records:
        assert isinstance(record.body, dict)
        out.append(record.body["messages"][1])
    return out


@pytest.fixture
async def provider() -> AsyncIterator[Any]:
    started: list[tuple[MockServer, ModelClient]] = []

    async def make(
        steps: int = 2, *, echo: bool | None = None, **rules: Any
    ) -> tuple[MockServer, ModelClient]:
        script = MockScript.model_validate({"steps": [{"text": "好"}] * steps, **rules})
        mock = MockServer(script)
        await mock.start()
        client = ModelClient(
            ModelSettings(api_base=mock.api_base, model="m", echo_reasoning=echo, max_attempts=1)
        )
        started.append((mock, client))
        return mock, client

    yield make
    for mock, client in started:
        await client.aclose()
        await mock.stop()


# --- profiles --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("api_base", "echo"),
    [
        ("https://api.deepseek.com/v1", True),
        ("https://api.deepseek.com", True),
        ("https://API.DeepSeek.com/beta", True),
        ("https://api.groq.com/openai/v1", False),
        ("https://openrouter.ai/api/v1", False),
        ("https://api.openai.com/v1", False),
        ("http://127.0.0.1:11434/v1", False),
        ("https://api.deepseek.com.evil.example/v1", False),
    ],
)
def test_profile_by_api_base(api_base: str, echo: bool) -> None:
    assert profile_for(api_base).echo_reasoning is echo


def test_wire_messages_echo_only_on_tool_call_messages() -> None:
    answer = {"role": "assistant", "content": "好", "reasoning_content": "想过了"}
    details = {**HISTORY[1], "reasoning": "x", "reasoning_details": [{"text": "x"}]}
    history = [HISTORY[0], details, HISTORY[2], answer]
    echoed = wire_messages(history, echo_reasoning=True)
    assert echoed[1]["reasoning_content"] == THOUGHT
    assert "reasoning" not in echoed[1] and "reasoning_details" not in echoed[1]
    assert "reasoning_content" not in echoed[3]  # a plain answer never carries it
    plain = wire_messages(history, echo_reasoning=False)
    assert all(k not in m for m in plain for k in ("reasoning_content", "reasoning"))
    assert history[1]["reasoning_content"] == THOUGHT, "the history itself is not changed"
    assert plain[0] is history[0]


def test_flip_only_for_a_400_naming_the_field_with_something_to_change() -> None:
    assert flip_for_error(400, GROQ, HISTORY, echo_reasoning=True) is False
    missing = "Missing `reasoning_content` field in the assistant message at index 1"
    assert flip_for_error(400, missing, HISTORY, echo_reasoning=False) is True
    assert flip_for_error(400, "messages too long", HISTORY, echo_reasoning=True) is None
    assert flip_for_error(401, GROQ, HISTORY, echo_reasoning=True) is None
    no_reasoning = [HISTORY[0], {**HISTORY[1], "reasoning_content": None}, HISTORY[2]]
    assert flip_for_error(400, GROQ, no_reasoning, echo_reasoning=True) is None


def test_echo_setting_words_and_config_overlay() -> None:
    assert [echo_setting(w) for w in ("always", "NEVER", "auto", None, "")] == [
        True,
        False,
        None,
        None,
        None,
    ]
    with pytest.raises(ValueError, match="always, never or auto"):
        echo_setting("sometimes")
    base = BridgeConfig(echo_reasoning=True)
    assert base.with_model(ModelConfig()).echo_reasoning is True
    assert base.with_model(ModelConfig(echo_reasoning=False)).echo_reasoning is False


def test_deepseek_request_body_echoes_by_default_and_setting_overrides() -> None:
    deepseek = ModelClient(ModelSettings(api_base="https://api.deepseek.com/v1"))
    assert deepseek.build_body(HISTORY)["messages"][1]["reasoning_content"] == THOUGHT
    off = ModelClient(ModelSettings(api_base="https://api.deepseek.com/v1", echo_reasoning=False))
    assert "reasoning_content" not in off.build_body(HISTORY)["messages"][1]
    groq = ModelClient(ModelSettings(api_base="https://api.groq.com/openai/v1"))
    assert "reasoning_content" not in groq.build_body(HISTORY)["messages"][1]
    forced = ModelClient(
        ModelSettings(api_base="https://api.groq.com/openai/v1", echo_reasoning=True)
    )
    assert forced.build_body(HISTORY)["messages"][1]["reasoning_content"] == THOUGHT


# --- the retry against providers that object -------------------------------------------


async def test_groq_like_provider_gets_no_reasoning_by_default(provider: Any) -> None:
    """Regression: reasoning was always echoed, and Groq's 400 ended every tool turn."""
    mock, client = await provider(reject_message_fields=["reasoning_content", "reasoning"])
    assert (await _run(client, HISTORY)).content == "好"
    assert len(mock.recorder.records) == 1
    assert "reasoning_content" not in _sent(mock)[0]


async def test_400_naming_the_field_strips_it_retries_once_and_remembers(provider: Any) -> None:
    mock, client = await provider(echo=True, reject_message_fields=["reasoning_content"])
    assert (await _run(client, HISTORY)).content == "好"
    sent = _sent(mock)
    assert [r.status for r in mock.recorder.records] == [400, 200]
    assert sent[0]["reasoning_content"] == THOUGHT and "reasoning_content" not in sent[1]
    assert sent[1]["tool_calls"] == sent[0]["tool_calls"]
    # The next request of the session goes without the field at once.
    assert (await _run(client, HISTORY)).content == "好"
    assert [r.status for r in mock.recorder.records] == [400, 200, 200]


async def test_400_asking_for_the_field_adds_it_back(provider: Any) -> None:
    """DeepSeek behind an unknown host: its 400 asks for reasoning_content."""
    mock, client = await provider(require_on_tool_calls=["reasoning_content"])
    assert (await _run(client, HISTORY)).content == "好"
    sent = _sent(mock)
    assert "reasoning_content" not in sent[0] and sent[1]["reasoning_content"] == THOUGHT
    assert client.echo_reasoning is True


async def test_the_retry_happens_once_only(provider: Any) -> None:
    mock, client = await provider(
        echo=True,
        reject_message_fields=["reasoning_content"],
        require_on_tool_calls=["reasoning_content"],
    )
    with pytest.raises(ModelHTTPError) as info:
        await _run(client, HISTORY)
    assert info.value.status == 400 and "reasoning_content" in info.value.message
    assert len(mock.recorder.records) == 2


async def test_other_400s_are_not_retried(provider: Any) -> None:
    mock, client = await provider(echo=True, reject_message_fields=["tool_calls"])
    with pytest.raises(ModelHTTPError, match="tool_calls"):
        await _run(client, HISTORY)
    assert len(mock.recorder.records) == 1


# --- decoding --------------------------------------------------------------------------


def _feed(*deltas: dict[str, Any]) -> tuple[list[Any], Completion]:
    assembler = CompletionAssembler()
    events: list[Any] = []
    for delta in deltas:
        chunk = {"choices": [{"index": 0, "delta": delta, "finish_reason": None}]}
        events += assembler.feed_data(json.dumps(chunk))
    return events, assembler.finish()


def test_refusal_is_the_answer_and_marked() -> None:
    """Regression: OpenAI's delta.refusal was dropped; the user saw an empty answer."""
    events, done = _feed({"role": "assistant", "content": None, "refusal": ""}, {"refusal": "不行"})
    assert [type(e) for e in events] == [RefusalDelta]
    assert done.refusal == "不行" and done.content == "" and done.answer == "不行"
    assert done.to_message() == {"role": "assistant", "content": "不行"}


@pytest.mark.parametrize(
    ("delta", "text"),
    [
        ({"reasoning_content": "a"}, "a"),
        ({"reasoning": "b"}, "b"),
        ({"reasoning": "c", "reasoning_details": [{"type": "reasoning.text", "text": "c"}]}, "c"),
        (
            {"reasoning": None, "reasoning_details": [{"type": "reasoning.text", "text": "思"}]},
            "思",
        ),
        ({"reasoning_details": [{"type": "reasoning.summary", "summary": "概要"}]}, "概要"),
        ({"reasoning_details": [{"type": "reasoning.encrypted", "data": "xx"}]}, ""),
        ({"reasoning_details": None, "reasoning": ""}, ""),
    ],
)
def test_reasoning_from_every_field(delta: dict[str, Any], text: str) -> None:
    assert reasoning_text(delta) == text
    events, done = _feed(delta)
    assert [e.text for e in events if isinstance(e, ReasoningDelta)] == ([text] if text else [])
    assert done.reasoning == (text or None)


def test_indexless_calls_with_empty_ids_stay_apart() -> None:
    """Regression: two index-less calls merged into '{"city": "Taipei"}{"city": "Tokyo"}'."""

    def call(name: str | None, args: str) -> dict[str, Any]:
        function = {"arguments": args} if name is None else {"name": name, "arguments": args}
        return {"tool_calls": [{"id": "", "type": "function", "function": function}]}

    _, done = _feed(
        call("get_weather", '{"city": "Taipei"}'), call("get_weather", '{"city": "Tokyo"}')
    )
    args = [c.parsed_arguments() for c in done.tool_calls]
    assert args == [{"city": "Taipei"}, {"city": "Tokyo"}]
    assert len({c.id for c in done.tool_calls}) == 2
    # A name repeated on every fragment of one call does not split it.
    _, one = _feed(call("grep", '{"pattern": '), call("grep", '"中文"}'))
    assert [(c.name, c.parsed_arguments()) for c in one.tool_calls] == [
        ("grep", {"pattern": "中文"})
    ]
    # Fragments without a name continue the call before them.
    _, split = _feed(call("read_file", '{"pa'), call(None, 'th": "a.py"}'), call("grep", "{}"))
    assert [(c.name, c.arguments) for c in split.tool_calls] == [
        ("read_file", '{"path": "a.py"}'),
        ("grep", "{}"),
    ]
