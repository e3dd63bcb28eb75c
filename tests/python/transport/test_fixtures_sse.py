"""The Emacs parser's HTTP/SSE fixtures still match what the bridge sends.

``tests/fixtures/sse/record.py`` records raw bytes from a real bridge; the Emacs
tests parse those files. This test records them again with a fresh debug bridge
into a temp directory and fails when a committed fixture differs, so a change on
the Python side cannot silently leave the Emacs side testing yesterday's protocol.

To refresh the committed files after an intended change, run with
``AGENT_SHELL_REFRESH_SSE_FIXTURES=1`` (the test then rewrites them and passes).
"""

from __future__ import annotations

import difflib
import os
import shutil
import subprocess
import sys
from pathlib import Path

from conftest import REPO_ROOT, bridge_command, bridge_env

FIXTURES = REPO_ROOT / "tests" / "fixtures" / "sse"
RECORDER = FIXTURES / "record.py"
REFRESH_ENV = "AGENT_SHELL_REFRESH_SSE_FIXTURES"
RECORD_TIMEOUT_S = 30

# Hand-written, never recorded (see record.py): not compared here.
HAND_WRITTEN = frozenset({"events-edge.sse", "events-edge.json"})

# Load record.py as a module, point its output at a temp dir, record.
_RUNNER = """\
import importlib.util, sys
from pathlib import Path
spec = importlib.util.spec_from_file_location("sse_record", sys.argv[1])
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
module.HERE = Path(sys.argv[2])
sys.exit(module.main())
"""


def _record(into: Path) -> None:
    env = bridge_env()
    env["AGENT_SHELL_TEST_BRIDGE"] = bridge_command()[0]
    done = subprocess.run(
        [sys.executable, "-c", _RUNNER, str(RECORDER), str(into)],
        env=env,
        cwd=into,
        capture_output=True,
        timeout=RECORD_TIMEOUT_S,
        check=False,
    )
    assert done.returncode == 0, done.stderr.decode("utf-8", "replace")


def _describe(name: str, old: bytes, new: bytes) -> str:
    diff = difflib.unified_diff(
        old.decode("utf-8", "replace").splitlines(),
        new.decode("utf-8", "replace").splitlines(),
        f"committed/{name}",
        f"recorded/{name}",
        lineterm="",
        n=1,
    )
    return "\n".join(list(diff)[:40])


def test_committed_sse_fixtures_match_a_fresh_recording(tmp_path: Path) -> None:
    _record(tmp_path)
    recorded = {p.name: p.read_bytes() for p in tmp_path.iterdir() if p.is_file()}
    committed = {
        p.name: p.read_bytes()
        for p in FIXTURES.iterdir()
        if p.is_file() and p.name != RECORDER.name and p.name not in HAND_WRITTEN
    }
    assert set(recorded) >= {"events-bridge.http", "rpc-ping.http", "rpc-unauthorized.json"}
    if os.environ.get(REFRESH_ENV) == "1":
        for name in recorded:
            shutil.copyfile(tmp_path / name, FIXTURES / name)
        for name in set(committed) - set(recorded):
            (FIXTURES / name).unlink()
        return
    # Everything the recorder writes, and nothing else, is committed.
    assert set(committed) == set(recorded), (
        f"fixture files differ: committed only {sorted(set(committed) - set(recorded))}, "
        f"recorded only {sorted(set(recorded) - set(committed))}; rerun with {REFRESH_ENV}=1"
    )
    stale = [name for name in sorted(recorded) if recorded[name] != committed[name]]
    assert not stale, (
        f"stale fixtures {stale}; rerun with {REFRESH_ENV}=1 to refresh\n"
        + "\n".join(_describe(n, committed[n], recorded[n]) for n in stale)
    )


def test_recording_is_repeatable(tmp_path: Path) -> None:
    """Two recordings agree byte for byte, so a stale-fixture failure means a real change."""
    first, second = tmp_path / "a", tmp_path / "b"
    first.mkdir()
    second.mkdir()
    _record(first)
    _record(second)
    names = sorted(p.name for p in first.iterdir())
    assert names == sorted(p.name for p in second.iterdir())
    for name in names:
        assert (first / name).read_bytes() == (second / name).read_bytes(), name
