"""A real Emacs in batch running one of the remote tests' drivers.

The drivers (``tests/python/remote/drive_*.el``) open a remote project over TRAMP,
start a session against the scripted model and print what Emacs saw between
``TAG-BEGIN``/``TAG-END`` markers. :func:`drive` gives each a fresh home, data and
runtime directory, the model's address and the TRAMP names of the project, and
returns Emacs's exit code, its output and the requests the model received.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from agent_shell_bridge.model.mock_script import MockScript
from agent_shell_bridge.model.mock_server import MockServer

__all__ = ["Driven", "between", "bridge_program", "call", "drive", "emacs_program", "ssh_env"]

ROOT = Path(__file__).resolve().parents[2]
ELISP = ROOT / "elisp"
DRIVERS = Path(__file__).resolve().parent / "remote"


def call(name: str, **arguments: Any) -> dict[str, Any]:
    """A scripted model step calling tool NAME with ARGUMENTS."""
    return {"tool_calls": [{"name": name, "arguments": arguments}]}


def between(out: str, tag: str) -> str:
    """What the driver printed between TAG's markers."""
    return out.split(f"{tag}-BEGIN\n", 1)[1].split(f"\n{tag}-END", 1)[0]


def bridge_program() -> str:
    """The bridge the drivers start; skips the test when it is not built."""
    bridge = os.environ.get("AGENT_SHELL_TEST_BRIDGE") or str(
        ROOT / ".venv" / "bin" / "agent-shell-bridge"
    )
    if not Path(bridge).exists():
        pytest.skip("needs the bridge (make venv)")
    return bridge


def emacs_program() -> str:
    """The Emacs to drive (``make test-emacs30`` sets its Emacs 30); skips without one."""
    emacs = os.environ.get("EMACS", "emacs")
    if shutil.which(emacs) is None:
        pytest.skip("needs emacs and the bridge (make venv)")
    return emacs


def ssh_env(options: Sequence[str]) -> dict[str, str]:
    """The ssh options of the test's sshd, for TRAMP (%c of its ssh command line)
    and for the bridge's own connection."""
    return {
        "AS_TRAMP_SSH": " ".join(f"-o {o}" for o in options),
        "AS_SSH_OPTIONS": "\n".join(options),
    }


@dataclass
class Driven:
    returncode: int
    out: str
    bodies: list[Any]  # the requests the scripted model received, in order

    def between(self, tag: str) -> str:
        return between(self.out, tag)


async def drive(
    driver: str,
    steps: list[dict[str, Any]],
    tmp_path: Path,
    tramp_dir: str,
    env: Mapping[str, str],
    *,
    timeout_s: float = 120,
) -> Driven:
    """Run DRIVER against a scripted model answering STEPS, on the project whose
    TRAMP directory is TRAMP_DIR; ENV adds the driver's own settings."""
    emacs = emacs_program()
    bridge = bridge_program()
    mock = MockServer(MockScript.model_validate({"steps": steps}))
    await mock.start()
    runtime = Path(tempfile.mkdtemp(prefix="asd-"))
    home = tmp_path / "home"
    home.mkdir()
    full = {
        **os.environ,
        "HOME": str(home),
        "XDG_DATA_HOME": str(tmp_path / "data"),
        "XDG_RUNTIME_DIR": str(runtime),
        "AGENT_SHELL_TEST_BRIDGE": bridge,
        "AS_API_BASE": mock.api_base,
        "AS_TRAMP_DIR": tramp_dir,
        **env,
    }
    try:
        proc = await asyncio.create_subprocess_exec(
            emacs,
            "-Q",
            "--batch",
            "-L",
            str(ELISP),
            "-l",
            str(DRIVERS / driver),
            env=full,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
        )
        raw, _ = await asyncio.wait_for(proc.communicate(), timeout_s)
        bodies = [r.body for r in mock.recorder.records]
    finally:
        await mock.stop()
        shutil.rmtree(runtime, ignore_errors=True)
    assert proc.returncode is not None
    return Driven(proc.returncode, raw.decode(errors="replace"), bodies)
