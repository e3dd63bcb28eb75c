"""A whole task on a remote project, over a real sshd, with the scripted model.

The bridge runs here and keeps its records in the project's local mirror; the
commands and the files are on the "remote" side, which logs in as its own user.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agent_rig import EventStream, payload_of, running_rig, tool_messages
from agent_shell_bridge.remote.target import parse_tramp
from sshd_rig import SshRig, sshd, wait_for

pytestmark = pytest.mark.sshd

APP = "def add(a, b):\n    return a - b\n"
TEST = "from app import add\nassert add(2, 2) == 4, f'add(2, 2) gave {add(2, 2)}'\nprint('通过')\n"
MAKEFILE = "test:\n\tpython3 test_app.py\n"


@pytest.fixture(scope="module")
def ssh_rig() -> Iterator[SshRig]:
    with sshd() as rig:
        yield rig


@pytest.fixture
def local_dirs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The user's data dir (the mirror goes there) and a short runtime dir (sockets)."""
    runtime = Path(tempfile.mkdtemp(prefix="asr-"))
    runtime.chmod(0o700)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))
    yield tmp_path / "data"
    shutil.rmtree(runtime, ignore_errors=True)


def call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"tool_calls": [{"name": name, "arguments": arguments}]}


def remote_params(rig: SshRig, root: Path) -> dict[str, Any]:
    return {"remote": {"tramp": rig.tramp(str(root)), "sshOptions": rig.options}}


async def test_a_task_on_a_remote_project(
    serve_app: Any, ssh_rig: SshRig, local_dirs: Path, tmp_path: Path
) -> None:
    root = ssh_rig.make_project(
        f"task-{os.getpid()}",
        {
            "app.py": APP,
            "test_app.py": TEST,
            "Makefile": MAKEFILE,
            ".gitignore": "__pycache__/\n",
            "AGENTS.md": "远程说明: run make test before saying done.\n",
        },
        git=True,
    )
    steps = [
        call("list_directory", path="."),
        call("run_command", command="make test"),
        call("read_file", path=f"{root}/app.py"),  # the host's name of it
        call("replace_pattern", path="app.py", pattern="a - b", replacement="a + b", literal=True),
        call("run_test"),  # its command guessed there: make test
        call("project_status"),
        call("grep", pattern=r"return a [+-] b"),
        {"text": "fixed: 加法"},
    ]
    here = tmp_path / "elsewhere"
    here.mkdir()
    async with running_rig(serve_app, here, steps) as rig:
        opened = await rig.client.result(
            "session/new", {"cwd": str(here), **remote_params(ssh_rig, root)}
        )
        sid = opened["sessionId"]
        mirror = Path(opened["root"])
        assert opened["remote"]["root"] == str(root)
        assert opened["sandbox"]["label"] == "bubblewrap (remote)"
        assert mirror.is_relative_to(local_dirs / "agent-shell" / "remote")
        turn = await rig.turn(sid, "make the test pass")
        assert "远程说明" in json.dumps(rig.requests[0], ensure_ascii=False)  # its AGENTS.md
        assert turn.end["stopReason"] == "end_turn", turn.end
        framed = max((tool_messages(r) for r in rig.requests), key=len)
        results = [payload_of(m) for m in framed]
        listing, failing, read, edited, passing, status, found = results
        assert {"app.py", "Makefile", "test_app.py"} <= set(listing["entries"])
        assert failing["exit_code"] == 2 and "add(2, 2) gave 0" in failing["stderr"]
        assert failing["sandbox"] == "bubblewrap (remote)"
        assert "a - b" in read["text"]
        assert "+    return a + b" in edited["diff"]
        assert passing["exit_code"] == 0 and "通过" in passing["stdout"]
        assert passing["summary"]["ok"] is True and passing["sandbox"] == "bubblewrap (remote)"
        # git ran there, on the remote repository.
        assert status["root"] == ssh_rig.tramp(str(root))
        assert status["branch"] == "main" and status["changed"] == ["app.py"]
        assert status["commits"][0].endswith(" init")
        assert found["matches"] == [{"path": "app.py", "line": 2, "text": "    return a + b"}]
        # The edit waited for the user's yes, the commands did not (remote sandbox).
        assert len(turn.permission_requests) == 1
        assert "app.py" in turn.permission_requests[0]["toolCall"]["title"]
        # Written there, by that user; the records stayed here.
        assert (root / "app.py").read_text() == APP.replace("a - b", "a + b")
        assert (root / "app.py").stat().st_uid == ssh_rig.uid
        assert (root / "__pycache__").stat().st_uid == ssh_rig.uid
        assert not (root / ".agent-shell").exists()
        logs = list((mirror / ".agent-shell" / "logs").glob("*.org"))
        assert len(logs) == 1
        log = logs[0].read_text(encoding="utf-8")
        assert "Remote project: " + ssh_rig.tramp(str(root)) in log
        assert "make test" in log and "fixed: 加法" in log


