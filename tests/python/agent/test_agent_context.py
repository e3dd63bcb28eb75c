"""Long sessions stay inside the model's window: token budgets, stubs, pre-flight.

The scripted model counts a request the way ``estimate_usage`` does (about four
characters a token, tools included), as a provider would; every request it receives
must fit the window, and compaction must not fire step after step.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from agent_rig import make_project, payload_of, running_rig, tool_messages
from agent_shell_bridge.model.openai import _error_from_body
from agent_shell_bridge.model.overflow import context_limit_of, is_context_overflow
from compaction_steps import is_compaction, provider_tokens, read, summary_step

WINDOW = 8_000


def assert_compactions_once_per_crossing(bodies: list[dict[str, Any]], window: int) -> None:
    """Between two compactions the conversation went back under the threshold."""
    marks = [i for i, b in enumerate(bodies) if is_compaction(b)]
    for a, b in itertools.pairwise(marks):
        between = [provider_tokens(x) for x in bodies[a + 1 : b] if not is_compaction(x)]
        assert between, f"compaction calls {a} and {b} back to back"
        assert min(between) <= 0.7 * window, (a, b, between)


def assert_rereads_point_at_present_text(body: dict[str, Any]) -> None:
    """An "unchanged" re-read names a result whose text is in the same request."""
    results = {
        m["tool_call_id"]: payload_of(m["content"]) for m in body["messages"] if m["role"] == "tool"
    }
    for payload in results.values():
        if payload.get("unchanged") and "same_as" in payload:
            original = results.get(payload["same_as"])
            assert original is not None, f"re-read stub points at removed text: {payload}"
            assert "text" in original and not original.get("compacted")


@pytest.fixture
def project(tmp_path: Path) -> Path:
    lines = "".join(
        f"line {i:03d}: filler text so each line has weight 文字\n" for i in range(1, 301)
    )
    return make_project(tmp_path / "proj", {"big.txt": lines, "README.md": "# demo\n"})


async def test_rereads_in_a_small_window_never_overflow(serve_app: Any, project: Path) -> None:
    """The issue's scenario: three 100-line ranges read, then read again (14 steps)."""
    ranges = [(1, 100), (101, 200), (201, 300)]
    reads = [read(*ranges[i % 3]) for i in range(13)]
    async with running_rig(
        serve_app,
        project,
        [summary_step()] * 12 + [*reads, {"text": "done"}],
        context_window=WINDOW,
        max_steps=30,
    ) as rig:
        sid = await rig.new_session()
        turn = await rig.turn(sid, "read big.txt in three parts, twice 两遍")
        assert turn.end["stopReason"] == "end_turn", turn.end
        # What the scripted provider received, as another process would see it.
        async with httpx.AsyncClient() as http:
            recorded = (await http.get(rig.mock.api_base[: -len("/v1")] + "/_mock/requests")).json()
        bodies = [r["body"] for r in recorded]
        assert all(r["status"] == 200 for r in recorded)
        sizes = [provider_tokens(b) for b in bodies]
        assert max(sizes) <= WINDOW * 0.875, sizes  # room is left for the answer
        main = [b for b in bodies if not is_compaction(b)]
        assert len(main) == 14
        compactions = sum(1 for b in bodies if is_compaction(b))
        assert compactions <= 3, compactions  # older reads become stubs first
        assert_compactions_once_per_crossing(bodies, WINDOW)
        for body in main:
            assert_rereads_point_at_present_text(body)
            # The task stays in the user's own words whatever was compacted.
            assert (
                sum(
                    m["role"] == "user" and "read big.txt in three parts" in m["content"]
                    for m in body["messages"]
                )
                == 1
            )
        # Every read's answer shows the model the text (sent again, or still present).
        for i, body in enumerate(main[1:]):
            last = payload_of(tool_messages(body)[-1])
            start = ranges[i % 3][0]
            if last.get("unchanged"):
                assert_rereads_point_at_present_text(body)
            else:
                assert f"line {start:03d}: filler" in last.get("text", ""), last
        # Once a read was stubbed, a re-read of its range sends the text again.
        first_stub = next(
            i for i, b in enumerate(main) if any("compacted" in t for t in tool_messages(b))
        )
        later = [tool_messages(b)[-1] for b in main[first_stub + 1 :]]
        assert any("filler text" in t for t in later[3:])


