"""``M-x agent-shell-start`` from a Dired buffer on ``/podman:`` or ``/docker:``.

A real Emacs in batch (``$EMACS``; its TRAMP needs the container methods, which
Emacs 29 brought: ``make test-emacs30`` runs this on Emacs 30) opens the project
in the container (``container_rig``) in Dired, starts the session there and sends
one prompt; the scripted model lists, reads, edits (approved in Emacs) and reads
the file back with a strict reader, which runs unasked without a sandbox.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent_rig import payload_of, tool_messages
from container_rig import MOUNT, ContainerRig, container
from emacs_drive import between, call, drive

pytestmark = pytest.mark.container

APP = "def add(a, b):\n    return a - b  # 容器\n"
_HAS_METHODS = """(progn (require 'tramp) (require 'tramp-container nil t)
  (princ (if (assoc "{kind}" tramp-methods) "yes" "no")))"""


@pytest.fixture(scope="module", params=["podman", "docker"])
def rig(request: pytest.FixtureRequest) -> Iterator[ContainerRig]:
    emacs = os.environ.get("EMACS", "emacs")
    if shutil.which(emacs) is None:
        pytest.skip(f"no Emacs at {emacs!r}")
    asked = subprocess.run(
        [emacs, "-Q", "--batch", "--eval", _HAS_METHODS.format(kind=request.param)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    if asked.stdout.strip() != "yes":
        pytest.skip(f"{emacs}'s TRAMP has no /{request.param}: method (Emacs 29 or later has)")
    with container(request.param) as made:
        yield made


async def test_agent_shell_start_in_a_container_dired_buffer(
    rig: ContainerRig, tmp_path: Path
) -> None:
    for old in rig.project.iterdir():
        shutil.rmtree(old) if old.is_dir() else old.unlink()
    (rig.project / "app.py").write_text(APP, encoding="utf-8")
    steps = [
        call("list_directory", path="."),
        call("read_file", path="app.py"),
        call("replace_pattern", path="app.py", pattern="a - b", replacement="a + b", literal=True),
        call("run_command", command="cat app.py"),
        {"text": "fixed remotely 已修"},
    ]
    driven = await drive(
        "drive_remote_start.el",
        steps,
        tmp_path,
        rig.tramp() + "/",
        {**rig.env, "AS_TRAMP_SSH": "", "AS_SSH_OPTIONS": ""},
    )
    out = driven.out
    assert driven.returncode == 0, out[-4000:]
    transcript = between(out, "TRANSCRIPT")
    assert "fixed remotely 已修" in transcript
    assert f"Remote project {rig.tramp()}: commands run there (no sandbox (remote))" in transcript
    assert "Approved: replace_pattern app.py" in transcript
    # Only the edit was asked; the strict reader ran unasked there, reading it back.
    assert transcript.count("Approved:") == 1
    framed = max((tool_messages(body) for body in driven.bodies), key=len)
    last = payload_of(framed[-1])
    assert last["stdout"] == APP.replace("a - b", "a + b").rstrip("\n")
    assert last["sandbox"] == "none (remote)"
    assert (rig.project / "app.py").read_text(encoding="utf-8") == APP.replace("a - b", "a + b")
    assert not Path(MOUNT).exists()
    logs = list((tmp_path / "data" / "agent-shell" / "remote").rglob("logs/*.org"))
    assert len(logs) == 1
    assert "replace_pattern" in logs[0].read_text(encoding="utf-8")
    assert not (rig.project / ".agent-shell").exists()
