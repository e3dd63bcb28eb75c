"""The pure halves of what ACP clients see: cards, diff items, replay, ids, plans."""

from __future__ import annotations

from pathlib import Path

from agent_shell_bridge.agent.calls.card import WHOLE_FILE_CHARS, card_output, diff_item
from agent_shell_bridge.agent.calls.ids import CallIds
from agent_shell_bridge.frontends.acp.cards import end_update, fenced, hunk_texts, start_update
from agent_shell_bridge.frontends.acp.mapping import final_words, history_updates
from agent_shell_bridge.frontends.acp.permissions import plan_markdown
from agent_shell_bridge.tools.files import unified_diff
from agent_shell_bridge.tools.results import ToolResult

ROOT = Path("/work/proj")


def test_card_output_keeps_head_and_tail_and_says_how_many_lines_went() -> None:
    text = "\n".join(f"第 {n} 行" for n in range(1, 501))
    shown = card_output(ToolResult({}, log_text=text))
    assert shown is not None
    assert shown["lines"] == 500 and shown["omitted"] == 420
    lines = shown["text"].splitlines()
    assert lines[0] == "第 1 行" and lines[-1] == "第 500 行"
    assert "[... 420 lines omitted ...]" in lines
    assert card_output(ToolResult({"ok": True})) is None


def test_diff_item_carries_the_whole_file_when_small_else_the_changed_region() -> None:
    old, new = "a\nb\nc\n", "a\nB\nc\n"
    small = diff_item("f.py", unified_diff(old, new, "f.py"), (old, new))
    assert (small["oldText"], small["newText"], small["line"]) == (old, new, 2)
    created = diff_item("n.py", "", (None, "新文件\n"))
    assert created["oldText"] is None and created["newText"] == "新文件\n"
    lines = [f"line {n}\n" for n in range(1, 3001)]
    big_old = "".join(lines)
    big_new = "".join([*lines[:1999], "LINE 2000\n", *lines[2000:]])
    assert len(big_old) + len(big_new) > WHOLE_FILE_CHARS
    big = diff_item("big.py", unified_diff(big_old, big_new, "big.py"), (big_old, big_new))
    assert big["line"] == 2000 and big["regionLine"] == 1997
    assert big["oldText"] == "".join(lines[1996:2003])
    assert big["newText"] == "".join([*lines[1996:1999], "LINE 2000\n", *lines[2000:2003]])


def test_hunks_of_a_diff_without_texts_become_diff_items() -> None:
    old = "".join(f"l{n}\n" for n in range(1, 21))
    new = old.replace("l2\n", "L2\n").replace("l18\n", "L18\n")
    hunks = hunk_texts(unified_diff(old, new, "f.py"))
    assert len(hunks) == 2
    assert hunks[0] == ("l1\nl2\nl3\nl4\nl5\n", "l1\nL2\nl3\nl4\nl5\n")
    view = {
        "toolCallId": "c",
        "title": "edit f.py",
        "kind": "edit",
        "status": "completed",
        "content": [{"type": "diff", "path": "f.py", "diff": unified_diff(old, new, "f.py")}],
    }
    items = end_update(ROOT, view)["content"]
    assert [i["type"] for i in items] == ["diff", "diff"]
    assert items[1]["path"] == str(ROOT / "f.py")


def test_fence_is_longer_than_any_backtick_run_in_the_text() -> None:
    text = "before\n````\ninside\n````\n"
    block = fenced(text)
    assert block.startswith("`````\n") and block.endswith("\n`````")


def test_a_denied_call_replays_as_failed_with_its_reason_also_from_an_old_history() -> None:
    view = {
        "toolCallId": "x",
        "title": "run_command rm -rf ~",
        "kind": "execute",
        "rawInput": {"command": "rm -rf ~"},
        "status": "failed",
        "rawOutput": {"error": "Refused by the safety policy: wide rm"},
    }
    new = [{"role": "tool", "toolCallId": "x", "status": "denied", "text": "…", "view": view}]
    old = [{"role": "tool", "toolCallId": "x", "status": "denied", "text": "wide rm"}]
    for history in (new, old):
        start, end = history_updates(ROOT, history)
        assert start["sessionUpdate"] == "tool_call" and start["status"] == "pending"
        assert end["status"] == "failed"
        assert "wide rm" in end["content"][0]["content"]["text"]
    assert start_update(ROOT, view)["kind"] == "execute"


def test_final_words_of_a_turn() -> None:
    assert final_words({"stopReason": "end_turn", "summary": "好了"})[0]["content"]["text"] == (
        "Done: 好了"
    )
    assert final_words({"stopReason": "end_turn"}) == []
    stopped = final_words({"stopReason": "error", "error": {"code": 1, "message": "boom"}})
    assert stopped[0]["content"]["text"] == "\n[turn ended: error: boom]\n"


def test_client_ids_stay_unique_when_the_provider_repeats_them() -> None:
    ids = CallIds.of_history([{"role": "tool", "toolCallId": "call_0"}, {"role": "user"}])
    assert [ids.assign("call_0"), ids.assign("call_0"), ids.assign("call_1")] == [
        "call_0~2",
        "call_0~3",
        "call_1",
    ]
    assert ids.assign("") == "call"


def test_plan_markdown_names_goal_steps_and_risks() -> None:
    text = plan_markdown(
        "修好 add", [{"title": "改减号", "files": ["calc.py"], "verify": "pytest"}], ["无"]
    )
    assert text.splitlines()[0] == "## Plan: 修好 add"
    assert "1. 改减号 — files: `calc.py` — verify: `pytest`" in text
    assert text.endswith("Risks:\n- 无")


async def test_a_compaction_in_the_log_is_told_in_the_conversation(tmp_path: Path) -> None:
    """The log's compaction entry reaches the client as a line of the conversation."""
    from dataclasses import dataclass, field
    from typing import Any

    from agent_shell_bridge.config import BridgeConfig
    from agent_shell_bridge.frontends.acp.agent import AcpFrontEnd
    from agent_shell_bridge.methods import build_dispatcher
    from agent_shell_bridge.runtime import Runtime

    @dataclass
    class Client:
        seen: list[Any] = field(default_factory=list)

        async def session_update(self, session_id: str, update: Any) -> None:
            self.seen.append((session_id, update.model_dump(by_alias=True, exclude_none=True)))

    runtime = Runtime(config=BridgeConfig(), dispatcher=build_dispatcher())
    front = AcpFrontEnd(runtime)
    client = Client()
    front.on_connect(client)  # type: ignore[arg-type]
    front._roots["s1"] = tmp_path
    entry = {"session_id": "s1", "source": "bridge", "title": "Compacted 12 earlier messages"}
    await front._notice(entry)
    await front._notice({**entry, "session_id": "other"})  # not this client's session
    await front._notice({**entry, "title": "Memory: 2 experiences"})
    assert client.seen == [
        (
            "s1",
            {
                "sessionUpdate": "agent_message_chunk",
                "content": {"type": "text", "text": "\n[Compacted 12 earlier messages]\n"},
            },
        )
    ]
    await runtime.aclose()
