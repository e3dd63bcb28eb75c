"""A remote project against a real sshd: commands, files and sandbox on the far side.

The sshd logs in as its own unprivileged user, so what ran there shows as that
user's files; the host is this machine, so its /proc shows what is left running.
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
import shutil
import subprocess
import tempfile
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from agent_shell_bridge.policy.engine import PolicyEngine
from agent_shell_bridge.remote.errors import RemoteDisconnected, RemoteEscape, RemoteFailed
from agent_shell_bridge.remote.project import RemoteProject
from agent_shell_bridge.remote.runner import RemoteRunner
from agent_shell_bridge.remote.target import parse_tramp
from agent_shell_bridge.sandbox.placement import Asked, Placement
from agent_shell_bridge.types import Decision
from sshd_rig import SshRig, sshd, wait_for

pytestmark = pytest.mark.sshd

APP = "def add(a, b):\n    return a - b\n"
MAKEFILE = "test:\n\tpython3 test_app.py\n"
TEST = (
    "from app import add\n"
    "assert add(2, 2) == 4, f'add(2, 2) gave {add(2, 2)}'\n"
    "print('ok: 测试通过')\n"
)


@pytest.fixture(scope="module")
def ssh_rig() -> Iterator[SshRig]:
    with sshd() as rig:
        yield rig


@pytest.fixture
async def project(ssh_rig: SshRig, tmp_path: Path) -> AsyncIterator[RemoteProject]:
    root = ssh_rig.make_project(
        f"proj-{os.getpid()}", {"app.py": APP, "test_app.py": TEST, "Makefile": MAKEFILE}
    )
    target = parse_tramp(ssh_rig.tramp(str(root)))
    runtime = Path(tempfile.mkdtemp(prefix="asr-"))  # a socket's path must stay short
    remote = await RemoteProject.connect(
        target,
        runtime_dir=runtime,
        ssh_options=ssh_rig.options,
        mirror=tmp_path / "mirror",
    )
    try:
        yield remote
    finally:
        await remote.aclose()
        shutil.rmtree(runtime, ignore_errors=True)


async def test_failing_test_then_edit_then_passing(project: RemoteProject, ssh_rig: SshRig) -> None:
    assert project.probe.sandboxed, project.probe.bwrap_detail
    assert project.probe.uid == ssh_rig.uid
    policy = PolicyEngine.for_project(project.mirror)
    judged = project.runner.judge(policy, "make test")
    assert judged.verdict.decision is Decision.ALLOW  # runs unasked: in the remote sandbox
    first = await project.runner.run_placed(
        "make test", judged=judged, cwd=".", timeout_s=20, asked=Asked()
    )
    assert first.label == "bubblewrap (remote)"
    assert first.result.exit_code == 2  # make's, for the failed recipe
    assert "add(2, 2) gave 0" in first.result.stderr
    listing = await project.files.list(".", depth=2)
    assert {"app.py", "Makefile", "__pycache__/"} <= set(listing["entries"])  # type: ignore[arg-type]
    assert (Path(project.root) / "__pycache__").stat().st_uid == ssh_rig.uid
    assert (await project.files.read("app.py")).decode() == APP
    fixed = "# 加法\ndef add(a, b):\n    return a + b\n"
    await project.files.write("app.py", fixed.encode())
    written = Path(project.root) / "app.py"
    assert written.read_bytes() == fixed.encode()
    assert written.stat().st_mode & 0o777 == 0o644  # its mode kept
    await project.files.write("新/文件.txt", "中文 ✓\n".encode())
    made = Path(project.root) / "新" / "文件.txt"
    assert made.read_bytes() == "中文 ✓\n".encode()
    assert made.stat().st_uid == ssh_rig.uid
    assert (await project.files.read("新/文件.txt")).decode() == "中文 ✓\n"
    assert written.stat().st_uid == ssh_rig.uid  # written there, by that user
    second = await project.runner.run_placed(
        "make test", judged=judged, cwd=".", timeout_s=20, asked=Asked()
    )
    assert second.result.exit_code == 0, second.result.stderr
    assert "ok: 测试通过" in second.result.stdout
    asked = project.runner.judge(policy, "id -u > who.txt")
    assert asked.verdict.decision is Decision.CONFIRM
    with pytest.raises(RemoteFailed, match="needs the user's yes"):
        await project.runner.run_placed(
            "id -u > who.txt", judged=asked, cwd=".", timeout_s=20, asked=Asked()
        )
    made = await project.runner.run_placed(
        "id -u > who.txt", judged=asked, cwd=".", timeout_s=20, asked=Asked(by_user=True)
    )
    assert made.label == "none (remote)"  # approved: as the user would run it there
    assert made.result.exit_code == 0
    who = Path(project.root) / "who.txt"
    assert who.stat().st_uid == ssh_rig.uid
    assert who.read_text().strip() == str(ssh_rig.uid)  # the same user inside its namespace


HOSTILE = """\
import os, socket, sys
out = []
def attempt(name, fn):
    try:
        fn()
        out.append(name + ": DONE")
    except Exception as exc:
        out.append(name + ": refused " + type(exc).__name__)
