"""The shared orglog fixture: one stream of log notifications and the file it yields.

``tests/fixtures/orglog/entries.json`` holds ``log/entry`` / ``log/update`` params in
order; ``expected.org`` is the log they make as the live buffer shows it
(:meth:`OrgLogWriter.render`), ``expected-file.org`` the append-only file.  The Emacs
suite (tests/elisp/test-log.el) replays the same stream, with the org text the
writer renders for each notification (tests/python/orglog_renderer.py), into the
live buffer and compares the text, so the buffer cannot drift from the file.
Regenerate with
``AGENT_SHELL_REGEN_FIXTURES=1``.
"""

from __future__ import annotations

import json
import os
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from agent_shell_bridge.orglog import LogEntry, LogUpdate, OrgLogWriter

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "orglog"
TITLE = "agent-shell fixture 测试"


def _entry(eid: str, minute: int, title: str, **kw: Any) -> dict[str, Any]:
    params: dict[str, Any] = {
        "id": eid,
        "session_id": "s-fixture",
        "parent_id": None,
        "todo": None,
        "title": title,
        "timestamp": f"2026-11-30T10:{minute:02d}:07+08:00",
        "source": "model",
        "properties": {},
        "body": [],
    }
    params.update(kw)
    return {"method": "log/entry", "params": params}


def _update(eid: str, **kw: Any) -> dict[str, Any]:
    return {"method": "log/update", "params": {"session_id": "s-fixture", "id": eid, **kw}}


def scenario() -> list[dict[str, Any]]:
    """A session exercising every rendering rule, including hostile content."""
    long_output = "\n".join(f"line {i} 输出" for i in range(1, 351))
    return [
        _entry("e-1", 0, "修复中文 JSON 解析", source="user", properties={"SESSION": "s-fixture"}),
        _entry(
            "e-2",
            1,
            "run_command: go test ./...",
            parent_id="e-1",
            todo="WAIT",
            source="tool",
            properties={"TOOL": "run_command", "RISK": "write", "DECISION": "confirm"},
            body=[
                {"kind": "text", "text": "Runs the tests; writes the build cache.\n"},
                {
                    "kind": "src",
                    "lang": "sh",
                    "text": "go test ./...",
                    "link": None,
                    "omitted_lines": 0,
                },
                {
                    "kind": "src",
                    "lang": "diff",
                    "text": (
                        "--- a/x.go\n+++ b/x.go\n@@ -1 +1 @@\n"
                        "-for i := range b\n+for _, r := range s\n"
                    ),
                    "link": None,
                    "omitted_lines": 0,
                },
            ],
        ),
        _entry("e-3", 2, "Second task\n* FAKE heading", source="user"),
        _entry(
            "e-4",
            3,
            "read_file internal/jsonutil/parser.go",
            parent_id="e-1",
            todo="DONE",
            source="tool",
            properties={"TOOL": "read_file", "PATH": "internal/jsonutil/parser.go", "LINE": 120},
            body=[
                {
                    "kind": "src",
                    "lang": "go",
                    "text": (
                        "* not a heading\n#+end_src\n  #+begin_src\n"
                        ",* already\n:END:\nfunc decodeString() {}"
                    ),
                    "link": "/tmp/out/e-4.txt",
                    "omitted_lines": 12,
                }
            ],
        ),
        _entry(
            "e-5",
            4,
            "hostile text :tag:",
            parent_id="e-3",
            todo="FAILED",
            source="model",
            properties={
                "exit code": 2,
                "ok": True,
                "ratio": 0.25,
                "SOURCE": "forged",
                "x\ny": "a\nb",
            },
            body=[
                {"kind": "text", "text": "* FAKE\n:END:\n#+begin_src sh\nrm -rf /"},
                {"kind": "text", "text": ""},
                {"kind": "text", "text": "plain 中文\r\nline two\x1b[31m red"},
            ],
        ),
        _entry(
            "e-6",
            5,
            "long output",
            parent_id="e-1",
            source="tool",
            properties={"EXIT_CODE": 0},
            body=[
                {
                    "kind": "src",
                    "lang": "bad lang!",
                    "text": long_output + "\n" + "x" * 600,
                    "link": "/tmp/with[bracket].txt",
                    "omitted_lines": 0,
                }
            ],
        ),
        _entry("e-7", 6, "nested under a step", parent_id="e-2", source="memory"),
        _entry("e-8", 7, "orphan", parent_id="e-missing", source="bridge"),
        _entry(
            "e-9",
            8,
            "late step of the first task",
            parent_id="e-1",
            todo="WAIT",
            source="tool",
            properties={"RISK": "dangerous", "TOOL": "run_command"},
            body=[{"kind": "src", "lang": "sh", "text": "rm -rf build/", "link": None}],
        ),
        _update("e-2", todo="APPROVED", properties={"DECISION": "approved", "EXIT_CODE": 0}),
        _update(
            "e-3",
            body_append=[{"kind": "text", "text": "appended to an empty body"}],
        ),
        _update(
            "e-2",
            body_append=[
                {
                    "kind": "src",
                    "lang": "text",
                    "text": "ok  \tpkg\t0.01s",
                    "link": None,
                    "omitted_lines": 3,
                }
            ],
        ),
        _update("e-1", todo="DONE", properties={"DURATION_MS": 160000, "TOKENS_IN": 380000}),
        _update("e-5", properties={"REASON": "测试失败 ✗"}),
    ]


CLOCK = datetime(2026, 11, 30, 10, 30, 7, tzinfo=timezone(timedelta(hours=8)))


def apply(ops: list[dict[str, Any]], path: Path, title: str = TITLE) -> OrgLogWriter:
    writer = OrgLogWriter(path, title=title, clock=lambda: CLOCK)
    for op in ops:
        if op["method"] == "log/entry":
            writer.add(LogEntry.model_validate(op["params"]))
        else:
            writer.update(LogUpdate.model_validate(op["params"]))
    return writer


def test_orglog_fixture_is_current(tmp_path: Path) -> None:
    """The checked-in fixture matches what the writer produces today: ``expected.org``
    the entries as the live buffer shows them, ``expected-file.org`` the file."""
    ops = scenario()
    writer = apply(ops, tmp_path / "log.org")
    text = writer.render().encode("utf-8")
    file_text = writer.path.read_bytes()
    entries = (json.dumps(ops, ensure_ascii=False, indent=1) + "\n").encode("utf-8")
    if os.environ.get("AGENT_SHELL_REGEN_FIXTURES"):
        FIXTURES.mkdir(parents=True, exist_ok=True)
        (FIXTURES / "entries.json").write_bytes(entries)
        (FIXTURES / "expected.org").write_bytes(text)
        (FIXTURES / "expected-file.org").write_bytes(file_text)
    assert (FIXTURES / "entries.json").read_bytes() == entries, "stale: regenerate fixtures"
    assert (FIXTURES / "expected.org").read_bytes() == text, "stale: regenerate fixtures"
    assert (FIXTURES / "expected-file.org").read_bytes() == file_text, "stale: regenerate"
