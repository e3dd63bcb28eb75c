"""OrgLogWriter: placement, atomic updates, resume, validation and the summary entry."""

from __future__ import annotations

import itertools
import re
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from agent_shell_bridge.orglog import (
    HEADER_NO_EVAL,
    HEADER_TODO,
    LogEntry,
    LogUpdate,
    OrgLogWriter,
    Prices,
    TaskUsage,
    log_path_for,
    render_entry,
    summary_drawer_entry,
)


def entry(eid: str, parent: str | None = None, **kw: Any) -> LogEntry:
    base: dict[str, Any] = {
        "id": eid,
        "session_id": "s1",
        "parent_id": parent,
        "title": f"title {eid}",
        "timestamp": "2026-11-30T10:15:00+08:00",
        "source": "tool",
    }
    base.update(kw)
    return LogEntry.model_validate(base)


def ids_in(text: str) -> list[str]:
    return re.findall(r"^:LOG_ID: (.*)$", text, flags=re.MULTILINE)


def test_orglog_writer_header_and_path(tmp_path: Path) -> None:
    """The log lives under .agent-shell/logs with the session stamp; header once."""
    started = datetime(2026, 11, 30, 10, 15, 3, tzinfo=UTC)
    path = log_path_for(tmp_path, "s/../1", started)
    assert path == tmp_path / ".agent-shell" / "logs" / "2026-11-30-101503-s_.._1.org"
    writer = OrgLogWriter(path, title="任务\n日志")
    writer.add(entry("t1"))
    text = path.read_text(encoding="utf-8")
    assert text.startswith(
        f"#+TITLE: 任务 日志\n#+STARTUP: overview\n{HEADER_TODO}\n{HEADER_NO_EVAL}\n\n* "
    )
    assert text.count("#+TODO:") == 1
    assert writer.path == path


def _outline(text: str) -> list[tuple[int, str]]:
    """(level, LOG_ID or ``+CONTINUES`` or ``^LOG_UPDATE``) per heading of a file."""
    out: list[tuple[int, str]] = []
    for match in re.finditer(
        r"^(\*+) .*\n:PROPERTIES:\n(?::SOURCE: \w+\n)?:(LOG_ID|CONTINUES|LOG_UPDATE): (.*)$",
        text,
        flags=re.MULTILINE,
    ):
        mark = {"LOG_ID": "", "CONTINUES": "+", "LOG_UPDATE": "^"}[match.group(2)]
        out.append((len(match.group(1)), mark + match.group(3)))
    return out


def test_orglog_writer_steps_stay_under_their_task(tmp_path: Path) -> None:
    """Interleaved tasks: a late step of the first task goes under a continuation of
    it; the entries in outline order are each task with its steps."""
    writer = OrgLogWriter(tmp_path / "l.org", title="t")
    for e in (entry("a"), entry("a1", "a"), entry("b"), entry("b1", "b"), entry("a2", "a")):
        writer.add(e)
    writer.add(entry("a1x", "a1"))
    writer.add(entry("a3", "a"))
    text = writer.path.read_text(encoding="utf-8")
    assert _outline(text) == [
        (1, "a"), (2, "a1"), (1, "b"), (2, "b1"), (1, "+a"), (2, "a2"),
        (2, "+a1"), (3, "a1x"), (2, "a3"),
    ]  # fmt: skip
    assert [e.id for e in writer.entries()] == ["a", "a1", "a1x", "a2", "a3", "b", "b1"]
    view = writer.render()
    assert ids_in(view) == [e.id for e in writer.entries()]
    levels = re.findall(r"^(\*+) ", view, flags=re.MULTILINE)
    assert [len(s) for s in levels] == [1, 2, 3, 2, 2, 1, 2]


def test_orglog_writer_nested_step_follows_its_parent(tmp_path: Path) -> None:
    """In order, a step's child goes straight after it: no continuation needed."""
    writer = OrgLogWriter(tmp_path / "l.org", title="t")
    for e in (entry("a"), entry("a1", "a"), entry("a1x", "a1"), entry("a2", "a")):
        writer.add(e)
    text = writer.path.read_text(encoding="utf-8")
    assert _outline(text) == [(1, "a"), (2, "a1"), (3, "a1x"), (2, "a2")]


