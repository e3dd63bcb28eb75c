"""Memory through the agent loop: when extraction runs, what it writes, what comes back.

A scripted model drives a real bridge on 127.0.0.1; the project is a temp git
repository whose ``make test`` really passes or fails, and the memory index is a
real SQLite file. The extraction call is told apart from the task's own calls by
its fixed system prompt.
"""

from __future__ import annotations

from datetime import date
from pathlib import Path
from typing import Any

import pytest

from agent_rig import AgentRig, make_project, running_rig
from agent_shell_bridge.config import BridgeConfig
from agent_shell_bridge.memory.experience import parse_experience, slugify
from agent_shell_bridge.memory.extract import EXTRACTION_SYSTEM_PROMPT

MAKEFILE = (
    "test:\n"
    "\t@if grep -q 'a + b' calc.py; then echo '1 passed in 0.01s'; "
    "else echo 'FAILED test_calc.py::test_add - AssertionError: assert -1 == 5'; "
    "echo '1 failed in 0.01s'; exit 1; fi\n"
)

TITLE = "修复 calc.py 里 add 的减号错误"
SUMMARY = (
    "add() 误用减号，make test 报 assert -1 == 5；改成 a + b 后通过。"
    "先 read_file 再 replace_region。"
)
EXPERIENCE_REPLY = f"""\
这是文档：

---
title: {TITLE}
date: 1999-01-01
project: 别的项目
task_type: bugfix
tags: [calc, add, 减法]
symbols: [add, calc.py, make test]
trigger: the model must not choose this
summary: {SUMMARY}
---

## Goal

让 make test 通过。

## Steps

1. make test 失败：assert -1 == 5。
2. 把 `return a - b` 改成 `return a + b`。
3. make test 通过。

## Key decisions

只改一行，用 expected_text 防止改错位置。

## Pitfalls

没先读文件就改会被拒绝。

## Open issues

None
"""

EXTRACT = {"match": {"system_contains": "You write the long-term memory"}, "text": EXPERIENCE_REPLY}


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return make_project(
        tmp_path / "proj",
        {
            "calc.py": "def add(a, b):\n    return a - b\n",
            "Makefile": MAKEFILE,
            "README.md": "# 演示项目\n一个计算器。\n",
            "pyproject.toml": '[project]\nname = "calc"\ndependencies = []\n',
        },
    )


def extraction_requests(rig: AgentRig) -> list[dict[str, Any]]:
    return [
        body
        for body in rig.requests
        if body["messages"] and body["messages"][0]["content"] == EXTRACTION_SYSTEM_PROMPT
    ]


def memory_files(project: Path) -> list[Path]:
    directory = project / ".agent-shell" / "memory"
    return sorted(directory.glob("*.md")) if directory.is_dir() else []


def org_log(session: dict[str, Any]) -> str:
    return Path(session["logPath"]).read_text(encoding="utf-8")


FIX_STEPS: list[dict[str, Any]] = [
    {"tool_calls": [{"name": "run_test", "arguments": {}}]},
    {"tool_calls": [{"name": "read_file", "arguments": {"path": "calc.py"}}]},
    {
        "tool_calls": [
            {
                "name": "replace_region",
                "arguments": {
                    "path": "calc.py",
                    "start_line": 2,
                    "end_line": 2,
                    "new_text": "    return a + b",
                    "expected_text": "    return a - b",
                },
            }
        ]
    },
    {"tool_calls": [{"name": "run_test", "arguments": {}}]},
    {"tool_calls": [{"name": "task_complete", "arguments": {"summary": "add 已修复，测试通过"}}]},
]


