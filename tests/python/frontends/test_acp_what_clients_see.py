"""``agent-shell-bridge acp`` as an editor's user sees it, through the official SDK client.

One recorded session (a read, a refused ``rm -rf ~``, an edit the user approves, a
test run, ``task_complete``; then a second turn whose provider reuses the first
turn's call ids) is checked for what a client draws: the final words, a card for
every call, the diff in the edit's permission dialog, the ``/`` commands (also after
a command file is added), the turn's usage and cost, and ids unique in the session.
A second agent process then loads the session, and the cards and messages it
replays are compared with those streamed live.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from acp import PROTOCOL_VERSION, text_block

from acp_rig import RecordingClient, acp_agent
from agent_rig import make_project

BUGGY = "def add(a, b):\n    return a - b\n"
FIXED = "def add(a, b):\n    return a + b\n"
TEST_FILE = (
    "import unittest\nfrom calc import add\n\n\nclass T(unittest.TestCase):\n"
    "    def test_add(self):\n        self.assertEqual(add(2, 3), 5)\n\n\n"
    "if __name__ == '__main__':\n    unittest.main()\n"
)
USAGE = {"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110}
SUMMARY = "修好了：add 现在正确"


def _call(name: str, call_id: str, **arguments: Any) -> dict[str, Any]:
    return {"name": name, "arguments": arguments, "id": call_id}


# The provider reuses "call_1" within the turn and again in the next one.
STEPS: list[dict[str, Any]] = [
    {"text": "先看看代码。", "tool_calls": [_call("read_file", "call_1", path="calc.py")]},
    {"tool_calls": [_call("run_command", "call_1", command="rm -rf ~")]},
    {
        "tool_calls": [
            _call(
                "replace_region",
                "call_2",
                path="calc.py",
                start_line=2,
                end_line=2,
                new_text="    return a + b",
            )
        ]
    },
    {"tool_calls": [_call("run_test", "call_3", command="python -m unittest -v test_calc")]},
    {"text": "测试通过。", "tool_calls": [_call("task_complete", "call_1", summary=SUMMARY)]},
    # Turn 2.
    {"tool_calls": [_call("read_file", "call_1", path="calc.py", start_line=2, end_line=2)]},
    {"text": "第二行已经是 a + b。"},
]
for _step in STEPS:
    _step["usage"] = USAGE


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = make_project(tmp_path / "proj", {"calc.py": BUGGY, "test_calc.py": TEST_FILE})
    commands = root / ".agent-shell" / "commands"
    commands.mkdir(parents=True)
    (commands / "explain.md").write_text(
        "---\ndescription: 解释一个符号\nargument-hint: <symbol>\n---\nExplain $1.\n",
        encoding="utf-8",
    )
    return root


def fold(updates: list[dict[str, Any]], prompts: dict[int, str]) -> list[tuple[str, Any]]:
    """The conversation as a client draws it: messages joined, each card's updates
    merged into it. ``prompts`` puts the user's prompts (not echoed live) in place."""
    items: list[tuple[str, Any]] = []
    cards: dict[str, dict[str, Any]] = {}
    for n, update in enumerate(updates):
        if n in prompts:
            items.append(("user", prompts[n]))
        kind = update["sessionUpdate"]
        fields = {k: v for k, v in update.items() if k not in ("sessionUpdate", "sessionId")}
        if kind == "user_message_chunk":
            items.append(("user", update["content"]["text"]))
        elif kind == "agent_message_chunk":
            text = update["content"]["text"]
            if items and items[-1][0] == "text":
                items[-1] = ("text", items[-1][1] + text)
            else:
                items.append(("text", text))
        elif kind == "tool_call":
            cards[fields["toolCallId"]] = fields
            items.append(("tool", fields))
        elif kind == "tool_call_update":
            cards[fields["toolCallId"]].update(fields)
    return items


def _texts(content: list[dict[str, Any]]) -> str:
    return "\n".join(c["content"]["text"] for c in content if c["type"] == "content")