def write(path):
    with open(path, "w") as fh:
        fh.write("pwned")
def connect(path):
    s = socket.socket(socket.AF_UNIX)
    s.connect(path)
attempt("sibling", lambda: write(os.path.join(os.path.dirname(os.getcwd()), "PWNED-SIBLING")))
attempt("hooks", lambda: write(".git/hooks/pre-commit"))
attempt("usr", lambda: write("/usr/PWNED"))
attempt("emacs", lambda: connect(sys.argv[1]))
attempt("agent", lambda: connect(sys.argv[2]))
attempt("inside", lambda: write("made-inside.txt"))
print("\\n".join(out))
print("SSH_AUTH_SOCK" in os.environ, "EMACS_SOCKET_NAME" in os.environ)
"""


async def test_hostile_script_meets_the_remote_sandbox(
    project: RemoteProject, ssh_rig: SshRig
) -> None:
    root = Path(project.root)
    (root / "conftest.py").write_text(HOSTILE)
    (root / ".git" / "hooks").mkdir(parents=True)
    emacs_dir = Path(f"/tmp/emacs{ssh_rig.uid}")
    emacs_dir.mkdir(mode=0o700, exist_ok=True)
    agent_dir = ssh_rig.home / ".ssh"
    agent_dir.mkdir(mode=0o700, exist_ok=True)
    listeners = []
    for path in (emacs_dir / "server", agent_dir / "agent.sock"):
        path.unlink(missing_ok=True)
        import socket

        s = socket.socket(socket.AF_UNIX)
        s.bind(str(path))
        s.listen(4)
        s.setblocking(False)
        os.chown(path, ssh_rig.uid, ssh_rig.uid)
        listeners.append(s)
    for d in (emacs_dir, agent_dir, root):
        os.system(f"chown -R {ssh_rig.uid}:{ssh_rig.uid} {d}")
    try:
        sockets = f"{emacs_dir / 'server'} {agent_dir / 'agent.sock'}"
        (root / "Makefile").write_text(f"test:\n\tpython3 conftest.py {sockets}\n")
        os.chown(root / "Makefile", ssh_rig.uid, ssh_rig.uid)
        policy = PolicyEngine.for_project(project.mirror)
        judged = project.runner.judge(policy, "make test")
        run = await project.runner.run_placed(
            "make test", judged=judged, cwd=".", timeout_s=20, asked=Asked()
        )
        assert run.label == "bubblewrap (remote)"
        lines = run.result.stdout.splitlines()
        assert run.result.exit_code == 0, run.result.stderr
        assert "inside: DONE" in lines  # it did run, and may write the project
        assert (root / "made-inside.txt").read_text() == "pwned"
        for name in ("hooks", "usr", "emacs", "agent"):
            assert any(line.startswith(f"{name}: refused") for line in lines), lines
        # Beside the project is the sandbox's own empty $HOME: gone with the run.
        assert not (ssh_rig.home / "PWNED-SIBLING").exists()
        assert not Path("/usr/PWNED").exists()
        assert not (root / ".git" / "hooks" / "pre-commit").exists()
        assert lines[-1] == "False False"
        for s in listeners:  # nothing ever knocked
            with pytest.raises(BlockingIOError):
                s.accept()
    finally:
        for s in listeners:
            s.close()
        (emacs_dir / "server").unlink(missing_ok=True)
        (agent_dir / "agent.sock").unlink(missing_ok=True)


async def test_symlink_out_of_the_remote_root_is_refused(project: RemoteProject) -> None:
    root = Path(project.root)
    (root / "escape").symlink_to("/etc/passwd")
    (root / "sub").mkdir()
    (root / "sub" / "up").symlink_to("../..")
    with pytest.raises(RemoteEscape, match="outside the project"):
        await project.files.read("escape")
    with pytest.raises(RemoteEscape):
        await project.files.write("sub/up/planted.txt", b"x")
    with pytest.raises(RemoteEscape):
        await project.files.resolve("sub/up")
    assert not (root.parent / "planted.txt").exists()
    with pytest.raises(RemoteEscape):
        await project.files.read("../../../etc/passwd")
    found = await project.files.grep("root:", ".")
    assert found["matches"] == []  # the link to /etc/passwd is not followed
    (root / "sub" / "note.txt").write_text("root: 根\n")
    found = await project.files.grep("root:", "sub")
    assert found["matches"] == [{"path": "sub/note.txt", "line": 1, "text": "root: 根"}]
    with pytest.raises(RemoteEscape):
        await project.files.grep("x", "sub/up")


async def test_without_a_remote_sandbox_only_strict_readers_run_unasked(
    project: RemoteProject,
) -> None:
    bare = dataclasses.replace(project.probe, bwrap=None, bwrap_works=False)
    assert bare.label == "no sandbox (remote)"
    assert bare.status().detail.startswith("no sandbox (remote)")
    runner = RemoteRunner(
        project.connection, bare, project.root, project.runner._local, local_cwd=project.mirror
    )
    policy = PolicyEngine.for_project(project.mirror)
    assert policy.judge_command("make test").verdict.decision is Decision.ALLOW
    judged = runner.judge(policy, "make test")  # ... but not here, unasked
    assert judged.verdict.decision is Decision.CONFIRM
    assert "no sandbox (remote)" in judged.verdict.reason
    with pytest.raises(RemoteFailed, match="needs the user's yes"):
        await runner.run_placed("make test", judged=judged, cwd=".", timeout_s=20, asked=Asked())
    reader = runner.judge(policy, "cat app.py")
    assert reader.verdict.decision is Decision.ALLOW
    read = await runner.run_placed(
        "cat app.py", judged=reader, cwd=".", timeout_s=20, asked=Asked()
    )
    assert read.label == "none (remote)"
    assert read.result.stdout == APP.rstrip("\n")  # as the local runner renders it
    yes = await runner.run_placed(
        "make test", judged=judged, cwd=".", timeout_s=20, asked=Asked(by_user=True)
    )
    assert yes.result.exit_code == 2  # approved: it runs there, as the user


def _leftovers(rig: SshRig, word: str) -> list[tuple[int, str]]:
    return [p for p in rig.user_processes() if word in p[1]]


@pytest.mark.parametrize("sandboxed", [False, True])
async def test_a_cut_connection_ends_the_run_and_kills_it_there(
    project: RemoteProject, ssh_rig: SshRig, sandboxed: bool
) -> None:
    word = f"31{os.getpid() % 1000}{int(sandboxed)}"
    command = f"setsid sleep {word} & sleep {word}; echo finished"
    run = asyncio.create_task(
        project.runner.run_shell(command, cwd=".", timeout_s=60, sandboxed=sandboxed)
    )
    await asyncio.to_thread(wait_for, lambda: len(_leftovers(ssh_rig, word)) >= 2, 15, "sleeps")
    assert ssh_rig.cut() > 0
    with pytest.raises(RemoteDisconnected, match=r"connection to .* was lost"):
        await asyncio.wait_for(run, 20)
    await asyncio.to_thread(wait_for, lambda: not _leftovers(ssh_rig, word), 15, "no leftovers")
    with pytest.raises(RemoteDisconnected):
        await project.runner.run_shell("true", cwd=".", timeout_s=10, sandboxed=False)
    await project.reconnect()
    again = await project.runner.run_shell("echo back", cwd=".", timeout_s=10, sandboxed=True)
    assert again.stdout == "back"


async def test_a_timeout_kills_the_remote_group(project: RemoteProject, ssh_rig: SshRig) -> None:
    word = f"32{os.getpid() % 1000}"
    result = await project.runner.run_shell(
        f"sleep {word}", cwd=".", timeout_s=1.5, sandboxed=False
    )
    assert result.timed_out
    await asyncio.to_thread(wait_for, lambda: not _leftovers(ssh_rig, word), 15, "no leftovers")


async def test_a_chatty_login_shell_never_reaches_a_file(
    project: RemoteProject, ssh_rig: SshRig
) -> None:
    bashrc = ssh_rig.home / ".bashrc"
    before = bashrc.read_bytes() if bashrc.exists() else None
    bashrc.write_text("echo chatty-login-shell 吵\n" + (before or b"").decode())
    try:
        shown = await project.runner.run_shell("true", cwd=".", timeout_s=10, sandboxed=False)
        assert "chatty-login-shell" in shown.stdout  # the login shell did print first
        assert (await project.files.read("app.py")).decode() == APP
        assert await project.files.exists("app.py")
    finally:
        if before is None:
            bashrc.unlink()
        else:
            bashrc.write_bytes(before)


async def test_the_remote_home_shows_toolchains_not_credentials(
    ssh_rig: SshRig, tmp_path: Path
) -> None:
    home = ssh_rig.home
    tool = home / ".local" / "bin" / "hello-tool"
    tool.parent.mkdir(parents=True, exist_ok=True)
    tool.write_text("#!/bin/sh\necho 工具 works\n")
    tool.chmod(0o755)
    creds = home / ".cargo" / "credentials.toml"
    creds.parent.mkdir(parents=True, exist_ok=True)
    creds.write_text("token = 'cargo-secret-123'\n")
    (home / "private-notes.txt").write_text("not for the agent\n")
    subprocess.run(["chown", "-R", f"{ssh_rig.uid}:{ssh_rig.uid}", str(home)], check=True)
    root = ssh_rig.make_project(f"tools-{os.getpid()}", {"x.txt": "x\n"})
    runtime = Path(tempfile.mkdtemp(prefix="asr-"))
    remote = await RemoteProject.connect(
        parse_tramp(ssh_rig.tramp(str(root))),
        runtime_dir=runtime,
        ssh_options=ssh_rig.options,
        mirror=tmp_path / "mirror",
    )
    try:
        assert ".local/bin" in remote.probe.toolchains and ".cargo" in remote.probe.toolchains
        run = await remote.runner.run_shell(
            "~/.local/bin/hello-tool; cat ~/.cargo/credentials.toml; ls -A ~",
            cwd=".",
            timeout_s=20,
            sandboxed=True,
        )
        assert run.exit_code == 0, run.stderr
        assert "工具 works" in run.stdout
        assert "cargo-secret" not in run.stdout  # masked inside the shown toolchain
        assert "credentials.toml: Permission denied" in run.stderr  # /dev/null over it
        assert "private-notes.txt" not in run.stdout and ".bashrc" not in run.stdout
        assert creds.read_text() == "token = 'cargo-secret-123'\n"  # untouched there
    finally:
        await remote.aclose()
        shutil.rmtree(runtime, ignore_errors=True)
        (home / "private-notes.txt").unlink()
        creds.unlink()
        tool.unlink()


def _plant(sub: str, marker: Path) -> str:
    """A command making SUB a repository whose fsmonitor would touch MARKER."""
    return (
        f"mkdir -p {sub}/.git/objects {sub}/.git/refs/heads && "
        f"echo 'ref: refs/heads/main' > {sub}/.git/HEAD && "
        f"printf '[core]\\n\\tfsmonitor = touch {marker}; false\\n' > {sub}/.git/config && "
        "echo planted-种"
    )


async def test_git_metadata_a_sandboxed_remote_run_plants_is_set_aside_there(
    project: RemoteProject, ssh_rig: SshRig
) -> None:
    root = Path(project.root)
    marker = ssh_rig.home / f"fired-{os.getpid()}"
    marker.unlink(missing_ok=True)
    # Outside the sandbox (the user's yes) nothing is walked: plain git there fires it.
    approved = Placement(sandboxed=False, network=False)
    ran = await project.runner.run_placement(
        _plant("bare", marker), approved, cwd=".", timeout_s=20
    )
    assert ran.result.exit_code == 0 and ran.set_aside == ()
    await project.runner.run_argv(["git", "status", "--short"], cwd="bare", timeout_s=20)
    assert marker.exists()  # what the walk is for
    marker.unlink()
    sandboxed = Placement(sandboxed=True, network=False)
    ran = await project.runner.run_placement(
        _plant("sub", marker), sandboxed, cwd=".", timeout_s=20
    )
    assert ran.result.exit_code == 0 and "planted-种" in ran.result.stdout, ran.result.stderr
    assert [n for n in ran.set_aside if n.startswith("sub/.git (repository)")], ran.set_aside
    assert not (root / "sub" / ".git").exists()
    aside = root / "sub" / ".git.made-by-a-sandboxed-command-0"
    assert "fsmonitor" in (aside / "config").read_text()
    assert aside.stat().st_uid == ssh_rig.uid  # renamed there, by that user
    shown = await project.runner.run_argv(["git", "status", "--short"], cwd="sub", timeout_s=20)
    assert "not a git repository" in shown.stderr
    assert not marker.exists()
    # A job's end is walked the same way.
    job = await project.runner.start_shell(
        _plant("job", marker), cwd=".", timeout_s=30, sandboxed=True
    )
    assert await asyncio.wait_for(job.ended, 30) == 0
    assert job.note is not None and "job/.git (repository) was planted" in job.note
    assert not (root / "job" / ".git").exists()


async def _log_says(path: Path, text: str) -> None:
    await asyncio.to_thread(
        wait_for, lambda: text in path.read_text(encoding="utf-8", errors="replace"), 15, text
    )


@pytest.mark.parametrize("sandboxed", [False, True])
async def test_a_background_job_runs_there_and_job_kill_leaves_nothing(
    project: RemoteProject, ssh_rig: SshRig, sandboxed: bool
) -> None:
    word = f"34{os.getpid() % 1000}{int(sandboxed)}"
    command = f"echo 后台-started; setsid sleep {word} & sleep {word}; echo never"
    job = await project.runner.start_shell(command, cwd=".", timeout_s=None, sandboxed=sandboxed)
    await _log_says(job.log_path, "后台-started")
    await asyncio.to_thread(
        wait_for, lambda: len(_leftovers(ssh_rig, f"sleep {word}")) >= 2, 15, "sleeps"
    )
    assert all(
        os.stat(f"/proc/{pid}").st_uid == ssh_rig.uid for pid, _ in _leftovers(ssh_rig, word)
    )
    assert not job.ended.done()
    await project.runner.kill_job(job.pid)
    assert not _leftovers(ssh_rig, word)  # gone there when the kill returns, setsid's too
    # It ended there (the watchdog's code for a killed command), not by its local end.
    assert await asyncio.wait_for(job.ended, 10) == 137
    assert "never" not in job.log_path.read_text(encoding="utf-8")
    assert project.connection.dropped is None


async def test_a_cut_connection_ends_a_background_job_there(
    project: RemoteProject, ssh_rig: SshRig
) -> None:
    word = f"35{os.getpid() % 1000}"
    command = f"setsid sleep {word} & sleep {word}"
    job = await project.runner.start_shell(command, cwd=".", timeout_s=None, sandboxed=True)
    await asyncio.to_thread(
        wait_for, lambda: len(_leftovers(ssh_rig, f"sleep {word}")) >= 2, 15, "sleeps"
    )
    assert ssh_rig.cut() > 0
    assert await asyncio.wait_for(job.ended, 20) is None
    assert job.note is not None and "was lost" in job.note
    await asyncio.to_thread(wait_for, lambda: not _leftovers(ssh_rig, word), 15, "no leftovers")
    assert project.connection.dropped is not None  # the next turn connects again
    await project.ready()
    again = await project.runner.run_shell("echo back", cwd=".", timeout_s=10, sandboxed=True)
    assert again.stdout == "back"