async def test_fail_fix_pass_extracts_exactly_one_experience_and_the_next_session_sees_it(
    serve_app: Any, project: Path, tmp_path: Path
) -> None:
    next_answer = {"text": "以前修过：add 的减号。"}
    async with running_rig(
        serve_app, project, [*FIX_STEPS, EXTRACT, next_answer], memory_dir=tmp_path / "memdb"
    ) as rig:
        session = await rig.client.result("session/new", {"cwd": str(project)})
        turn = await rig.turn(session["sessionId"], "修一下 add，make test 失败了")
        assert turn.end["stopReason"] == "end_turn"
        assert (project / "calc.py").read_text() == "def add(a, b):\n    return a + b\n"
        # The loop really saw fail, then pass.
        summaries = [u["rawOutput"].get("summary") for u in turn.tool_results()]
        oks = [s["ok"] for s in summaries if s is not None]
        assert oks == [False, True]

        extractions = extraction_requests(rig)
        assert len(extractions) == 1
        user = extractions[0]["messages"][1]["content"]
        assert "trigger: fail→fix→pass in this task" in user
        assert "return a + b" in user  # the transcript of this task went in

        files = memory_files(project)
        assert len(files) == 1
        today = date.today().isoformat()
        assert files[0].name == f"{today}--{slugify(TITLE)}.md"
        raw = files[0].read_bytes()
        assert SUMMARY.encode("utf-8") in raw and TITLE.encode("utf-8") in raw
        exp = parse_experience(raw.decode("utf-8"))
        assert exp.title == TITLE
        assert exp.summary == SUMMARY
        assert exp.project == "proj"  # from the bridge, not the model
        assert exp.date == today
        assert exp.trigger == "fail→fix→pass in this task"
        assert exp.tags == ["calc", "add", "减法"]
        assert "return a + b" in exp.steps

        log = org_log(session)
        assert ":DECISION: extract" in log
        assert "fail→fix→pass in this task" in log
        assert f"Memory: wrote {files[0].name}" in log

        # A new session in the same project is told about it in its first request,
        # and session/new already lists it for the client to show.
        before = len(rig.requests)
        # The task's summary counts every model call it caused, the extraction too.
        assert f":MODEL_CALLS: {before}\n" in org_log(session)
        opened = await rig.client.result("session/new", {"cwd": str(project)})
        assert [m["title"] for m in opened["memories"]] == [TITLE]
        second = opened["sessionId"]
        turn2 = await rig.turn(second, "calc 的 add 又坏了吗？")
        assert turn2.text == "以前修过：add 的减号。"
        system = rig.requests[before]["messages"][0]["content"]
        assert "Relevant past experiences" in system
        assert files[0].name in system
        assert SUMMARY in system
        # The recalled titles reach the client at the start of the turn (the shell
        # names them there), through the memory entry of the log.
        assert f":RECALLED: {TITLE}\n" in org_log(opened)
        assert len(extraction_requests(rig)) == 1  # a text answer extracts nothing
        assert memory_files(project) == files


async def test_trivial_task_is_archived_without_a_model_call(
    serve_app: Any, project: Path, tmp_path: Path
) -> None:
    async with running_rig(
        serve_app,
        project,
        [
            {"tool_calls": [{"name": "read_file", "arguments": {"path": "README.md"}}]},
            {"text": "这是一个计算器演示项目。"},
            EXTRACT,
        ],
        memory_dir=tmp_path / "memdb",
    ) as rig:
        session = await rig.client.result("session/new", {"cwd": str(project)})
        turn = await rig.turn(session["sessionId"], "这个项目是做什么的？")
        assert turn.text == "这是一个计算器演示项目。"
        assert len(rig.requests) == 2
        assert extraction_requests(rig) == []
        assert memory_files(project) == []
        log = org_log(session)
        assert "Memory: archived from the log, no extraction" in log
        assert ":DECISION: archive" in log
        assert "routine task archived" in log
        titles = [e["title"] for e in turn.log_entries()]
        assert "Memory: archived from the log, no extraction" in titles


async def test_dependency_manifest_change_triggers_extraction(
    serve_app: Any, project: Path, tmp_path: Path
) -> None:
    async with running_rig(
        serve_app,
        project,
        [
            {"tool_calls": [{"name": "read_file", "arguments": {"path": "pyproject.toml"}}]},
            {
                "tool_calls": [
                    {
                        "name": "replace_region",
                        "arguments": {
                            "path": "pyproject.toml",
                            "start_line": 3,
                            "end_line": 3,
                            "new_text": 'dependencies = ["httpx>=0.27"]',
                        },
                    }
                ]
            },
            {"text": "加上了 httpx。"},
            EXTRACT,
        ],
        memory_dir=tmp_path / "memdb",
    ) as rig:
        session = await rig.client.result("session/new", {"cwd": str(project)})
        turn = await rig.turn(session["sessionId"], "加一个 httpx 依赖")
        assert turn.end["stopReason"] == "end_turn"
        assert "httpx>=0.27" in (project / "pyproject.toml").read_text()
        extractions = extraction_requests(rig)
        assert len(extractions) == 1
        assert (
            "trigger: stack change: pyproject.toml changed"
            in extractions[0]["messages"][1]["content"]
        )
        files = memory_files(project)
        assert len(files) == 1
        assert parse_experience(files[0].read_text("utf-8")).trigger == (
            "stack change: pyproject.toml changed"
        )
        log = org_log(session)
        assert ":DECISION: extract" in log and "stack change: pyproject.toml changed" in log