def test_orglog_writer_only_appends(tmp_path: Path) -> None:
    """Adds and updates append to the same file; what was written stays as it was."""
    writer = OrgLogWriter(tmp_path / "l.org", title="t")
    writer.add(entry("a", todo="WAIT", properties={"RISK": "write", "TOOL": "run_command"}))
    inode = writer.path.stat().st_ino
    first = writer.path.read_bytes()
    updated = writer.update(
        LogUpdate(
            session_id="s1",
            id="a",
            todo="APPROVED",
            properties={"risk": "dangerous", "EXIT_CODE": 0},
            body_append=[{"kind": "text", "text": "ran"}],  # type: ignore[list-item]
        )
    )
    after = writer.path.read_bytes()
    assert writer.path.stat().st_ino == inode and after.startswith(first)
    assert updated.todo == "APPROVED"
    assert updated.properties == {"RISK": "dangerous", "TOOL": "run_command", "EXIT_CODE": 0}
    added = after[len(first) :].decode("utf-8")
    assert re.match(r"\*\* APPROVED \[[^]]+\] ↳ title a\n:PROPERTIES:\n", added)
    assert ":LOG_UPDATE: a\n:RISK: dangerous\n:EXIT_CODE: 0\n:END:\nran\n" in added
    # A body-only update of the entry at the end goes straight into its body.
    writer.add(entry("a1", "a"))
    mid = writer.path.read_bytes()
    writer.update(
        LogUpdate(session_id="s1", id="a1", body_append=[{"kind": "text", "text": "more"}])  # type: ignore[list-item]
    )
    assert writer.path.read_bytes() == mid + b"more\n"
    assert writer.render().endswith(":LOG_ID: a1\n:END:\nmore\n")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["l.org"]
    with pytest.raises(KeyError):
        writer.update(LogUpdate(session_id="s1", id="nope", todo="DONE"))
    with pytest.raises(ValueError, match="duplicate"):
        writer.add(entry("a"))


def test_orglog_writer_resume_keeps_existing_file(tmp_path: Path) -> None:
    """A resumed session appends to the old log instead of truncating it."""
    path = tmp_path / "l.org"
    first = OrgLogWriter(path, title="t")
    first.add(entry("old"))
    second = OrgLogWriter(path, title="other")
    second.add(entry("new"))
    second.update(LogUpdate(session_id="s1", id="new", todo="DONE"))
    text = path.read_text(encoding="utf-8")
    assert text.count("#+TITLE:") == 1
    assert ids_in(text) == ["old", "new"]


def test_orglog_writer_timestamp_keeps_wall_clock(tmp_path: Path) -> None:
    """The inactive timestamp shows the time in the offset the entry carries."""
    tz = timezone(timedelta(hours=-5))
    e = entry("x", timestamp=datetime(2026, 12, 6, 23, 59, 30, tzinfo=tz).isoformat(), todo="WAIT")
    assert render_entry(e, 2).splitlines()[0] == "** WAIT [2026-12-06 Sun 23:59] title x"


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("timestamp", "2026-11-30T10:15:00"),
        ("timestamp", "yesterday"),
        ("todo", "TODO"),
        ("source", "shell"),
    ],
)
def test_orglog_writer_rejects_bad_entries(field: str, value: str) -> None:
    """Out-of-contract values fail validation at the wire boundary."""
    with pytest.raises(ValidationError):
        entry("x", **{field: value})


def test_orglog_writer_bool_property_is_spelled_out() -> None:
    """Booleans are rendered as JSON spells them, not as 1/0."""
    assert ":DRY_RUN: true\n" in render_entry(entry("x", properties={"dry run": True}), 1)


def test_orglog_writer_summary_entry_counts_and_cost() -> None:
    """The summary step carries usage, duration and the cost when prices are known."""
    usage = TaskUsage(
        model_calls=9,
        tool_calls=14,
        input_tokens=380_000,
        output_tokens=5_000,
        cached_tokens=300_000,
        duration_ms=160_000,
    )
    prices = Prices(
        input_per_million=2.0, output_per_million=8.0, cached_input_per_million=0.5, currency="CNY"
    )
    when = datetime(2026, 11, 30, 10, 17, 40, tzinfo=timezone(timedelta(hours=8)))
    e = summary_drawer_entry(
        entry_id="e-99",
        session_id="s1",
        task_id="t1",
        usage=usage,
        timestamp=when,
        prices=prices,
        model="deepseek-chat",
    )
    assert e.parent_id == "t1" and e.source == "bridge" and e.todo is None
    assert e.properties["TOKENS_CACHED"] == 300_000
    assert e.properties["COST"] == pytest.approx((80_000 * 2 + 300_000 * 0.5 + 5_000 * 8) / 1e6)
    assert e.properties["CURRENCY"] == "CNY" and e.properties["MODEL"] == "deepseek-chat"
    assert "9 model calls, 14 tool calls" in e.title and "2m40s" in e.title
    assert "cost 0.3500 CNY" in e.title
    free = summary_drawer_entry(
        entry_id="e-100", session_id="s1", task_id="t1", usage=usage, timestamp=when
    )
    assert "COST" not in free.properties and "cost" not in free.title


