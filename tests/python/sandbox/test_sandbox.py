"""The sandbox itself: detection, what it allows, and where approved commands run.

Real bubblewrap, real subprocesses through the real ``ProcessRunner``, real loopback
sockets. Tests that need bubblewrap detect it the way the bridge does (ignoring a
suite-wide ``AGENT_SHELL_SANDBOX=off``) and say so when this machine cannot run it.
"""

from __future__ import annotations

import asyncio
import errno
import os
import socket
import subprocess
from pathlib import Path
from typing import Any

import pytest

from agent_rig import make_project, running_rig, tool_messages
from agent_shell_bridge.policy.secrets import expanded_secret_paths
from agent_shell_bridge.process.runner import ProcessRunner
from agent_shell_bridge.sandbox import (
    SANDBOX_ENV,
    SandboxKit,
    SandboxSpec,
    SandboxStatus,
    detect_sandbox,
)
from agent_shell_bridge.sandbox.strict_readonly import strictly_read_only

# Run again with the sandbox forced off (make test): its path depends on the sandbox.
pytestmark = pytest.mark.sandbox_sensitive


def _real() -> SandboxStatus:
    return detect_sandbox({k: v for k, v in os.environ.items() if k != SANDBOX_ENV})


@pytest.fixture
def bwrap() -> SandboxKit:
    """The sandbox's parts as the bridge finds them (named for what they wrap)."""
    status = _real()
    if not status.available or status.kit is None:
        pytest.skip(f"bubblewrap cannot run on this machine: {status.detail}")
    return status.kit


@pytest.fixture
def home(tmp_path: Path) -> Path:
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_rsa").write_text("PRIVATE\n")
    (home / ".aws").mkdir()
    (home / ".aws" / "credentials").write_text("AWSKEY\n")
    (home / ".netrc").write_text("machine x password NETRC\n")
    (home / ".authinfo.gpg").write_text("AUTHINFO\n")
    (home / ".cache").mkdir()
    (home / ".cargo").mkdir()
    (home / ".cargo" / "version").write_text("1.2.3\n")
    (home / ".mytool").mkdir()
    (home / ".mytool" / "version").write_text("4.5.6\n")
    (home / "notes.txt").write_text("private notes\n")
    return home


@pytest.fixture
def runner(tmp_path: Path) -> ProcessRunner:
    return ProcessRunner(tmp_path / "logs")


# -- detection -----------------------------------------------------------------


def test_forced_off_by_the_environment() -> None:
    status = detect_sandbox({**os.environ, SANDBOX_ENV: "off"})
    assert not status.available and status.label == "no sandbox"
    assert "AGENT_SHELL_SANDBOX=off" in status.detail


def test_no_bubblewrap_on_path_means_no_sandbox(tmp_path: Path) -> None:
    status = detect_sandbox({"PATH": str(tmp_path)})
    assert not status.available and "not installed" in status.detail


def test_a_bubblewrap_that_cannot_start_a_sandbox_means_no_sandbox(tmp_path: Path) -> None:
    fake = tmp_path / "bwrap"
    fake.write_text(
        "#!/bin/sh\necho 'bwrap: No permissions to creating new namespace' >&2\nexit 1\n"
    )
    fake.chmod(0o755)
    status = detect_sandbox({"PATH": str(tmp_path)})
    assert not status.available and "No permissions to creating new namespace" in status.detail


def test_detection_finds_a_working_bubblewrap(bwrap: str) -> None:
    status = _real()
    assert status.available and status.detail.startswith("bubblewrap")
    assert status.to_json()["kind"] == "bubblewrap"


# -- one list of secrets ----------------------------------------------------------


def test_secret_paths_cover_the_issue_list(home: Path) -> None:
    names = {str(p.relative_to(home)) for p in expanded_secret_paths(home)}
    for required in (
        ".ssh",
        ".gnupg",
        ".aws",
        ".netrc",
        ".pypirc",
        ".docker/config.json",
        ".config/gh",
        ".kube",
        ".password-store",
        ".local/share/keyrings",
        ".authinfo.gpg",
    ):
        assert required in names
    existing = {p.name for p in expanded_secret_paths(home, existing_only=True)}
    assert existing == {".ssh", ".aws", ".netrc", ".authinfo.gpg"}


# -- what the sandbox allows --------------------------------------------------------


def _spec(
    kit: SandboxKit, root: Path, home: Path, network: bool = False, **more: Any
) -> SandboxSpec:
    return SandboxSpec(kit=kit, roots=(root,), home=home, network=network, **more)