async def test_memory_save_and_search_over_json_rpc_survive_index_loss_and_edits(
    serve_app: Any, project: Path, tmp_path: Path
) -> None:
    memdb = tmp_path / "memdb"
    async with running_rig(
        serve_app,
        project,
        [{"text": "add 用了减号。"}, EXTRACT],
        memory_dir=memdb,
    ) as rig:
        sid = await rig.new_session()
        await rig.turn(sid, "add 为什么不对？")
        assert extraction_requests(rig) == []  # a question is archived, not extracted

        saved = await rig.client.result("memory/save", {"sessionId": sid})
        path = Path(saved["path"])
        assert path.parent == project / ".agent-shell" / "memory"
        assert path.is_file()
        assert saved["title"] == TITLE
        assert len(extraction_requests(rig)) == 1
        exp = parse_experience(path.read_text("utf-8"))
        assert exp.trigger == "saved by the user" and exp.summary == SUMMARY

        async def search(query: str) -> list[dict[str, Any]]:
            result = await rig.client.result("memory/search", {"query": query})
            hits: list[dict[str, Any]] = result["hits"]
            return hits

        for query in ("减号错误", "calc add subtraction", "ADD"):
            hits = await search(query)
            assert [h["path"] for h in hits][:1] == [str(path)], (query, hits)
        hit = (await search("减号错误"))[0]
        assert hit["summary"] == SUMMARY and hit["title"] == TITLE and hit["project"] == "proj"

        # The index is a cache: delete it and the next search rebuilds it from the files.
        for leftover in memdb.glob("index.sqlite3*"):
            leftover.unlink()
        assert not (memdb / "index.sqlite3").exists()
        assert [h["path"] for h in await search("减号错误")] == [str(path)]
        assert (memdb / "index.sqlite3").is_file()

        # A human edit is picked up: the new words are found, the old summary is gone.
        edited = path.read_text("utf-8").replace(SUMMARY, "独角兽 zebracorn：溢出时改用 Decimal。")
        path.write_text(edited, encoding="utf-8")
        hits = await search("zebracorn")
        assert [h["path"] for h in hits] == [str(path)]
        assert hits[0]["summary"] == "独角兽 zebracorn：溢出时改用 Decimal。"
        assert await search("独角兽") != []

        # Deleting the file removes it from the results.
        path.unlink()
        assert await search("zebracorn") == []


async def test_memory_save_refuses_an_unknown_session(serve_app: Any, project: Path) -> None:
    async with running_rig(serve_app, project, []) as rig:
        reply = await rig.client.rpc("memory/save", {"sessionId": "no-such-session"})
        assert reply["error"]["code"] == -32001
        assert extraction_requests(rig) == []


async def test_memory_save_returns_the_experience_title_not_the_file_slug(
    serve_app: Any, project: Path, tmp_path: Path
) -> None:
    """Regression: ``memory/save`` answered with the slug (``修复-calc.py-里-…``)."""
    async with running_rig(
        serve_app, project, [{"text": "好的。"}, EXTRACT], memory_dir=tmp_path / "memdb"
    ) as rig:
        sid = await rig.new_session()
        await rig.turn(sid, "记住这个")
        saved = await rig.client.result("memory/save", {"sessionId": sid})
        assert saved["title"] == TITLE
        assert Path(saved["path"]).name.endswith(f"--{slugify(TITLE)}.md")


SEARCH_TERMS_LINE = 'search_terms: [加法结果不对, 测试一直失败, "assert -1 == 5", sum wrong]'
# As the file writer puts it: quotes only where the list syntax needs them.
WRITTEN_TERMS_LINE = "search_terms: [加法结果不对, 测试一直失败, assert -1 == 5, sum wrong]"


def _reply_with(line: str) -> dict[str, Any]:
    text = EXPERIENCE_REPLY.replace(f"summary: {SUMMARY}\n", f"summary: {SUMMARY}\n{line}\n")
    return {"match": {"system_contains": "You write the long-term memory"}, "text": text}


