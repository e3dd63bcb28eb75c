"""The conversation: the one writer of the model's messages and the visible history.

Unit tests of the repair of unanswered tool calls (a call with no answer, several
with one answered, a turn cancelled mid-way), of the history kept in step, and of
the one usage counter; then a checkpoint written in the format of earlier versions,
loaded from disk and resumed by a real bridge against the scripted model.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agent_rig import make_project, running_rig
from agent_shell_bridge.agent.conversation.messages import Conversation, repaired
from agent_shell_bridge.agent.session.store import SessionState, SessionStore, TokenTotals
from agent_shell_bridge.agent.session.turnstate import TurnState
from agent_shell_bridge.model.types import Completion, Prices, ToolCall, Usage, UsageCounts
from agent_shell_bridge.orglog import TaskUsage

PROMPT = "修复登录页面的错误"


def _call(call_id: str, name: str, arguments: str) -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def _assistant(*calls: dict[str, Any], content: str = "") -> dict[str, Any]:
    return {"role": "assistant", "content": content, "tool_calls": list(calls)}


def _answer(call_id: str, text: str) -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": call_id, "content": text}


def _completion(content: str, calls: list[ToolCall]) -> Completion:
    return Completion(
        content=content, reasoning=None, tool_calls=calls, finish_reason="tool_calls", usage=None
    )


def _state(messages: list[dict[str, Any]]) -> SessionState:
    return SessionState(id="s1", root="/tmp/项目", messages=messages)


def _answers_after(messages: list[dict[str, Any]], index: int) -> list[dict[str, Any]]:
    out = []
    for m in messages[index + 1 :]:
        if m["role"] != "tool":
            break
        out.append(m)
    return out


def assert_every_call_answered_once(messages: list[dict[str, Any]]) -> None:
    for i, m in enumerate(messages):
        ids = [c["id"] for c in m.get("tool_calls") or []]
        answered = [a["tool_call_id"] for a in _answers_after(messages, i)] if ids else []
        assert sorted(answered) == sorted(ids), (ids, answered)


def test_repair_answers_a_lone_unanswered_call_right_after_it() -> None:
    call = _call("call_1", "read_file", json.dumps({"path": "登录.py"}, ensure_ascii=False))
    state = _state([{"role": "user", "content": PROMPT}, _assistant(call)])
    conversation = Conversation(state)

    assert conversation.repair() == 1

    assert_every_call_answered_once(state.messages)
    answer = state.messages[2]
    assert answer["tool_call_id"] == "call_1"
    assert "name=read_file id=call_1 status=failed" in answer["content"]
    assert "interrupted" in answer["content"]
    assert conversation.repair() == 0, "a repaired history needs no second repair"


def test_repair_keeps_the_answered_call_and_answers_the_others_in_order() -> None:
    calls = [_call(f"call_{n}", "run_command", "{}") for n in (1, 2, 3)]
    first_answer = _answer("call_2", "[TOOL_RESULT name=run_command id=call_2] 你好")
    messages = [
        {"role": "user", "content": PROMPT},
        _assistant(*calls),
        first_answer,
        {"role": "user", "content": "后来的问题"},
    ]
    out = repaired(messages)

    assert out[2] is first_answer, "the answer the call got is kept as it was"
    assert [m["tool_call_id"] for m in out[2:5]] == ["call_2", "call_1", "call_3"]
    assert out[5] == {"role": "user", "content": "后来的问题"}
    assert_every_call_answered_once(out)
    assert len(messages) == 4, "the input is not changed"


def test_repair_of_several_steps_and_broken_shapes() -> None:
    """Each step is repaired on its own; a call without a function still gets an answer."""
    messages = [
        {"role": "user", "content": PROMPT},
        _assistant(_call("a", "read_file", "{}")),
        _answer("a", "ok"),
        _assistant(_call("b", "list_files", "{}"), {"id": "c"}),
        {"role": "assistant", "content": "中文的回答"},
    ]
    out = repaired(messages)
    assert_every_call_answered_once(out)
    assert [m.get("tool_call_id") for m in out if m["role"] == "tool"] == ["a", "b", "c"]
    assert "name= id=c status=failed" in out[5]["content"]
    assert out[-1] == {"role": "assistant", "content": "中文的回答"}


def test_cancel_mid_turn_answers_the_calls_that_did_not_run() -> None:
    """As the loop does when a cancel arrives after the first of three calls ran."""
    state = _state([])
    conversation = Conversation(state)
    start = conversation.add_user(PROMPT, turn_id="t1")
    calls = [ToolCall(f"call_{n}", "write_file", '{"path": "新.txt"}') for n in (1, 2, 3)]
    conversation.add_assistant(_completion("我来改。", calls))
    conversation.add_tool_result(
        calls[0], "completed", {"path": "新.txt", "note": "写好了"}, title="write_file 新.txt"
    )
    conversation.answer_unrun(calls[1:])

    assert start == 0
    assert_every_call_answered_once(state.messages)
    assert [m["role"] for m in state.messages] == ["user", "assistant", "tool", "tool", "tool"]
    for m in state.messages[3:]:
        assert "status=failed" in m["content"] and "cancelled" in m["content"]
    assert conversation.repair() == 0
    # The history shows the prompt, the answer and the call that ran, not the unrun ones.
    assert state.visible == [
        {"role": "user", "text": PROMPT, "turnId": "t1"},
        {"role": "assistant", "text": "我来改。"},
        {
            "role": "tool",
            "toolCallId": "call_1",
            "title": "write_file 新.txt",
            "status": "completed",
            "text": "",
        },
    ]


def test_chinese_survives_repair_and_the_checkpoint_byte_for_byte(tmp_path: Path) -> None:
    written = {"path": "目录/登录.py", "content": "你好，世界 🌏\n"}
    arguments = json.dumps(written, ensure_ascii=False)
    state = _state([{"role": "user", "content": PROMPT}, _assistant(_call("c1", "写", arguments))])
    state.root = str(tmp_path)
    conversation = Conversation(state)
    conversation.repair()
    conversation.show("第一轮被打断了。")
    store = SessionStore(tmp_path)
    store.save(state)

    raw = store.path("s1").read_bytes()
    assert PROMPT.encode() in raw and "你好，世界 🌏".encode() in raw
    assert b"\\u" not in raw, "nothing is escaped to ASCII"
    loaded = store.load("s1")
    assert loaded.messages == state.messages
    assert loaded.messages[1]["tool_calls"][0]["function"]["arguments"] == arguments
    assert "name=写 id=c1" in loaded.messages[2]["content"]
    assert loaded.visible[-1]["text"] == "第一轮被打断了。"


def test_scratch_conversation_keeps_no_history() -> None:
    conversation = Conversation.scratch()
    conversation.add_user("任务")
    call = ToolCall("x", "read_file", "{}")
    conversation.add_assistant(_completion("答", [call]))
    conversation.add_tool_result(call, "failed", {"error": "没有"})
    conversation.show("不显示")
    assert [m["role"] for m in conversation.messages] == ["user", "assistant", "tool"]
    assert conversation.visible == []


def test_feedback_and_notes_reach_the_model_framed() -> None:
    state = _state([])
    conversation = Conversation(state)
    conversation.queue_note("用户撤销了 t1")
    conversation.add_user(PROMPT, turn_id="t2")
    assert conversation.deliver_notes()
    assert state.pending_notes == []
    assert len(state.messages) == 1, "at a turn's start the note joins the prompt"
    content = state.messages[0]["content"]
    assert content.startswith("[SESSION_NOTE from agent-shell]") and content.endswith(PROMPT)
    assert not conversation.deliver_notes()

    call = ToolCall("r1", "read_file", "{}")
    conversation.add_assistant(_completion("", [call]))
    conversation.add_tool_result(call, "completed", {"text": "内容"})
    conversation.queue_note("用户又撤销了 t2")
    assert conversation.deliver_notes()
    assert [m["role"] for m in state.messages] == ["user", "assistant", "tool", "user"]
    assert "用户又撤销了 t2" in state.messages[-1]["content"], "mid-turn: after the results"

    conversation.add_feedback("请改一下测试", shown="The reviewer asked for changes.")
    assert state.messages[-1] == {"role": "user", "content": "请改一下测试"}
    assert state.visible[-1] == {"role": "system", "text": "The reviewer asked for changes."}


def test_only_a_tool_result_can_be_rewritten() -> None:
    state = _state([{"role": "user", "content": PROMPT}, _answer("a", "长的结果")])
    conversation = Conversation(state)
    conversation.replace_tool_content(1, "短")
    assert state.messages[1] == {"role": "tool", "tool_call_id": "a", "content": "短"}
    with pytest.raises(ValueError, match="user message"):
        conversation.replace_tool_content(0, "x")
    conversation.replace_for_compaction([state.messages[1]], "之前的摘要")
    assert state.summary == "之前的摘要" and len(state.messages) == 1


# -- the one counter ---------------------------------------------------------------


def test_usage_counts_add_and_price_with_the_one_formula() -> None:
    prices = Prices(2.0, 8.0, 0.5)
    counts = UsageCounts()
    counts.add_call(Usage(prompt_tokens=10_000, completion_tokens=500, cache_hit_tokens=6_000))
    counts.tool_calls += 2
    assert counts == UsageCounts(1, 2, 10_000, 500, 6_000)
    assert counts.cost_at(prices) == prices.cost(10_000, 6_000, 500)
    both = counts + UsageCounts(1, 0, 1_000, 100, 0)
    assert both == UsageCounts(2, 2, 11_000, 600, 6_000)
    assert both - counts == UsageCounts(1, 0, 1_000, 100, 0)
    assert counts == UsageCounts(1, 2, 10_000, 500, 6_000), "+ and - make new counts"


def test_turn_usage_splits_into_lead_and_roles_that_add_up() -> None:
    turn = TurnState(turn_id="t1", task_entry="e1", prompt="任务", started=0.0)
    turn.usage.add(UsageCounts(2, 3, 5_000, 300, 1_000))
    for name, counts in (("tester", UsageCounts(1, 1, 800, 40, 0)), ("tester", UsageCounts(1))):
        sub = TurnState(turn_id="t1", task_entry="e2", prompt="子任务", started=0.0)
        sub.usage.add(counts)
        turn.add_usage_of(name, sub)
    parts = turn.usage_by_role()
    assert parts is not None and set(parts) == {"lead", "tester"}
    assert parts["tester"] == UsageCounts(2, 1, 800, 40, 0)
    assert parts["lead"] == UsageCounts(2, 3, 5_000, 300, 1_000)
    assert parts["lead"] + parts["tester"] == turn.usage
    task = TaskUsage.of(turn.usage, 1_500)
    assert (task.model_calls, task.input_tokens, task.duration_ms) == (4, 5_800, 1_500)


def test_session_totals_count_priced_calls() -> None:
    totals = TokenTotals()
    usage = Usage(prompt_tokens=1_000, completion_tokens=10, cached_tokens=400)
    totals.add_priced_call(usage, Prices(2.0, 8.0, 0.5))
    totals.add_priced_call(usage, None)
    assert (totals.model_calls, totals.input_tokens, totals.cached_tokens) == (2, 2_000, 800)
    assert totals.cost == usage.cost(Prices(2.0, 8.0, 0.5))


# -- a checkpoint from an earlier version ------------------------------------------

# Written by the version before the one counter type (TokenTotals with its own
# fields): a turn cut off after the first of two tool calls was answered.
OLD_CHECKPOINT = (
    '{"id": "20261130101740-a1b2c3", "root": "ROOT", "mode": "act", "title": "修复登录", '
    '"created": "2026-11-30T10:17:40+08:00", "updated": "2026-11-30T10:20:00+08:00", '
    '"model": "deepseek-chat", "messages": [{"role": "user", "content": "修复登录页面的错误"}, '
    '{"role": "assistant", "content": "", "tool_calls": [{"id": "call_1", "type": "function", '
    '"function": {"name": "read_file", "arguments": "{\\"path\\": \\"登录.py\\"}"}}, '
    '{"id": "call_2", "type": "function", "function": {"name": "write_file", "arguments": '
    '"{\\"path\\": \\"登录.py\\", \\"content\\": \\"你好\\"}"}}]}, {"role": "tool", '
    '"tool_call_id": "call_1", "content": "[TOOL_RESULT name=read_file id=call_1 '
    'status=completed]\\n{\\"text\\": \\"旧的\\"}\\n[/TOOL_RESULT]"}], "summary": "", '
    '"visible": [{"role": "user", "text": "修复登录页面的错误", "turnId": "t0a1b2c3d"}], '
    '"read_hashes": {}, "session_allow": [], "grant_details": {}, "totals": {"model_calls": 3, '
    '"tool_calls": 1, "input_tokens": 12000, "output_tokens": 800, "cached_tokens": 6000, '
    '"cost": 0.0191, "last_prompt_tokens": 4100}, "turns": 1, "log_path": '
    '"ROOT/.agent-shell/log.org", "memories": [], "turn_in_progress": "t0a1b2c3d", '
    '"plan": null, "dry_run": false, "max_steps": 25, "extra_allowed_paths": [], '
    '"active_instructions": [], "pending_notes": [], "role_configs": [], "review": false}'
)
OLD_ID = "20261130101740-a1b2c3"


def _write_old_checkpoint(root: Path) -> str:
    text = OLD_CHECKPOINT.replace("ROOT", str(root))
    directory = root / ".agent-shell" / "sessions"
    directory.mkdir(parents=True, exist_ok=True)
    (directory / f"{OLD_ID}.json").write_text(text, encoding="utf-8")
    return text


def test_old_checkpoint_loads_and_saves_back_byte_identical(tmp_path: Path) -> None:
    text = _write_old_checkpoint(tmp_path)
    state = SessionStore(tmp_path).load(OLD_ID)
    assert isinstance(state.totals, TokenTotals)
    assert state.totals.counts() == UsageCounts(3, 1, 12_000, 800, 6_000)
    assert (state.totals.cost, state.totals.last_prompt_tokens) == (0.0191, 4100)
    assert json.dumps(state.to_json(), ensure_ascii=False) == text


async def test_old_checkpoint_resumes_with_its_dangling_call_answered(
    serve_app: Any, tmp_path: Path
) -> None:
    project = make_project(tmp_path / "项目", {"登录.py": "旧的\n"})
    _write_old_checkpoint(project)
    async with running_rig(serve_app, project, [{"text": "好了，继续。"}]) as rig:
        resumed = await rig.client.result(
            "session/resume", {"sessionId": OLD_ID, "cwd": str(project)}
        )
        assert resumed["history"][0] == {"role": "user", "text": PROMPT, "turnId": "t0a1b2c3d"}
        assert resumed["history"][-1]["text"] == "Turn t0a1b2c3d was interrupted (bridge stopped)."
        turn = await rig.turn(OLD_ID, "继续")
        assert turn.end["stopReason"] == "end_turn"
        saved = SessionStore(project).load(OLD_ID)
    messages = rig.requests[-1]["messages"]
    assert messages[1] == {"role": "user", "content": PROMPT}
    assert_every_call_answered_once(messages)
    answers = {m["tool_call_id"]: m["content"] for m in messages if m["role"] == "tool"}
    assert "旧的" in answers["call_1"]
    assert "status=failed" in answers["call_2"] and "interrupted" in answers["call_2"]
    assert messages[-1] == {"role": "user", "content": "继续"}
    # The old totals go on counting: one more model call.
    assert saved.totals.model_calls == 4 and saved.totals.tool_calls == 1
    assert saved.visible[-1] == {"role": "assistant", "text": "好了，继续。"}
