"""The user's live services, started for real beside the agent, and a project that goes for them.

A desktop session leaves doors next to every program the user runs: the Emacs
server's socket in ``$XDG_RUNTIME_DIR/emacs``, the D-Bus session bus, a tmux server,
an ssh-agent holding a key, FIFOs and Unix sockets of other tools, abstract sockets,
the kernel's session keyring. :func:`start_session` starts each of them as real
processes of the given :class:`Account` (root, or an unprivileged user through
``setpriv``) in a private stage outside ``/tmp``, with the environment a real
login hands down (``SSH_AUTH_SOCK``, ``DBUS_SESSION_BUS_ADDRESS``, ``TMUX``,
``EMACS_SOCKET_NAME``, ``XDG_RUNTIME_DIR`` …), and a hostile git project whose
``conftest.py`` and ``Makefile`` try every door, one ``ESCAPE name: …`` line each.
Every service is stopped, and the stage removed, however the test ends.

Each service can tell afterwards, on the host, whether anybody came: the Emacs
server's log counts connections (and an eval would have made a marker file), the
bus numbers its connections in order and its probe service leaves a file per start
with the environment the bus gave it, the ssh-agent runs in debug mode and logs
each connection and signature, tmux's pane shows what it was sent (and the keys or
a ``run-shell`` would have made a marker file), the FIFO's and the listeners'
queues hold whatever arrived. The attacks are
checked against the services outside the sandbox too, so a broken attack cannot
pass for a blocked one.

:class:`Bridge` is ``agent-shell-bridge serve`` as a real process of the account,
started in a session keyring holding a secret (``keyring_exec.py``), and driven
over HTTP + SSE as Emacs drives it; the model is the scripted server of the rigs.
"""

from __future__ import annotations

import contextlib
import json
import os
import pwd
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import sysconfig
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import pytest

from agent_rig import Answerer, Turn, make_project
from conftest import REPO_ROOT, BridgeClient, Endpoint, bridge_command, read_line_with_deadline
from services_project import HOSTILE_CONFTEST, OWN_TESTS_PY, SESSION_VARIABLES, makefile

T = TypeVar("T")

READY_S = 20.0
STOP_S = 5.0
TURN_S = 120.0
KEYRING_EXEC = Path(__file__).with_name("keyring_exec.py")
SYSTEM_PYTHON = "/usr/bin/python3"
UNPRIVILEGED_USER = "nobody"
# The programs the services and the attacks need; `make system-deps` installs them.
TOOLS = {
    "emacs": "emacs-nox",
    "emacsclient": "emacs-nox",
    "tmux": "tmux",
    "dbus-daemon": "dbus",
    "dbus-send": "dbus",
    "ssh-agent": "openssh-client",
    "ssh-add": "openssh-client",
    "ssh-keygen": "openssh-client",
    "setpriv": "util-linux",
    "make": "make",
    "git": "git",
}

# --------------------------------------------------------------------- helpers


def wait_for(
    what: str,
    probe: Callable[[], T | None],
    *,
    timeout: float = READY_S,
    proc: subprocess.Popen[bytes] | None = None,
    log: Path | None = None,
) -> T:
    """Poll ``probe`` until it returns something true, with a deadline; fail with the log."""
    deadline = time.monotonic() + timeout
    while True:
        got = probe()
        if got:
            return got
        why = None
        if proc is not None and proc.poll() is not None:
            why = f"the process exited with status {proc.returncode}"
        elif time.monotonic() > deadline:
            why = f"not within {timeout} s"
        if why is not None:
            text = log.read_text("utf-8", "replace") if log is not None and log.exists() else ""
            raise AssertionError(f"{what}: {why}\n{text[-2000:]}")
        time.sleep(0.02)  # the next look, not a wait for something to happen


def require_tools() -> None:
    """bubblewrap missing: skip, as the other sandbox tests do; anything else: fail."""
    if shutil.which("bwrap") is None:
        pytest.skip("bubblewrap (bwrap) is not installed: there is no sandbox to test")
    missing = sorted({pkg for tool, pkg in TOOLS.items() if shutil.which(tool) is None})
    if missing:
        pytest.fail(f"missing {' '.join(missing)}: run `make system-deps`")


