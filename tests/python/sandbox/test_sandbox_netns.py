"""A session's shared network namespace, as root and as an unprivileged user.

A driver run as the account (``setpriv`` for the unprivileged one, with Debian's
Python on this checkout) starts a :class:`SharedNetwork` and, through the real
:class:`ProcessRunner` and bubblewrap, a server as a background run in it; then a
second sandboxed command in the same namespace fetches the server's token, a
sandboxed command with a namespace of its own cannot, and neither can the driver
itself on the host's loopback. Ending the holder leaves none of its processes.
The driver is given no ``AGENT_SHELL_SANDBOX``: what it tests is the sandbox.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from services_rig import Account, account_for, interpreter_for

DRIVER = r"""
import asyncio, json, os, socket, sys
from pathlib import Path
from agent_shell_bridge.process.runner import ProcessRunner
from agent_shell_bridge.sandbox import SandboxSpec, detect_sandbox
from agent_shell_bridge.sandbox.netns import SharedNetwork, SharedNetworkUnavailable

SERVER = (
    "import socket\n"
    "s = socket.socket(); s.bind(('127.0.0.1', 0)); s.listen()\n"
    "open('port.tmp', 'w').write(str(s.getsockname()[1]))\n"
    "__import__('os').replace('port.tmp', 'port')\n"
    "while True:\n"
    "    c, _ = s.accept(); c.sendall(open('token').read().encode()); c.close()\n"
)
CLIENT = (
    "import socket, sys\n"
    "try:\n"
    "    c = socket.create_connection(('127.0.0.1', int(open('port').read())), timeout=3)\n"
    "    print('GOT', c.recv(100).decode())\n"
    "except OSError as exc:\n"
    "    print('REFUSED', exc)\n"
)

async def main(root: Path) -> dict:
    status = detect_sandbox()
    if not status.available:
        return {"sandbox": False, "detail": status.detail}
    (root / "server.py").write_text(SERVER)
    (root / "client.py").write_text(CLIENT)
    runner = ProcessRunner(root / "logs")
    try:
        net = await SharedNetwork.start(status.kit)
    except SharedNetworkUnavailable as exc:
        return {"sandbox": True, "shared": False, "why": exc.message}
    out = {"sandbox": True, "shared": True, "holder": net.pid}
    shared = SandboxSpec(kit=status.kit, roots=(root,), home=None, shared_net=net)
    alone = SandboxSpec(kit=status.kit, roots=(root,), home=None)
    job = await runner.start_shell(f"{sys.executable} server.py", cwd=root, sandbox=shared)
    for _ in range(1000):  # the server writes its port once it listens (10 s at most)
        if (root / "port").exists() or job.ended.done():
            break
        await asyncio.sleep(0.01)
    if job.ended.done():
        out["server_died"] = job.log_path.read_text()
        return out
    client = f"{sys.executable} client.py"
    out["same"] = (await runner.run_shell(client, cwd=root, timeout_s=30, sandbox=shared)).stdout
    out["own"] = (await runner.run_shell(client, cwd=root, timeout_s=30, sandbox=alone)).stdout
    try:
        with socket.create_connection(("127.0.0.1", int((root / "port").read_text())), 2) as c:
            out["host"] = "GOT " + c.recv(100).decode()
    except OSError as exc:
        out["host"] = f"REFUSED {exc}"
    await runner.kill_group(job.pid)
    out["exit"] = await job.ended
    await net.aclose()
    out["holder_left"] = os.path.exists(f"/proc/{net.pid}/stat") and (
        open(f"/proc/{net.pid}/stat").read().rsplit(")", 1)[1].split()[0] != "Z"
    )
    return out

print(json.dumps(asyncio.run(main(Path(sys.argv[1])))))
"""


@pytest.fixture(params=["root", "unprivileged"])
def account(request: pytest.FixtureRequest) -> Account:
    if shutil.which("bwrap") is None:
        pytest.skip("bubblewrap (bwrap) is not installed: there is no sandbox to test")
    if shutil.which("setpriv") is None:
        pytest.fail("missing util-linux (setpriv): run `make system-deps`")
    return account_for(str(request.param))


@pytest.fixture
def stage(account: Account) -> Iterator[Path]:
    """A directory the account owns, outside /tmp (whose root part is private)."""
    base = Path(tempfile.mkdtemp(prefix="agent-shell-netns-", dir="/var/tmp"))
    try:
        account.own(base, 0o700)
        yield base
    finally:
        with contextlib.suppress(OSError):
            shutil.rmtree(base)


def test_a_session_network_joins_its_commands_and_no_one_else(
    account: Account, stage: Path
) -> None:
    interp = interpreter_for(account)
    token = os.urandom(8).hex()
    account.own(stage, 0o700)
    (stage / "token").write_text(token)
    (stage / "driver.py").write_text(DRIVER)
    account.own_tree(stage)
    env = {"PATH": interp.path, "HOME": str(stage)}
    if interp.pythonpath:
        env["PYTHONPATH"] = interp.pythonpath
    done = account.run([interp.python, str(stage / "driver.py"), str(stage)], env, cwd=stage)
    assert done.returncode == 0, done.stderr[-2000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    if not out["sandbox"]:
        pytest.skip(f"bubblewrap cannot run here: {out['detail']}")
    assert out["shared"], out
    assert "server_died" not in out, out
    assert out["same"].strip() == f"GOT {token}", out
    assert out["own"].startswith("REFUSED"), out
    assert out["host"].startswith("REFUSED"), out
    assert out["exit"] is None  # killed
    assert out["holder_left"] is False
