"""What a turn's memory sees of files changed between turns, through the real bridge.

The scripted model answers with text; what each turn was told is read from the
system prompt of the request the model received. Experience files are changed as
people change them: an editor saving by rename, a file written in place, a delete,
and the bridge's own writer (``memory/save``).
"""

from __future__ import annotations

import asyncio
import os
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from agent_rig import AgentRig, make_project, running_rig
from agent_shell_bridge.memory.experience import Experience, write_experience

EXTRACT_REPLY = """\
---
title: 保存的经验：超时重试
date: 2025-02-02
project: x
task_type: bugfix
tags: [retry]
symbols: [fetch_page]
trigger: x
summary: fetch_page 超时后立即重试，压垮了服务；改成指数退避。
---

## Goal

让 fetch_page 在超时后稳定。

## Steps

1. 加退避。

## Key decisions

退避上限 30 秒。

## Pitfalls

无

## Open issues

None
"""
EXTRACT = {"match": {"system_contains": "You write the long-term memory"}, "text": EXTRACT_REPLY}


def _exp(title: str, summary: str) -> Experience:
    return Experience(
        title=title, date="2025-05-06", project="proj", task_type="bugfix", summary=summary
    )


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = make_project(tmp_path / "proj", {"README.md": "# 项目\n"})
    write_experience(root, _exp("解析器超时", "解析器在大文件上超时：改成流式读取。"))
    write_experience(root, _exp("缓存击穿", "热点键过期时缓存击穿：加互斥锁。"))
    return root


def _system(rig: AgentRig, request: int) -> str:
    content: str = rig.requests[request]["messages"][0]["content"]
    return content


async def _ask(rig: AgentRig, sid: str, prompt: str) -> str:
    """One text-only turn; the system prompt the model got for it."""
    before = len(rig.requests)
    turn = await rig.turn(sid, prompt)
    assert turn.end["stopReason"] == "end_turn"
    return _system(rig, before)


def _file(project: Path, word: str) -> Path:
    return next((project / ".agent-shell" / "memory").glob(f"*{word}*"))


async def test_edits_deletes_and_our_writer_are_seen_at_the_next_turn(
    serve_app: Any, project: Path, tmp_path: Path
) -> None:
    steps = [{"text": "好。"}] * 3 + [EXTRACT] + [{"text": "好。"}] * 2
    async with running_rig(serve_app, project, steps, memory_dir=tmp_path / "memdb") as rig:
        sid = await rig.new_session()
        first = await _ask(rig, sid, "解析器 超时 怎么办？")
        assert "解析器在大文件上超时" in first

        # Saved by an editor that writes a new file and renames it over the old one.
        path = _file(project, "解析器")
        text = path.read_text("utf-8").replace("改成流式读取", "改用内存映射（mmap）")
        tmp = path.with_name(f".{path.name}.swp")
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, path)
        second = await _ask(rig, sid, "解析器 超时 怎么办？")
        assert "改用内存映射（mmap）" in second
        assert "改成流式读取" not in second

        # Deleted by hand.
        _file(project, "缓存").unlink()
        third = await _ask(rig, sid, "缓存击穿 怎么处理？")
        assert "热点键过期时缓存击穿" not in third

        # Written by the bridge itself: visible to the very next turn.
        saved = await rig.client.result("memory/save", {"sessionId": sid})
        assert Path(saved["path"]).is_file()
        fourth = await _ask(rig, sid, "fetch_page 超时 重试")
        assert "改成指数退避" in fourth
        assert Path(saved["path"]).name in fourth


async def _indexed(db: Path, needle: str, timeout: float = 20.0) -> None:
    """Wait until the index file holds ``needle`` in some experience's summary."""

    def holds() -> bool:
        conn = sqlite3.connect(db)
        try:
            sql = "SELECT count(*) FROM experiences WHERE instr(summary, ?) > 0"
            return bool(conn.execute(sql, (needle,)).fetchone()[0])
        except sqlite3.Error:
            return False
        finally:
            conn.close()

    async with asyncio.timeout(timeout):
        while not await asyncio.to_thread(holds):
            await asyncio.sleep(0.05)


async def test_file_rewritten_in_place_is_found_by_the_background_scan(
    serve_app: Any, project: Path, tmp_path: Path
) -> None:
    """Nothing in the directory changes when a file is rewritten in place; the full
    scan a turn starts in the background (here at every turn) finds it, and the
    next turn is told."""
    memdb = tmp_path / "memdb"
    async with running_rig(
        serve_app, project, [{"text": "好。"}] * 3, memory_dir=memdb, memory_full_scan_s=0.0
    ) as rig:
        sid = await rig.new_session()
        assert "解析器在大文件上超时" in await _ask(rig, sid, "解析器 超时")
        path = _file(project, "解析器")
        with path.open("r+", encoding="utf-8") as fh:  # same inode, same directory
            text = fh.read().replace("改成流式读取", "改成分块校验和读取")
            fh.seek(0)
            fh.write(text)
            fh.truncate()
        await _ask(rig, sid, "解析器 超时")  # starts a full scan in the background
        await _indexed(memdb / "index.sqlite3", "改成分块校验和读取")
        assert "改成分块校验和读取" in await _ask(rig, sid, "解析器 超时")