async def test_well_behaved_commands_behave_the_same(
    bwrap: SandboxKit, runner: ProcessRunner, tmp_path: Path, home: Path
) -> None:
    root = make_project(tmp_path / "proj", {"数据.txt": "第一行\n第二行\n"})
    commands = [
        "cat 数据.txt; echo 错误 >&2; exit 3",
        "git log --format=%s; ls",
        "printf 'x%.0s' $(seq 1 5000) | wc -c",
        "echo made > new.txt && cat new.txt && rm new.txt",
        "python3 -c 'import sys; print(sys.argv)' 参数",
    ]
    for command in commands:
        plain = await runner.run_shell(command, cwd=root, timeout_s=30)
        boxed = await runner.run_shell(
            command, cwd=root, timeout_s=30, sandbox=_spec(bwrap, root, home)
        )
        assert (boxed.exit_code, boxed.stdout, boxed.stderr) == (
            plain.exit_code,
            plain.stdout,
            plain.stderr,
        ), command


async def test_inside_the_sandbox(
    bwrap: SandboxKit, runner: ProcessRunner, tmp_path: Path, home: Path
) -> None:
    root = make_project(tmp_path / "proj", {"a.txt": "a\n"})
    outside = tmp_path / "outside"
    outside.mkdir()
    (root / ".agent-shell" / "workspace").mkdir(parents=True)
    (root / ".agent-shell" / "config.el").write_text(";; settings\n")
    checks = {
        "project writable": "echo x > made.txt",
        "workspace writable": "echo x > .agent-shell/workspace/scratch",
        "cache writable": "echo x > ~/.cache/c",
        "tmp writable": "echo x > /tmp/t && cat /tmp/t",
        "toolchain readable": "cat ~/.cargo/version",
        "toolchain not writable": "echo x > ~/.cargo/new",
        "other home files hidden": "cat ~/notes.txt",
        "own additions hidden unless asked": "cat ~/.mytool/version",
        "home not writable": "echo x > ~/new",
        "git config not writable": "echo '[x]' >> .git/config",
        "hooks not writable": "echo x > .git/hooks/pre-commit",
        "config.el not writable": "echo x >> .agent-shell/config.el",
        "logs not creatable": "mkdir -p .agent-shell/logs && echo x > .agent-shell/logs/x",
        "ssh masked": "cat ~/.ssh/id_rsa",
        "aws masked": "cat ~/.aws/credentials",
        "netrc masked": "cat ~/.netrc",
        "authinfo masked": "cat ~/.authinfo.gpg",
        "outside not writable": f"echo x > {outside}/probe",
        "outside not visible": f"ls {outside}",
        "var/tmp private": "echo x > /var/tmp/agent-shell-sandbox-probe",
        "one pid namespace": "echo $$",
    }
    results = {}
    for name, command in checks.items():
        results[name] = await runner.run_shell(
            command,
            cwd=root,
            timeout_s=30,
            env={"HOME": str(home)},
            sandbox=_spec(bwrap, root, home),
        )
    ok = {name for name, r in results.items() if r.exit_code == 0}
    assert {
        "project writable",
        "workspace writable",
        "cache writable",
        "tmp writable",
        "toolchain readable",
        "var/tmp private",
    } <= ok
    for name in (
        "home not writable",
        "toolchain not writable",
        "other home files hidden",
        "own additions hidden unless asked",
        "git config not writable",
        "hooks not writable",
        "config.el not writable",
        "logs not creatable",
        "outside not writable",
        "outside not visible",
    ):
        assert results[name].exit_code != 0, name
    for name in ("ssh masked", "aws masked", "netrc masked", "authinfo masked"):
        assert results[name].stdout == "", name
    assert results["toolchain readable"].stdout == "1.2.3"
    assert int(results["one pid namespace"].stdout) < 10
    # The host saw the project write and nothing else.
    assert (root / "made.txt").read_text() == "x\n"
    assert not (home / "new").exists() and not (home / ".cache" / "c").exists()
    assert (root / ".agent-shell" / "config.el").read_text() == ";; settings\n"
    assert not (root / ".git" / "hooks" / "pre-commit").exists()
    assert not Path("/var/tmp/agent-shell-sandbox-probe").exists()
    assert list(outside.iterdir()) == []
    assert (home / ".ssh" / "id_rsa").read_text() == "PRIVATE\n"