HEADING = re.compile(r"^\*+ ", re.MULTILINE)
BLOCK_LINE = re.compile(r"^[ \t]*#\+(begin|end)_", re.MULTILINE | re.IGNORECASE)
hostile = st.lists(
    st.sampled_from(["*", "#", "+", ":", ",", " ", "\t", "\n", "\r", "a", "中", "END", "end_src"]),
    max_size=40,
).map("".join)


@settings(max_examples=150, deadline=None)
@given(title=hostile, text=hostile, prop=hostile, lang=hostile, as_src=st.booleans())
def test_orglog_writer_hostile_text_cannot_add_structure(
    title: str, text: str, prop: str, lang: str, as_src: bool
) -> None:
    """Whatever the model or a tool emits, an entry is one heading and whole blocks."""
    block: dict[str, Any] = (
        {"kind": "src", "lang": lang or "sh", "text": text, "link": None}
        if as_src
        else {"kind": "text", "text": text}
    )
    rendered = render_entry(entry("x", title=title, properties={"P": prop}, body=[block]), 2)
    assert len(HEADING.findall(rendered)) == 1
    assert len(BLOCK_LINE.findall(rendered)) in (0, 2)
    drawer = rendered.split(":PROPERTIES:\n", 1)[1].split("\n:END:\n", 1)[0]
    assert all(line.startswith(":") for line in drawer.splitlines())


def test_orglog_writer_rotates_before_its_limit(tmp_path: Path) -> None:
    """Past the limit the log goes on in -2.org, -3.org: linked both ways, each file
    whole org under the limit, a step still under its task (a continuation)."""
    path = log_path_for(tmp_path, "s-1", datetime(2026, 11, 30, 10, 15, tzinfo=UTC))
    writer = OrgLogWriter(path, title="t", session_id="s-1", limit=2500)
    writer.add(entry("task", title="任务"))
    for i in range(12):
        writer.add(entry(f"s{i}", "task", body=[{"kind": "text", "text": "输出 " * 40}]))
    files = sorted(path.parent.glob("*.org"), key=lambda p: (len(p.name), p.name))
    assert [p.name for p in files[:3]] == [
        "2026-11-30-101500-s-1.org",
        "2026-11-30-101500-s-1-2.org",
        "2026-11-30-101500-s-1-3.org",
    ]
    assert writer.path == files[-1]
    for before, after in itertools.pairwise(files):
        assert f"[[file:{after.name}]" in before.read_text(encoding="utf-8")
        assert f"[[file:{before.name}]" in after.read_text(encoding="utf-8")
    for p in files:
        text = p.read_text(encoding="utf-8")
        assert len(text.encode()) < 2500 + 1000 and text.startswith("#+TITLE: t")
        assert HEADER_TODO in text
    second = files[1].read_text(encoding="utf-8")
    assert ":CONTINUES: task" in second, "the task goes on under a continuation heading"
    assert sorted(ids_in("".join(p.read_text(encoding="utf-8") for p in files))) == sorted(
        ["task", *[f"s{i}" for i in range(12)]]
    )
    # A rotation cut short (a kill after the next file was begun) is not written over.
    resumed = OrgLogWriter(files[-1], title="t", session_id="s-1", limit=2500, resumed=True)
    stray = files[-1].with_name(f"2026-11-30-101500-s-1-{len(files) + 1}.org")
    stray.write_text("#+TITLE: t\n", encoding="utf-8")
    for i in range(6):
        resumed.add(entry(f"r{i}", body=[{"kind": "text", "text": "输出 " * 40}]))
    assert stray.read_text(encoding="utf-8") == "#+TITLE: t\n"
    assert resumed.path.name == f"2026-11-30-101500-s-1-{len(files) + 2}.org"


def test_orglog_writer_repairs_a_torn_tail_at_any_byte(tmp_path: Path) -> None:
    """Reopened after a write cut at any byte, the file ends whole: no torn line,
    no drawer or block left open, and what follows is still under its heading."""
    path = tmp_path / "l.org"
    writer = OrgLogWriter(path, title="t")
    writer.add(entry("a"))
    whole = path.read_bytes()
    writer.add(entry("b", "a", body=[{"kind": "src", "lang": "sh", "text": "ls\n* 输出"}]))
    data = path.read_bytes()
    for cut in range(len(whole), len(data), 3):
        path.write_bytes(data[:cut])
        again = OrgLogWriter(path, title="t", resumed=True)
        again.add(entry("c"))
        text = path.read_text(encoding="utf-8")
        assert text.startswith(whole.decode("utf-8"))
        tail = text[len(whole) :]
        assert tail.count(":PROPERTIES:") == tail.count(":END:")
        assert tail.count("#+begin_src") == tail.count("#+end_src")
        assert re.search(r"^\* .*Session resumed\n:PROPERTIES:\n", tail, re.M)
        assert text.endswith(":LOG_ID: c\n:END:\n")
