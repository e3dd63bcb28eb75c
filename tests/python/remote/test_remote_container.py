"""A remote project in a real container (``/podman:NAME:/path``, ``/docker:…``).

Each test runs against a podman container and a docker one (``container_rig``:
no image is pulled), the project mounted at a path this machine does not have;
what ran there shows by the container's hostname and its ``/etc/hostname``. Bubblewrap does
not work inside it, so the session says "no sandbox (remote)" and only strict
readers run unasked. A stopped or missing container is named as such, in one line,
and never taken for a command that failed.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import socket
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agent_rig import payload_of, running_rig, tool_messages
from agent_shell_bridge.remote.errors import RemoteDisconnected
from agent_shell_bridge.remote.project import RemoteProject
from agent_shell_bridge.remote.target import parse_tramp
from container_rig import MOUNT, ContainerRig, container
from sshd_rig import wait_for

pytestmark = pytest.mark.container

APP = "def add(a, b):\n    return a - b\n"
TEST = "from app import add\nassert add(2, 2) == 4, f'add(2, 2) gave {add(2, 2)}'\nprint('通过')\n"
MAKEFILE = "test:\n\tpython3 test_app.py\n"


@pytest.fixture(scope="module", params=["podman", "docker"])
def rig(request: pytest.FixtureRequest) -> Iterator[ContainerRig]:
    with container(request.param) as made:
        yield made


@pytest.fixture(autouse=True)
def _clients_find_the_daemon(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The bridge's docker runs find the rig's dockerd (``DOCKER_HOST``), as a user's would."""
    if "rig" in request.fixturenames:
        for key, value in request.getfixturevalue("rig").env.items():
            monkeypatch.setenv(key, value)


@pytest.fixture
def local_dirs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    runtime = Path(tempfile.mkdtemp(prefix="asr-"))
    runtime.chmod(0o700)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))
    yield tmp_path / "data"
    shutil.rmtree(runtime, ignore_errors=True)


def call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"tool_calls": [{"name": name, "arguments": arguments}]}


def write_project(rig: ContainerRig, files: dict[str, str]) -> None:
    for old in rig.project.iterdir():
        shutil.rmtree(old) if old.is_dir() else old.unlink()
    for name, text in files.items():
        (rig.project / name).write_text(text, encoding="utf-8")


async def test_a_task_in_a_container(
    serve_app: Any, rig: ContainerRig, local_dirs: Path, tmp_path: Path
) -> None:
    write_project(
        rig,
        {
            "app.py": APP,
            "test_app.py": TEST,
            "Makefile": MAKEFILE,
            "AGENTS.md": "容器说明: run make test before saying done.\n",
        },
    )
    assert not Path(MOUNT).exists()  # the project's path is the container's alone
    steps = [
        call("list_directory", path="."),
        call("run_command", command="cat app.py"),  # a strict reader: unasked
        call("run_command", command="hostname && cat /etc/hostname"),
        call("run_command", command="make test"),
        call("read_file", path=f"{MOUNT}/app.py"),  # the container's name of it
        call("replace_pattern", path="app.py", pattern="a - b", replacement="a + b", literal=True),
        call("run_command", command="make test"),
        {"text": "fixed: 加法"},
    ]
    here = tmp_path / "elsewhere"
    here.mkdir()
    async with running_rig(serve_app, here, steps) as agent:
        opened = await agent.client.result(
            "session/new", {"cwd": str(here), "remote": {"tramp": rig.tramp()}}
        )
        sid = opened["sessionId"]
        mirror = Path(opened["root"])
        assert opened["remote"]["root"] == MOUNT
        assert opened["remote"]["host"] == rig.name
        # Bubblewrap is there but cannot make its namespaces inside the container.
        assert opened["sandbox"]["label"] == "no sandbox (remote)"
        assert mirror.is_relative_to(local_dirs / "agent-shell" / "remote")
        turn = await agent.turn(sid, "make the test pass")
        assert turn.end["stopReason"] == "end_turn", turn.end
        assert "容器说明" in json.dumps(agent.requests[0], ensure_ascii=False)
        framed = max((tool_messages(r) for r in agent.requests), key=len)
        listing, reader, where, failing, read, edited, passing = [payload_of(m) for m in framed]
        assert {"app.py", "Makefile", "test_app.py", "AGENTS.md"} <= set(listing["entries"])
        assert reader["stdout"] == APP.rstrip("\n") and reader["sandbox"] == "none (remote)"
        # It ran in the container: its hostname, its /etc/hostname, not this machine's.
        assert rig.hostname and rig.hostname != socket.gethostname()
        assert where["stdout"].split() == [rig.hostname, rig.hostname]
        assert failing["exit_code"] == 2 and "add(2, 2) gave 0" in failing["stderr"]
        assert "a - b" in read["text"]
        assert "+    return a + b" in edited["diff"]
        assert passing["exit_code"] == 0 and "通过" in passing["stdout"]
        # Without a sandbox there, only the strict reader ran unasked.
        titles = [p["toolCall"]["title"] for p in turn.permission_requests]
        assert len(titles) == 4, titles
        assert not any("cat app.py" in t for t in titles)
        assert sum("make test" in t for t in titles) == 2
        assert any("hostname" in t for t in titles) and any("app.py" in t for t in titles)
        # Written there (the mount shows it here); the records stayed here.
        assert (rig.project / "app.py").read_text() == APP.replace("a - b", "a + b")
        assert not (rig.project / ".agent-shell").exists()
        log = next((mirror / ".agent-shell" / "logs").glob("*.org")).read_text(encoding="utf-8")
        assert "Remote project: " + rig.tramp() in log and "fixed: 加法" in log