async def test_a_timeout_ends_everything_in_the_sandbox(
    bwrap: SandboxKit, runner: ProcessRunner, tmp_path: Path, home: Path
) -> None:
    root = make_project(tmp_path / "proj", {"a.txt": "a\n"})
    token = f"sandbox-timeout-{os.getpid()}"
    result = await runner.run_shell(
        f"sh -c 'sleep 300 # {token}' & sleep 301; wait",
        cwd=root,
        timeout_s=1,
        sandbox=_spec(bwrap, root, home),
    )
    assert result.timed_out and result.exit_code is None

    def left() -> list[str]:
        found = []
        for entry in os.listdir("/proc"):
            try:
                if token.encode() in Path(f"/proc/{entry}/cmdline").read_bytes():
                    stat = Path(f"/proc/{entry}/stat").read_text()
                    if stat.rsplit(")", 1)[1].split()[0] != "Z":
                        found.append(entry)
            except OSError:
                continue
        return found

    # The namespace's processes die with its init, a moment after the outer bwrap.
    async with asyncio.timeout(10):
        while left():
            await asyncio.sleep(0.02)  # polling /proc, within the deadline


async def test_network_only_when_asked_for(
    bwrap: SandboxKit, runner: ProcessRunner, tmp_path: Path, home: Path
) -> None:
    connections: list[bytes] = []

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        connections.append(await reader.read(10))
        writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    root = make_project(tmp_path / "proj", {"a.txt": "a\n"})
    probe = (
        "python3 -c 'import socket,sys; "
        f's=socket.create_connection(("127.0.0.1", {port}), timeout=5); s.sendall(b"hi")\''
    )
    try:
        closed = await runner.run_shell(
            probe, cwd=root, timeout_s=30, sandbox=_spec(bwrap, root, home)
        )
        assert closed.exit_code != 0 and connections == []
        opened = await runner.run_shell(
            probe, cwd=root, timeout_s=30, sandbox=_spec(bwrap, root, home, network=True)
        )
        assert opened.exit_code == 0, opened.stderr
        async with asyncio.timeout(10):
            while not connections:
                await asyncio.sleep(0.01)  # the handler runs on this loop
        assert connections == [b"hi"]
    finally:
        server.close()
        await server.wait_closed()


# -- the no-sandbox filter ----------------------------------------------------------


@pytest.mark.parametrize(
    ("command", "strict"),
    [
        ("ls -la", True),
        ("git status && git diff | head -5", True),
        ("grep -rn foo . | wc -l", True),
        ("echo $(git rev-parse HEAD)", True),
        ("make test", False),
        ("pytest -q", False),
        ("python -m pytest", False),
        ("go test ./...", False),
        ("npm test", False),
        ("./ls", False),
        ("ls && make", False),
        ("echo $(make -s version)", False),
        ("LD_PRELOAD=x ls", False),
        ("f() { ls; }; f", False),
        ("sort --compress-program=sh x", False),
        ("awk 'BEGIN { system(\"id\") }'", False),
    ],
)
def test_strictly_read_only(command: str, strict: bool, tmp_path: Path) -> None:
    assert strictly_read_only(command, [tmp_path]) is strict