async def test_big_results_in_recent_steps_become_refs(serve_app: Any, project: Path) -> None:
    """Ten 150-line reads pass 70% of a 32k window: the older results become framed
    stubs whose ref request_log_view pages through; the newest read stays verbatim."""
    huge = "".join(
        f"row {i:04d}: filler text so each line has weight 文字\n" for i in range(1, 1501)
    )
    (project / "huge.txt").write_text(huge, encoding="utf-8")
    reads = [read(i, i + 149, "huge.txt") for i in range(1, 1501, 150)]
    view = {"tool_calls": [{"name": "request_log_view", "arguments": {"ref": "out-1", "limit": 3}}]}
    async with running_rig(
        serve_app,
        project,
        [summary_step(), *reads, view, {"text": "done"}],
        context_window=32_000,
        max_steps=20,
    ) as rig:
        sid = await rig.new_session()
        turn = await rig.turn(sid, "read everything")
        assert turn.end["stopReason"] == "end_turn", turn.end
        bodies = rig.requests
        sizes = [provider_tokens(b) for b in bodies]
        assert max(sizes) <= 0.75 * 32_000, sizes
        stubbed_at = next(
            i for i, b in enumerate(bodies) if any("compacted" in t for t in tool_messages(b))
        )
        results = tool_messages(bodies[stubbed_at])
        *older, newest = results
        stubs = [framed for framed in older if payload_of(framed).get("compacted")]
        assert len(stubs) >= 3
        assert older[: len(stubs)] == stubs  # the oldest go first
        for n, framed in enumerate(stubs):
            assert framed.startswith("[TOOL_RESULT name=read_file id=")
            assert framed.endswith("[/TOOL_RESULT]") and len(framed) < 700
            stub = payload_of(framed)
            assert stub["compacted"] is True and stub["path"] == "huge.txt"
            assert "request_log_view(ref='out-" in stub["note"]
            # How to read it again: the call that made it.
            args = {"path": "huge.txt", "start_line": 1 + 150 * n, "end_line": 150 * (n + 1)}
            assert stub["call"] == {"tool": "read_file", "arguments": args}
        assert payload_of(older[0])["ref"] == "out-1"
        assert not any(is_compaction(b) for b in bodies)  # stubs were enough: no summary
        assert "row 1350: filler" in payload_of(newest)["text"]  # newest survives whole
        assert sizes[stubbed_at] <= 32_000 // 2
        paged = payload_of(tool_messages(bodies[-1])[-1])
        first_line = paged["text"].splitlines()[0]
        assert first_line.endswith("row 0001: filler text so each line has weight 文字")
        assert any("replaced by refs" in e["title"] for e in turn.log_entries())


async def test_many_small_steps_compact_rarely_and_keep_half_the_window(
    serve_app: Any, project: Path
) -> None:
    steps = [read(i, i + 2) for i in range(1, 121, 3)]
    # Room for the tools' schemas (about 4k tokens) and three small steps after them.
    window = WINDOW + 500
    async with running_rig(
        serve_app,
        project,
        [summary_step()] * 10 + [*steps, {"text": "done"}],
        context_window=window,
        max_steps=60,
    ) as rig:
        sid = await rig.new_session()
        turn = await rig.turn(sid, "read in small pieces")
        assert turn.end["stopReason"] == "end_turn", turn.end
        bodies = rig.requests
        sizes = [provider_tokens(b) for b in bodies]
        assert max(sizes) <= window * 0.7 + 200, sizes  # small steps never near the edge
        marks = [i for i, b in enumerate(bodies) if is_compaction(b)]
        assert 1 <= len(marks) <= 5, marks
        assert_compactions_once_per_crossing(bodies, window)
        # Each compaction is told to the client, with what it did.
        told = turn.updates("compaction")
        assert len(told) == len(marks)
        for update in told:
            assert update["summary"] == "摘要：读了 big.txt 的几段。"
            assert update["reason"] == "threshold" and update["contextWindow"] == window
            assert update["tokensAfter"] < update["tokensBefore"]
            assert update["messagesSummarised"] > 0 and update["turnId"] == turn.end["turnId"]
        for i in marks:
            # Right after a compaction the request is at most half the window.
            assert sizes[i + 1] <= window // 2, (i, sizes[i + 1])
            kept = tool_messages(bodies[i + 1])
            assert len(kept) >= 3  # small results are kept verbatim, not stubbed
            assert not any(payload_of(k).get("compacted") for k in kept)


@pytest.mark.parametrize("style", ["openai", "deepseek", "vllm", "openrouter"])
async def test_provider_context_refusal_compacts_once_and_retries(
    serve_app: Any, project: Path, style: str
) -> None:
    """The bridge believes in 32k tokens; the provider refuses past 8000 (HTTP 400)."""
    reads = [read(1, 100), read(101, 200), read(201, 300), read(1, 50)]
    async with running_rig(
        serve_app,
        project,
        [summary_step()] * 4 + [*reads, {"text": "好了"}],
        context_window=32_000,
        mock_options={"context_limit": WINDOW, "overflow_style": style},
    ) as rig:
        sid = await rig.new_session()
        turn = await rig.turn(sid, "read big.txt")
        assert turn.end["stopReason"] == "end_turn", turn.end
        assert turn.text == "好了"
        records = rig.mock.recorder.records
        refused = [r.index for r in records if r.status == 400]
        assert len(refused) == 1, [(r.index, r.status) for r in records]
        after = records[refused[0] + 1 :]
        assert is_compaction(after[0].body)  # type: ignore[arg-type]
        assert after[1].body["messages"][1]["content"].startswith("[EARLIER_WORK summary]")  # type: ignore[index]
        # From then on the bridge keeps to the limit the provider named.
        assert all(provider_tokens(r.body) <= WINDOW for r in after)  # type: ignore[arg-type]
        titles = [e["title"] for e in turn.log_entries()]
        assert any("refused the request as too long" in t for t in titles)


