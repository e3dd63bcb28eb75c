"""Grants: "allow for this session" says what it grants, lists it, and takes it back.

Real bridge under uvicorn on 127.0.0.1, real HTTP + SSE client, real subprocesses in a
temporary git project; only the model is scripted.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest

from agent_rig import make_project, payload_of, running_rig, tool_messages

# Run again with the sandbox forced off (make test): its path depends on the sandbox.
pytestmark = pytest.mark.sandbox_sensitive


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return make_project(tmp_path / "proj", {"notes.txt": "一\n", "README.md": "# demo\n"})


def run(command: str) -> dict[str, Any]:
    return {"tool_calls": [{"name": "run_command", "arguments": {"command": command}}]}


def write(path: str, content: str) -> dict[str, Any]:
    return {"tool_calls": [{"name": "write_file", "arguments": {"path": path, "content": content}}]}


def allow_session(_params: dict[str, Any]) -> dict[str, Any]:
    return {"outcome": {"outcome": "selected", "optionId": "allow_session"}}


async def test_permission_says_exactly_what_the_session_grant_covers(
    serve_app: Any, project: Path
) -> None:
    async with running_rig(
        serve_app, project, [run("mkdir  build"), write("新.txt", "x\n"), {"text": "ok"}]
    ) as rig:
        sid = await rig.new_session()
        turn = await rig.turn(sid, "make", answer=allow_session)
        command, edit = (p["grant"] for p in turn.permission_requests)
        assert command["kind"] == "command"
        assert command["command"] == "mkdir build"
        assert command["cwd"] == str(project.resolve())
        assert "exactly `mkdir build`" in command["description"]
        assert str(project.resolve()) in command["description"]
        assert edit["kind"] == "edit" and edit["tool"] == "write_file"
        assert "write_file edit" in edit["description"]
        listed = await rig.client.result("session/grants", {"sessionId": sid})
        assert listed["grants"] == [command, edit]


async def test_dangerous_steps_carry_no_grant(serve_app: Any, project: Path) -> None:
    async with running_rig(serve_app, project, [run("git push --force"), {"text": "ok"}]) as rig:
        sid = await rig.new_session()
        turn = await rig.turn(sid, "push")
        for params in turn.permission_requests:
            assert "grant" not in params
        assert (await rig.client.result("session/grants", {"sessionId": sid}))["grants"] == []


async def test_revoked_grant_asks_again_and_survives_resume(serve_app: Any, project: Path) -> None:
    steps = [run("mkdir build"), write("a.txt", "1\n"), {"text": "ok"}]
    steps += [run("rmdir build"), {"text": "ok"}]  # a grant for rmdir would be separate
    steps += [run("mkdir build"), write("b.txt", "2\n"), {"text": "ok"}]
    async with running_rig(serve_app, project, steps) as rig:
        sid = await rig.new_session()
        first = await rig.turn(sid, "one", answer=allow_session)
        assert len(first.permission_requests) == 2
        await rig.turn(sid, "two")  # rmdir asks once, allowed once
        grants = (await rig.client.result("session/grants", {"sessionId": sid}))["grants"]
        command = next(g for g in grants if g["kind"] == "command")

        seen: list[dict[str, Any]] = []
        async with rig.client.events(from_now=True) as stream:
            revoked = await rig.client.result(
                "session/revoke_grant", {"sessionId": sid, "grantId": command["id"]}
            )
            while True:
                message = (await stream.next_event(timeout=10)).json()
                seen.append(message)
                if message.get("method") == "log/entry":
                    break
        assert revoked["revoked"] == command
        assert [g["kind"] for g in revoked["grants"]] == ["edit"]
        entry = seen[-1]["params"]
        assert entry["title"] == "Grant revoked by the user"
        assert "mkdir build" in entry["body"][0]["text"]

        third = await rig.turn(sid, "three", answer=allow_session)
        # The command asks again; the edit grant still holds, so b.txt is written unasked.
        asked = [p["toolCall"]["rawInput"].get("command") for p in third.permission_requests]
        assert asked == ["mkdir build"]
        assert (project / "b.txt").read_text() == "2\n"

        # The checkpoint keeps the grants as they are now.
        await rig.runtime.sessions.pop(sid).aclose()
        await rig.client.result("session/resume", {"sessionId": sid, "cwd": str(project)})
        after = (await rig.client.result("session/grants", {"sessionId": sid}))["grants"]
        assert [g["id"] for g in after] == [g["id"] for g in third_grants(revoked, command)]


def third_grants(revoked: dict[str, Any], command: dict[str, Any]) -> list[dict[str, Any]]:
    """After the third turn: the surviving edit grant, then the re-granted command."""
    return [*revoked["grants"], command]


async def test_revoking_an_unknown_grant_is_a_clear_error(serve_app: Any, project: Path) -> None:
    async with running_rig(serve_app, project, [{"text": "ok"}]) as rig:
        sid = await rig.new_session()
        reply = await rig.client.rpc("session/revoke_grant", {"sessionId": sid, "grantId": "nope"})
        assert reply["error"]["code"] == -32602
        assert "session/grants" in reply["error"]["message"]
        reply = await rig.client.rpc("session/grants", {"sessionId": "s-missing"})
        assert reply["error"]["code"] == -32001


async def test_runs_after_a_command_grant_go_through_the_sandbox(
    serve_app: Any, tmp_path: Path
) -> None:
    """The yes covered the script as it was; what runs later is held by the sandbox.

    The first run, approved, writes outside the project as the user would; the model then
    rewrites the script, and the granted second run must not reach outside (when this
    machine has a sandbox) or must say plainly that nothing held it (when it has none).
    """
    outside = tmp_path / "outside"
    outside.mkdir()
    first_mark, second_mark = outside / "第一.mark", outside / "第二.mark"
    root = make_project(tmp_path / "proj", {"tool.sh": f"touch '{first_mark}'\n"})
    rewrite = {
        "tool_calls": [
            {"name": "read_file", "arguments": {"path": "tool.sh"}},
        ]
    }
    steps = [run("sh tool.sh"), {"text": "ran"}, rewrite]
    steps += [write("tool.sh", f"touch '{second_mark}'\n"), run("sh tool.sh"), {"text": "ran"}]
    async with running_rig(serve_app, root, steps) as rig:
        sandboxed = rig.runtime.sandbox.available
        sid = await rig.new_session()
        first = await rig.turn(sid, "run it", answer=allow_session)
        assert len(first.permission_requests) == 1
        assert first_mark.exists()  # approved: ran as the user would, outside

        second = await rig.turn(sid, "change it and run it again")
        asked = [p["toolCall"]["rawInput"].get("command") for p in second.permission_requests]
        assert asked == [None]  # the edit asked; the granted command did not
        assert (root / "tool.sh").read_text() == f"touch '{second_mark}'\n"
        results = [payload_of(m) for m in tool_messages(rig.requests[-1])]
    ran = results[-1]
    if sandboxed:
        assert ran["sandbox"] == "bubblewrap+net"
        assert not second_mark.exists()
    else:
        assert ran["sandbox"] == "none"
        assert second_mark.exists()


async def test_a_granted_git_commit_keeps_working_after_its_first_run(
    serve_app: Any, tmp_path: Path
) -> None:
    """The sandbox keeps .git read-only, so a granted ``git commit`` runs as approved:
    plain git on the project's own repository runs nothing the agent could change."""
    root = make_project(tmp_path / "proj", {"a.txt": "一\n"})
    for key, value in (("user.name", "测试"), ("user.email", "t@example.invalid")):
        subprocess.run(["git", "config", key, value], cwd=root, check=True)
    commit = "git commit --allow-empty -m 空提交"
    steps = [run(commit), {"text": "one"}, run(commit), {"text": "two"}]
    async with running_rig(serve_app, root, steps) as rig:
        sid = await rig.new_session()
        first = await rig.turn(sid, "commit", answer=allow_session)
        assert len(first.permission_requests) == 1
        second = await rig.turn(sid, "commit again")
        assert second.permission_requests == []
        ran = payload_of(tool_messages(rig.requests[-1])[-1])
    assert ran["exit_code"] == 0, ran["stderr"]
    assert ran["sandbox"] == "none"
    count = subprocess.run(
        ["git", "rev-list", "--count", "HEAD"], cwd=root, capture_output=True, text=True
    )
    assert count.stdout.strip() == "3"
