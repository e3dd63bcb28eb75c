"""The SQLite memory index: sync, search (Chinese and English), ranking, recovery."""

from __future__ import annotations

import os
import shutil
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agent_shell_bridge.memory import migrations
from agent_shell_bridge.memory.experience import Experience, write_experience
from agent_shell_bridge.memory.extract import TEMPLATE
from agent_shell_bridge.memory.index import MemoryIndex

REPO = Path(__file__).resolve().parents[3]
FIXTURES = REPO / "tests" / "fixtures" / "memory"


def _project(tmp_path: Path, name: str) -> Path:
    """Copy a fixture project's experience files into ``tmp_path/name``."""
    root = tmp_path / name
    mem = root / ".agent-shell" / "memory"
    mem.mkdir(parents=True)
    for f in (FIXTURES / name).iterdir():
        shutil.copyfile(f, mem / f.name)
    return root


@pytest.fixture
def roots(tmp_path: Path) -> tuple[Path, Path]:
    return _project(tmp_path, "proj-go"), _project(tmp_path, "proj-py")


@pytest.fixture
def index(tmp_path: Path, roots: tuple[Path, Path]) -> Iterator[MemoryIndex]:
    ix = MemoryIndex(tmp_path / "memdir")
    for r in roots:
        ix.sync_root(r)
    yield ix
    ix.close()


def _names(hits: list) -> list[str]:  # type: ignore[type-arg]
    return [Path(h.path).name for h in hits]


def _exp(title: str, project: str, **kw: object) -> Experience:
    base: dict[str, object] = {
        "title": title,
        "date": "2025-01-01",
        "project": project,
        "task_type": "bugfix",
        "summary": f"{title} summary",
        "goal": title,
    }
    base.update(kw)
    return Experience(**base)  # type: ignore[arg-type]


def test_schema_files_match_what_the_package_applies() -> None:
    assert (REPO / "memory_schema" / "schema.sql").read_text(
        encoding="utf-8"
    ) == migrations.schema_sql()
    files = sorted((REPO / "memory_schema" / "migrations").glob("*.sql"))
    assert [f.read_text(encoding="utf-8") for f in files] == list(migrations.MIGRATIONS)
    assert (REPO / "memory_schema" / "template.md").read_text(encoding="utf-8") == TEMPLATE


def test_schema_sql_builds_the_same_database_as_the_migrations(tmp_path: Path) -> None:
    a = sqlite3.connect(tmp_path / "a.db", isolation_level=None)
    a.executescript(migrations.schema_sql())
    b = sqlite3.connect(tmp_path / "b.db", isolation_level=None)
    assert migrations.apply_migrations(b) == 0
    assert migrations.apply_migrations(b) == migrations.SCHEMA_VERSION  # idempotent
    q = "SELECT type, name, sql FROM sqlite_master ORDER BY name"
    assert a.execute(q).fetchall() == b.execute(q).fetchall()
    assert (
        a.execute("PRAGMA user_version").fetchone() == b.execute("PRAGMA user_version").fetchone()
    )


def test_sync_counts_and_is_cheap_when_nothing_changed(
    tmp_path: Path, roots: tuple[Path, Path]
) -> None:
    with MemoryIndex(tmp_path / "m") as ix:
        first = ix.sync_root(roots[1])
        assert (first.added, first.updated, first.removed) == (3, 0, 0)
        assert ix.count() == 3
        # Age the index past the racy window so the second sync trusts stat() alone.
        conn = sqlite3.connect(tmp_path / "m" / "index.sqlite3")
        conn.execute("UPDATE experiences SET indexed_ns = indexed_ns + 10000000000")
        conn.commit()
        conn.close()
        second = ix.sync_root(roots[1])
        assert (second.added, second.updated, second.removed, second.unchanged) == (0, 0, 0, 3)


def test_chinese_query_finds_the_chinese_experience(index: MemoryIndex) -> None:
    hits = index.search("中文 解析 JSON")
    assert _names(hits)[0] == "2025-07-12--json-parse-chinese.md"
    assert hits[0].title == "修复含中文参数时 JSON 解析失败"
    assert hits[0].project == "proj-go"


def test_unspaced_chinese_sentence_finds_it(index: MemoryIndex) -> None:
    assert _names(index.search("中文参数解析失败怎么办"))[0] == "2025-07-12--json-parse-chinese.md"


def test_english_query_finds_the_english_experience(index: MemoryIndex) -> None:
    hits = index.search("flaky pytest timeout on CI")
    assert _names(hits)[0] == "2025-03-02--flaky-pytest-timeouts.md"


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("解析", "2025-07-12--json-parse-chinese.md"),
        ("迁移", "2025-05-20--数据库迁移.md"),
        ("ci", "2025-03-02--flaky-pytest-timeouts.md"),
    ],
)
def test_two_character_query_uses_like_fallback(
    index: MemoryIndex, query: str, expected: str
) -> None:
    assert _names(index.search(query))[0] == expected