async def test_search_terms_from_the_model_reach_the_file_the_index_and_the_log(
    serve_app: Any, project: Path, tmp_path: Path
) -> None:
    """Chinese search terms go byte for byte into the file and the log, and a later
    task worded only like them finds the experience."""
    later = {"text": "找到了以前的经验。"}
    async with running_rig(
        serve_app,
        project,
        [*FIX_STEPS, _reply_with(SEARCH_TERMS_LINE), later],
        memory_dir=tmp_path / "memdb",
    ) as rig:
        session = await rig.client.result("session/new", {"cwd": str(project)})
        await rig.turn(session["sessionId"], "修一下 add，make test 失败了")
        assert "search_terms" in extraction_requests(rig)[0]["messages"][0]["content"]
        (file,) = memory_files(project)
        raw = file.read_bytes()
        assert WRITTEN_TERMS_LINE.encode("utf-8") + b"\nstatus: new\n" in raw
        exp = parse_experience(raw.decode("utf-8"))
        assert exp.search_terms == ["加法结果不对", "测试一直失败", "assert -1 == 5", "sum wrong"]
        log = org_log(session)
        assert ":SEARCH_TERMS: 加法结果不对 | 测试一直失败 | assert -1 == 5 | sum wrong\n" in log
        assert ":STATUS: new\n" in log
        assert "Search terms dropped" not in log

        # Words found only in the search terms: the index has them.
        before = len(rig.requests)
        turn = await rig.turn(session["sessionId"], "加法结果不对")
        assert turn.text == "找到了以前的经验。"
        system = rig.requests[before]["messages"][0]["content"]
        assert file.name in system and SUMMARY in system
        # The log names what was injected, with its score, byte for byte.
        log_bytes = Path(session["logPath"]).read_bytes()
        assert f":RECALLED: {TITLE}\n".encode() in log_bytes
        assert b":SCORES: " in log_bytes and b"(new, not reviewed yet)" in log_bytes
        assert f":PATHS: .agent-shell/memory/{file.name}\n".encode() in log_bytes
        assert SUMMARY.encode("utf-8") in log_bytes

        # Reviewed: accepted, then forgotten. The file keeps every other byte.
        accepted = await rig.client.result(
            "memory/review", {"path": str(file), "decision": "accept"}
        )
        assert accepted["status"] == "accepted" and accepted["logged"] == [session["sessionId"]]
        assert file.read_bytes() == raw.replace(b"status: new\n", b"status: accepted\n")
        terms = await rig.client.result(
            "memory/review", {"path": str(file), "searchTerms": ["减号写错", "加法结果不对"]}
        )
        assert terms["searchTerms"] == ["减号写错", "加法结果不对"]
        assert "search_terms: [减号写错, 加法结果不对]\n".encode() in file.read_bytes()
        await rig.client.result("memory/review", {"path": str(file), "decision": "forget"})
        assert b"status: forgotten\n" in file.read_bytes()
        hits = await rig.client.result("memory/search", {"query": "减号写错"})
        assert hits["hits"] == []
        log = org_log(session)
        assert f"Memory: accept {file.name}" in log and f"Memory: forget {file.name}" in log
        assert ":DECISION: search terms" in log
        assert ":SEARCH_TERMS: 减号写错 | 加法结果不对\n" in log
        bad = await rig.client.rpc(
            "memory/review", {"path": str(project / "calc.py"), "decision": "accept"}
        )
        assert "not an experience file" in bad["error"]["message"]
        assert (project / "calc.py").read_text() == "def add(a, b):\n    return a + b\n"


@pytest.mark.parametrize(
    ("line", "problem"),
    [
        ("search_terms: 加法结果不对", "search_terms is not a [a, b] list"),
        ("search_terms: []", "search_terms is an empty list"),
        ("", "the reply has no search_terms"),
    ],
)
async def test_malformed_search_terms_fall_back_to_the_lesson_and_the_log_says_so(
    serve_app: Any, project: Path, tmp_path: Path, line: str, problem: str
) -> None:
    async with running_rig(
        serve_app, project, [*FIX_STEPS, _reply_with(line)], memory_dir=tmp_path / "memdb"
    ) as rig:
        session = await rig.client.result("session/new", {"cwd": str(project)})
        await rig.turn(session["sessionId"], "修一下 add，make test 失败了")
        (file,) = memory_files(project)
        text = file.read_text(encoding="utf-8")
        assert "search_terms" not in text
        exp = parse_experience(text)
        assert exp.title == TITLE and exp.search_terms == [] and exp.status == "new"
        log = org_log(session)
        assert f"Search terms dropped ({problem}" in log
        assert "indexed by the lesson's own words alone" in log
        assert ":SEARCH_TERMS: none\n" in log


@pytest.mark.parametrize("accepted_only", [False, True])
async def test_injection_uses_new_experiences_unless_restricted_to_accepted(
    serve_app: Any, project: Path, tmp_path: Path, accepted_only: bool
) -> None:
    directory = project / ".agent-shell" / "memory"
    directory.mkdir(parents=True)
    for name, status in (("2025-06-01--new.md", "new"), ("2025-06-02--ok.md", "accepted")):
        (directory / name).write_text(
            f"---\ntitle: 减号错误 {status}\ndate: 2025-06-01\nsummary: 减号写成加号 {status}\n"
            f"status: {status}\n---\n\n## Goal\n\nx\n",
            encoding="utf-8",
        )
    async with running_rig(
        serve_app,
        project,
        [{"text": "好。"}],
        memory_dir=tmp_path / "memdb",
        memory_accepted_only=accepted_only,
    ) as rig:
        session = await rig.client.result("session/new", {"cwd": str(project)})
        await rig.turn(session["sessionId"], "减号错误")
        system = rig.requests[-1]["messages"][0]["content"]
        assert "2025-06-02--ok.md" in system
        assert ("2025-06-01--new.md" in system) is not accepted_only
    config = BridgeConfig.from_env({"AGENT_SHELL_MEMORY_ACCEPTED_ONLY": "1"})
    assert config.memory_accepted_only and not BridgeConfig.from_env({}).memory_accepted_only