async def test_a_stopped_container_is_named_not_taken_for_a_failed_command(
    serve_app: Any, rig: ContainerRig, local_dirs: Path, tmp_path: Path
) -> None:
    write_project(rig, {"app.py": APP})
    steps = [
        call("run_command", command="ls no-such-file"),  # a command that fails
        {"text": "it failed"},
        call("run_command", command="ls"),
        call("run_command", command="ls"),
        {"text": "back"},
    ]
    here = tmp_path / "elsewhere"
    here.mkdir()
    async with running_rig(serve_app, here, steps) as agent:
        opened = await agent.client.result(
            "session/new", {"cwd": str(here), "remote": {"tramp": rig.tramp()}}
        )
        sid = opened["sessionId"]
        failed = await agent.turn(sid, "list a missing file")
        assert failed.end["stopReason"] == "end_turn", failed.end
        result = payload_of(tool_messages(agent.requests[-1])[-1])
        assert result["exit_code"] == 2 and "no-such-file" in result["stderr"]
        # The container stops between turns: the next run meets it stopped.
        await asyncio.to_thread(rig.stop)
        try:
            stopped = await agent.turn(sid, "list")
            assert stopped.end["stopReason"] == "error"
            message = stopped.end["error"]["message"]
            assert f"container {rig.name} is not running (exited" in message, message
            assert "\n" not in message
            assert len(agent.requests) == 3  # the model was not called after it
            # While it stays stopped, a prompt ends at once, saying so.
            again = await agent.turn(sid, "list again")
            assert again.end["stopReason"] == "error"
            assert f"container {rig.name} is not running" in again.end["error"]["message"]
            assert len(agent.requests) == 3
        finally:
            await asyncio.to_thread(rig.start)
        back = await agent.turn(sid, "once more")
        assert back.end["stopReason"] == "end_turn", back.end
        assert payload_of(tool_messages(agent.requests[-1])[-1])["stdout"] == "app.py"


async def test_a_timeout_leaves_nothing_running_in_the_container(
    rig: ContainerRig, tmp_path: Path
) -> None:
    write_project(rig, {"app.py": APP})
    project = await RemoteProject.connect(
        parse_tramp(rig.tramp()), runtime_dir=tmp_path, mirror=tmp_path / "mirror"
    )
    try:
        result = await project.runner.run_shell(
            "sleep 4343 & setsid sleep 4344 & sleep 4345",
            cwd=".",
            timeout_s=2,
            sandboxed=False,
        )
    finally:
        await project.aclose()
    assert result.timed_out and result.exit_code is None

    def left() -> list[str]:
        rows = rig.exec("ps", "-eo", "stat=,args=").splitlines()
        return [r for r in rows if "sleep 434" in r and not r.lstrip().startswith("Z")]

    assert "sleep infinity" in rig.exec("ps", "-eo", "args=")  # ps sees the container's
    # The podman exec client was killed; the watchdog there saw its channel close.
    await asyncio.to_thread(wait_for, lambda: not left(), 15, "nothing of the run left there")


