"""``agent-shell-undo-turn`` in a remote project, against a real sshd.

A real Emacs in batch visits a remote file through TRAMP and starts a session in
the project's Dired buffer; the scripted model edits the file (approved in Emacs),
then the undo puts the host's file back from the snapshot in the local mirror and
the visiting buffer shows it; a second edit is rewound the same way. Index entries
planted in the mirror that climb out of the project, follow a host symlink out of
it or name ``.git`` are refused, and the files they name are untouched.
"""

from __future__ import annotations

import asyncio
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
APP = "# 加法\ndef add(a, b):\n    return a - b\n"


@pytest.fixture(scope="module")
def ssh_rig() -> Iterator[SshRig]:
    with sshd() as rig:
        yield rig


def call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"tool_calls": [{"name": name, "arguments": arguments}]}


def _between(out: str, tag: str) -> str:
    return out.split(f"{tag}-BEGIN\n", 1)[1].split(f"\n{tag}-END", 1)[0]


async def test_undo_turn_restores_the_host_file_and_refuses_planted_entries(
    ssh_rig: SshRig, tmp_path: Path
) -> None:
    bridge = os.environ.get("AGENT_SHELL_TEST_BRIDGE") or str(
        HERE.parents[2] / ".venv" / "bin" / "agent-shell-bridge"
    )
    emacs = os.environ.get("EMACS", "emacs")
    if shutil.which(emacs) is None or not Path(bridge).exists():
        pytest.skip("needs emacs and the bridge (make venv)")
    root = ssh_rig.make_project(f"undo-{os.getpid()}", {"app.py": APP}, git=True)
    (root / "app.py").chmod(0o640)
    outside = ssh_rig.home / f"outside-{os.getpid()}"
    outside.mkdir(exist_ok=True)
    (outside / "secret.txt").write_text("host secret\n")
    (ssh_rig.home / "outside.txt").write_text("next to the project\n")
    (root / "out").symlink_to(outside)
    steps = [
        call("read_file", path="app.py"),
        call("replace_pattern", path="app.py", pattern="a - b", replacement="a + b", literal=True),
        {"text": "edited 已改"},
        call("read_file", path="app.py"),
        call("replace_pattern", path="app.py", pattern="a - b", replacement="b + a", literal=True),
        {"text": "again 又改"},
    ]
    mock = MockServer(MockScript.model_validate({"steps": steps}))
    await mock.start()
    runtime = Path(tempfile.mkdtemp(prefix="asu-"))
    home = tmp_path / "home"
    home.mkdir()
    env = {
        **os.environ,
        "HOME": str(home),
        "XDG_DATA_HOME": str(tmp_path / "data"),
        "XDG_RUNTIME_DIR": str(runtime),
        "AGENT_SHELL_TEST_BRIDGE": bridge,
        "AS_API_BASE": mock.api_base,
        "AS_TRAMP_SSH": " ".join(f"-o {o}" for o in ssh_rig.options),
        "AS_SSH_OPTIONS": "\n".join(ssh_rig.options),
        "AS_TRAMP_DIR": ssh_rig.tramp(str(root)) + "/",
    }
    try:
        proc = await asyncio.create_subprocess_exec(
            emacs,
            "-Q",
            "--batch",
            "-L",
            str(ELISP),
            "-l",
            str(HERE / "drive_remote_undo.el"),
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
    assert "a + b" in _between(out, "AFTER-TURN")  # the turn's edit, seen in the buffer
    assert _between(out, "RESTORED") == '("app.py")'
    # The host's file is back, byte for byte, still the user's and with its mode.
    assert (root / "app.py").read_text(encoding="utf-8") == APP
    assert (root / "app.py").stat().st_uid == ssh_rig.uid
    assert (root / "app.py").stat().st_mode & 0o777 == 0o640
    assert _between(out, "BUFFER") == APP
    assert _between(out, "MODIFIED") == "nil"
    assert "Undid turn" in _between(out, "TRANSCRIPT")
    # The rewind of the second turn's code, through the same records.
    assert "b + a" in _between(out, "AFTER-SECOND")
    assert _between(out, "REWOUND") == APP
    assert "Rewind: 1 file(s) restored: app.py" in _between(out, "TRANSCRIPT")
    # The undo is recorded in the mirror's index, never on the host.
    mirror = Path(_between(out, "MIRROR"))
    assert mirror.is_relative_to(tmp_path / "data" / "agent-shell" / "remote")
    index = [
        json.loads(line)
        for line in (mirror / ".agent-shell" / "snapshots" / "index.jsonl").read_text().splitlines()
    ]
    assert any(e.get("paths") == ["app.py"] and e.get("undo_of") for e in index)
    assert not (root / ".agent-shell").exists()
    # Planted entries are refused, and what they name is untouched.
    assert "Not a plain name relative to the project" in _between(out, "T-CLIMB")
    assert "It leads out of the project" in _between(out, "T-LINK")
    assert "Refusing snapshot index entry" in _between(out, "T-GIT")
    assert (ssh_rig.home / "outside.txt").read_text() == "next to the project\n"
    assert (outside / "secret.txt").read_text() == "host secret\n"
    assert "planted" not in (root / ".git" / "config").read_text()
