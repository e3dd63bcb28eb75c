"""The output capture keeps exactly the head and tail lines, however reads are cut.

A reference computed from the whole text is compared with what the capture keeps
when the same bytes arrive in random pieces (splitting lines and multi-byte
characters) through one reused buffer, as the pump's reader feeds them: outputs
long enough that the older bytes are forgotten, lines longer than what is kept of
them, tail lines longer than everything kept in memory.
"""

from __future__ import annotations

import itertools

from hypothesis import given, settings
from hypothesis import strategies as st

from agent_shell_bridge.limits import HEAD_LINES, TAIL_LINES
from agent_shell_bridge.process.capture import (
    LINE_BYTES,
    MAX_LINE_CHARS,
    StreamCapture,
    count_newlines,
)


def reference(text: str) -> tuple[str, int]:
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    cut = [
        ln[:MAX_LINE_CHARS] + " [... line cut ...]" if len(ln) > MAX_LINE_CHARS else ln
        for ln in lines
    ]
    head, rest = cut[:HEAD_LINES], cut[HEAD_LINES:]
    tail = rest[-TAIL_LINES:] if rest else []
    omitted = len(rest) - len(tail)
    parts = [*head, *([f"[... {omitted} lines omitted ...]"] if omitted else []), *tail]
    return "\n".join(parts), omitted


def captured(data: bytes, cuts: list[int], capture: StreamCapture | None = None) -> tuple[str, int]:
    """Feed ``data`` cut at ``cuts`` through one buffer that is scribbled over after
    every read, so a capture that kept a view of it instead of a copy shows garbage."""
    capture = capture or StreamCapture()
    bounds = [0, *sorted({c for c in cuts if 0 < c < len(data)}), len(data)]
    size = max((b - a for a, b in itertools.pairwise(bounds)), default=0)
    buf = bytearray(size + 7)
    for a, b in itertools.pairwise(bounds):
        buf[3 : 3 + b - a] = data[a:b]
        capture.feed(buf, 3, 3 + b - a)
        buf[:] = b"\n" * len(buf)
    capture.finish()
    return capture.render(), capture.omitted


def small_captures() -> list[StreamCapture]:
    """The real capture with its memory budgets shrunk, so small inputs reach the
    paths a gigabyte takes: forgetting older bytes, cutting kept bytes into lines
    (with fewer newlines than the tail needs, or more, after an earlier cut)."""
    return [
        StreamCapture(recent_bytes=64, raw_budget=512),
        StreamCapture(recent_bytes=16, raw_budget=3000),
    ]


LINE = st.text(alphabet=st.sampled_from("ab中文🙂 \t"), max_size=40)
LONG_LINE = st.builds(
    lambda char, n: char * n,
    st.sampled_from(["x", "长", "🙂"]),
    st.integers(min_value=MAX_LINE_CHARS - 2, max_value=LINE_BYTES + 3),
)
CUTS = st.lists(st.integers(min_value=0, max_value=200_000), max_size=30)


@settings(max_examples=60, deadline=None)
@given(lines=st.lists(LINE, max_size=700), trailing_newline=st.booleans(), cuts=CUTS)
def test_capture_matches_the_whole_text(
    lines: list[str], trailing_newline: bool, cuts: list[int]
) -> None:
    text = "\n".join(lines) + ("\n" if trailing_newline and lines else "")
    data = text.encode("utf-8")
    assert captured(data, cuts) == reference(text)
    for capture in small_captures():
        assert captured(data, cuts, capture) == reference(text)


@settings(max_examples=40, deadline=None)
@given(
    lines=st.lists(st.one_of(LINE, LINE, LINE, LONG_LINE), max_size=400),
    trailing_newline=st.booleans(),
    cuts=CUTS,
)
def test_capture_with_long_lines_matches_the_whole_text(
    lines: list[str], trailing_newline: bool, cuts: list[int]
) -> None:
    text = "\n".join(lines) + ("\n" if trailing_newline and lines else "")
    data = text.encode("utf-8")
    for capture in small_captures():
        assert captured(data, cuts, capture) == reference(text)
    assert captured(data, cuts) == reference(text)