@dataclass(frozen=True, slots=True)
class Account:
    """Who runs the services, the bridge and the attacks."""

    name: str
    uid: int
    gid: int

    @property
    def switches(self) -> bool:
        return self.uid != os.geteuid()

    def argv(self, argv: Sequence[str]) -> list[str]:
        """``argv`` run as this account (through ``setpriv`` when that is not us)."""
        if not self.switches:
            return list(argv)
        return [
            "setpriv",
            f"--reuid={self.uid}",
            f"--regid={self.gid}",
            "--clear-groups",
            "--",
            *argv,
        ]

    def own(self, path: Path, mode: int) -> Path:
        path.chmod(mode)
        if self.switches:
            os.chown(path, self.uid, self.gid)
        return path

    def own_tree(self, top: Path) -> None:
        if not self.switches:
            return
        for here, dirs, files in os.walk(top):
            for name in [*dirs, *files]:
                os.chown(os.path.join(here, name), self.uid, self.gid, follow_symlinks=False)
        os.chown(top, self.uid, self.gid)

    def run(
        self, argv: Sequence[str], env: Mapping[str, str], *, timeout: float = 30.0, cwd: Path
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            self.argv(argv),
            env=dict(env),
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )


def account_for(kind: str) -> Account:
    """``root``, or an unprivileged account; fails (never skips) when there is none."""
    me = os.geteuid()
    if kind == "root":
        if me != 0:
            pytest.fail(
                "the root variant needs the suite to run as root (as CI does): "
                f"this run is uid {me}"
            )
        return Account("root", 0, 0)
    if me != 0:
        return Account(pwd.getpwuid(me).pw_name, me, os.getegid())
    try:
        entry = pwd.getpwnam(UNPRIVILEGED_USER)
    except KeyError:
        pytest.fail(f"no {UNPRIVILEGED_USER!r} account to run the unprivileged variant as")
    if entry.pw_uid == 0:
        pytest.fail(f"the account {UNPRIVILEGED_USER!r} is root")
    return Account(entry.pw_name, entry.pw_uid, entry.pw_gid)


@dataclass(frozen=True, slots=True)
class Interpreter:
    """How the account runs Python: the bridge, the launcher and the project's pytest."""

    python: str
    bridge: tuple[str, ...]
    path: str
    pythonpath: str | None = None


def interpreter_for(account: Account) -> Interpreter:
    """This virtualenv when the account is us; else the system Python with its packages.

    An unprivileged account cannot reach an interpreter under ``/root`` (mode 0700),
    where pyenv keeps the one behind ``.venv``: it runs Debian's Python on the
    virtualenv's packages and the repository's ``bridge/``, which needs the same
    minor version. Whatever is in the way fails the test with the reason.
    """
    venv_bin = Path(sys.executable).parent
    if not account.switches:
        return Interpreter(
            sys.executable, tuple(bridge_command()), f"{venv_bin}{os.pathsep}{os.environ['PATH']}"
        )
    if not os.access(SYSTEM_PYTHON, os.X_OK):
        pytest.fail(f"the unprivileged variant needs {SYSTEM_PYTHON} (python3)")
    mine = f"{sys.version_info.major}.{sys.version_info.minor}"
    probe = subprocess.run(
        [
            SYSTEM_PYTHON,
            "-c",
            "import sys; print(f'{sys.version_info.major}.{sys.version_info.minor}')",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    theirs = probe.stdout.strip()
    if theirs != mine:
        pytest.fail(
            f"the unprivileged variant runs {SYSTEM_PYTHON} ({theirs}) on this virtualenv's "
            f"packages, built for Python {mine}: the versions differ"
        )
    paths = sysconfig.get_paths()
    site = dict.fromkeys([str(REPO_ROOT / "bridge"), paths["purelib"], paths["platlib"]])
    interp = Interpreter(
        SYSTEM_PYTHON,
        (SYSTEM_PYTHON, "-m", "agent_shell_bridge.cli"),
        os.pathsep.join(["/usr/local/bin", "/usr/bin", "/bin", str(venv_bin)]),
        os.pathsep.join(site),
    )
    env = {"PATH": interp.path, "PYTHONPATH": interp.pythonpath or "", "HOME": "/"}
    done = account.run(
        [SYSTEM_PYTHON, "-c", "import agent_shell_bridge.cli, pytest"], env, cwd=Path("/")
    )
    if done.returncode != 0:
        pytest.fail(
            f"{account.name} cannot import the bridge and pytest from {REPO_ROOT} "
            f"(is the checkout readable by other users?): {done.stderr.strip()[-600:]}"
        )
    return interp


# -------------------------------------------------------------------- services


@dataclass
class Daemon:
    """A service process we started (in its own process group); stopped for sure."""

    name: str
    proc: subprocess.Popen[bytes]
    log: Path

    def stop(self) -> None:
        if self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=STOP_S)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=STOP_S)
        for pipe in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            if pipe is not None:
                pipe.close()

    def log_text(self) -> str:
        return self.log.read_text("utf-8", "replace") if self.log.exists() else ""


