"""The log tells what the model was told, and a resumed session keeps its log file.

Regressions: the org log said "(2 lines omitted)" for ``seq 1 2000`` where the model
was told 1,700 (the log clipped text that was clipped already); every
``session/resume`` started a new log file, even when no turn followed. Also the
branch a turn notes, now read from ``.git/HEAD`` instead of a ``git`` child.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from typing import Any

from agent_rig import make_project, running_rig, tool_messages
from agent_shell_bridge.agent.session.live import head_branch
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


async def test_a_long_log_rotates_and_resume_follows_it(serve_app: Any, tmp_path: Path) -> None:
    """Before the log passes its limit it goes on in ``…-2.org``, linked both ways;
    the client is told (``log/file``), the checkpoint names it, resume reopens it."""
    project = make_project(tmp_path / "proj", {"notes.md": "行\n" * 40})
    read = {"tool_calls": [{"name": "read_file", "arguments": {"path": "notes.md"}}]}
    steps = [read, {"text": "一"}, read, {"text": "二"}, read, {"text": "三"}]
    async with running_rig(serve_app, project, steps, log_rotate_bytes=3000) as rig:
        sid = await rig.new_session()
        files: list[dict[str, Any]] = []
        for prompt in ("one", "two", "three"):
            turn = await rig.turn(sid, prompt)
            assert turn.end["stopReason"] == "end_turn"
            files += [m["params"] for m in turn.messages if m.get("method") == "log/file"]
        live = rig.runtime.sessions[sid]
        current = live.reporter.writer.path
        await rig.runtime.sessions.pop(sid).aclose()
        resumed = await rig.client.result("session/resume", {"sessionId": sid, "cwd": str(project)})
    # The first file, then -2, -3 …: a longer name is a later part.
    logs = sorted(
        (project / ".agent-shell" / "logs").iterdir(), key=lambda p: (len(p.name), p.name)
    )
    first = logs[0]
    assert len(logs) >= 2 and all(p.stat().st_size < 3000 + 1500 for p in logs)
    assert logs[1].name == first.name.removesuffix(".org") + "-2.org"
    assert files and files[0]["previous"] == str(first) and files[0]["logPath"] == str(logs[1])
    assert files[-1]["logPath"] == str(current) and resumed["logPath"] == str(current)
    assert SessionStore(project).load(sid).log_path == str(current)
    text = [p.read_text(encoding="utf-8") for p in logs]
    assert f"[[file:{logs[1].name}]" in text[0] and f"[[file:{first.name}]" in text[1]
    assert all(t.startswith("#+TITLE: ") and "#+TODO: WAIT" in t for t in text)
    assert all(sid in p.name for p in logs), "every part carries the session id"


def test_head_branch_reads_what_git_says(tmp_path: Path) -> None:
    """The branch read from .git/HEAD is git's own answer: on a branch, detached, in
    a linked worktree; outside a repository's top it defers to git (None)."""
    project = make_project(tmp_path / "proj", {"a.txt": "一\n"})

    def git(*args: str, cwd: Path = project) -> str:
        return subprocess.run(
            ["git", *args], cwd=cwd, check=True, capture_output=True, text=True
        ).stdout.strip()

    assert head_branch(project) == git("rev-parse", "--abbrev-ref", "HEAD")
    git("checkout", "-q", "-b", "功能/x")
    assert head_branch(project) == "功能/x" == git("rev-parse", "--abbrev-ref", "HEAD")
    git("checkout", "-q", "--detach")
    assert head_branch(project) == "HEAD" == git("rev-parse", "--abbrev-ref", "HEAD")
    git("worktree", "add", "-q", "-b", "wt", str(tmp_path / "wt"))
    assert head_branch(tmp_path / "wt") == "wt"
    (project / "sub").mkdir()
    assert head_branch(project / "sub") is None