def test_capture_of_a_long_output_trims_the_window_and_counts_every_line() -> None:
    lines = [f"第{n}行 " + "x" * (n % 50) for n in range(200_000)]
    text = "\n".join(lines) + "\n"
    data = text.encode("utf-8")
    cuts = list(range(0, len(data), 65_521))  # reads that split characters and lines
    render, omitted = captured(data, cuts)
    assert (render, omitted) == reference(text)
    assert omitted == 200_000 - HEAD_LINES - TAIL_LINES


def test_capture_cuts_very_long_lines() -> None:
    text = ("长" * (MAX_LINE_CHARS + 10) + "\n") * (HEAD_LINES + TAIL_LINES + 5)
    render, omitted = captured(text.encode("utf-8"), [7, 4_001, 70_000])
    assert (render, omitted) == reference(text)
    assert omitted == 5


def test_tail_lines_longer_than_everything_kept_are_shown_cut() -> None:
    """Regression: tail lines over 16 KB used to vanish from the tail (the window of
    newest bytes began inside them), leaving fewer lines than there were."""
    head = [f"line {n}" for n in range(HEAD_LINES + 50)]
    tail = [f"尾{n}" + "长" * (3 * LINE_BYTES) for n in range(TAIL_LINES)]  # 48 KB each
    last = "末" * 1_500_000  # 4.5 MB, no newline after it
    text = "\n".join([*head, *tail, last])
    data = text.encode("utf-8")
    render, omitted = captured(data, list(range(0, len(data), 1 << 20)))
    assert (render, omitted) == reference(text)
    shown = render.split("\n")[-TAIL_LINES:]
    assert shown[-1] == "末" * MAX_LINE_CHARS + " [... line cut ...]"
    assert shown[0].startswith("尾1长") and shown[0].endswith(" [... line cut ...]")
    assert omitted == 50 + 1


def test_a_line_of_exactly_the_kept_bytes_and_one_more_is_cut() -> None:
    """4,000 four-byte characters fill the kept bytes exactly; a line going on past
    them must still be marked as cut, though what was kept decodes to 4,000."""
    for extra in ("", "a", "🙂"):
        line = "🙂" * MAX_LINE_CHARS + extra
        text = "\n".join(["x"] * (HEAD_LINES - 1) + [line] * 3 + ["y"] * TAIL_LINES + [line])
        assert captured(text.encode("utf-8"), [5, 70_000]) == reference(text)


def test_line_counts_cover_empty_lines_and_an_unfinished_last_line() -> None:
    for text in ("", "\n", "\n" * 1000, "a", "a\n" * 300 + "b", "\n" * 300 + "tail"):
        for capture in (StreamCapture(), *small_captures()):
            assert captured(text.encode(), [1, 2, 301, 500], capture) == reference(text)


@settings(max_examples=200, deadline=None)
@given(
    data=st.binary(max_size=300_000)
    | st.builds(
        lambda unit, n: unit * n,
        st.sampled_from([b"\n", b"ab\n", b"x" * 99 + b"\n", b"y" * 5000 + b"\n", b"\xe4\xb8\xad"]),
        st.integers(min_value=0, max_value=3000),
    ),
    start=st.integers(min_value=0, max_value=400_000),
    end=st.integers(min_value=0, max_value=400_000),
)
def test_count_newlines_counts_every_newline(data: bytes, start: int, end: int) -> None:
    start, end = sorted((min(start, len(data)), min(end, len(data))))
    expected = data[start:end].count(b"\n")
    assert count_newlines(data, start, end) == expected
    assert count_newlines(bytearray(data), start, end) == expected


def test_every_way_of_cutting_the_newest_bytes_keeps_the_same_tail() -> None:
    """Windows of newest bytes holding just under, exactly and just over the tail's
    newlines, starting inside a line or on one, cut once or many times."""
    body = [f"{n:04d}" for n in range(HEAD_LINES + 450)]
    for ending in ("", "\n", "\nopen"):
        text = "\n".join(body) + ending
        data = text.encode()
        expected = reference(text)
        for recent in range(TAIL_LINES * 5 - 7, TAIL_LINES * 5 + 9):
            for budget in (300, 700, 2_600):
                for piece in (97, 499, 503, 1_000, 4_096):
                    capture = StreamCapture(recent_bytes=recent, raw_budget=budget)
                    cuts = list(range(piece, len(data), piece))
                    assert captured(data, cuts, capture) == expected, (recent, budget, piece)