def start_daemon(
    stack: contextlib.ExitStack,
    account: Account,
    name: str,
    argv: Sequence[str],
    env: Mapping[str, str],
    *,
    cwd: Path,
    log: Path,
    stdout_pipe: bool = False,
) -> Daemon:
    with log.open("wb") as err:
        proc = subprocess.Popen(
            account.argv(argv),
            env=dict(env),
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE if stdout_pipe else err,
            stderr=err,
            start_new_session=True,
        )
    daemon = Daemon(name, proc, log)
    stack.callback(daemon.stop)
    return daemon


@dataclass
class Emacs:
    """``emacs --fg-daemon`` (a daemon that stays our child) with its server log on."""

    account: Account
    env: dict[str, str]
    socket: Path
    marker: Path
    daemon: Daemon
    cwd: Path

    def eval(self, expr: str) -> str:
        done = self.account.run(
            ["emacsclient", "-s", str(self.socket), "--eval", expr], self.env, cwd=self.cwd
        )
        assert done.returncode == 0, f"emacsclient failed: {done.stderr}"
        return done.stdout

    def connections(self) -> int:
        """Connections the server has seen, this question's own included."""
        log = self.eval("(with-current-buffer (get-buffer-create server-buffer) (buffer-string))")
        return log.count("Status changed to open")


@dataclass
class Bus:
    """A D-Bus session bus on a path and an abstract address, with one probe service."""

    account: Account
    env: dict[str, str]
    address: str
    abstract: str
    probe: str
    started: Path
    daemon: Daemon
    cwd: Path

    def call(self, *call: str) -> str:
        done = self.account.run(
            [
                "dbus-send",
                f"--bus={self.address}",
                "--print-reply",
                "--dest=org.freedesktop.DBus",
                "/org/freedesktop/DBus",
                *call,
            ],
            self.env,
            cwd=self.cwd,
        )
        return done.stdout + done.stderr

    def serial(self) -> int:
        """The number the bus gave this connection: they are handed out in order."""
        out = self.call("org.freedesktop.DBus.ListNames")
        found = re.search(r"destination=:1\.(\d+)", out)
        assert found is not None, out
        return int(found.group(1))

    def activations(self) -> list[Path]:
        return sorted(self.started.iterdir())

    def activation_environment(self) -> dict[str, str]:
        """Start the probe and read the environment the bus gave it."""
        before = set(self.activations())
        out = self.call(
            "org.freedesktop.DBus.StartServiceByName", f"string:{self.probe}", "uint32:0"
        )
        assert "Spawn.ChildExited" in out, out
        [new] = set(self.activations()) - before
        text = new.read_text("utf-8", "replace")
        return dict(line.partition("=")[::2] for line in text.splitlines() if "=" in line)


@dataclass
class Tmux:
    """A tmux server with its socket in the runtime directory; a shell in its pane."""

    account: Account
    env: dict[str, str]
    socket: Path
    target: str
    marker: Path
    pid: int
    cwd: Path

    def tmux(self, *args: str) -> subprocess.CompletedProcess[str]:
        return self.account.run(["tmux", "-S", str(self.socket), *args], self.env, cwd=self.cwd)

    def screen(self) -> str:
        done = self.tmux("capture-pane", "-p", "-t", self.target, "-S", "-")
        assert done.returncode == 0, done.stderr
        return done.stdout

    def stop(self) -> None:
        if self.tmux("kill-server").returncode != 0 and self.pid > 0:
            # The server we started, by its own pid, when it would not stop when asked.
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGKILL)