async def test_acp_session_as_clients_draw_it_and_as_it_loads_again(
    tmp_path: Path, project: Path
) -> None:
    client = RecordingClient()
    prompts: dict[int, str] = {}
    async with acp_agent(tmp_path, STEPS, client, agent_args=["--prices", "2,8"]) as rig:
        await rig.conn.initialize(protocol_version=PROTOCOL_VERSION)
        session = await rig.conn.new_session(cwd=str(project), mcp_servers=[])
        sid = session.session_id

        # 4. The / commands: built-ins and the project's file, with hints.
        await client.wait_for(
            lambda us: any(u["sessionUpdate"] == "available_commands_update" for u in us)
        )
        (listed,) = client.of("available_commands_update")
        by_name = {c["name"]: c for c in listed["availableCommands"]}
        assert list(by_name) == ["ask", "act", "explain"]
        assert by_name["explain"]["description"] == "解释一个符号"
        assert by_name["explain"]["input"] == {"hint": "<symbol>"}
        assert all(c["description"] and c["input"]["hint"] for c in by_name.values())

        prompts[len(client.updates)] = "修复 add"
        reply = await rig.conn.prompt(session_id=sid, prompt=[text_block("修复 add")])
        assert reply.stop_reason == "end_turn"
        # 6. The turn's own usage in the response, the session's cost in usage_update.
        assert reply.usage is not None
        assert (reply.usage.input_tokens, reply.usage.output_tokens) == (500, 50)
        assert reply.usage.total_tokens == 550
        last_usage = client.of("usage_update")[-1]
        assert last_usage["cost"]["currency"] == "USD"
        assert last_usage["cost"]["amount"] == pytest.approx((500 * 2 + 50 * 8) / 1e6)

        # 1. The final words, once, last, after the task_complete card closed.
        assert client.updates[-1]["sessionUpdate"] == "agent_message_chunk"
        assert client.updates[-1]["content"]["text"] == f"Done: {SUMMARY}"
        assert client.text.count(SUMMARY) == 1

        # 3. The edit's permission dialog has the diff and the file's place.
        (asked,) = [p for p in client.permissions if p["toolCall"]["kind"] == "edit"]
        (diff,) = [c for c in asked["toolCall"]["content"] if c["type"] == "diff"]
        assert (diff["path"], diff["oldText"], diff["newText"]) == (
            str(project / "calc.py"),
            BUGGY,
            FIXED,
        )
        assert asked["toolCall"]["locations"] == [{"path": str(project / "calc.py"), "line": 2}]
        kinds = [o["kind"] for o in asked["options"]]
        assert kinds[:3] == ["allow_once", "allow_always", "reject_once"]

        # 2. Every call ends with content a client renders.
        starts = client.of("tool_call")
        ends = {
            u["toolCallId"]: u
            for u in client.of("tool_call_update")
            if u.get("status") in ("completed", "failed")
        }
        assert len(starts) == len(ends) == 5
        for end in ends.values():
            assert end["content"], end
        read, refused, edit, tests, done = (ends[s["toolCallId"]] for s in starts)
        assert [s["kind"] for s in starts[:3]] == ["read", "execute", "edit"]
        assert "def add(a, b):" in _texts(read["content"]) and "```" in _texts(read["content"])
        assert read["locations"] == [{"path": str(project / "calc.py")}]
        assert refused["status"] == "failed"
        assert "Refused by the safety policy" in _texts(refused["content"])
        (done_diff,) = [c for c in edit["content"] if c["type"] == "diff"]
        assert (done_diff["oldText"], done_diff["newText"]) == (BUGGY, FIXED)
        assert edit["locations"] == [{"path": str(project / "calc.py"), "line": 2}]
        assert tests["status"] == "completed", tests
        assert "Tests: 1 passed, 0 failed, 0 errors — ok" in _texts(tests["content"])
        assert SUMMARY in _texts(done["content"])

        # 4. A new command file reaches the client's / completion.
        (project / ".agent-shell" / "commands" / "review.md").write_text(
            "---\ndescription: Review the change\n---\nReview $ARGUMENTS\n", encoding="utf-8"
        )
        await client.wait_for(
            lambda us: any(
                "review" in {c["name"] for c in u["availableCommands"]}
                for u in us
                if u["sessionUpdate"] == "available_commands_update"
            )
        )

        prompts[len(client.updates)] = "再看一眼"
        reply = await rig.conn.prompt(session_id=sid, prompt=[text_block("再看一眼")])
        assert reply.usage is not None and reply.usage.input_tokens == 200
        # 6. Ids unique in the session although the provider sent call_1 four times.
        ids = [u["toolCallId"] for u in client.of("tool_call")]
        assert len(ids) == len(set(ids)) == 6
        assert ids[0] == "call_1"
        live = [u for u in client.updates if u["sessionId"] == sid]

    # 5. Loaded in a new process: the same messages and the same cards.
    loader = RecordingClient()
    again = [{"tool_calls": [_call("read_file", "call_1", path="calc.py")]}, {"text": "好"}]
    async with acp_agent(tmp_path, again, loader) as rig:
        await rig.conn.initialize(protocol_version=PROTOCOL_VERSION)
        await rig.conn.load_session(cwd=str(project), session_id=sid, mcp_servers=[])
        await loader.wait_for(
            lambda us: any(u["sessionUpdate"] == "available_commands_update" for u in us)
        )
        loaded = list(loader.updates)
        # A new process still hands out ids the session has not used.
        await rig.conn.prompt(session_id=sid, prompt=[text_block("再读")])
        newest = loader.of("tool_call")[-1]["toolCallId"]
        assert newest not in ids and newest.startswith("call_1~")
    drawn_live = fold(live, prompts)
    drawn_loaded = fold(loaded, {})
    assert [k for k, _ in drawn_loaded] == [k for k, _ in drawn_live]
    for (kind, seen), (_, again) in zip(drawn_live, drawn_loaded, strict=True):
        assert again == seen, kind
    denied = next(c for k, c in drawn_loaded if k == "tool" and c["kind"] == "execute")
    assert denied["status"] == "failed"