def test_unparseable_file_is_still_searchable(index: MemoryIndex) -> None:
    hits = index.search("缓存失效")
    assert _names(hits) == ["notes-broken.md"]


def test_query_without_matches_returns_nothing(index: MemoryIndex) -> None:
    assert index.search("kubernetes helm chart") == []


@pytest.mark.parametrize(
    "query",
    [
        '"',
        '"unbalanced',
        "NEAR(a b, 2)",
        "json NEAR/3 解析",
        "* - ^ + : ( ) { }",
        "title:json OR body:*",
        "AND OR NOT",
        "-json",
        "json*",
        "'; DROP TABLE experiences; --",
        "\x00\x01\u2028\ud7ff",
        "a" * 10_000,
        "%_\\",
    ],
)
def test_fts_syntax_in_queries_never_raises(index: MemoryIndex, query: str) -> None:
    hits = index.search(query, project="proj-go", symbols=[query])
    assert isinstance(hits, list)
    assert index.count() == 4  # nothing was dropped


def test_like_wildcards_are_literal(index: MemoryIndex) -> None:
    assert index.search("", symbols=["%"]) == []
    assert index.search("", symbols=["d_codeString"]) == []  # "_" is not a wildcard
    assert _names(index.search("", symbols=["decodeString"])) == [
        "2025-07-12--json-parse-chinese.md"
    ]


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(query=st.text(max_size=60))
def test_any_text_is_a_valid_query(index: MemoryIndex, query: str) -> None:
    for hit in index.search(query, symbols=[query[:10]]):
        assert hit.path.endswith(".md")


def test_current_project_ranks_first(tmp_path: Path) -> None:
    a, b = tmp_path / "alpha", tmp_path / "beta"
    write_experience(a, _exp("Retry HTTP uploads with backoff", "alpha"))
    write_experience(b, _exp("Retry HTTP uploads with backoff", "beta"))
    with MemoryIndex(tmp_path / "m") as ix:
        ix.sync_root(a)
        ix.sync_root(b)
        assert [h.project for h in ix.search("retry uploads", project="beta")] == [
            "beta",
            "alpha",
        ]
        assert [h.project for h in ix.search("retry uploads", project="alpha")] == [
            "alpha",
            "beta",
        ]


def test_matching_symbols_rank_first(tmp_path: Path) -> None:
    root = tmp_path / "p"
    write_experience(root, _exp("Cache invalidation bug", "p", symbols=["Store.evict"]))
    write_experience(root, _exp("Cache invalidation bug again", "p", symbols=["LRU.get"]))
    with MemoryIndex(tmp_path / "m") as ix:
        ix.sync_root(root)
        assert ix.search("cache invalidation", symbols=["LRU.get"])[0].title.endswith("again")
        assert ix.search("cache invalidation", symbols=["Store.evict"])[0].title == (
            "Cache invalidation bug"
        )


def test_recency_breaks_ties(tmp_path: Path) -> None:
    root = tmp_path / "p"
    write_experience(root, _exp("Fix locale sorting", "p", date="2020-01-01"))
    write_experience(root, _exp("Fix locale sorting", "p", date="2025-06-01"))
    with MemoryIndex(tmp_path / "m") as ix:
        ix.sync_root(root)
        assert [h.date for h in ix.search("locale sorting")] == ["2025-06-01", "2020-01-01"]


def test_edited_file_is_reindexed(index: MemoryIndex, roots: tuple[Path, Path]) -> None:
    path = roots[0] / ".agent-shell" / "memory" / "2025-07-12--json-parse-chinese.md"
    text = path.read_text(encoding="utf-8").replace("unicode]", "unicode, 火星文]")
    path.write_text(text, encoding="utf-8")
    stats = index.sync_root(roots[0])
    assert (stats.updated, stats.added, stats.removed) == (1, 0, 0)
    assert _names(index.search("火星文")) == [path.name]


def test_edit_with_same_size_and_mtime_is_caught_by_hash(
    index: MemoryIndex, roots: tuple[Path, Path]
) -> None:
    path = roots[0] / ".agent-shell" / "memory" / "2025-07-12--json-parse-chinese.md"
    st = path.stat()
    text = path.read_text(encoding="utf-8").replace("jq .", "jq -r")  # same length
    path.write_text(text, encoding="utf-8")
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert index.sync_root(roots[0]).updated == 1
    assert _names(index.search("jq -r")) == [path.name]


def test_deleted_file_is_dropped(index: MemoryIndex, roots: tuple[Path, Path]) -> None:
    path = roots[1] / ".agent-shell" / "memory" / "2025-03-02--flaky-pytest-timeouts.md"
    path.unlink()
    stats = index.sync_root(roots[1])
    assert stats.removed == 1
    # "pytest" also finds other testing lessons (its synonyms); never the deleted one.
    assert path.name not in {Path(h.path).name for h in index.search("pytest", limit=50)}
    assert index.count() == 3


