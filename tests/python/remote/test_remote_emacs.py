"""``M-x agent-shell-start`` from a TRAMP Dired buffer, against a real sshd.

A real Emacs in batch opens the remote project in Dired over TRAMP (ssh to the
test's sshd), starts the session there and sends one prompt; the scripted model
lists, runs the failing test there, edits (approved in Emacs), runs it again;
then the project's allowlist (on the host) is trusted from the shell buffer.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from emacs_drive import between, call, drive, ssh_env
from sshd_rig import SshRig, sshd

pytestmark = pytest.mark.sshd

APP = "def add(a, b):\n    return a - b\n"
TEST = "from app import add\nassert add(2, 2) == 4, f'add(2, 2) gave {add(2, 2)}'\n"
ALLOWLIST = ';; 清理\n(setq agent-shell-allowlist \'((command . "rm -rf build")))\n'


@pytest.fixture(scope="module")
def ssh_rig() -> Iterator[SshRig]:
    with sshd() as rig:
        yield rig


async def test_agent_shell_start_in_a_tramp_dired_buffer(ssh_rig: SshRig, tmp_path: Path) -> None:
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
    driven = await drive(
        "drive_remote_start.el",
        steps,
        tmp_path,
        ssh_rig.tramp(str(root)) + "/",
        {**ssh_env(ssh_rig.options), "AS_TRUST_ALLOWLIST": "1"},
    )
    out = driven.out
    assert driven.returncode == 0, out[-4000:]
    transcript = between(out, "TRANSCRIPT")
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
    assert "1 command runs unasked" in between(out, "TRUSTED")
    trusted = tmp_path / "home" / ".emacs.d" / "agent-shell-memory" / "trusted-allowlists.json"
    digest = hashlib.sha256(ALLOWLIST.encode()).hexdigest()
    assert json.loads(trusted.read_text(encoding="utf-8")) == {str(logs[0].parents[2]): digest}
