"""Start-up cost: each command imports only what it uses (checked in a fresh interpreter).

``--version`` and ``--help`` must not load the web server, the policy's parser or
the memory index's writer; a one-shot ``memory search`` of a current index must not
load the server, the policy, the index writer or sqlite-utils; the server reaches its
ready line without pydantic, httpx, tree-sitter, sqlite-utils, the MCP or ACP SDKs or
any method area (they load with the first call that needs them).
"""

from __future__ import annotations

import importlib
import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from agent_shell_bridge.cli import COMMANDS, build_parser
from agent_shell_bridge.memory import migrations
from agent_shell_bridge.memory.experience import Experience, write_experience
from agent_shell_bridge.methods import AREAS, DEBUG_AREA, build_dispatcher
from agent_shell_bridge.runtime import Runtime
from agent_shell_bridge.transport.rpc import Dispatcher

HEAVY = ("starlette", "uvicorn", "sse_starlette", "tree_sitter", "tree_sitter_bash", "sqlite_utils")

PROBE = """
import json, sys
from agent_shell_bridge.cli import main
try:
    code = main(sys.argv[1:])
except SystemExit as exc:
    code = exc.code
loaded = sorted({m.split(".")[0] for m in sys.modules})
print(json.dumps({"code": code, "loaded": loaded, "modules": sorted(sys.modules)}), file=sys.stderr)
"""


def _modules(*argv: str) -> tuple[object, set[str], set[str], str]:
    """Exit code, top-level packages, every module loaded, and stdout of one command."""
    done = subprocess.run(
        [sys.executable, "-c", PROBE, *argv],
        capture_output=True,
        text=True,
        encoding="utf-8",
        timeout=120,
        check=False,
    )
    report = json.loads(done.stderr.strip().splitlines()[-1])
    return report["code"], set(report["loaded"]), set(report["modules"]), done.stdout


def _loaded(*argv: str) -> tuple[object, set[str], str]:
    code, loaded, _, out = _modules(*argv)
    return code, loaded, out


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


# What a one-shot search of a current index must not load: the server, the policy, the
# index writer and what only it needs (sqlite-utils, the experience-file parser).
SEARCH_DEFERRED = {
    "agent_shell_bridge.memory.index",
    "agent_shell_bridge.memory.experience",
    "agent_shell_bridge.memory.frontmatter",
    "agent_shell_bridge.policy.engine",
}


def _indexed(tmp_path: Path) -> tuple[Path, Path]:
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
    return root, memory


def test_one_shot_memory_search_loads_no_server_no_policy_no_writer(tmp_path: Path) -> None:
    _, memory = _indexed(tmp_path)
    code, loaded, modules, out = _modules("memory", "search", "--memory-dir", str(memory), "测试")
    assert code == 0 and "修复中文测试" in out
    assert not loaded & {*HEAVY, "pydantic", "httpx", "logging"}, sorted(loaded)
    assert not modules & SEARCH_DEFERRED, sorted(modules & SEARCH_DEFERRED)


@pytest.mark.parametrize("damage", ["missing", "old-schema", "garbage"])
def test_one_shot_search_hands_an_index_it_cannot_read_to_the_writer(
    tmp_path: Path, damage: str
) -> None:
    """No index, an older schema or a damaged file: rebuilt or migrated, then searched."""
    _, memory = _indexed(tmp_path)
    db = memory / "index.sqlite3"
    if damage == "missing":
        db.unlink()
    elif damage == "old-schema":
        # As schema 1 left it: without what migrations 2 (short terms), 3
        # (directory stamps), 4 (search terms, status) and 5 (the word index) add.
        first = migrations.MIGRATIONS[0]
        with sqlite3.connect(db) as conn:
            conn.executescript(
                "DROP TRIGGER experiences_words_ai; DROP TRIGGER experiences_words_ad; "
                "DROP TRIGGER experiences_words_au; DROP TABLE experiences_words; "
                "DROP INDEX experiences_status; DROP TRIGGER experiences_ai; "
                "DROP TRIGGER experiences_ad; DROP TRIGGER experiences_au; "
                "DROP TABLE experiences_fts; "
                "ALTER TABLE experiences DROP COLUMN search_terms; "
                "ALTER TABLE experiences DROP COLUMN status; "
                + first[first.index("CREATE VIRTUAL TABLE") :]
                + "INSERT INTO experiences_fts (experiences_fts) VALUES ('rebuild');"
            )
            conn.executescript(
                "DROP TRIGGER experiences_aux_ad; DROP TABLE experiences_short; "
                "DROP TABLE experience_symbols; DROP INDEX experiences_date; "
                "DROP INDEX experiences_project_date; DROP TABLE own_writes; "
                "ALTER TABLE experiences DROP COLUMN inode; "
                "ALTER TABLE roots DROP COLUMN dir_mtime_ns; "
                "ALTER TABLE roots DROP COLUMN dir_listed_ns; "
                "PRAGMA user_version = 1;"
            )
    else:
        for suffix in ("-wal", "-shm"):
            Path(f"{db}{suffix}").unlink(missing_ok=True)
        db.write_bytes(b"not a database, " * 512)
    code, _, modules, out = _modules("memory", "search", "--memory-dir", str(memory), "测试")
    assert code == 0 and "修复中文测试" in out, out
    assert "agent_shell_bridge.memory.index" in modules  # the writer did the work
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] >= 2