def test_a_reader_found_inside_the_project_is_not_strict(tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "cat"
    fake.write_text("#!/bin/sh\necho pwned\n")
    fake.chmod(0o755)
    assert not strictly_read_only("cat x", [tmp_path], path_env=f"{bin_dir}:/usr/bin:/bin")
    assert strictly_read_only("cat x", [tmp_path], path_env="/usr/bin:/bin")


# -- approved commands, through the agent -------------------------------------------


@pytest.mark.parametrize("sandbox_approved", [False, True])
async def test_where_approved_commands_run(
    sandbox_approved: bool,
    bwrap: SandboxKit,
    serve_app: Any,
    tmp_path: Path,
    home: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("HOME", str(home))
    root = make_project(tmp_path / "proj", {"a.txt": "a\n"})
    command = "touch made.txt ~/approved.txt"
    steps = [
        {"tool_calls": [{"name": "run_command", "arguments": {"command": command}}]},
        {"text": "done"},
    ]
    async with running_rig(
        serve_app, root, steps, sandbox_approved_commands=sandbox_approved
    ) as rig:
        rig.runtime.sandbox = _real()
        sid = await rig.new_session()
        turn = await rig.turn(sid, "make files")
        [asked] = turn.permission_requests
        result = tool_messages(rig.requests[1])[0]
    assert (root / "made.txt").exists()
    if sandbox_approved:
        assert "runs in the sandbox, with network access" in asked["note"]
        assert '"sandbox": "bubblewrap+net"' in result
        assert not (home / "approved.txt").exists()  # $HOME stays read-only
    else:
        assert "runs outside the sandbox" in asked["note"]
        assert '"sandbox": "none"' in result
        assert (home / "approved.txt").exists()


@pytest.mark.parametrize("sandboxed", [True, False])
async def test_allowlisted_commands_run_sandboxed_or_ask(
    sandboxed: bool, serve_app: Any, tmp_path: Path
) -> None:
    status = _real() if sandboxed else SandboxStatus.off("forced off for this test")
    if sandboxed and not status.available:
        pytest.skip(f"bubblewrap cannot run on this machine: {status.detail}")
    allow = '(setq agent-shell-allowlist \'((command . "make stamp")))\n'
    root = make_project(
        tmp_path / "proj",
        {".agent-shell/allowlist.el": allow, "Makefile": "stamp:\n\techo made > stamp.txt\n"},
    )
    steps = [
        {"tool_calls": [{"name": "run_command", "arguments": {"command": "make stamp"}}]},
        {"text": "done"},
    ]
    async with running_rig(serve_app, root, steps, memory_dir=tmp_path / "memory") as rig:
        rig.runtime.sandbox = status
        await rig.client.result("policy/trust_allowlist", {"cwd": str(root)})
        sid = await rig.new_session()
        assert rig.runtime.sessions[sid].policy.allowlist_status == "trusted"
        turn = await rig.turn(sid, "stamp")
        result = tool_messages(rig.requests[1])[0]
    assert (root / "stamp.txt").read_text() == "made\n"
    if sandboxed:
        assert turn.permission_requests == []
        assert '"sandbox": "bubblewrap"' in result
    else:
        [asked] = turn.permission_requests
        assert "no sandbox" in asked["reason"]
        assert '"sandbox": "none"' in result


async def test_initialize_reports_the_sandbox_and_takes_the_option(
    app_client: Any, runtime: Any
) -> None:
    runtime.sandbox = SandboxStatus.off("forced off for this test")
    result = await app_client.result("initialize", {"sandbox_approved_commands": True})
    assert result["sandbox"] == {
        "available": False,
        "kind": "none",
        "label": "no sandbox",
        "detail": "forced off for this test",
        "approved_commands": True,
        "visible_paths": [],
    }
    assert runtime.config.sandbox_approved_commands is True
    bad = await app_client.rpc("initialize", {"sandbox_approved_commands": "yes please"})
    assert bad["error"]["code"] == -32602


@pytest.mark.parametrize("layout", ["worktree", "submodule"])
async def test_a_git_file_and_the_repository_it_names_stay_read_only(
    layout: str, bwrap: SandboxKit, runner: ProcessRunner, tmp_path: Path, home: Path
) -> None:
    """A root whose ``.git`` is a file (a worktree, a submodule checked out on its
    own): the pointer and the repository behind it are read-only inside, and git
    there still works."""
    main = make_project(tmp_path / "main", {"a.txt": "主\n"})
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid"]
    if layout == "worktree":
        root = tmp_path / "wt"
        subprocess.run([*git, "worktree", "add", "-q", str(root)], cwd=main, check=True)
        gitdir = main / ".git" / "worktrees" / "wt"
    else:
        sub_up = make_project(tmp_path / "up", {"lib.txt": "库\n"})
        subprocess.run(
            [*git, "-c", "protocol.file.allow=always", "submodule", "-q", "add", str(sub_up), "s"],
            cwd=main,
            check=True,
        )
        root = main / "s"
        gitdir = main / ".git" / "modules" / "s"
    assert (root / ".git").is_file()
    pointer = (root / ".git").read_bytes()
    config = (main / ".git" / "config").read_bytes()
    spec = _spec(bwrap, root, home)
    attempts = {
        "pointer": "echo 'gitdir: /tmp/evil' > .git",
        "pointer removed": "rm -f .git",
        "gitdir config": f"echo '[core]' >> {gitdir}/config",
        "gitdir hook": f"echo x > {gitdir}/hooks/post-checkout",
    }
    for name, command in attempts.items():
        done = await runner.run_shell(command, cwd=root, timeout_s=30, sandbox=spec)
        assert done.exit_code != 0, name
    # The superproject's own config is read-only where git needs it (a worktree's
    # common directory), absent otherwise: either way the host's stays as it was.
    await runner.run_shell(
        f"echo '[core]' >> {main}/.git/config", cwd=root, timeout_s=30, sandbox=spec
    )
    status = await runner.run_shell("git status --short", cwd=root, timeout_s=30, sandbox=spec)
    assert status.exit_code == 0, status.stderr
    assert (root / ".git").read_bytes() == pointer
    assert (main / ".git" / "config").read_bytes() == config
    assert not (gitdir / "hooks" / "post-checkout").exists()


async def test_the_users_visible_paths_reach_the_sandbox(
    bwrap: SandboxKit, serve_app: Any, tmp_path: Path, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``agent-shell-sandbox-visible-paths`` (initialize's ``sandbox_visible_paths``)
    shows a directory of $HOME the sandbox does not know, read-only; the rest of
    $HOME stays hidden."""
    monkeypatch.setenv("HOME", str(home))
    root = make_project(
        tmp_path / "proj",
        {"Makefile": "test:\n\tcat $(HOME)/.mytool/version\n\t-cat $(HOME)/notes.txt\n"},
    )
    run = {"tool_calls": [{"name": "run_test", "arguments": {"command": "make test"}}]}
    async with running_rig(serve_app, root, [run, {"text": "done"}, run, {"text": "done"}]) as rig:
        rig.runtime.sandbox = _real()
        before = await rig.new_session()
        await rig.turn(before, "run the tests")
        hidden = tool_messages(rig.requests[1])[0]
        init = await rig.client.result("initialize", {"sandbox_visible_paths": [".mytool"]})
        assert init["sandbox"]["visible_paths"] == [".mytool"]
        after = await rig.new_session()
        await rig.turn(after, "run the tests")
        shown = tool_messages(rig.requests[3])[0]
    assert "4.5.6" not in hidden and "No such file" in hidden
    assert "4.5.6" in shown and "private notes" not in shown


_WALLS = r"""
import ctypes, os, socket, sys
libc = ctypes.CDLL(None, use_errno=True)
status = dict(line.split(":\t", 1) for line in open("/proc/self/status").read().splitlines())
print("caps", status["CapEff"].strip(), status["CapBnd"].strip())
print("nnp", status["NoNewPrivs"].strip(), "seccomp", status["Seccomp"].strip())
print("add_key", libc.syscall(248, b"user", b"k", b"v", 1, -3), ctypes.get_errno())
print("keyctl", libc.syscall(250, 0, -3, 0, 0, 0), ctypes.get_errno())
print("userns", libc.unshare(0x10000000), ctypes.get_errno() != 0)
print("ipc-env", sorted(k for k in os.environ if k in sys.argv[1:]))
try:
    c = socket.socket(socket.AF_UNIX)
    c.connect("\0agent-shell-walls-test")
    print("abstract CONNECTED")
except OSError as exc:
    print("abstract", exc.errno)
"""


@pytest.mark.parametrize("network", [False, True])
async def test_the_walls_hold_with_and_without_network(
    network: bool, bwrap: SandboxKit, runner: ProcessRunner, tmp_path: Path, home: Path
) -> None:
    """No capability (this suite runs as root in CI), no new privileges, the seccomp
    filter on the keyrings, no nested user namespace, none of the session variables,
    and no abstract socket of the host — with the host's network too."""
    root = make_project(tmp_path / "proj", {"walls.py": _WALLS})
    host = socket.socket(socket.AF_UNIX)
    host.bind("\0agent-shell-walls-test")
    host.listen()
    ipc = {
        "SSH_AUTH_SOCK": "/run/user/0/ssh",
        "DBUS_SESSION_BUS_ADDRESS": "unix:path=/x",
        "TMUX": "/tmp/tmux-0/default,1,0",
        "EMACS_SOCKET_NAME": "/run/user/0/emacs/server",
        "MY_AGENT_SOCK": "/run/x",
        "XDG_RUNTIME_DIR": "/run/user/0",
    }
    try:
        done = await runner.run_shell(
            f"python3 walls.py {' '.join(ipc)}",
            cwd=root,
            timeout_s=30,
            env=ipc,
            sandbox=_spec(bwrap, root, home, network=network),
        )
        umount = await runner.run_shell(
            "umount .git", cwd=root, timeout_s=30, sandbox=_spec(bwrap, root, home)
        )
    finally:
        host.close()
    lines = dict(line.split(" ", 1) for line in done.stdout.splitlines())
    assert done.exit_code == 0, done.stderr
    assert lines["caps"] == "0000000000000000 0000000000000000"
    assert lines["nnp"] == "1 seccomp 2"
    assert lines["add_key"] == f"-1 {errno.EPERM}" and lines["keyctl"] == f"-1 {errno.EPERM}"
    assert lines["userns"] == "-1 True"  # CLONE_NEWUSER refused
    assert lines["ipc-env"] == "[]"
    assert lines["abstract"] in {str(errno.ECONNREFUSED), str(errno.EPERM)}
    assert umount.exit_code != 0 and (root / ".git" / "HEAD").is_file()
