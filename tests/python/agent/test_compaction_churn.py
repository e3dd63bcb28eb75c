"""Compaction without churn: stubs first, one model compaction per crossing.

Each step here reads about a hundred new lines. Before the history is summarised by
the model, older results become stubs naming how to read them again (no model
call); a summary runs only when the conversation itself, not the newest result,
passes the threshold, and then leaves it well under. The scripted provider counts
every request it receives: none may exceed the window.
"""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import pytest

from agent_rig import make_project, payload_of, running_rig, tool_messages
from compaction_steps import is_compaction, provider_tokens, read, summary_step

LINES = 10_000


def read_steps(count: int, lines: int = 100) -> list[dict[str, Any]]:
    """``count`` reads of new ranges, ``lines`` lines each, wrapping around the file."""
    return [read(1 + (i * lines) % LINES, (i * lines) % LINES + lines) for i in range(count)]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    line = "filler text so each line has weight 文字, and a little more 更多"
    text = "".join(f"line {i:04d}: {line}\n" for i in range(1, LINES + 1))
    return make_project(tmp_path / "proj", {"big.txt": text, "README.md": "# demo\n"})


def own_tokens(body: dict[str, Any]) -> int:
    """The request without the newest step's results: the conversation itself."""
    messages = body["messages"]
    last = max(i for i, m in enumerate(messages) if m["role"] in ("assistant", "user"))
    kept = [m for i, m in enumerate(messages) if i <= last or m["role"] != "tool"]
    return provider_tokens({**body, "messages": kept})


def assert_once_per_crossing(bodies: list[dict[str, Any]], window: int) -> None:
    """After each summary the conversation is at most half the window, and the next
    summary comes only after it grew past 70% again from there."""
    marks = [i for i, b in enumerate(bodies) if is_compaction(b)]
    for i in marks:
        assert not is_compaction(bodies[i + 1]), f"compaction calls {i} and {i + 1} back to back"
        assert own_tokens(bodies[i + 1]) <= window // 2, (i, own_tokens(bodies[i + 1]))
    for a, b in itertools.pairwise(marks):
        grown = max(provider_tokens(x) for x in bodies[a + 1 : b])
        assert grown > 0.6 * window, (a, b, grown)


def report(bodies: list[dict[str, Any]]) -> tuple[int, int, int]:
    """Compaction calls, requests, and the largest request in tokens."""
    return (
        sum(1 for b in bodies if is_compaction(b)),
        len(bodies),
        max(provider_tokens(b) for b in bodies),
    )


async def test_fourteen_large_reads_in_an_8k_window(serve_app: Any, project: Path) -> None:
    """Each read alone takes a third of the window: older reads become stubs that say
    how to read them again, the model is asked for a summary at most three times, and
    no request exceeds the window."""
    window = 8_000
    async with running_rig(
        serve_app,
        project,
        [summary_step()] * 14 + [*read_steps(14), {"text": "done 完成"}],
        context_window=window,
        max_steps=30,
    ) as rig:
        sid = await rig.new_session()
        turn = await rig.turn(sid, "read big.txt a hundred lines at a time 分段读")
        assert turn.end["stopReason"] == "end_turn", turn.end
        bodies = rig.requests
        compactions, requests, largest = report(bodies)
        assert compactions <= 3, (compactions, requests)
        assert largest <= window * 0.875, largest  # room is left for the answer
        assert_once_per_crossing(bodies, window)
        main = [b for b in bodies if not is_compaction(b)]
        assert len(main) == 15
        for n, body in enumerate(main[1:]):
            # The newest read reaches the model whole.
            newest = payload_of(tool_messages(body)[-1])
            assert f"line {1 + 100 * n:04d}: filler" in newest["text"], n
            assert newest["text"].count("\n") >= 99
        first = next((i for i, b in enumerate(bodies) if is_compaction(b)), len(bodies))
        stubbed = [b for b in bodies[:first] if any("compacted" in t for t in tool_messages(b))]
        assert len(stubbed) >= 5  # stubs first, for several steps, before any summary
        stubs = [payload_of(t) for b in main for t in tool_messages(b) if "compacted" in t]
        for stub in stubs:
            assert stub["call"]["tool"] == "read_file"
            assert set(stub["call"]["arguments"]) == {"path", "start_line", "end_line"}
            assert "request_log_view(ref='out-" in stub["note"]
        assert any("replaced by refs (no model call)" in e["title"] for e in turn.log_entries())


async def test_a_long_session_at_the_default_window(serve_app: Any, project: Path) -> None:
    """Thirty turns, each a large read and a long answer, in the default 64k window:
    a summary only when the conversation itself grew past the threshold again."""
    window = 64_000
    turns = 30
    answer = "读完了这一段，下面是要点。" + "要点：函数与行号都记下了。" * 600
    script: list[dict[str, Any]] = [summary_step()] * turns
    for step in read_steps(turns, lines=150):
        script += [step, {"text": answer}]
    async with running_rig(serve_app, project, script, context_window=window, max_steps=10) as rig:
        sid = await rig.new_session()
        for n in range(turns):
            turn = await rig.turn(sid, f"read the next part ({n}) 下一段")
            assert turn.end["stopReason"] == "end_turn", turn.end
        bodies = rig.requests
        compactions, requests, largest = report(bodies)
        assert 1 <= compactions <= 3, (compactions, requests)
        assert largest <= window * 0.875, largest
        assert_once_per_crossing(bodies, window)