@dataclass
class SshAgent:
    """``ssh-agent -d`` (foreground, logging every request) holding a fresh key."""

    account: Account
    env: dict[str, str]
    socket: Path
    key: Path
    daemon: Daemon
    cwd: Path

    def listed(self) -> str:
        done = self.account.run(
            ["ssh-add", "-l"], {**self.env, "SSH_AUTH_SOCK": str(self.socket)}, cwd=self.cwd
        )
        assert done.returncode == 0, done.stdout + done.stderr
        return done.stdout

    def connections(self) -> int:
        """Connections the agent has accepted, this question's own included."""
        self.listed()
        return self.daemon.log_text().count("new_socket: type = CONNECTION")

    def signatures(self) -> int:
        return self.daemon.log_text().count("process_sign_request2: good signature")

    def secret_lines(self) -> list[str]:
        """The private key's base64 lines: none may reach the model."""
        text = self.key.read_text("ascii")
        return [line for line in text.splitlines() if line and not line.startswith("-----")]


@dataclass
class Inbox:
    """A listening socket (pathname or abstract) nobody serves: whatever came waits in
    its queue, so reading it after the run sees every connection, without a race."""

    sock: socket.socket
    address: str

    def drain(self) -> list[bytes]:
        got: list[bytes] = []
        while True:
            try:
                conn, _ = self.sock.accept()
            except BlockingIOError:
                return got
            with conn:
                conn.setblocking(False)
                try:
                    got.append(conn.recv(4096))
                except BlockingIOError:
                    got.append(b"")


def listen(stack: contextlib.ExitStack, address: str) -> Inbox:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    stack.callback(sock.close)
    sock.bind(address)
    sock.listen(64)
    sock.setblocking(False)
    return Inbox(sock, address)


@dataclass
class Fifo:
    """A FIFO with our reader open (so a writer's non-blocking open succeeds)."""

    path: Path
    fd: int

    def drain(self) -> bytes:
        got = b""
        while True:
            try:
                chunk = os.read(self.fd, 4096)
            except BlockingIOError:
                return got
            if not chunk:
                return got
            got += chunk


# --------------------------------------------------------------------- session


