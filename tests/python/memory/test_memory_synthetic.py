"""The synthetic corpus generator used for recall benchmarks."""

from __future__ import annotations

from pathlib import Path

from agent_shell_bridge.memory.experience import parse_experience, render_experience
from agent_shell_bridge.memory.index import MemoryIndex
from agent_shell_bridge.memory.synthetic import generate, recall_at_k, write_corpus


def test_generator_is_deterministic() -> None:
    a = generate(50, seed=7, n_queries=20)
    b = generate(50, seed=7, n_queries=20)
    c = generate(50, seed=8, n_queries=20)
    assert [render_experience(e) for e in a.experiences] == [
        render_experience(e) for e in b.experiences
    ]
    assert a.queries == b.queries
    assert a.queries != c.queries
    assert len(a.experiences) == 50 and len(a.queries) == 20
    assert all(q.relevant for q in a.queries)
    assert any(any("\u4e00" <= ch <= "\u9fff" for ch in q.query) for q in a.queries)
    assert any(q.query.isascii() for q in a.queries)


def test_written_corpus_is_valid_and_searchable(tmp_path: Path) -> None:
    corpus = generate(400, seed=1, n_queries=60, n_projects=4)
    paths = write_corpus(tmp_path / "projects", corpus)
    assert len(paths) == 400 and len(set(paths)) == 400
    for p, exp in zip(paths[:20], corpus.experiences[:20], strict=True):
        assert parse_experience(p.read_text(encoding="utf-8")) == exp
    with MemoryIndex(tmp_path / "m") as ix:
        for project in corpus.projects:
            ix.sync_root(tmp_path / "projects" / project)
        assert ix.count() == 400
        assert recall_at_k(ix, corpus, paths, k=5) >= 0.9