async def test_a_container_stopped_mid_command_ends_the_run_naming_it(
    rig: ContainerRig, tmp_path: Path
) -> None:
    write_project(rig, {"app.py": APP})
    project = await RemoteProject.connect(
        parse_tramp(rig.tramp()), runtime_dir=tmp_path, mirror=tmp_path / "mirror"
    )

    def stop_once_running() -> None:
        wait_for(lambda: "sleep 4646" in rig.exec("ps", "-eo", "args="), 15, "the run there")
        rig.stop()

    try:
        stopping = asyncio.ensure_future(asyncio.to_thread(stop_once_running))
        with pytest.raises(RemoteDisconnected) as caught:
            await project.runner.run_shell("sleep 4646", cwd=".", timeout_s=60, sandboxed=False)
        await stopping
        message = caught.value.message
        assert message.startswith(f"container {rig.name} is not running ("), message
        assert "the turn ended" in message and "\n" not in message
        assert project.connection.dropped is caught.value
        with pytest.raises(RemoteDisconnected, match="is not running"):
            await project.ready()  # still stopped: the next turn is refused at once
        await asyncio.to_thread(rig.start)
        await project.ready()  # running again: reached again
        assert project.connection.dropped is None
        again = await project.runner.run_shell("cat app.py", cwd=".", timeout_s=30, sandboxed=False)
        assert again.exit_code == 0 and again.stdout == APP.rstrip("\n")
    finally:
        if "running" not in rig.cli("inspect", "--format", "{{.State.Status}}", rig.name).stdout:
            await asyncio.to_thread(rig.start)
        await project.aclose()


async def test_a_command_killed_in_a_running_container_is_its_own_result(
    rig: ContainerRig, tmp_path: Path
) -> None:
    """137 is also what a stopped container gives: asked again, the container runs."""
    write_project(rig, {"app.py": APP})
    project = await RemoteProject.connect(
        parse_tramp(rig.tramp()), runtime_dir=tmp_path, mirror=tmp_path / "mirror"
    )
    try:
        killed = await project.runner.run_shell(
            "echo 自杀 && kill -9 $$", cwd=".", timeout_s=30, sandboxed=False
        )
        assert killed.exit_code == 137 and killed.stdout == "自杀"
        assert project.connection.dropped is None
    finally:
        await project.aclose()


async def test_a_user_in_the_name_runs_the_requests_as_that_user(
    rig: ContainerRig, tmp_path: Path
) -> None:
    """``/podman:nobody@NAME:…`` is ``exec -u nobody``: the probe, commands and
    files are that user's there (whose name ``exec`` sets in no variable)."""
    write_project(rig, {"app.py": APP})
    rig.project.chmod(0o777)
    target = parse_tramp(f"/{rig.kind}:nobody@{rig.name}:{MOUNT}")
    project = await RemoteProject.connect(target, runtime_dir=tmp_path, mirror=tmp_path / "m")
    try:
        assert (project.probe.uid, project.probe.user) == (65534, "nobody")
        ran = await project.runner.run_shell("id -un", cwd=".", timeout_s=30, sandboxed=False)
        assert ran.stdout == "nobody"
        await project.files.write("新.txt", "写在容器里\n".encode())
    finally:
        await project.aclose()
    made = rig.project / "新.txt"
    assert made.read_text(encoding="utf-8") == "写在容器里\n" and made.stat().st_uid == 65534


async def test_a_missing_container_is_refused_in_one_line(
    rig: ContainerRig, tmp_path: Path
) -> None:
    target = parse_tramp(f"/{rig.kind}:agent-shell-none-{tmp_path.name[-8:]}:/srv/app")
    with pytest.raises(RemoteDisconnected) as caught:
        await RemoteProject.connect(target, runtime_dir=tmp_path, mirror=tmp_path / "mirror")
    assert caught.value.message == (
        f"cannot reach {target.host}: container {target.host} does not exist "
        f"({rig.kind} knows no such container)"
    )
    assert not (tmp_path / "mirror").exists()


async def test_docker_without_its_daemon_says_so_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The docker client's own answer when no daemon listens where it looks."""
    if shutil.which("docker") is None:
        pytest.skip("the docker client is not installed (Debian: docker.io)")
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/none.sock")
    target = parse_tramp("/docker:web:/srv/app")
    with pytest.raises(RemoteDisconnected) as caught:
        await RemoteProject.connect(target, runtime_dir=tmp_path, mirror=tmp_path / "mirror")
    message = caught.value.message
    assert message.startswith(
        f"cannot reach web: docker cannot reach container web: Cannot connect to the Docker "
        f"daemon at unix://{tmp_path}/none.sock"
    ), message
    assert "\n" not in message
