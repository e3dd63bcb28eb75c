"""A remote session's buffer_overview and project_diagnostics through Emacs, against a real sshd.

A real Emacs in batch visits a file of the remote project over TRAMP (Chinese name and
text, an unsaved line, Flymake on with what it already reported there) and a file of
the same host outside the project, then starts the session in Dired there. The scripted
model's ``buffer_overview`` sees the visiting buffer, its file relative to the project;
the outside buffer is not described; ``project_diagnostics`` gives that buffer's Flymake
diagnostics; ``symbol_search`` still greps on the host; the system prompt says which
Emacs-side tools run and which are not offered.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent_rig import payload_of
from emacs_drive import call, drive, ssh_env
from sshd_rig import SshRig, sshd

pytestmark = pytest.mark.sshd

SOURCE = "def 加法(a, b):\n    return a - b\n"


@pytest.fixture(scope="module")
def ssh_rig() -> Iterator[SshRig]:
    with sshd() as rig:
        yield rig


async def test_emacs_shows_the_buffers_visiting_the_remote_files(
    ssh_rig: SshRig, tmp_path: Path
) -> None:
    root = ssh_rig.make_project(f"perceive-{os.getpid()}", {"src/说明.py": SOURCE})
    outside_name = f"outside-{os.getpid()}.txt"
    outside = ssh_rig.home / outside_name
    outside.write_text("not the project's 项目外\n", encoding="utf-8")
    os.chown(outside, ssh_rig.uid, ssh_rig.uid)
    steps = [
        call("buffer_overview"),
        call("buffer_overview", buffer=outside_name),
        call("project_diagnostics"),
        call("symbol_search", symbol="加法"),
        call("describe_symbol", symbol="car"),
        {"text": "seen 看过了"},
    ]
    driven = await drive(
        "drive_remote_perception.el",
        steps,
        tmp_path,
        ssh_rig.tramp(str(root)) + "/",
        {**ssh_env(ssh_rig.options), "AS_TRAMP_OUTSIDE": ssh_rig.tramp(str(outside))},
        timeout_s=150,
    )
    bodies = driven.bodies
    out = driven.out
    assert driven.returncode == 0, out[-4000:]
    assert f"OUTSIDE-NAME {outside_name}\n" in out
    assert "seen 看过了" in out.split("TRANSCRIPT-BEGIN\n", 1)[1]
    messages = max((b.get("messages", []) for b in bodies), key=len)
    results = [str(m["content"]) for m in messages if m.get("role") == "tool"]
    assert len(results) == 5, results
    # The user's buffer, as Emacs has it: relative to the project, the unsaved line in.
    seen = payload_of(results[0])
    assert seen["file"] == "src/说明.py"
    assert seen["buffer"] == "说明.py"
    assert seen["modified"] is True
    assert seen["line_count"] == 3
    assert seen["flymake_diagnostics"] == 1
    # A buffer of the same host outside the project: neither its name nor its text.
    hidden = payload_of(results[1])
    assert hidden["outside_project"] is True
    assert outside_name not in results[1] and "项目外" not in results[1]
    # What Flymake already has in that buffer.
    found = payload_of(results[2])
    assert found["checked_buffers"] == 1
    assert found["diagnostics"] == [
        {
            "file": "src/说明.py",
            "line": 2,
            "column": 1,
            "type": "error",
            "text": "未定义的名字 加法",
            "backend": "drive-backend",
        }
    ]
    # The other tools are as before: symbols from the host, no Emacs Lisp tools.
    assert payload_of(results[3])["backend"] == "grep on the host"
    assert "describe_symbol is unavailable here: this is a remote project" in results[4]
    system = messages[0]["content"]
    assert "Emacs runs only buffer_overview and project_diagnostics for it" in system
    assert "not offered: describe_symbol, eval_elisp" in system
    assert not (root / ".agent-shell").exists()
