"""``session/turns``, ``session/rewind`` and ``session/rewind_undo`` through the real
transport: the conversation cut before a prompt, the model told of restored files,
the REWIND entry, the undo, and a resume in a new bridge showing the cut history."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from agent_rig import make_project, running_rig

PROMPTS = ["第一 first", "第二 second", "第三 third"]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return make_project(tmp_path / "proj", {"a.py": "a = 1\n", "b.py": "b = 1\n"})


def _steps() -> list[dict[str, Any]]:
    return [{"text": f"answer {n}"} for n in range(1, 4)] + [{"text": "after the rewind"}]


async def _three_turns(rig: Any, sid: str) -> list[str]:
    ids = []
    for prompt in PROMPTS:
        turn = await rig.turn(sid, prompt)
        ids.append(turn.end["turnId"])
    return ids


async def test_rewind_cuts_the_conversation_and_tells_the_model(
    serve_app: Any, project: Path
) -> None:
    async with running_rig(serve_app, project, _steps()) as rig:
        sid = await rig.new_session()
        ids = await _three_turns(rig, sid)
        turns = (await rig.client.result("session/turns", {"sessionId": sid}))["turns"]
        assert [t["prompt"] for t in turns] == PROMPTS
        assert [t["turnId"] for t in turns] == ids and all(t["time"] for t in turns)

        result = await rig.client.result(
            "session/rewind",
            {"sessionId": sid, "turnId": ids[1], "restored": ["a.py"], "skipped": ["b.py"]},
        )
        assert result["prompt"] == "第二 second"
        users = [h["text"] for h in result["history"] if h["role"] == "user"]
        assert users == ["第一 first"]
        log = Path(rig.runtime.sessions[sid].state.log_path).read_text(encoding="utf-8")
        assert "REWIND: to before turn " + ids[1] in log
        assert ":CONVERSATION: cut" in log and "a.py" in log and "b.py" in log

        await rig.turn(sid, "第二 again")
        sent = rig.requests[-1]["messages"]
        texts = [str(m.get("content")) for m in sent if m["role"] in ("user", "assistant")]
        assert not any("second" in t or "third" in t or "answer 2" in t for t in texts[:-1])
        assert "answer 1" in texts[1]
        assert "rewound 1 file(s)" in texts[-1] and "a.py" in texts[-1]
        assert texts[-1].endswith("第二 again")


async def test_rewind_undo_puts_the_cut_back_and_a_resume_shows_the_cut(
    serve_app: Any, project: Path
) -> None:
    async with running_rig(serve_app, project, _steps()) as rig:
        sid = await rig.new_session()
        ids = await _three_turns(rig, sid)
        before = (await rig.client.result("session/turns", {"sessionId": sid}))["turns"]
        first = await rig.client.result(
            "session/rewind", {"sessionId": sid, "turnId": ids[2], "conversation": False}
        )
        assert [h["text"] for h in first["history"] if h["role"] == "user"] == PROMPTS
        undone = await rig.client.result("session/rewind_undo", {"sessionId": sid})
        assert undone["conversationRestored"] is False
        await rig.client.result("session/rewind", {"sessionId": sid, "turnId": ids[1]})
        undone = await rig.client.result("session/rewind_undo", {"sessionId": sid})
        assert undone["conversationRestored"] is True
        after = (await rig.client.result("session/turns", {"sessionId": sid}))["turns"]
        assert after == before
        state = rig.runtime.sessions[sid].state
        assert [m["content"] for m in state.messages if m["role"] == "user"] == PROMPTS
        nothing = await rig.client.rpc("session/rewind_undo", {"sessionId": sid})
        assert nothing["error"]["code"] == -32602

        # Rewound again, then the conversation goes on: its undo would mix histories.
        await rig.client.result("session/rewind", {"sessionId": sid, "turnId": ids[2]})
        await rig.turn(sid, "另一条路 another way")
        mixed = await rig.client.rpc("session/rewind_undo", {"sessionId": sid})
        assert "went on after the rewind" in mixed["error"]["message"]

    async with running_rig(serve_app, project, []) as again:
        resumed = await again.client.result(
            "session/resume", {"sessionId": sid, "cwd": str(project)}
        )
        users = [h["text"] for h in resumed["history"] if h["role"] == "user"]
        assert users == ["第一 first", "第二 second", "另一条路 another way"]


async def test_rewind_refuses_an_unknown_turn_and_a_busy_session(
    serve_app: Any, project: Path
) -> None:
    async with running_rig(serve_app, project, [{"text": "late", "delay_ms": 20000}]) as rig:
        sid = await rig.new_session()
        bad = await rig.client.rpc("session/rewind", {"sessionId": sid, "turnId": "t-none"})
        assert bad["error"]["code"] == -32602 and "t-none" in bad["error"]["message"]
        started = await rig.client.result("session/prompt", {"sessionId": sid, "prompt": "go"})
        busy = await rig.client.rpc(
            "session/rewind", {"sessionId": sid, "turnId": started["turnId"]}
        )
        assert busy["error"]["code"] == -32002
        await rig.client.result("session/cancel", {"sessionId": sid})


async def test_fork_has_the_history_before_the_prompt_and_its_own_log(
    serve_app: Any, project: Path
) -> None:
    async with running_rig(serve_app, project, [*_steps(), {"text": "in the fork"}]) as rig:
        sid = await rig.new_session()
        ids = await _three_turns(rig, sid)
        fork = await rig.client.result("session/fork", {"sessionId": sid, "turnId": ids[2]})
        fid = fork["sessionId"]
        assert fid != sid and fork["forkOf"] == sid and fork["prompt"] == "第三 third"
        assert [h["text"] for h in fork["history"] if h["role"] == "user"] == PROMPTS[:2]
        assert fork["logPath"] != rig.runtime.sessions[sid].state.log_path
        await rig.turn(fid, "分支 in the fork")
        original = rig.runtime.sessions[sid].state
        assert [v["text"] for v in original.visible if v["role"] == "user"] == PROMPTS
        forked = rig.runtime.sessions[fid].state
        users = [m["content"] for m in forked.messages if m["role"] == "user"]
        assert users == ["第一 first", "第二 second", "分支 in the fork"]
        assert forked.totals.model_calls == 1
        fork_log = Path(forked.log_path).read_text(encoding="utf-8")
        assert f"Forked from session {sid} before turn {ids[2]}" in fork_log
        assert "分支 in the fork" not in Path(original.log_path).read_text(encoding="utf-8")
        whole = await rig.client.result("session/fork", {"sessionId": sid})
        assert whole["prompt"] is None
        assert [h["text"] for h in whole["history"] if h["role"] == "user"] == PROMPTS


async def test_rewind_names_the_commands_it_cannot_take_back(serve_app: Any, project: Path) -> None:
    """Files come back from snapshots; a command's effects do not: the answer and the
    REWIND entry list the commands that ran from that prompt on."""
    steps = [
        {"match": {"last_user_contains": "plain 一"}, "text": "nothing run"},
        {
            "match": {"last_user_contains": "list 二"},
            "tool_calls": [{"name": "run_command", "arguments": {"command": "ls -a"}}],
        },
        {"match": {"last_user_contains": "list 二"}, "text": "listed"},
    ]
    async with running_rig(serve_app, project, steps) as rig:
        sid = await rig.new_session()
        first = (await rig.turn(sid, "plain 一")).end["turnId"]
        second = await rig.turn(sid, "list 二")
        assert [r["status"] for r in second.tool_results()] == ["completed"]
        kept = await rig.client.result(
            "session/rewind",
            {"sessionId": sid, "turnId": second.end["turnId"], "conversation": False},
        )
        assert kept["commandsNotUndone"] == ["ls -a"]
        cut = await rig.client.result("session/rewind", {"sessionId": sid, "turnId": first})
        assert cut["commandsNotUndone"] == ["ls -a"]
        log = Path(rig.runtime.sessions[sid].state.log_path).read_text(encoding="utf-8")
        assert "what they changed is not undone" in log and ":COMMANDS: 1" in log
        # After the cut, nothing ran from a prompt that is no longer in the history.
        again = await rig.client.rpc("session/rewind", {"sessionId": sid, "turnId": first})
        assert "error" in again