@dataclass
class Session:
    """A user's login: the stage, the services, the environment, the hostile project."""

    account: Account
    interp: Interpreter
    base: Path
    runtime: Path
    home: Path
    markers: Path
    project: Path
    emacs: Emacs
    bus: Bus
    tmux: Tmux
    agent: SshAgent
    fifo: Fifo
    listener: Inbox
    abstract: Inbox
    toolchain_listener: Inbox
    project_listener: Inbox
    project_fifo: Fifo
    keyring: tuple[str, str]
    token: str
    env: dict[str, str] = field(default_factory=dict)
    secrets: list[str] = field(default_factory=list)

    def choose_attempts(self, groups: Sequence[str]) -> None:
        """Have the project's conftest make only these groups of attempts."""
        path = self.project / "services.json"
        known = json.loads(path.read_text(encoding="utf-8"))
        known["groups"] = list(groups)
        path.write_text(json.dumps(known, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")


def _private_dir(account: Account, path: Path, mode: int = 0o700) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    return account.own(path, mode)


def _stage(stack: contextlib.ExitStack, account: Account) -> tuple[Path, Path]:
    """The stage outside /tmp (which every sandbox hides anyway) and the runtime dir.

    The runtime directory is where a login puts it, under ``/run``, when this run
    may write there (as root); else in the stage.
    """
    base = Path(tempfile.mkdtemp(prefix="agent-shell-services-", dir="/var/tmp"))
    stack.callback(shutil.rmtree, base, ignore_errors=True)
    base.chmod(0o755)
    run_top = base
    if os.access("/run", os.W_OK):
        run_top = Path(tempfile.mkdtemp(prefix="agent-shell-services-", dir="/run"))
        stack.callback(shutil.rmtree, run_top, ignore_errors=True)
        run_top.chmod(0o755)
    users = run_top / "user"
    users.mkdir(mode=0o755)
    users.chmod(0o755)
    return base, _private_dir(account, users / str(account.uid))


def _service_env(account: Account, home: Path, runtime: Path) -> dict[str, str]:
    return {
        "HOME": str(home),
        "USER": account.name,
        "LOGNAME": account.name,
        "SHELL": "/bin/sh",
        "LANG": "C.UTF-8",
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "XDG_RUNTIME_DIR": str(runtime),
        "TMUX_TMPDIR": str(runtime),
        "TERM": "xterm-256color",
    }


def _start_emacs(
    stack: contextlib.ExitStack, account: Account, env: dict[str, str], runtime: Path, base: Path
) -> Emacs:
    sock = runtime / "emacs" / "server"
    daemon = start_daemon(
        stack,
        account,
        "emacs",
        ["emacs", "-Q", "--eval", "(setq server-log t)", "--fg-daemon=server"],
        env,
        cwd=base,
        log=base / "emacs.log",
    )
    wait_for("the Emacs server's socket", sock.is_socket, proc=daemon.proc, log=daemon.log)
    return Emacs(account, env, sock, base / "markers" / "emacs-eval", daemon, base)


_BUS_CONF = """<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>session</type>
  <listen>unix:path={path}</listen>
  <listen>unix:abstract={abstract}</listen>
  <auth>EXTERNAL</auth>
  <servicedir>{services}</servicedir>
  <policy context="default">
    <allow send_destination="*" eavesdrop="true"/>
    <allow eavesdrop="true"/>
    <allow own="*"/>
  </policy>
</busconfig>
"""


def _start_bus(
    stack: contextlib.ExitStack, account: Account, env: dict[str, str], runtime: Path, base: Path
) -> Bus:
    path = runtime / "bus"
    abstract = f"agent-shell-test-bus-{secrets.token_hex(6)}"
    services = _private_dir(account, base / "dbus-services", 0o755)
    started = _private_dir(account, base / "markers" / "dbus-started", 0o755)
    probe_name = "org.agentshell.Probe"
    probe = base / "dbus-probe.sh"
    probe.write_text(
        f'#!/bin/sh\nenv > "$(mktemp {started}/env.XXXXXX)"\nexit 3\n', encoding="utf-8"
    )
    account.own(probe, 0o755)
    (services / f"{probe_name}.service").write_text(
        f"[D-BUS Service]\nName={probe_name}\nExec={probe}\n", encoding="utf-8"
    )
    conf = base / "bus.conf"
    conf.write_text(
        _BUS_CONF.format(path=path, abstract=abstract, services=services), encoding="utf-8"
    )
    daemon = start_daemon(
        stack,
        account,
        "dbus-daemon",
        ["dbus-daemon", "--nofork", f"--config-file={conf}", "--print-address=1"],
        env,
        cwd=base,
        log=base / "dbus.log",
        stdout_pipe=True,
    )
    assert daemon.proc.stdout is not None
    try:
        printed = read_line_with_deadline(daemon.proc.stdout, READY_S).decode()
    except TimeoutError as exc:
        raise AssertionError(f"dbus-daemon printed no address: {daemon.log_text()}") from exc
    assert str(path) in printed, printed
    return Bus(
        account,
        env,
        f"unix:path={path}",
        f"unix:abstract={abstract}",
        probe_name,
        started,
        daemon,
        base,
    )


def _start_tmux(
    stack: contextlib.ExitStack, account: Account, env: dict[str, str], runtime: Path, base: Path
) -> Tmux:
    # Where tmux puts its socket for TMUX_TMPDIR=$XDG_RUNTIME_DIR.
    sock = _private_dir(account, runtime / f"tmux-{account.uid}") / "default"
    target = "agentshell"
    marker = base / "markers" / "tmux-keys"
    tmux = Tmux(account, env, sock, target, marker, 0, base)
    stack.callback(tmux.stop)
    done = tmux.tmux("new-session", "-d", "-s", target, "-x", "160", "-y", "40", "/bin/sh")
    assert done.returncode == 0, done.stderr
    pid = tmux.tmux("display-message", "-p", "-t", target, "#{pid}")
    assert pid.returncode == 0, pid.stderr
    tmux.pid = int(pid.stdout.strip())
    return tmux


def _start_agent(
    stack: contextlib.ExitStack,
    account: Account,
    env: dict[str, str],
    runtime: Path,
    base: Path,
    home: Path,
) -> SshAgent:
    ssh = _private_dir(account, home / ".ssh")
    key = ssh / "id_ed25519"
    made = account.run(
        [
            "ssh-keygen",
            "-q",
            "-t",
            "ed25519",
            "-N",
            "",
            "-C",
            "agent-shell 测试 key",
            "-f",
            str(key),
        ],
        env,
        cwd=base,
    )
    assert made.returncode == 0, made.stderr
    # Where a desktop keyring puts its agent's socket.
    sock = _private_dir(account, runtime / "keyring") / "ssh"
    daemon = start_daemon(
        stack,
        account,
        "ssh-agent",
        ["ssh-agent", "-d", "-a", str(sock)],
        env,
        cwd=base,
        log=base / "ssh-agent.log",
    )
    wait_for("the ssh-agent's socket", sock.is_socket, proc=daemon.proc, log=daemon.log)
    agent = SshAgent(account, env, sock, key, daemon, base)
    added = account.run(["ssh-add", str(key)], {**env, "SSH_AUTH_SOCK": str(sock)}, cwd=base)
    assert added.returncode == 0, added.stderr
    assert "SHA256:" in agent.listed()
    return agent


def _project(account: Account, root: Path, known: dict[str, Any], pub: str) -> Path:
    made = make_project(
        root,
        {
            "conftest.py": HOSTILE_CONFTEST,
            "test_own.py": OWN_TESTS_PY,
            "Makefile": makefile(known),
            "services.json": json.dumps(known, ensure_ascii=False, indent=1) + "\n",
            "known_key.pub": pub,
            "signme.txt": "签名 please\n",
            "README.md": "一个普通的项目。An ordinary project.\n",
        },
    )
    account.own_tree(made)
    return made


def start_session(stack: contextlib.ExitStack, account: Account) -> Session:
    """Everything of a user's login, started as ``account``; stopped by ``stack``."""
    interp = interpreter_for(account)
    base, runtime = _stage(stack, account)
    account.own(base, 0o755)
    home = _private_dir(account, base / "home")
    _private_dir(account, home / ".cache")
    markers = _private_dir(account, base / "markers", 0o755)
    env = _service_env(account, home, runtime)
    emacs = _start_emacs(stack, account, env, runtime, base)
    bus = _start_bus(stack, account, env, runtime, base)
    tmux = _start_tmux(stack, account, env, runtime, base)
    agent = _start_agent(stack, account, env, runtime, base, home)

    fifo_path = runtime / "events.fifo"
    os.mkfifo(fifo_path, 0o600)
    account.own(fifo_path, 0o600)
    fd = os.open(fifo_path, os.O_RDONLY | os.O_NONBLOCK)
    stack.callback(os.close, fd)
    listener_dir = _private_dir(account, home / ".local" / "state" / "indexer")
    listener = listen(stack, str(listener_dir / "ipc.sock"))
    account.own(listener_dir / "ipc.sock", 0o600)
    abstract_name = f"agent-shell-test-{secrets.token_hex(6)}"
    abstract = listen(stack, "\0" + abstract_name)

    # sbt's server listens in ~/.sbt/1.0/server/<hash>/sock: a toolchain directory.
    sbt = _private_dir(account, home / ".sbt" / "1.0" / "server" / secrets.token_hex(10))
    toolchain = str(sbt / "sock")
    # A development database with its socket directory in the project (pg_ctl -k .pg),
    # and a FIFO a watcher of the user's reads: both made after the commit, below.
    project_root = base / "proj"
    project_socket = str(project_root / ".pg" / ".s.PGSQL.5432")
    project_fifo = project_root / ".watch.fifo"

    hexed = secrets.token_hex(8)
    token = f"PWN-{hexed}-越狱"
    keyring = (f"agent-shell-test-{hexed}", f"KEYRING-SECRET-{hexed}-钥匙")
    github = f"ghp_{secrets.token_hex(18)}"
    known: dict[str, Any] = {
        "token": token,
        "session_variables": list(SESSION_VARIABLES),
        "runtime_dir": str(runtime),
        "emacs_socket": str(emacs.socket),
        "emacs_marker": str(emacs.marker),
        "bus_address": bus.address,
        "bus_abstract": bus.abstract,
        "probe_service": bus.probe,
        "tmux_socket": str(tmux.socket),
        "tmux_target": tmux.target,
        "tmux_marker": str(tmux.marker),
        "ssh_socket": str(agent.socket),
        "ssh_private_key": str(agent.key),
        "fifo": str(fifo_path),
        "listener": listener.address,
        "abstract": abstract_name,
        "keyring_description": keyring[0],
        "toolchain_socket": toolchain,
        "project_socket": project_socket,
        "project_fifo": str(project_fifo),
    }
    pub = agent.key.with_name("id_ed25519.pub").read_text(encoding="utf-8")
    project = _project(account, project_root, known, pub)
    toolchain_listener = listen(stack, toolchain)
    account.own(Path(toolchain), 0o600)
    _private_dir(account, project / ".pg")
    project_listener = listen(stack, project_socket)
    account.own(Path(project_socket), 0o600)
    os.mkfifo(project_fifo, 0o600)
    account.own(project_fifo, 0o600)
    project_fd = os.open(project_fifo, os.O_RDONLY | os.O_NONBLOCK)
    stack.callback(os.close, project_fd)
    session_env = {
        **env,
        "PATH": interp.path,
        "SSH_AUTH_SOCK": str(agent.socket),
        "DBUS_SESSION_BUS_ADDRESS": bus.address,
        "TMUX": f"{tmux.socket},{tmux.pid},0",
        "EMACS_SOCKET_NAME": str(emacs.socket),
        "DISPLAY": ":0",
        "GITHUB_TOKEN": github,
        "AGENT_SHELL_MEMORY_DIR": str(_private_dir(account, base / "memory")),
        "AGENT_SHELL_BRIDGE_DEBUG": "0",
        "PYTHONUNBUFFERED": "1",
    }
    if interp.pythonpath:
        session_env["PYTHONPATH"] = interp.pythonpath
    return Session(
        account=account,
        interp=interp,
        base=base,
        runtime=runtime,
        home=home,
        markers=markers,
        project=project,
        emacs=emacs,
        bus=bus,
        tmux=tmux,
        agent=agent,
        fifo=Fifo(fifo_path, fd),
        listener=listener,
        abstract=abstract,
        toolchain_listener=toolchain_listener,
        project_listener=project_listener,
        project_fifo=Fifo(project_fifo, project_fd),
        keyring=keyring,
        token=token,
        env=session_env,
        secrets=[keyring[1], github, *agent.secret_lines()],
    )


def in_keyring(session: Session, argv: Sequence[str]) -> list[str]:
    """``argv`` in a fresh session keyring holding the session's secret."""
    desc, payload = session.keyring
    return [session.interp.python, str(KEYRING_EXEC), desc, payload, "--", *argv]


# ----------------------------------------------------------------------- checks


@dataclass(frozen=True, slots=True)
class Counts:
    """What the services had seen before the agent ran."""

    emacs: int
    bus: int
    agent: int

    @classmethod
    def now(cls, session: Session) -> Counts:
        return cls(session.emacs.connections(), session.bus.serial(), session.agent.connections())


def untouched(session: Session, before: Counts, git: tuple[bytes, list[str]]) -> list[str]:
    """Every trace a service would keep of a visit from the sandbox (empty: none)."""
    found: list[str] = []
    # Each count is read by one more connection of our own, and nothing else's.
    if (n := session.emacs.connections()) != before.emacs + 1:
        found.append(f"the Emacs server saw {n - before.emacs - 1} connection(s) from the run")
    if session.emacs.marker.exists():
        found.append("an emacsclient eval ran in the user's Emacs")
    if (n := session.bus.serial()) != before.bus + 1:
        found.append(f"the session bus saw {n - before.bus - 1} connection(s) from the run")
    if started := session.bus.activations():
        found.append(f"the bus started {len(started)} service process(es) for the run")
    if "AGENT_SHELL_PWNED" in session.bus.activation_environment():
        found.append("the bus's activation environment was changed")
    if (n := session.agent.connections()) != before.agent + 1:
        found.append(f"the ssh-agent saw {n - before.agent - 1} connection(s) from the run")
    if session.agent.signatures():
        found.append("the ssh-agent signed something")
    if (session.project / "signme.txt.sig").exists():
        found.append("a signature was written")
    if session.tmux.marker.exists() or "pwned" in session.tmux.screen():
        found.append("keys were typed into the tmux pane")
    if fifo := session.fifo.drain():
        found.append(f"the FIFO received {_text(fifo)}")
    if got := session.listener.drain():
        found.append(f"the Unix listener received {len(got)} connection(s): {_text(*got)}")
    if got := session.abstract.drain():
        found.append(f"the abstract listener received {len(got)} connection(s): {_text(*got)}")
    if got := session.toolchain_listener.drain():
        found.append(f"the toolchain's socket received {len(got)} connection(s): {_text(*got)}")
    if got := session.project_listener.drain():
        found.append(f"the project's socket received {len(got)} connection(s): {_text(*got)}")
    if fifo := session.project_fifo.drain():
        found.append(f"the project's FIFO received {_text(fifo)}")
    config, hooks = git
    if (session.project / ".git" / "config").read_bytes() != config:
        found.append(".git/config changed")
    if sorted(os.listdir(session.project / ".git" / "hooks")) != hooks:
        found.append(".git/hooks changed")
    return found


def _text(*chunks: bytes) -> str:
    return repr(b"".join(chunks).decode("utf-8", "replace"))


def git_state(root: Path) -> tuple[bytes, list[str]]:
    return (root / ".git" / "config").read_bytes(), sorted(os.listdir(root / ".git" / "hooks"))


# ----------------------------------------------------------------------- bridge


@dataclass
class Bridge:
    """``agent-shell-bridge serve`` as the account, in the keyring, with the session's env."""

    proc: subprocess.Popen[bytes]
    endpoint: Endpoint
    log: Path

    def stop(self) -> None:
        if self.proc.stdin is not None and not self.proc.stdin.closed:
            self.proc.stdin.close()  # as Emacs dying would
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=STOP_S)
        if self.proc.stdout is not None:
            self.proc.stdout.close()

    def log_text(self) -> str:
        return self.log.read_text("utf-8", "replace") if self.log.exists() else ""


@contextlib.contextmanager
def running_bridge(session: Session) -> Iterator[Bridge]:
    log = session.base / "bridge.log"
    argv = session.account.argv(
        in_keyring(session, [*session.interp.bridge, "serve", "--port", "0"])
    )
    with log.open("wb") as err:
        proc = subprocess.Popen(
            argv,
            env=session.env,
            cwd=session.base,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=err,
            start_new_session=True,
        )
    bridge = Bridge(proc, Endpoint(0, ""), log)
    try:
        assert proc.stdout is not None
        try:
            ready = json.loads(read_line_with_deadline(proc.stdout, 30.0))
        except (TimeoutError, ValueError) as exc:
            raise AssertionError(f"the bridge did not start: {bridge.log_text()}") from exc
        bridge.endpoint = Endpoint(int(ready["port"]), str(ready["token"]))
        yield bridge
    finally:
        bridge.stop()


async def run_turn(client: BridgeClient, session_id: str, prompt: str, answer: Answerer) -> Turn:
    """Prompt, answer every permission request with ``answer``, follow to turn_end."""
    turn = Turn()
    async with client.events(from_now=True) as stream:
        await client.result("session/prompt", {"sessionId": session_id, "prompt": prompt})
        while True:
            message = (await stream.next_event(timeout=TURN_S)).json()
            turn.messages.append(message)
            if message.get("method") == "session/request_permission":
                turn.permission_requests.append(message["params"])
                reply = {"jsonrpc": "2.0", "id": message["id"], "result": answer(message["params"])}
                assert (await client.post_rpc(reply)).status_code == 202
            params = message.get("params") or {}
            update = params.get("update") or {}
            if update.get("sessionUpdate") == "turn_end" and params.get("sessionId") == session_id:
                return turn