def test_symlinked_experience_is_not_indexed(tmp_path: Path) -> None:
    secret = tmp_path / "secret.md"
    secret.write_text("---\ntitle: hunter2 password\n---\n## Goal\n\nx\n", encoding="utf-8")
    root = tmp_path / "p"
    (root / ".agent-shell" / "memory").mkdir(parents=True)
    (root / ".agent-shell" / "memory" / "leak.md").symlink_to(secret)
    with MemoryIndex(tmp_path / "m") as ix:
        ix.sync_root(root)
        assert ix.search("hunter2 password") == []


def test_deleted_index_is_rebuilt_from_known_roots(
    tmp_path: Path, roots: tuple[Path, Path]
) -> None:
    memdir = tmp_path / "memdir"
    with MemoryIndex(memdir) as ix:
        for r in roots:
            ix.sync_root(r)
        before = sorted(h.path for h in ix.search("", limit=50))
    for name in os.listdir(memdir):
        if name.startswith("index.sqlite3"):
            os.unlink(memdir / name)
    with MemoryIndex(memdir) as ix:
        assert sorted(h.path for h in ix.search("", limit=50)) == before
        assert len(before) == 4
        assert _names(ix.search("解析"))[0] == "2025-07-12--json-parse-chinese.md"


def test_corrupted_index_is_rebuilt_without_loss(tmp_path: Path, roots: tuple[Path, Path]) -> None:
    memdir = tmp_path / "memdir"
    with MemoryIndex(memdir) as ix:
        for r in roots:
            ix.sync_root(r)
    db = memdir / "index.sqlite3"
    for name in os.listdir(memdir):
        if name.startswith("index.sqlite3-"):
            os.unlink(memdir / name)
    db.write_bytes(os.urandom(8192))
    with MemoryIndex(memdir) as ix:
        assert ix.count() == 4
        assert _names(ix.search("flaky pytest"))[0] == "2025-03-02--flaky-pytest-timeouts.md"
        assert set(ix.known_roots()) == {str(r.resolve()) for r in roots}
    assert (memdir / "index.sqlite3.damaged").exists()


def test_index_damaged_inside_a_valid_header_is_rebuilt(
    tmp_path: Path, roots: tuple[Path, Path]
) -> None:
    memdir = tmp_path / "memdir"
    with MemoryIndex(memdir) as ix:
        for r in roots:
            ix.sync_root(r)
    conn = sqlite3.connect(memdir / "index.sqlite3")
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.execute("PRAGMA journal_mode = DELETE")
    conn.close()
    db = memdir / "index.sqlite3"
    data = bytearray(db.read_bytes())
    page = 4096
    for off in range(page, len(data)):  # keep the header page, wreck the rest
        data[off] = 0xA5
    db.write_bytes(bytes(data))
    with MemoryIndex(memdir) as ix:
        assert ix.count() == 4
        assert _names(ix.search("中文 解析"))[0] == "2025-07-12--json-parse-chinese.md"


def test_corruption_after_open_is_recovered(tmp_path: Path, roots: tuple[Path, Path]) -> None:
    memdir = tmp_path / "memdir"
    ix = MemoryIndex(memdir)
    for r in roots:
        ix.sync_root(r)
    ix.close()
    ix2 = MemoryIndex(memdir)
    assert ix2.count() == 4
    ix2.close()
    for name in os.listdir(memdir):
        if name.startswith("index.sqlite3-"):
            os.unlink(memdir / name)
    (memdir / "index.sqlite3").write_bytes(b"garbage" * 1000)
    assert _names(ix2.search("pytest"))[0] == "2025-03-02--flaky-pytest-timeouts.md"
    ix2.close()


def test_reindex_accepts_explicit_roots_and_forgets_vanished_ones(
    tmp_path: Path, roots: tuple[Path, Path]
) -> None:
    gone = tmp_path / "gone"
    write_experience(gone, _exp("Temporary project", "gone"))
    with MemoryIndex(tmp_path / "m") as ix:
        ix.sync_root(roots[0])
        ix.sync_root(gone)
        shutil.rmtree(gone)
        stats = ix.reindex([roots[1]])
        assert stats.added == 4
        assert sorted(stats.roots) == sorted(str(r.resolve()) for r in roots)
        assert set(ix.known_roots()) == {str(r.resolve()) for r in roots}


def test_newer_schema_is_refused_not_destroyed(tmp_path: Path) -> None:
    memdir = tmp_path / "m"
    memdir.mkdir()
    conn = sqlite3.connect(memdir / "index.sqlite3")
    conn.execute("PRAGMA user_version = 99")
    conn.close()
    from agent_shell_bridge.errors import MemoryError_

    with pytest.raises(MemoryError_, match="newer"):
        MemoryIndex(memdir).search("x")
    assert (memdir / "index.sqlite3").exists()
