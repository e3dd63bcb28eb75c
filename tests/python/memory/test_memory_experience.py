"""Experience files: format round trip, human edits, slugs and atomic writes."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agent_shell_bridge.errors import MemoryError_
from agent_shell_bridge.memory.experience import (
    Experience,
    parse_experience,
    render_experience,
    slugify,
    write_experience,
)

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "memory"


def _exp(**kw: object) -> Experience:
    base: dict[str, object] = {
        "title": "修复含中文参数时 JSON 解析失败",
        "date": "2025-07-12",
        "project": "my-cli",
        "task_type": "bugfix",
        "tags": ["go", "json", "unicode"],
        "symbols": ["decodeString"],
        "trigger": "fail→fix→pass in this task",
        "summary": "按 rune 解码",
        "goal": "修复含中文字符时 JSON 解析失败。",
        "steps": "1. 复现\n2. 定位 `decodeString`\n3. 修复",
        "key_decisions": "- 按 rune 解码",
        "pitfalls": "- 字节与 rune 混用",
        "open_issues": "无",
    }
    base.update(kw)
    return Experience(**base)  # type: ignore[arg-type]


def test_fixture_file_round_trips_byte_for_byte() -> None:
    raw = (FIXTURES / "proj-go" / "2025-07-12--json-parse-chinese.md").read_bytes()
    exp = parse_experience(raw.decode("utf-8"))
    assert exp.title == "修复含中文参数时 JSON 解析失败"
    assert exp.symbols == ["decodeString", "internal/jsonutil/parser.go"]
    assert exp.pitfalls.startswith("- 字节遍历与 rune")
    assert render_experience(exp).encode("utf-8") == raw


def test_render_then_parse_is_identity_with_awkward_values() -> None:
    exp = _exp(
        title='[WIP] "quoted" title',
        tags=["a, b", "[x]", "中文"],
        summary="第一行\n第二行\t制表",
        project="#not-a-comment",
        key_decisions="",
    )
    assert parse_experience(render_experience(exp)) == exp


def test_human_edited_file_is_read_tolerantly() -> None:
    text = (FIXTURES / "proj-py" / "2025-05-20--数据库迁移.md").read_bytes().decode("utf-8")
    exp = parse_experience(text)
    assert exp.title == "数据库迁移顺序"
    assert exp.task_type == "config"
    assert exp.tags == ["sql", "migration"]
    assert exp.symbols == ["alembic", "env.py"]
    assert exp.goal == "修正 alembic 迁移链。"
    # The unknown section stays with the section before it instead of being lost.
    assert "## Notes from review" in exp.pitfalls and "后来又检查了一遍。" in exp.pitfalls
    assert exp.steps == "1. alembic history"


def test_title_in_brackets_is_text_not_a_list() -> None:
    exp = parse_experience("---\ntitle: [WIP] fix it\ndate: 2025-01-01\n---\n## Goal\n\nx\n")
    assert exp.title == "[WIP] fix it"


def test_heading_inside_code_fence_is_not_a_section() -> None:
    text = "---\ntitle: t\n---\n\n## Steps\n\n```sh\n## Goal\necho hi\n```\n"
    exp = parse_experience(text)
    assert exp.goal == ""
    assert exp.steps == "```sh\n## Goal\necho hi\n```"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "not an experience file"),
        ("just notes, no structure", "not an experience file"),
        ("---\ndate: 2025-01-01\n---\n\n## Goal\n\nx\n", "no title"),
    ],
)
def test_unusable_text_raises_memory_error(text: str, message: str) -> None:
    with pytest.raises(MemoryError_, match=message):
        parse_experience(text)


@settings(max_examples=60, deadline=None)
@given(
    title=st.text(min_size=1, max_size=40).filter(lambda s: s.strip() == s and s.strip()),
    summary=st.text(max_size=80),
    tags=st.lists(st.text(max_size=10).filter(lambda s: s.strip() == s and s), max_size=4),
)
def test_front_matter_round_trips_any_text(title: str, summary: str, tags: list[str]) -> None:
    title = title.replace("\r", "").replace("\n", "")
    if not title.strip():
        return
    exp = _exp(title=title, summary=summary.strip(), tags=tags)
    assert parse_experience(render_experience(exp)).__dict__ == exp.__dict__


@pytest.mark.parametrize(
    ("title", "expected"),
    [
        ("修复 中文/JSON 解析", "修复-中文-json-解析"),
        ("../../etc/passwd", "etc-passwd"),
        ("...hidden", "hidden"),
        ("a\x00b\nc\\d", "a-b-c-d"),
        ("", "untitled"),
        ("///", "untitled"),
    ],
)
def test_slugify(title: str, expected: str) -> None:
    assert slugify(title) == expected


def test_slug_is_capped_in_characters_and_bytes() -> None:
    assert len(slugify("x" * 500)) == 60
    assert len(slugify("汉" * 500).encode("utf-8")) <= 120


def test_write_is_atomic_and_never_overwrites(tmp_path: Path) -> None:
    exp = _exp(summary="长" * 400)
    p1 = write_experience(tmp_path, exp)
    p2 = write_experience(tmp_path, exp)
    p3 = write_experience(tmp_path, exp)
    assert p1.name == "2025-07-12--修复含中文参数时-json-解析失败.md"
    assert p2.name == "2025-07-12--修复含中文参数时-json-解析失败-2.md"
    assert p3.name.endswith("-3.md")
    assert p1.parent == tmp_path / ".agent-shell" / "memory"
    written = parse_experience(p1.read_text(encoding="utf-8"))
    assert len(written.summary) == 300 and written.summary.endswith("…")
    assert exp.summary == "长" * 400  # the caller's object is not modified
    assert sorted(os.listdir(p1.parent)) == sorted(p.name for p in (p1, p2, p3))


def test_write_rejects_bad_dates(tmp_path: Path) -> None:
    with pytest.raises(MemoryError_, match="YYYY-MM-DD"):
        write_experience(tmp_path, _exp(date="../../x"))
    with pytest.raises(MemoryError_, match="calendar"):
        write_experience(tmp_path, _exp(date="2025-02-30"))


def test_write_refuses_memory_dir_symlinked_outside_root(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    outside = tmp_path / "elsewhere"
    (root / ".agent-shell").mkdir(parents=True)
    outside.mkdir()
    (root / ".agent-shell" / "memory").symlink_to(outside)
    with pytest.raises(MemoryError_, match="outside"):
        write_experience(root, _exp())
    assert list(outside.iterdir()) == []


@given(
    st.lists(
        st.sampled_from(["---", "--- ", "...", "title: x", "tags: [a]", "- b", "", "正文 body"]),
        max_size=12,
    )
)
def test_body_after_front_matter_is_the_body_split_front_matter_gives(lines: list[str]) -> None:
    """The indexer's cheap body split agrees with the full parse on any header shape."""
    from agent_shell_bridge.memory.frontmatter import body_after_front_matter, split_front_matter

    text = "\n".join(lines)
    assert body_after_front_matter(text) == split_front_matter(text)[1]
