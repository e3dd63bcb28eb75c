"""Start-up cost: each command imports only what it uses (checked in a fresh interpreter).

``--version`` and ``--help`` must not load the web server, the policy's parser or
the memory index's writer; a one-shot ``memory search`` must not load the server or
the policy; the server reaches its ready line without tree-sitter or sqlite-utils
(they load with the first session and the first memory write).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from agent_shell_bridge.cli import COMMANDS, build_parser
from agent_shell_bridge.memory.experience import Experience, write_experience

HEAVY = ("starlette", "uvicorn", "sse_starlette", "tree_sitter", "tree_sitter_bash", "sqlite_utils")

PROBE = """
import json, sys
from agent_shell_bridge.cli import main
try:
    code = main(sys.argv[1:])
except SystemExit as exc:
    code = exc.code
loaded = sorted({m.split(".")[0] for m in sys.modules})
print(json.dumps({"code": code, "loaded": loaded}), file=sys.stderr)
"""


def _loaded(*argv: str) -> tuple[object, set[str], str]:
    done = subprocess.run(
        [sys.executable, "-c", PROBE, *argv],
        capture_output=True,
        text=True,
        encoding="utf-8",
        timeout=120,
        check=False,
    )
    report = json.loads(done.stderr.strip().splitlines()[-1])
    return report["code"], set(report["loaded"]), done.stdout


@pytest.mark.parametrize("flag", ["--version", "--help"])
def test_version_and_help_import_nothing_heavy(flag: str) -> None:
    code, loaded, out = _loaded(flag)
    assert code == 0
    assert not loaded & set(HEAVY), sorted(loaded & set(HEAVY))
    assert "pydantic" not in loaded and "httpx" not in loaded
    assert "agent-shell-bridge" in out


def test_help_still_lists_every_command() -> None:
    _, _, out = _loaded("--help")
    for name, (_, help_text) in COMMANDS.items():
        assert name in out and help_text in out


def test_placeholder_help_matches_the_real_commands() -> None:
    """The one-line help shown without loading a command is the command's own."""
    real = build_parser()
    sub = next(a for a in real._actions if a.dest == "command")
    helps = {c.dest: c.help for c in sub._choices_actions}  # type: ignore[attr-defined]
    assert helps == {name: text for name, (_, text) in COMMANDS.items()}


def test_one_shot_memory_search_loads_no_server_and_no_policy(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    write_experience(
        root,
        Experience(
            title="修复中文测试",
            date="2025-01-02",
            project="proj",
            task_type="bugfix",
            summary="中文 测试 解析",
        ),
    )
    memory = tmp_path / "mem"
    code, _, _ = _loaded("memory", "reindex", "--memory-dir", str(memory), str(root))
    assert code == 0
    code, loaded, out = _loaded("memory", "search", "--memory-dir", str(memory), "测试")
    assert code == 0 and "修复中文测试" in out
    assert not loaded & {"starlette", "uvicorn", "tree_sitter", "sqlite_utils"}, loaded


def test_server_starts_without_tree_sitter_or_sqlite_utils() -> None:
    probe = (
        "import sys, agent_shell_bridge.serve\n"
        "from agent_shell_bridge.methods import build_dispatcher\n"
        "from agent_shell_bridge.runtime import Runtime\n"
        "from agent_shell_bridge.server import ServerSettings, create_app\n"
        "from agent_shell_bridge.config import BridgeConfig\n"
        "rt = Runtime(config=BridgeConfig(), dispatcher=build_dispatcher(debug_methods=False))\n"
        "create_app(ServerSettings(token='t', port=1), rt)\n"
        "print(sorted({m.split('.')[0] for m in sys.modules}))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=True
    )
    loaded = set(done.stdout.strip().strip("[]").replace("'", "").split(", "))
    assert "starlette" in loaded  # the probe did build the server
    assert not loaded & {"tree_sitter", "tree_sitter_bash", "sqlite_utils"}


def test_server_defers_the_agent_loop_to_the_first_session() -> None:
    probe = (
        "import sys, agent_shell_bridge.serve\n"
        "from agent_shell_bridge.methods import build_dispatcher\n"
        "build_dispatcher(debug_methods=False)\n"
        "print(' '.join(sorted(m for m in sys.modules if m.startswith('agent_shell_bridge.'))))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=True
    )
    loaded = set(done.stdout.split())
    assert "agent_shell_bridge.methods.session" in loaded
    deferred = {
        "agent_shell_bridge.agent.loop",
        "agent_shell_bridge.agent.live",
        "agent_shell_bridge.agent.executor",
        # The policy package itself is light (its names load on first use); its
        # engine and the shell parser (tree-sitter) wait for the first session.
        "agent_shell_bridge.policy.engine",
        "agent_shell_bridge.policy.shell_parse",
        "agent_shell_bridge.memory.index",
    }
    assert not loaded & deferred, sorted(loaded & deferred)
