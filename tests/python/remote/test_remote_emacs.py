"""``M-x agent-shell-start`` from a TRAMP Dired buffer, against a real sshd.

A real Emacs in batch opens the remote project in Dired over TRAMP (ssh to the
test's sshd), starts the session there and sends one prompt; the scripted model
lists, runs the failing test there, edits (approved in Emacs), runs it again;
then the project's allowlist (on the host) is trusted from the shell buffer.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agent_shell_bridge.model.mock_script import MockScript
from agent_shell_bridge.model.mock_server import MockServer
from sshd_rig import SshRig, sshd

pytestmark = pytest.mark.sshd

HERE = Path(__file__).resolve().parent
ELISP = HERE.parents[2] / "elisp"
APP = "def add(a, b):\n    return a - b\n"
TEST = "from app import add\nassert add(2, 2) == 4, f'add(2, 2) gave {add(2, 2)}'\n"
ALLOWLIST = ';; 清理\n(setq agent-shell-allowlist \'((command . "rm -rf build")))\n'


@pytest.fixture(scope="module")
def ssh_rig() -> Iterator[SshRig]:
    with sshd() as rig:
        yield rig


def call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"tool_calls": [{"name": name, "arguments": arguments}]}


def _between(out: str, tag: str) -> str:
    return out.split(f"{tag}-BEGIN\n", 1)[1].split(f"\n{tag}-END", 1)[0]


async def test_agent_shell_start_in_a_tramp_dired_buffer(ssh_rig: SshRig, tmp_path: Path) -> None:
    bridge = os.environ.get("AGENT_SHELL_TEST_BRIDGE") or str(
        HERE.parents[2] / ".venv" / "bin" / "agent-shell-bridge"
    )
    emacs = os.environ.get("EMACS", "emacs")  # make test-emacs30 sets its Emacs 30
    if shutil.which(emacs) is None or not Path(bridge).exists():
        pytest.skip("needs emacs and the bridge (make venv)")
    root = ssh_rig.make_project(
        f"emacs-{os.getpid()}",
        {
            "app.py": APP,
            "test_app.py": TEST,
            "Makefile": "test:\n\tpython3 test_app.py\n",
            ".agent-shell/allowlist.el": ALLOWLIST,
        },
        git=True,
    )
    steps = [
        call("list_directory", path="."),
        call("run_command", command="make test"),
        call("read_file", path="app.py"),
        call("replace_pattern", path="app.py", pattern="a - b", replacement="a + b", literal=True),
        call("run_command", command="make test"),
        {"text": "fixed remotely 已修"},
    ]
    mock = MockServer(MockScript.model_validate({"steps": steps}))
    await mock.start()
    runtime = Path(tempfile.mkdtemp(prefix="asr-"))
    home = tmp_path / "home"
    home.mkdir()
    tramp_ssh = " ".join(f"-o {o}" for o in ssh_rig.options)
    env = {
        **os.environ,
        "HOME": str(home),
        "XDG_DATA_HOME": str(tmp_path / "data"),
        "XDG_RUNTIME_DIR": str(runtime),
        "AGENT_SHELL_TEST_BRIDGE": bridge,
        "AS_API_BASE": mock.api_base,
        "AS_TRAMP_SSH": tramp_ssh,
        "AS_SSH_OPTIONS": "\n".join(ssh_rig.options),
        "AS_TRAMP_DIR": ssh_rig.tramp(str(root)) + "/",
        "AS_TRUST_ALLOWLIST": "1",
    }
    try:
        proc = await asyncio.create_subprocess_exec(
            emacs,
            "-Q",
            "--batch",
            "-L",
            str(ELISP),
            "-l",
            str(HERE / "drive_remote_start.el"),
            env=env,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
        )
        raw, _ = await asyncio.wait_for(proc.communicate(), 120)
    finally:
        await mock.stop()
        shutil.rmtree(runtime, ignore_errors=True)
    out = raw.decode(errors="replace")
    assert proc.returncode == 0, out[-4000:]
    transcript = _between(out, "TRANSCRIPT")
    assert "fixed remotely 已修" in transcript
    assert "Remote project " + ssh_rig.tramp(str(root)) in transcript
    assert "bubblewrap (remote)" in transcript
    assert "AssertionError: add(2, 2) gave 0" in transcript  # the failing run, there
    assert "Approved: replace_pattern app.py" in transcript
    # It ran there, as that user, and the edit landed there.
    assert (root / "app.py").read_text() == APP.replace("a - b", "a + b")
    assert (root / "app.py").stat().st_uid == ssh_rig.uid
    assert (root / "__pycache__").stat().st_uid == ssh_rig.uid
    # The log stayed here, in the mirror; nothing of ours was written there.
    logs = list((tmp_path / "data" / "agent-shell" / "remote").rglob("logs/*.org"))
    assert len(logs) == 1
    log = logs[0].read_text(encoding="utf-8")
    assert "make test" in log and "replace_pattern" in log
    assert sorted(p.name for p in (root / ".agent-shell").iterdir()) == ["allowlist.el"]
    # The host's allowlist was read there: not applied until trusted from Emacs.
    assert "allowlist is not applied until you trust it" in transcript
    assert "1 command runs unasked" in _between(out, "TRUSTED")
    trusted = home / ".emacs.d" / "agent-shell-memory" / "trusted-allowlists.json"  # Emacs's
    digest = hashlib.sha256(ALLOWLIST.encode()).hexdigest()
    assert json.loads(trusted.read_text(encoding="utf-8")) == {str(logs[0].parents[2]): digest}
