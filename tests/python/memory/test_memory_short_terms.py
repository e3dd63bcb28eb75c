"""Short terms and symbols are found through indexes, never by scanning every row.

Two-character Chinese words (中文, 测试), words of one or two letters ("go") and
symbols used to fall back to ``LIKE`` scans. The work SQLite does for a search is
counted in virtual-machine steps (a progress handler), which is deterministic: with
ten times as many rows that do not match, an indexed search does about the same
work, a scan ten times as much.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from agent_shell_bridge.memory import migrations
from agent_shell_bridge.memory.experience import Experience, write_experience
from agent_shell_bridge.memory.index import MemoryIndex
from agent_shell_bridge.memory.query import plan_query, short_grams

TARGET = Experience(
    title="修复中文测试失败",
    date="2025-03-04",
    project="target",
    task_type="bugfix",
    tags=["go", "json"],
    symbols=["decodeString", "parse_utf8"],
    summary="在 go 里解码中文字符串时测试失败：decodeString 按字节遍历。",
)


def _filler(i: int) -> Experience:
    return Experience(
        title=f"Tune the scheduler queue number {i}",
        date="2025-01-01",
        project="filler",
        task_type="refactor",
        tags=["python", "scheduler"],
        symbols=[f"scheduler_tick_{i}"],
        summary=f"The scheduler queue {i} drained slowly under load; batching fixed it.",
    )


def _build(tmp_path: Path, fillers: int) -> MemoryIndex:
    target, filler = tmp_path / "target", tmp_path / "filler"
    write_experience(target, TARGET)
    for i in range(fillers):
        write_experience(filler, _filler(i))
    index = MemoryIndex(tmp_path / "mem")
    index.reindex([target, filler])
    return index


def _steps(index: MemoryIndex, query: str, symbols: list[str]) -> tuple[int, list[str]]:
    conn = index._open()
    count = 0

    def tick() -> int:
        nonlocal count
        count += 1
        return 0

    conn.set_progress_handler(tick, 50)
    try:
        hits = index.search(query, symbols=symbols, limit=5)
    finally:
        conn.set_progress_handler(None, 0)
    return count, [h.title for h in hits]


SEARCHES = [
    ("测试", []),
    ("中文", []),
    ("go 中文", []),
    ("", ["decodeString"]),
    ("", ["DECODESTRING"]),
    ("字符串 go", ["parse_utf8"]),
]


@pytest.fixture(scope="module")
def small_and_large(tmp_path_factory: pytest.TempPathFactory) -> tuple[MemoryIndex, MemoryIndex]:
    return (
        _build(tmp_path_factory.mktemp("small"), 60),
        _build(tmp_path_factory.mktemp("large"), 600),
    )


@pytest.mark.parametrize(("query", "symbols"), SEARCHES)
def test_short_terms_and_symbols_do_not_scan(
    small_and_large: tuple[MemoryIndex, MemoryIndex], query: str, symbols: list[str]
) -> None:
    small, large = small_and_large
    small_steps, small_hits = _steps(small, query, symbols)
    large_steps, large_hits = _steps(large, query, symbols)
    assert small_hits == large_hits == [TARGET.title]
    # A scan of 10× the rows costs about 10× the steps; an index lookup does not grow.
    assert large_steps < 2 * small_steps + 20, (small_steps, large_steps)


def test_a_like_scan_would_be_caught(small_and_large: tuple[MemoryIndex, MemoryIndex]) -> None:
    """The measure itself: the old LIKE scan grows with the rows it reads."""
    counts = []
    for index in small_and_large:
        conn = index._open()
        n = 0

        def tick() -> int:
            nonlocal n
            n += 1
            return 0

        conn.set_progress_handler(tick, 50)
        conn.execute("SELECT id FROM experiences WHERE body LIKE '%测试%'").fetchall()
        conn.set_progress_handler(None, 0)
        counts.append(n)
    assert counts[1] > 5 * counts[0]


def test_short_grams_match_what_queries_ask_for() -> None:
    grams = set(short_grams("修复中文 go_lang IO x-ray ÉT").split())
    for term in plan_query("中文 go io").like_terms:
        assert term in grams
    assert {"修", "复中", "文", "go", "io", "x", "ét"} <= grams
    assert "lang" not in grams and "ray" not in grams  # three letters: the trigram index


def test_index_from_before_the_short_term_table_is_filled_on_open(tmp_path: Path) -> None:
    index = _build(tmp_path, 3)
    db = index.db_path
    index.close()
    conn = sqlite3.connect(db, isolation_level=None)
    first = migrations.MIGRATIONS[0]
    conn.executescript(
        # Back to migration 0001's full-text table, without the later columns.
        "DROP TRIGGER experiences_words_ai; DROP TRIGGER experiences_words_ad; "
        "DROP TRIGGER experiences_words_au; DROP TABLE experiences_words; "
        "DROP INDEX experiences_status; DROP TRIGGER experiences_ai; "
        "DROP TRIGGER experiences_ad; DROP TRIGGER experiences_au; DROP TABLE experiences_fts; "
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
        "ALTER TABLE roots DROP COLUMN dir_mtime_ns; ALTER TABLE roots DROP COLUMN dir_listed_ns; "
        "PRAGMA user_version = 1;"
    )
    conn.close()
    with MemoryIndex(tmp_path / "mem") as reopened:
        assert [h.title for h in reopened.search("测试")] == [TARGET.title]
        assert [h.title for h in reopened.search("", symbols=["decodestring"])] == [TARGET.title]
        assert reopened.count() == 4


def test_deleted_and_changed_files_leave_no_stale_short_terms(tmp_path: Path) -> None:
    index = _build(tmp_path, 2)
    target = next((tmp_path / "target" / ".agent-shell" / "memory").glob("*.md"))
    target.write_text(target.read_text(encoding="utf-8").replace("测试", "检验"), encoding="utf-8")
    index.sync_root(tmp_path / "target")
    assert index.search("测试") == []
    assert [h.title for h in index.search("检验")] == ["修复中文检验失败"]
    target.unlink()
    index.sync_root(tmp_path / "target")
    assert index.search("检验") == [] and index.search("", symbols=["decodeString"]) == []
    conn = index._open()
    assert conn.execute("SELECT count(*) FROM experience_symbols").fetchone()[0] == 2
    index.close()
