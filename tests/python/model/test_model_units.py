"""Unit tests of the model package's pure parts: SSE decoding, retry policy, types."""

from __future__ import annotations

import json
import random
from datetime import UTC, datetime
from email.utils import format_datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agent_shell_bridge.errors import InvalidParams
from agent_shell_bridge.model.assemble import CompletionAssembler
from agent_shell_bridge.model.retry import RetryPolicy, parse_retry_after
from agent_shell_bridge.model.sse import SSEDecoder
from agent_shell_bridge.model.types import (
    Completion,
    InvalidToolArguments,
    ModelSettings,
    Prices,
    ToolCall,
    Usage,
)

STREAM = (
    ": OPENROUTER PROCESSING\r\n\r\n"
    'data: {"a":\r\ndata: 1}\r\n\r\n'
    "event: message\nid: 7\ndata: 中文\n\n"
    "data:no-space\r\r"
    "data: [DONE]\n\n"
)


def test_sse_decoder_handles_comments_multiline_and_all_line_endings() -> None:
    decoder = SSEDecoder()
    events = decoder.feed(STREAM) + decoder.close()
    assert [e.data for e in events] == ['{"a":\n1}', "中文", "no-space", "[DONE]"]
    assert json.loads(events[0].data) == {"a": 1}
    assert events[1].event == "message" and events[1].id == "7"
    assert decoder.comments == 1


@given(st.lists(st.integers(min_value=1, max_value=len(STREAM)), max_size=12))
def test_sse_decoder_result_does_not_depend_on_how_text_is_split(cuts: list[int]) -> None:
    points = sorted(set(cuts))
    pieces = [STREAM[a:b] for a, b in zip([0, *points], [*points, len(STREAM)], strict=True)]
    decoder = SSEDecoder()
    events = [e for piece in pieces for e in decoder.feed(piece)] + decoder.close()
    whole = SSEDecoder()
    assert events == whole.feed(STREAM) + whole.close()


def test_sse_decoder_flushes_a_last_event_without_blank_line() -> None:
    decoder = SSEDecoder()
    assert decoder.feed("data: [DONE]") == []
    assert [e.data for e in decoder.close()] == ["[DONE]"]


def test_retry_after_forms() -> None:
    now = 1_000_000.0
    assert parse_retry_after({"retry-after": "7"}, now=now) == 7.0
    assert parse_retry_after({"retry-after-ms": "1500", "retry-after": "9"}, now=now) == 1.5
    later = format_datetime(datetime.fromtimestamp(now + 30, tz=UTC), usegmt=True)
    assert parse_retry_after({"retry-after": later}, now=now) == pytest.approx(30.0)
    assert parse_retry_after({"retry-after": "soon"}, now=now) is None
    assert parse_retry_after({"retry-after": "-3"}, now=now) is None
    assert parse_retry_after({}, now=now) is None


def test_retry_policy_statuses_and_backoff_bounds() -> None:
    policy = RetryPolicy(rng=random.Random(1), retry_after_cap_s=60)
    for status in (408, 409, 429, 500, 502, 503, 529):
        assert policy.should_retry_status(status, {})
    for status in (400, 401, 403, 404, 422):
        assert not policy.should_retry_status(status, {"x-should-retry": "true"})
    assert not policy.should_retry_status(503, {"x-should-retry": "false"})
    assert policy.should_retry_status(418, {"x-should-retry": "true"})
    for n, top in enumerate([0.5, 1.0, 2.0, 4.0, 8.0, 8.0]):
        delay = policy.backoff(n)
        assert top * 0.75 <= delay <= top
    assert policy.delay(0, {"retry-after": "3600"}) == 60


def test_tool_call_arguments_parsing() -> None:
    assert ToolCall("c1", "project_status", "").parsed_arguments() == {}
    assert ToolCall("c1", "project_status", " null ").parsed_arguments() == {}
    assert ToolCall("c1", "read_file", '{"path": "说明.md"}').parsed_arguments() == {
        "path": "说明.md"
    }
    with pytest.raises(InvalidToolArguments) as bad:
        ToolCall("c9", "read_file", '{"path": ').parsed_arguments()
    assert isinstance(bad.value, InvalidParams)
    assert "read_file" in bad.value.message and bad.value.call_id == "c9"
    with pytest.raises(InvalidToolArguments, match="JSON object"):
        ToolCall("c9", "read_file", "[1, 2]").parsed_arguments()


def test_completion_to_message_shapes() -> None:
    plain = Completion("好的", None, [], "stop", None)
    assert plain.to_message() == {"role": "assistant", "content": "好的"}
    calls = Completion("", "思考", [ToolCall("c1", "project_status", "")], "tool_calls", None)
    assert calls.to_message() == {
        "role": "assistant",
        "content": None,
        "reasoning_content": "思考",
        "tool_calls": [
            {
                "id": "c1",
                "type": "function",
                "function": {"name": "project_status", "arguments": "{}"},
            }
        ],
    }


def test_usage_from_wire_and_cost() -> None:
    usage = Usage.from_wire(
        {
            "prompt_tokens": 1_000_000,
            "completion_tokens": 500_000,
            "total_tokens": 1_500_000,
            "prompt_tokens_details": {"cached_tokens": 400_000},
            "completion_tokens_details": {"reasoning_tokens": 100},
            "prompt_cache_hit_tokens": 400_000,
            "prompt_cache_miss_tokens": 600_000,
        }
    )
    assert (usage.cached_tokens, usage.reasoning_tokens, usage.cache_miss_tokens) == (
        400_000,
        100,
        600_000,
    )
    prices = Prices(input_per_million=2.0, output_per_million=8.0, cached_input_per_million=0.5)
    assert usage.cost(prices) == pytest.approx(0.6 * 2 + 0.4 * 0.5 + 0.5 * 8)
    assert usage.cost(Prices(2.0, 8.0)) == pytest.approx(2.0 + 4.0)
    assert Usage.from_wire({"prompt_tokens": 3, "completion_tokens": 4}).total_tokens == 7


def test_settings_repr_hides_the_key() -> None:
    settings = ModelSettings(api_key="sk-very-secret-123")
    assert "sk-very-secret-123" not in repr(settings)
    assert settings.trust_env is False


def test_assembler_new_id_at_used_index_starts_a_new_call() -> None:
    asm = CompletionAssembler()

    def call(**kw: object) -> dict[str, object]:
        return {"choices": [{"index": 0, "delta": {"tool_calls": [kw]}}]}

    asm.feed(call(index=0, id="a", function={"name": "read_file", "arguments": '{"pa'}))
    asm.feed(call(index=0, function={"arguments": 'th": "x"}'}))
    asm.feed(call(index=0, id="b", function={"name": "project_status"}))
    asm.feed(call(id="b", function={"arguments": {}}))
    asm.feed({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
    done = asm.finish()
    assert [(c.id, c.name, c.arguments) for c in done.tool_calls] == [
        ("a", "read_file", '{"path": "x"}'),
        ("b", "project_status", "{}"),
    ]
    assert done.finish_reason == "stop"
