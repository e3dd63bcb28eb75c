"""Undo-turn reaches the log and the model: ``session/undo_turn_done``.

The user's undo happens in Emacs; the client reports it. The real bridge on 127.0.0.1
records it in the org log, and the model's next request carries a framed note (not the
user's words), so the model does not believe its change is still there.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agent_rig import make_project, running_rig, tool_messages
from agent_shell_bridge.agent.session.store import SessionStore

NOTE = "[SESSION_NOTE from agent-shell]"


async def test_undo_is_logged_and_told_to_the_model(serve_app: Any, tmp_path: Path) -> None:
    root = make_project(tmp_path / "proj", {"a.py": "x = 1\n"})
    edit = {"name": "write_file", "arguments": {"path": "a.py", "content": "x = 2  # 改\n"}}
    steps = [
        {"tool_calls": [{"name": "read_file", "arguments": {"path": "a.py"}}]},
        {"tool_calls": [edit]},
        {"text": "改好了"},
        # Second turn: an edit straight away, with no fresh read, is refused.
        {"tool_calls": [edit]},
        {"text": "ok"},
    ]
    async with running_rig(serve_app, root, steps) as rig:
        sid = await rig.new_session()
        first = await rig.turn(sid, "把 x 改成 2")
        assert (root / "a.py").read_text(encoding="utf-8") == "x = 2  # 改\n"
        turn_id = first.end["turnId"]
        (root / "a.py").write_text("x = 1\n", encoding="utf-8")  # what Emacs restores
        result = await rig.client.result(
            "session/undo_turn_done", {"sessionId": sid, "turnId": turn_id, "paths": ["a.py"]}
        )
        assert result == {"recorded": True, "noteQueued": True}
        state = SessionStore(root).read(sid)
        log = Path(state["log_path"]).read_text(encoding="utf-8")
        assert f"Undo: turn {turn_id} ('把 x 改成 2') undone by the user, 1 file(s) restored" in log
        assert f":UNDO_OF: {turn_id}" in log

        second = await rig.turn(sid, "再看看")
        assert second.end["stopReason"] == "end_turn"
        request = rig.requests[3]["messages"]
        users = [m for m in request if m["role"] == "user"]
        latest = users[-1]["content"]
        assert latest.startswith(NOTE)
        assert f"The user undid turn {turn_id} ('把 x 改成 2')" in latest
        assert "a.py" in latest and latest.endswith("\n\n再看看")
        assert request[-1]["role"] == "user"  # one user message: note, then the prompt
        refused = tool_messages(rig.requests[4])[-1]
        assert "status=denied" in refused and "has not been read" in refused
        # The note is delivered once.
        assert sum(NOTE in str(m.get("content")) for m in rig.requests[4]["messages"]) == 1


async def test_undo_for_an_unknown_session_is_an_error(serve_app: Any, tmp_path: Path) -> None:
    root = make_project(tmp_path / "proj", {"a.py": "x = 1\n"})
    async with running_rig(serve_app, root, []) as rig:
        reply = await rig.client.rpc(
            "session/undo_turn_done", {"sessionId": "nope", "turnId": "t1", "paths": []}
        )
        assert reply["error"]["code"] == -32001
