"""``M-x agent-shell-start`` from a Dired buffer on ``/podman:`` or ``/docker:``.

A real Emacs in batch (``$EMACS``; its TRAMP needs the container methods, which
Emacs 29 brought: ``make test-emacs30`` runs this on Emacs 30) opens the project
in the container (``container_rig``) in Dired, starts the session there and sends
one prompt; the scripted model lists, reads, edits (approved in Emacs) and reads
the file back with a strict reader, which runs unasked without a sandbox.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agent_rig import payload_of, tool_messages
from agent_shell_bridge.model.mock_script import MockScript
from agent_shell_bridge.model.mock_server import MockServer
from container_rig import MOUNT, ContainerRig, container

pytestmark = pytest.mark.container

HERE = Path(__file__).resolve().parent
ELISP = HERE.parents[2] / "elisp"
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


def call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"tool_calls": [{"name": name, "arguments": arguments}]}


def _between(out: str, tag: str) -> str:
    return out.split(f"{tag}-BEGIN\n", 1)[1].split(f"\n{tag}-END", 1)[0]


async def test_agent_shell_start_in_a_container_dired_buffer(
    rig: ContainerRig, tmp_path: Path
) -> None:
    bridge = os.environ.get("AGENT_SHELL_TEST_BRIDGE") or str(
        HERE.parents[2] / ".venv" / "bin" / "agent-shell-bridge"
    )
    if not Path(bridge).exists():
        pytest.skip("needs the bridge (make venv)")
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
    mock = MockServer(MockScript.model_validate({"steps": steps}))
    await mock.start()
    runtime = Path(tempfile.mkdtemp(prefix="asr-"))
    home = tmp_path / "home"
    home.mkdir()
    env = {
        **os.environ,
        **rig.env,
        "HOME": str(home),
        "XDG_DATA_HOME": str(tmp_path / "data"),
        "XDG_RUNTIME_DIR": str(runtime),
        "AGENT_SHELL_TEST_BRIDGE": bridge,
        "AS_API_BASE": mock.api_base,
        "AS_TRAMP_SSH": "",
        "AS_SSH_OPTIONS": "",
        "AS_TRAMP_DIR": rig.tramp() + "/",
    }
    try:
        proc = await asyncio.create_subprocess_exec(
            os.environ.get("EMACS", "emacs"),
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
    assert f"Remote project {rig.tramp()}: commands run there (no sandbox (remote))" in transcript
    assert "Approved: replace_pattern app.py" in transcript
    # Only the edit was asked; the strict reader ran unasked there, reading it back.
    assert transcript.count("Approved:") == 1
    framed = max((tool_messages(r.body) for r in mock.recorder.records), key=len)
    last = payload_of(framed[-1])
    assert last["stdout"] == APP.replace("a - b", "a + b").rstrip("\n")
    assert last["sandbox"] == "none (remote)"
    assert (rig.project / "app.py").read_text(encoding="utf-8") == APP.replace("a - b", "a + b")
    assert not Path(MOUNT).exists()
    logs = list((tmp_path / "data" / "agent-shell" / "remote").rglob("logs/*.org"))
    assert len(logs) == 1
    assert "replace_pattern" in logs[0].read_text(encoding="utf-8")
    assert not (rig.project / ".agent-shell").exists()
