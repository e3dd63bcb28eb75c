"""Finding a lesson from other words: search terms, stems, synonyms, the project's
vocabulary, and the review states that keep files out of search (real SQLite)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from agent_shell_bridge.memory.experience import Experience, write_experience
from agent_shell_bridge.memory.index import MemoryIndex
from agent_shell_bridge.memory.query import plan_query
from agent_shell_bridge.memory.search import COMMON
from agent_shell_bridge.memory.synonyms import stem


def _write(root: Path, title: str, **fields: object) -> Path:
    exp = Experience(title=title, date="2025-06-01", project=root.name, task_type="bugfix")
    for key, value in fields.items():
        setattr(exp, key, value)
    return write_experience(root, exp)


def _index(tmp_path: Path) -> tuple[MemoryIndex, Path]:
    root = tmp_path / "shop"
    root.mkdir()
    return MemoryIndex(tmp_path / "mem"), root


def test_search_terms_find_a_lesson_its_own_words_would_not(tmp_path: Path) -> None:
    index, root = _index(tmp_path)
    lesson = _write(
        root,
        "Add a btree index on orders.customer_id",
        summary="Seq Scan over 4M rows; CREATE INDEX CONCURRENTLY.",
        search_terms=["orders page really slow", "admin listing takes seconds"],
    )
    _write(root, "Orders CSV export", summary="Added an export button.")
    with index:
        index.sync_root(root)
        hits = index.search("admin listing takes seconds", project="shop")
        assert hits[0].path == str(lesson.resolve())


def test_an_exact_match_is_never_buried_by_expansions(tmp_path: Path) -> None:
    index, root = _index(tmp_path)
    exact = _write(root, "Checkout is slow", summary="The checkout was slow: N+1 queries.")
    # Only synonyms of both words, and many of them.
    _write(
        root,
        "Payment screen sluggish",
        summary="The payment view had latency; performance of the billing dashboard.",
        search_terms=["sluggish", "latency", "performance", "payment", "billing"],
    )
    with index:
        index.sync_root(root)
        hits = index.search("checkout slow", project="shop")
        assert Path(hits[0].path).name == exact.name
        assert len(hits) == 2  # the synonyms still find the other one


def test_stems_and_synonyms_in_the_plan() -> None:
    plan = plan_query("the checks keep complaining about long lines")
    assert plan.units == ("checks", "complaining", "long", "lines")  # stop words dropped
    terms = {(plan.units[e.unit], e.term, e.weight) for e in plan.expansions}
    assert ("complaining", "complain", 0.8) in terms
    assert ("checks", "lint", 0.5) in terms
    assert ("long", "line length", 0.5) in terms  # a phrase of the table
    assert all(e.weight < 1 for e in plan.expansions)
    assert [stem(w) for w in ("swapped", "dates", "installing", "crashes")] == [
        "swap",
        "date",
        "install",
        "crash",
    ]
    assert any(e.term == "编码" for e in plan_query("数据出现乱码").expansions)


def test_a_phrase_speaks_for_its_words_and_every_word_gets_stand_ins() -> None:
    plan = plan_query("our linter for the web client stopped reporting anything after upgrading")
    web = plan.units.index("web")
    mine = [e.term for e in plan.expansions if e.unit == web]
    assert mine[0] == "frontend"  # "web client" as a phrase, before "client" alone
    client = plan.units.index("client")
    first_for_client = next(e.term for e in plan.expansions if e.unit == client)
    assert first_for_client not in mine
    # The cap on expansions is shared: the last words still get theirs.
    owners = {e.unit for e in plan.expansions}
    assert owners == set(range(len(plan.units)))
    stopped = plan.units.index("stopped")
    assert any(e.term == "silently" for e in plan.expansions if e.unit == stopped)


def test_a_paraphrase_across_several_words_finds_its_lesson(tmp_path: Path) -> None:
    index, root = _index(tmp_path)
    lesson = _write(
        root,
        "ESLint 9 ignored our .eslintrc",
        summary="The frontend lint step passed with obvious errors: no rules ran, silently.",
    )
    for n in range(6):
        _write(
            root,
            f"Upgrade webpack from {n} to {n + 1}",
            summary="Bumped the version; lint and type checks pass after upgrading.",
        )
    with index:
        index.sync_root(root)
        query = "our linter for the web client stopped reporting anything after upgrading"
        hits = index.search(query, project="shop", limit=3)
        assert Path(hits[0].path).name == lesson.name


def test_a_mixed_chinese_and_english_task_prefers_the_rows_holding_both(tmp_path: Path) -> None:
    index, root = _index(tmp_path)
    # Each index alone is crowded: many rows hold the Chinese word, many "parser",
    # and "java" is too common to choose candidates (more than COMMON rows).
    for n in range(30):
        _write(root, f"长连接问题 {n}", summary="长连接 长连接 断开后重连。", tags=["shell"])
        _write(root, f"Parser fix {n}", summary="The parser parser failed on input.")
    for n in range(COMMON + 20):
        _write(root, f"Java build {n}", tags=["java"])
    both = _write(
        root, "重写长连接与解析问题", summary="长连接在解析时出错。", tags=["java", "parser"]
    )
    with index:
        index.sync_root(root)
        hits = index.search("长连接 parser java", project="shop")
        assert Path(hits[0].path).name == both.name


def test_the_project_vocabulary_links_words_its_lessons_use_together(tmp_path: Path) -> None:
    index, root = _index(tmp_path)
    # Words of this project's own (in no built-in table): "quokka" goes with "wombat".
    for n in range(2):
        _write(root, f"Fix {n}", tags=["wombat"], search_terms=["quokka"])
    target = _write(root, "Wombat cache rebuilt", summary="Rebuild the cache.")
    with index:
        index.sync_root(root)
        assert str(target.resolve()) in {h.path for h in index.search("quokka", project="shop")}
        # Outside the project (no vocabulary) the word alone cannot find it.
        assert str(target.resolve()) not in {h.path for h in index.search("quokka")}


def test_review_states_decide_what_search_finds(tmp_path: Path) -> None:
    index, root = _index(tmp_path)
    new = _write(root, "Flaky coupon test new", status="new")
    accepted = _write(root, "Flaky coupon test accepted", status="accepted")
    legacy = _write(root, "Flaky coupon test legacy")  # no status: saved before reviews
    _write(root, "Flaky coupon test rejected", status="rejected")
    _write(root, "Flaky coupon test forgotten", status="forgotten")
    with index:
        index.sync_root(root)
        found = {Path(h.path).name for h in index.search("flaky coupon", limit=10)}
        assert found == {new.name, accepted.name, legacy.name}
        only = {Path(h.path).name for h in index.search("flaky coupon", accepted_only=True)}
        assert only == {accepted.name, legacy.name}
        assert index.count() == 5  # the hidden ones keep an empty row


def test_word_index_finds_word_forms_and_is_filled_by_its_migration(tmp_path: Path) -> None:
    index, root = _index(tmp_path)
    lesson = _write(root, "Dashboard renders slowly", summary="Cached the aggregates.")
    _write(root, "Dashboard colours", summary="New palette.")
    with index:
        index.sync_root(root)
        db = index.db_path
    conn = sqlite3.connect(db, isolation_level=None)
    # Back to schema 4: the word index dropped, then made again by migration 5.
    conn.executescript(
        "DROP TRIGGER experiences_words_ai; DROP TRIGGER experiences_words_ad; "
        "DROP TRIGGER experiences_words_au; DROP TABLE experiences_words; "
        "PRAGMA user_version = 4;"
    )
    conn.close()
    with MemoryIndex(tmp_path / "mem") as reopened:
        hits = reopened.search("the dashboard is slow", project="shop")
        assert hits[0].path == str(lesson.resolve())
        check = sqlite3.connect(reopened.db_path)
        try:
            found = check.execute(
                "SELECT count(*) FROM experiences_words WHERE experiences_words MATCH 'slow*'"
            ).fetchone()[0]
        finally:
            check.close()
        assert found == 1
