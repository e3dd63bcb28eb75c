"""``agent-shell-undo-turn`` in a remote project, against a real sshd.

A real Emacs in batch visits a remote file through TRAMP and starts a session in
the project's Dired buffer; the scripted model edits the file (approved in Emacs),
then the undo puts the host's file back from the snapshot in the local mirror and
the visiting buffer shows it; a second edit is rewound the same way. Index entries
planted in the mirror that climb out of the project, follow a host symlink out of
it or name ``.git`` are refused, and the files they name are untouched.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from emacs_drive import between, call, drive, ssh_env
from sshd_rig import SshRig, sshd

pytestmark = pytest.mark.sshd

APP = "# 加法\ndef add(a, b):\n    return a - b\n"


@pytest.fixture(scope="module")
def ssh_rig() -> Iterator[SshRig]:
    with sshd() as rig:
        yield rig


async def test_undo_turn_restores_the_host_file_and_refuses_planted_entries(
    ssh_rig: SshRig, tmp_path: Path
) -> None:
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
    driven = await drive(
        "drive_remote_undo.el",
        steps,
        tmp_path,
        ssh_rig.tramp(str(root)) + "/",
        {**ssh_env(ssh_rig.options)},
    )
    out = driven.out
    assert driven.returncode == 0, out[-4000:]
    assert "a + b" in between(out, "AFTER-TURN")  # the turn's edit, seen in the buffer
    assert between(out, "RESTORED") == '("app.py")'
    # The host's file is back, byte for byte, still the user's and with its mode.
    assert (root / "app.py").read_text(encoding="utf-8") == APP
    assert (root / "app.py").stat().st_uid == ssh_rig.uid
    assert (root / "app.py").stat().st_mode & 0o777 == 0o640
    assert between(out, "BUFFER") == APP
    assert between(out, "MODIFIED") == "nil"
    assert "Undid turn" in between(out, "TRANSCRIPT")
    # The rewind of the second turn's code, through the same records.
    assert "b + a" in between(out, "AFTER-SECOND")
    assert between(out, "REWOUND") == APP
    assert "Rewind: 1 file(s) restored: app.py" in between(out, "TRANSCRIPT")
    # The undo is recorded in the mirror's index, never on the host.
    mirror = Path(between(out, "MIRROR"))
    assert mirror.is_relative_to(tmp_path / "data" / "agent-shell" / "remote")
    index = [
        json.loads(line)
        for line in (mirror / ".agent-shell" / "snapshots" / "index.jsonl").read_text().splitlines()
    ]
    assert any(e.get("paths") == ["app.py"] and e.get("undo_of") for e in index)
    assert not (root / ".agent-shell").exists()
    # Planted entries are refused, and what they name is untouched.
    assert "Not a plain name relative to the project" in between(out, "T-CLIMB")
    assert "It leads out of the project" in between(out, "T-LINK")
    assert "Refusing snapshot index entry" in between(out, "T-GIT")
    assert (ssh_rig.home / "outside.txt").read_text() == "next to the project\n"
    assert (outside / "secret.txt").read_text() == "host secret\n"
    assert "planted" not in (root / ".git" / "config").read_text()
