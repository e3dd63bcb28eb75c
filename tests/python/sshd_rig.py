"""A real sshd on 127.0.0.1 for remote-project tests, logging in as its own user.

``start_sshd()`` starts Debian's ``/usr/sbin/sshd`` in the foreground with a
configuration, host key and authorized key of its own in a fresh directory, on a
free port, allowing one unprivileged user (``AGENT_SHELL_TEST_SSH_USER``, or
``asremote``, created with ``useradd`` when the tests run as root). Everything the
remote side does is then visible as that user's files and processes. It skips,
with the reason, where there is no sshd or no such user can be had.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

SSHD = "/usr/sbin/sshd"
_DEFAULT_USER = "asremote"


def _user() -> pwd.struct_passwd:
    name = os.environ.get("AGENT_SHELL_TEST_SSH_USER", _DEFAULT_USER)
    with contextlib.suppress(KeyError):
        return pwd.getpwnam(name)
    if os.getuid() != 0:
        pytest.skip(f"no user {name!r} to log in as, and not root to create one")
    subprocess.run(["useradd", "-m", "-s", "/bin/bash", name], check=True)
    # Locked ("!") accounts may not log in even by key when PAM is off.
    subprocess.run(["usermod", "-p", "*", name], check=True)
    return pwd.getpwnam(name)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_for(condition: Callable[[], object], timeout: float, what: str) -> None:
    """Wait until CONDITION holds, polling; fail with WHAT after TIMEOUT seconds."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.02)


@dataclass
class SshRig:
    user: str
    uid: int
    home: Path
    port: int
    dir: Path
    proc: subprocess.Popen[bytes]

    @property
    def options(self) -> list[str]:
        return [
            f"IdentityFile={self.dir / 'id_ed25519'}",
            "IdentitiesOnly=yes",
            f"UserKnownHostsFile={self.dir / 'known_hosts'}",
            "GlobalKnownHostsFile=/dev/null",
            "StrictHostKeyChecking=yes",
        ]

    def tramp(self, path: str) -> str:
        return f"/ssh:{self.user}@127.0.0.1#{self.port}:{path}"

    def make_project(self, name: str, files: dict[str, str], *, git: bool = False) -> Path:
        """A directory of the user's, holding FILES (owned by the user), with GIT a
        repository of them on the branch ``main`` (one commit, ``init``)."""
        root = self.home / name
        if root.exists():
            shutil.rmtree(root)
        for rel, text in files.items():
            path = root / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
        root.mkdir(exist_ok=True)
        if git:
            g = ["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid", "-C", str(root)]
            subprocess.run([*g, "init", "-q", "-b", "main"], check=True)
            subprocess.run([*g, "add", "-A"], check=True)
            subprocess.run([*g, "commit", "-q", "-m", "init"], check=True)
        subprocess.run(["chown", "-R", f"{self.uid}:{self.uid}", str(root)], check=True)
        return root

    def user_processes(self) -> list[tuple[int, str]]:
        """The user's processes other than sshd's own: (pid, command line)."""
        found = []
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                if os.stat(f"/proc/{entry}").st_uid != self.uid:
                    continue
                raw = Path(f"/proc/{entry}/cmdline").read_bytes()
            except OSError:
                continue
            line = raw.replace(b"\0", b" ").decode(errors="replace").strip()
            if line and not line.startswith("sshd:"):
                found.append((int(entry), line))
        return found

    def _children(self, pid: int) -> list[int]:
        kids = []
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            with contextlib.suppress(OSError, IndexError):
                stat = Path(f"/proc/{entry}/stat").read_text()
                if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                    kids.append(int(entry))
        return kids

    def cut(self) -> int:
        """Kill every connection's sshd processes (not the listener): a dropped link."""
        killed = 0
        todo = self._children(self.proc.pid)
        while todo:
            pid = todo.pop()
            with contextlib.suppress(OSError):
                comm = Path(f"/proc/{pid}/comm").read_text().strip()
                if comm.startswith("sshd"):
                    todo.extend(self._children(pid))
                    os.kill(pid, signal.SIGKILL)
                    killed += 1
        return killed

    def down(self) -> None:
        """Stop sshd altogether: the host is unreachable until :meth:`up`."""
        self.cut()
        self.proc.terminate()
        self.proc.wait(10)

    def up(self) -> None:
        """Start sshd again, on the same port with the same keys."""
        self.proc = _listen(self.dir, self.port)

    def stop(self) -> None:
        self.cut()
        self.proc.terminate()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(5)
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        shutil.rmtree(self.dir, ignore_errors=True)


def start_sshd() -> SshRig:
    if not Path(SSHD).exists():
        pytest.skip("no /usr/sbin/sshd (Debian's openssh-server; make test installs it)")
    if os.getuid() != 0:
        pytest.skip("sshd logging in as another user needs root")
    user = _user()
    where = Path(tempfile.mkdtemp(prefix="as-sshd-"))
    where.chmod(0o755)  # sshd reads authorized_keys as the user
    for key in ("host_ed25519", "id_ed25519"):
        subprocess.run(
            ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(where / key)], check=True
        )
    (where / "authorized_keys").write_bytes((where / "id_ed25519.pub").read_bytes())
    (where / "authorized_keys").chmod(0o644)
    port = _free_port()
    host_pub = (where / "host_ed25519.pub").read_text().split()
    (where / "known_hosts").write_text(f"[127.0.0.1]:{port} {host_pub[0]} {host_pub[1]}\n")
    config = f"""\
Port {port}
ListenAddress 127.0.0.1
HostKey {where / "host_ed25519"}
AuthorizedKeysFile {where / "authorized_keys"}
PidFile {where / "sshd.pid"}
UsePAM no
StrictModes no
PasswordAuthentication no
KbdInteractiveAuthentication no
PubkeyAuthentication yes
AllowUsers {user.pw_name}
MaxSessions 64
MaxStartups 64
LogLevel ERROR
"""
    (where / "sshd_config").write_text(config)
    Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)
    proc = _listen(where, port)
    return SshRig(user.pw_name, user.pw_uid, Path(user.pw_dir), port, where, proc)


def _listen(where: Path, port: int) -> subprocess.Popen[bytes]:
    with (where / "sshd.log").open("ab") as log:
        proc = subprocess.Popen(
            [SSHD, "-D", "-e", "-f", str(where / "sshd_config")],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=log,
        )

    def listening() -> bool:
        if proc.poll() is not None:
            raise AssertionError(f"sshd exited: {(where / 'sshd.log').read_text()}")
        with socket.socket() as s:
            return s.connect_ex(("127.0.0.1", port)) == 0

    wait_for(listening, 10, "sshd to listen")
    return proc


@contextlib.contextmanager
def sshd() -> Iterator[SshRig]:
    rig = start_sshd()
    try:
        yield rig
    finally:
        rig.stop()
