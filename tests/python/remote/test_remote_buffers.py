"""A remote session's files through the Emacs buffers visiting them, against a real sshd.

A real Emacs in batch visits two files of the remote project over TRAMP (the test's
sshd), one of them holding the user's unsaved text, then starts the session in Dired
there; the scripted model reads that buffer, is refused a link out of the project
that a buffer visits too, edits the visited file (approved: the
buffer changes as one undo unit and is saved there), tries to edit the one with
unsaved text (refused, the host's file unchanged), and edits a file no buffer
visits (written on the host by the bridge, no buffer opened for it).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from emacs_drive import between, call, drive, ssh_env
from sshd_rig import SshRig, sshd

pytestmark = pytest.mark.sshd

APP = "def add(a, b):\n    return a - b\n# 中文注释\n"
NOTES = "saved line 已保存\n"
OTHER = "x = 1\n"
UNSAVED = "用户未保存的修改\n"


@pytest.fixture(scope="module")
def ssh_rig() -> Iterator[SshRig]:
    with sshd() as rig:
        yield rig


def _tool_results(bodies: list[Any]) -> list[str]:
    """The tool results the model was sent, in order (the longest request has them all)."""
    messages = max((b.get("messages", []) for b in bodies), key=len)
    return [str(m.get("content")) for m in messages if m.get("role") == "tool"]


async def test_edits_go_through_the_buffers_that_visit_the_files(
    ssh_rig: SshRig, tmp_path: Path
) -> None:
    root = ssh_rig.make_project(
        f"buffers-{os.getpid()}", {"app.py": APP, "notes.txt": NOTES, "other.py": OTHER}
    )
    outside = ssh_rig.home / f"outside-{os.getpid()}.txt"
    outside.write_text("not the project's 项目外\n", encoding="utf-8")
    (root / "link.txt").symlink_to(outside)
    os.lchown(root / "link.txt", ssh_rig.uid, ssh_rig.uid)
    os.chown(outside, ssh_rig.uid, ssh_rig.uid)
    steps = [
        call("read_file", path="notes.txt"),
        call("read_file", path="link.txt"),
        call("read_file", path="app.py"),
        call(
            "replace_pattern",
            path="app.py",
            pattern="a - b",
            replacement="a + b  # 加法",
            literal=True,
        ),
        call("replace_pattern", path="notes.txt", pattern="saved", replacement="agent"),
        call("read_file", path="other.py"),
        call("replace_pattern", path="other.py", pattern="x = 1", replacement="x = 2  # 二"),
        {"text": "edits done 完成"},
    ]
    driven = await drive(
        "drive_remote_buffers.el",
        steps,
        tmp_path,
        ssh_rig.tramp(str(root)) + "/",
        {**ssh_env(ssh_rig.options)},
        timeout_s=150,
    )
    bodies = driven.bodies
    out = driven.out
    assert driven.returncode == 0, out[-4000:]
    assert "edits done 完成" in between(out, "TRANSCRIPT")
    results = _tool_results(bodies)
    assert len(results) == 7, results
    # The read saw the buffer's text, the user's unsaved line included.
    assert "用户未保存的修改" in results[0] and "read_file" in results[0]
    # A link out of the project is refused before Emacs is asked, buffer or not.
    assert "outside the project" in results[1] and "项目外" not in results[1]
    results = [results[0], *results[2:]]
    # The visited file: edited in its buffer, saved there, undoable as one unit.
    edited = APP.replace("a - b", "a + b  # 加法")
    assert between(out, "APP").rstrip("\n") == edited.rstrip("\n")
    assert between(out, "APP-MODIFIED") == "no"
    assert (root / "app.py").read_text(encoding="utf-8") == edited
    assert between(out, "APP-UNDONE").rstrip("\n") == APP.rstrip("\n")
    # The buffer with unsaved changes: refused, nothing written anywhere.
    assert "status=completed" in results[2]
    assert "The user has unsaved changes in buffer `notes.txt'" in results[3]
    assert "status=completed" in results[5]
    assert between(out, "NOTES").rstrip("\n") == (NOTES + UNSAVED).rstrip("\n")
    assert between(out, "NOTES-MODIFIED") == "yes"
    assert (root / "notes.txt").read_text(encoding="utf-8") == NOTES
    # No buffer: written on the host by the bridge, and Emacs opened none for it.
    assert (root / "other.py").read_text(encoding="utf-8") == "x = 2  # 二\n"
    assert between(out, "OTHER-BUFFER") == "no"
    assert (root / "other.py").stat().st_uid == ssh_rig.uid
    # The undo snapshots stayed in the mirror: the two written edits, not the refused one.
    indexes = list((tmp_path / "data" / "agent-shell" / "remote").rglob("snapshots/index.jsonl"))
    assert len(indexes) == 1
    entries = [json.loads(line) for line in indexes[0].read_text(encoding="utf-8").splitlines()]
    assert sorted(e["path"] for e in entries) == ["app.py", "other.py"]
    snap = indexes[0].parent
    app_entry = next(e for e in entries if e["path"] == "app.py")
    assert (snap / app_entry["snapshot"]).read_text(encoding="utf-8") == APP
    assert not (root / ".agent-shell").exists()
