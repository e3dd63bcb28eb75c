"""The output capture keeps exactly the head and tail lines, however reads are cut.

A reference computed from the whole text is compared with what the capture keeps
when the same bytes arrive in random pieces (splitting lines and multi-byte
characters), including outputs long enough that the tail window is trimmed.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from agent_shell_bridge.execution import _MAX_LINE_CHARS, _StreamCapture
from agent_shell_bridge.limits import HEAD_LINES, TAIL_LINES


def reference(text: str) -> tuple[str, int]:
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    cut = [
        ln[:_MAX_LINE_CHARS] + " [... line cut ...]" if len(ln) > _MAX_LINE_CHARS else ln
        for ln in lines
    ]
    head, rest = cut[:HEAD_LINES], cut[HEAD_LINES:]
    tail = rest[-TAIL_LINES:] if rest else []
    omitted = len(rest) - len(tail)
    parts = [*head, *([f"[... {omitted} lines omitted ...]"] if omitted else []), *tail]
    return "\n".join(parts), omitted


def captured(data: bytes, cuts: list[int]) -> tuple[str, int]:
    capture = _StreamCapture()
    start = 0
    for cut in sorted(set(cuts)):
        capture.feed(data[start:cut])
        start = cut
    capture.feed(data[start:], final=True)
    return capture.render(), capture.omitted


LINE = st.text(alphabet=st.sampled_from("ab中文🙂 \t"), max_size=40)


@settings(max_examples=60, deadline=None)
@given(
    lines=st.lists(LINE, min_size=0, max_size=700),
    trailing_newline=st.booleans(),
    cuts=st.lists(st.integers(min_value=0, max_value=40_000), max_size=30),
)
def test_capture_matches_the_whole_text(
    lines: list[str], trailing_newline: bool, cuts: list[int]
) -> None:
    text = "\n".join(lines) + ("\n" if trailing_newline and lines else "")
    data = text.encode("utf-8")
    assert captured(data, [c for c in cuts if c <= len(data)]) == reference(text)


def test_capture_of_a_long_output_trims_the_window_and_counts_every_line() -> None:
    lines = [f"第{n}行 " + "x" * (n % 50) for n in range(200_000)]
    text = "\n".join(lines) + "\n"
    data = text.encode("utf-8")
    cuts = list(range(0, len(data), 65_521))  # reads that split characters and lines
    render, omitted = captured(data, cuts)
    assert (render, omitted) == reference(text)
    assert omitted == 200_000 - HEAD_LINES - TAIL_LINES


def test_capture_cuts_very_long_lines() -> None:
    text = ("长" * (_MAX_LINE_CHARS + 10) + "\n") * (HEAD_LINES + TAIL_LINES + 5)
    render, omitted = captured(text.encode("utf-8"), [7, 4_001, 70_000])
    assert (render, omitted) == reference(text)
    assert omitted == 5