SERVE_PROBE = """
import json, sys
from agent_shell_bridge.cli import main

class Tap:
    # Passes stdout through; when the ready line goes out, reports what is loaded.
    def __init__(self, out):
        self.out = out
    def write(self, text):
        if text.startswith('{"ready"'):
            print(json.dumps(sorted(sys.modules)), file=sys.stderr, flush=True)
        return self.out.write(text)
    def __getattr__(self, name):
        return getattr(self.out, name)

sys.stdout = Tap(sys.stdout)
sys.exit(main(sys.argv[1:]))
"""

# Loaded by the first call that needs them, never before the ready line.
SERVE_DEFERRED_PACKAGES = {
    "pydantic",
    "pydantic_core",
    "httpx",
    "sqlite_utils",
    "tree_sitter",
    "tree_sitter_bash",
    "mcp",
    "acp",
}
SERVE_DEFERRED_MODULES = {
    *(f"agent_shell_bridge.methods.{area}" for area in (*AREAS, DEBUG_AREA[0])),
    "agent_shell_bridge.wire",
    "agent_shell_bridge.agent.turn.loop",
    "agent_shell_bridge.agent.session.live",
    "agent_shell_bridge.policy.engine",
    "agent_shell_bridge.policy.shell_parse",
    "agent_shell_bridge.memory.index",
    "agent_shell_bridge.tools.catalogue",
    "agent_shell_bridge.orglog.writer",
}


def test_server_reaches_its_ready_line_without_the_deferred_modules(tmp_path: Path) -> None:
    """The real ``serve`` command, up to its ready line; then stdin closes and it exits."""
    argv = ["serve", "--port", "0", "--log-level", "WARNING"]
    with subprocess.Popen(
        [sys.executable, "-c", SERVE_PROBE, *argv, "--memory-dir", str(tmp_path / "mem")],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        encoding="utf-8",
    ) as process:
        try:
            assert process.stdout and process.stdin and process.stderr
            ready = json.loads(process.stdout.readline())
            process.stdin.close()  # the bridge exits when stdin closes
            err = process.stderr.read()
            assert process.wait(timeout=60) == 0
        finally:
            if process.poll() is None:
                process.kill()
    assert ready["ready"] is True and ready["port"] > 0
    modules = set(json.loads(err.strip().splitlines()[0]))
    assert "uvicorn" in modules and "agent_shell_bridge.transport.server" in modules  # it did serve
    packages = {m.split(".")[0] for m in modules}
    assert not packages & SERVE_DEFERRED_PACKAGES, sorted(packages & SERVE_DEFERRED_PACKAGES)
    assert not modules & SERVE_DEFERRED_MODULES, sorted(modules & SERVE_DEFERRED_MODULES)


def test_method_areas_register_exactly_the_names_declared_for_them() -> None:
    """``AREAS`` lists every method before its module loads; it must not drift."""
    for area, names in (*AREAS.items(), DEBUG_AREA):
        own: Dispatcher[Runtime] = Dispatcher()
        importlib.import_module(f"agent_shell_bridge.methods.{area}").register(own)
        assert own.names == sorted(names), area
    dispatcher = build_dispatcher(debug_methods=True)
    declared = dispatcher.names
    dispatcher.load_all()
    assert dispatcher.names == declared