async def test_refusal_that_compaction_cannot_fix_stops_the_turn(
    serve_app: Any, project: Path
) -> None:
    """The provider's limit is below what the system prompt and tools need: one
    refusal, then a clear stop -- never a second 400."""
    async with running_rig(
        serve_app,
        project,
        [read(1, 10), {"text": "never"}],
        context_window=32_000,
        mock_options={"context_limit": 1_500},
    ) as rig:
        sid = await rig.new_session()
        turn = await rig.turn(sid, "read")
        assert turn.end["stopReason"] == "error"
        assert turn.end["error"]["code"] == -32015
        assert "window is 1500 tokens" in turn.end["error"]["message"]
        assert [r.status for r in rig.mock.recorder.records] == [400]


async def test_refusal_with_nothing_to_compact_is_not_retried(
    serve_app: Any, project: Path
) -> None:
    """No limit named, nothing to compact: the retry would fail alike, so none is made."""
    refusal = {"fault": "400", "error_message": "prompt is too long"}
    async with running_rig(serve_app, project, [refusal, {"text": "never"}]) as rig:
        sid = await rig.new_session()
        turn = await rig.turn(sid, "hello")
        assert turn.end["stopReason"] == "error"
        assert turn.end["error"]["code"] == -32014
        assert "over the model's context length" in turn.end["error"]["message"]
        assert len(rig.requests) == 1


async def test_request_over_the_window_is_never_sent(serve_app: Any, project: Path) -> None:
    """A prompt larger than the window stops the turn before any request."""
    async with running_rig(serve_app, project, [{"text": "never"}], context_window=4_000) as rig:
        sid = await rig.new_session()
        turn = await rig.turn(sid, "看 " * 20_000)
        assert turn.end["stopReason"] == "error"
        error = turn.end["error"]
        assert error["code"] == -32015
        assert "agent-shell-context-window" in error["message"]
        assert rig.requests == []


async def test_failures_reach_the_summary_word_for_word(serve_app: Any, project: Path) -> None:
    """A failing call stays word for word while the large reads after it become stubs,
    and then in the summary the model gets, through a second compaction too."""
    failing = {"tool_calls": [{"name": "read_file", "arguments": {"path": "缺失的文件.py"}}]}
    large = [read(*r) for r in [(1, 100), (101, 200), (201, 300)]]
    # Small results are never stubbed: only a summary makes room for them.
    small = [read(i, i + 2) for i in range(1, 106, 3)]
    async with running_rig(
        serve_app,
        project,
        [
            *map(summary_step, ["摘要一", "摘要二", "摘要三", "摘要四"]),
            failing,
            *large,
            *small,
            {"text": "done"},
        ],
        context_window=WINDOW,
        max_steps=60,
    ) as rig:
        sid = await rig.new_session()
        turn = await rig.turn(sid, "read")
        assert turn.end["stopReason"] == "end_turn", turn.end
        bodies = rig.requests
        failure = tool_messages(bodies[1])[-1]
        assert "status=failed" in failure and "缺失的文件.py" in failure
        marks = [i for i, b in enumerate(bodies) if is_compaction(b)]
        assert 2 <= len(marks) <= 4, marks
        stubbed = [
            b
            for b in bodies[: marks[0]]
            if any(payload_of(t).get("compacted") for t in tool_messages(b))
        ]
        assert stubbed  # the large reads became stubs before any summary
        for body in bodies[1 : marks[0]]:
            assert failure in tool_messages(body)  # untouched by stubbing
        for i in marks:
            after = bodies[i + 1]["messages"]
            summary = after[1]["content"]
            assert summary.startswith("[EARLIER_WORK summary]")
            assert failure in summary, summary
            assert all(m["content"] != failure for m in after if m["role"] == "tool")


@pytest.mark.parametrize(
    ("status", "body", "limit"),
    [
        (400, {"error": {"code": "context_length_exceeded", "message": "too long"}}, None),
        (400, {"message": "Input prompt (9000 tokens) is too long and exceeds limit"}, None),
        (400, {"error": "the request exceeds the available context size, try increasing it"}, None),
        (413, {"error": {"message": "prompt is too long: 210000 tokens > 200000 maximum"}}, None),
        (400, {"message": "This model's maximum context length is 4096 tokens."}, 4096),
    ],
)
def test_context_refusals_are_recognised(status: int, body: Any, limit: int | None) -> None:
    message, detail = _error_from_body(json.dumps(body).encode(), "Bad Request")
    assert is_context_overflow(status, message, detail)
    assert context_limit_of(message) == limit


@pytest.mark.parametrize(
    ("status", "message"),
    [
        (400, "Model Not Exist"),
        (401, "Authentication Fails, Your api key is invalid"),
        (429, "Request too large for gpt-4o on tokens per min (TPM): Limit 30000"),
        (400, "max_tokens is too large: 9000. This model supports at most 8192 tokens"),
    ],
)
def test_other_errors_are_not_context_refusals(status: int, message: str) -> None:
    assert not is_context_overflow(status, message, {})