async def test_a_cut_connection_ends_the_turn_and_the_next_one_reconnects(
    serve_app: Any, ssh_rig: SshRig, local_dirs: Path, tmp_path: Path
) -> None:
    root = ssh_rig.make_project(f"cut-{os.getpid()}", {"app.py": APP})
    word = f"33{os.getpid() % 1000}"
    steps = [
        call("run_command", command=f"sleep {word}"),
        call("run_command", command="echo back"),
        {"text": "back"},
    ]
    here = tmp_path / "elsewhere"
    here.mkdir()
    async with running_rig(serve_app, here, steps) as rig:
        opened = await rig.client.result(
            "session/new", {"cwd": str(here), **remote_params(ssh_rig, root)}
        )
        sid = opened["sessionId"]
        mirror = Path(opened["root"])
        cut: list[int] = []

        async def cut_when_running(message: dict[str, Any], _stream: EventStream) -> None:
            update = (message.get("params") or {}).get("update") or {}
            if update.get("status") == "in_progress" and not cut:
                await asyncio.to_thread(
                    wait_for, lambda: any(word in p[1] for p in ssh_rig.user_processes()), 15, word
                )
                cut.append(ssh_rig.cut())

        turn = await rig.turn(sid, "sleep", on_message=cut_when_running)
        assert cut and cut[0] > 0
        assert turn.end["stopReason"] == "error"
        assert "was lost" in turn.end["error"]["message"]
        await asyncio.to_thread(
            wait_for,
            lambda: not [p for p in ssh_rig.user_processes() if word in p[1]],
            15,
            "nothing of the turn left there",
        )
        log = next((mirror / ".agent-shell" / "logs").glob("*.org")).read_text(encoding="utf-8")
        assert f"sleep {word}" in log and "was lost" in log
        assert len(rig.requests) == 1  # the turn ended at the drop: no second model call
        # With sshd down, a prompt ends at once, saying so; once it is back, the
        # next prompt connects again.
        ssh_rig.down()
        try:
            refused = await rig.turn(sid, "while down")
        finally:
            ssh_rig.up()
        assert refused.end["stopReason"] == "error"
        assert "cannot connect to" in refused.end["error"]["message"]
        assert len(rig.requests) == 1  # the model was not asked
        again = await rig.turn(sid, "again")
        assert again.end["stopReason"] == "end_turn", again.end
        result = payload_of(max((tool_messages(r) for r in rig.requests), key=len)[-1])
        assert result["stdout"] == "back"
        listed = await rig.client.result(
            "session/list", {"cwd": str(here), **remote_params(ssh_rig, root)}
        )
        assert [x["sessionId"] for x in listed["sessions"]] == [sid]
        # And a bridge that forgot the session resumes it from the mirror, reconnecting.
        await rig.runtime.sessions.pop(sid).aclose()
        resumed = await rig.client.result(
            "session/resume", {"sessionId": sid, "cwd": str(here), **remote_params(ssh_rig, root)}
        )
        assert resumed["root"] == str(mirror)
        assert any("back" in str(item) for item in resumed["history"])
    assert parse_tramp(ssh_rig.tramp(str(root))).path == str(root)


SERVE = """\
import sys, time
print("后台 ready", sys.argv[1], flush=True)
time.sleep(600)
"""


async def test_background_jobs_of_a_remote_session_run_and_end_there(
    serve_app: Any, ssh_rig: SshRig, local_dirs: Path, tmp_path: Path
) -> None:
    word = f"36{os.getpid() % 1000}"
    makefile = f"test:\n\tpython3 serve.py {word}\ncheck:\n\tpython3 serve.py {word}-2\n"
    root = ssh_rig.make_project(f"jobs-{os.getpid()}", {"serve.py": SERVE, "Makefile": makefile})
    steps = [
        call("run_command", command="make -s test", background=True),
        {"text": "started"},
        call("job_output", job_id="job-1"),
        call("job_kill", job_id="job-1"),
        {"text": "killed"},
        call("run_command", command="make -s check", background=True),
        {"text": "started again"},
    ]

    def there(tag: str) -> list[tuple[int, str]]:
        return [p for p in ssh_rig.user_processes() if f"serve.py {tag}" in p[1]]

    here = tmp_path / "elsewhere"
    here.mkdir()
    async with running_rig(serve_app, here, steps) as rig:
        opened = await rig.client.result(
            "session/new", {"cwd": str(here), **remote_params(ssh_rig, root)}
        )
        sid = opened["sessionId"]
        mirror = Path(opened["root"])
        first = await rig.turn(sid, "start the server")
        assert first.end["stopReason"] == "end_turn", first.end
        assert first.permission_requests == []  # unasked: in the remote sandbox
        started = payload_of(tool_messages(rig.requests[-1])[-1])
        assert started["job_id"] == "job-1" and started["sandbox"] == "bubblewrap (remote)"
        assert "NOT reachable" in started["network"]
        # It runs there, as that user, its output coming into the mirror's log.
        await asyncio.to_thread(wait_for, lambda: there(word), 15, "the job there")
        log = rig.runtime.sessions[sid].outputs.path_of(started["log_ref"])
        assert log.is_relative_to(mirror)
        await asyncio.to_thread(
            wait_for, lambda: f"后台 ready {word}" in log.read_text(encoding="utf-8"), 15, "output"
        )
        listed = await rig.client.result("session/jobs", {"sessionId": sid})
        assert [(j["id"], j["state"]) for j in listed["jobs"]] == [("job-1", "running")]
        second = await rig.turn(sid, "read it, then stop it")
        assert second.end["stopReason"] == "end_turn", second.end
        output, killed = [payload_of(m) for m in tool_messages(rig.requests[-1])[-2:]]
        assert output["running"] is True and f"后台 ready {word}" in output["output"]
        assert killed["state"] == "killed"
        assert not there(word)  # job_kill returned: nothing of it left there
        third = await rig.turn(sid, "start it again")
        assert third.end["stopReason"] == "end_turn", third.end
        await asyncio.to_thread(wait_for, lambda: there(f"{word}-2"), 15, "the second job")
        closed = await rig.client.result("session/close", {"sessionId": sid})
        assert closed["jobsKilled"] == 1
        assert not there(word) and not there(f"{word}-2")  # the session's close ended it there