async def test_acp_step_limit_and_refusal_leave_their_words_live_and_loaded(
    tmp_path: Path, project: Path
) -> None:
    """A stop for the step limit and a refusal say so, once, and a load says the same."""
    read = {"tool_calls": [_call("read_file", "r", path="calc.py")]}
    steps = [read, read, {"text": "", "finish_reason": "content_filter"}]
    prompts: dict[int, str] = {}
    client = RecordingClient()
    async with acp_agent(tmp_path, steps, client, agent_args=["--max-steps", "2"]) as rig:
        await rig.conn.initialize(protocol_version=PROTOCOL_VERSION)
        sid = (await rig.conn.new_session(cwd=str(project), mcp_servers=[])).session_id
        prompts[len(client.updates)] = "读两遍"
        reply = await rig.conn.prompt(session_id=sid, prompt=[text_block("读两遍")])
        assert reply.stop_reason == "max_turn_requests"
        assert client.text.count("[turn ended: max_turn_requests]") == 1
        prompts[len(client.updates)] = "说点什么"
        reply = await rig.conn.prompt(session_id=sid, prompt=[text_block("说点什么")])
        assert reply.stop_reason == "refusal"
        assert client.text.endswith("\n[turn ended: refusal]\n")
        live = [
            u
            for u in client.updates
            if u["sessionId"] == sid and u["sessionUpdate"] != "available_commands_update"
        ]
        ids = [u["toolCallId"] for u in client.of("tool_call")]
        assert len(set(ids)) == 2  # the provider sent "r" twice
        before = len(client.updates)
        await rig.conn.load_session(cwd=str(project), session_id=sid, mcp_servers=[])
        loaded = [
            u for u in client.updates[before:] if u["sessionUpdate"] != "available_commands_update"
        ]
    assert fold(loaded, {}) == fold(live, prompts)
