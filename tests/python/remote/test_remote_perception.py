"""Perception in a remote session: answered from the host, never from the mirror.

The session's root here is its local mirror (records only), so a tool that looked
there would report an empty project. Against a real sshd, with the scripted model:
``symbol_search``, ``org_search`` and ``open_file`` see the host's files (Chinese
included); without an Emacs connected, the tools that look at its buffers visiting
the project's files say why they are unavailable (with Emacs: test_remote_buffers.py).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agent_rig import payload_of, running_rig, tool_messages
from sshd_rig import SshRig, sshd

pytestmark = pytest.mark.sshd

APP = (
    "def 加法(a, b):\n    return a + b\n\n\n"
    "def total(xs):\n    return sum(加法(x, 0) for x in xs)\n"
)
README = "#+title: 应用\n* 安装\n* Usage\n** 加法 examples\n"


@pytest.fixture(scope="module")
def ssh_rig() -> Iterator[SshRig]:
    with sshd() as rig:
        yield rig


@pytest.fixture
def local_dirs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    runtime = Path(tempfile.mkdtemp(prefix="asp-"))
    runtime.chmod(0o700)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))
    yield tmp_path / "data"
    shutil.rmtree(runtime, ignore_errors=True)


def call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"tool_calls": [{"name": name, "arguments": arguments}]}


async def test_perception_tools_look_on_the_host(
    serve_app: Any, ssh_rig: SshRig, local_dirs: Path, tmp_path: Path
) -> None:
    root = ssh_rig.make_project(
        f"see-{os.getpid()}", {"app.py": APP, "README.org": README, "lib/more.py": "加法 = 1\n"}
    )
    (root / "escape").symlink_to("/etc")
    steps = [
        call("symbol_search", symbol="加法"),
        call("org_search", query="加法"),
        call("org_search"),
        call("open_file", path="app.py"),
        call("open_file", path="missing.py"),
        call("project_diagnostics"),
        call("buffer_overview"),
        call("org_search", file="escape/hostname"),
        {"text": "看过了"},
    ]
    here = tmp_path / "elsewhere"
    here.mkdir()
    async with running_rig(serve_app, here, steps) as rig:
        opened = await rig.client.result(
            "session/new",
            {
                "cwd": str(here),
                "remote": {"tramp": ssh_rig.tramp(str(root)), "sshOptions": ssh_rig.options},
            },
        )
        turn = await rig.turn(opened["sessionId"], "look around")
        assert turn.end["stopReason"] == "end_turn", turn.end
        framed = max((tool_messages(r) for r in rig.requests), key=len)
        texts = framed
        results = [payload_of(m) for m in framed[:4]]
    symbols, matching, outline, shown = results[:4]
    assert symbols["backend"] == "grep on the host"
    assert {(m["path"], m["line"]) for m in symbols["matches"]} == {
        ("app.py", 1),
        ("app.py", 6),
        ("lib/more.py", 1),
        ("README.org", 4),
    }
    assert matching["file"] == "README.org"
    assert [h["title"] for h in matching["headings"]] == ["加法 examples"]
    assert [h["title"] for h in outline["headings"]] == ["安装", "Usage", "加法 examples"]
    assert shown["opened"] is False
    assert shown["note"].endswith(ssh_rig.tramp(str(root / "app.py")))
    assert "No such file: missing.py" in texts[4]
    assert "no Emacs is connected to this remote session" in texts[5]
    assert "project_diagnostics looks at the buffers Emacs visits" in texts[5]
    assert "buffer_overview is unavailable here: this is a remote project" in texts[6]
    assert "no Emacs is connected to show the buffers visiting them" in texts[6]
    system = rig.requests[0]["messages"][0]["content"]
    assert "This is a remote project (its files are on" in system
    assert "buffer_overview, describe_symbol" in system
    # A host symlink out of the project is refused there, as for read_file.
    assert "outside the project" in texts[7]
