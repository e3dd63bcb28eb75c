"""The log tells what the model was told, and a resumed session keeps its log file.

Regressions: the org log said "(2 lines omitted)" for ``seq 1 2000`` where the model
was told 1,700 (the log clipped text that was clipped already); every
``session/resume`` started a new log file, even when no turn followed.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from agent_rig import make_project, running_rig, tool_messages
from agent_shell_bridge.agent.session.store import SessionStore


async def test_log_states_the_omitted_count_the_model_was_told(
    serve_app: Any, tmp_path: Path
) -> None:
    project = make_project(tmp_path / "proj", {"README.md": "x\n"})
    steps = [
        {"tool_calls": [{"name": "run_command", "arguments": {"command": "seq 1 2000"}}]},
        {"text": "两千行。"},
    ]
    async with running_rig(serve_app, project, steps) as rig:
        sid = await rig.new_session()
        turn = await rig.turn(sid, "count")
        assert turn.end["stopReason"] == "end_turn"
        log = Path(rig.runtime.sessions[sid].state.log_path).read_text(encoding="utf-8")
        told = "\n".join(tool_messages(rig.requests[-1]))
    assert "1700 lines omitted" in told
    notes = re.findall(r"\((\d+) lines omitted\)", log)
    assert notes == ["1700"], log[-2000:]
    block = log.split("#+begin_src text\n", 1)[1].split("#+end_src\n", 1)[0].splitlines()
    # The model's own lines: the first 200, the marker, the last 100, nothing cut again.
    assert block[0] == "1" and block[199] == "200" and block[-1] == "2000"
    assert len(block) == 301 and "1700 lines omitted" in block[200]


async def test_resume_keeps_the_log_file_and_marks_only_a_turn(
    serve_app: Any, tmp_path: Path
) -> None:
    project = make_project(tmp_path / "proj", {"README.md": "x\n"})
    steps = [{"text": "第一轮。"}, {"text": "第二轮。"}]
    async with running_rig(serve_app, project, steps) as rig:
        sid = await rig.new_session()
        assert (await rig.turn(sid, "one")).end["stopReason"] == "end_turn"
        first = Path(rig.runtime.sessions[sid].state.log_path)
        before = first.read_bytes()
        params = {"sessionId": sid, "cwd": str(project)}
        for _ in range(2):  # resumed twice, no turn
            await rig.runtime.sessions.pop(sid).aclose()
            resumed = await rig.client.result("session/resume", params)
            assert resumed["logPath"] == str(first)
        logs = sorted((project / ".agent-shell" / "logs").iterdir())
        assert logs == [first] and first.read_bytes() == before
        assert SessionStore(project).load(sid).log_path == str(first)
        assert (await rig.turn(sid, "two")).end["stopReason"] == "end_turn"
        after = first.read_bytes()
    assert after.startswith(before)
    added = after[len(before) :].decode("utf-8")
    assert added.startswith("* ") and "Session resumed" in added.splitlines()[0]
    assert added.count("Session resumed") == 1 and "two" in added
    assert sorted((project / ".agent-shell" / "logs").iterdir()) == [first]
