"""Full tool outputs on disk, and the bounded views the model sees of them.

Long output is cut to its first 200 and last 100 lines with the omitted count; the
whole text stays in a file named by a ``log_ref`` that ``request_log_view`` pages
through. Keeping the full text out of the prompt is most of context engineering.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from ..errors import InvalidParams
from ..limits import HEAD_LINES, TAIL_LINES

__all__ = ["HEAD_LINES", "TAIL_LINES", "Clipped", "OutputStore", "clip_lines"]

MAX_LINE_CHARS = 2000
_REF = re.compile(r"^out-[0-9]{1,9}$")


@dataclass(frozen=True, slots=True)
class Clipped:
    text: str
    total_lines: int
    omitted_lines: int

    @property
    def truncated(self) -> bool:
        return self.omitted_lines > 0


def _cap_line(line: str) -> str:
    if len(line) <= MAX_LINE_CHARS:
        return line
    return line[:MAX_LINE_CHARS] + f"… [{len(line) - MAX_LINE_CHARS} more characters]"


def clip_lines(
    text: str, *, head: int = HEAD_LINES, tail: int = TAIL_LINES, ref: str | None = None
) -> Clipped:
    """Keep ``head`` + ``tail`` lines, naming how many were left out and where they are."""
    lines = text.splitlines()
    total = len(lines)
    if total <= head + tail:
        return Clipped("\n".join(_cap_line(x) for x in lines), total, 0)
    omitted = total - head - tail
    where = f"; request_log_view(ref={ref!r}) shows them" if ref else ""
    marker = f"[... {omitted} lines omitted{where} ...]"
    kept = [*lines[:head], marker, *lines[total - tail :]]
    return Clipped("\n".join(_cap_line(x) for x in kept), total, omitted)


class OutputStore:
    """Numbered output files for one session under ``directory``."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self._next = 1 + max(
            (int(p.stem[4:]) for p in directory.glob("out-*.txt") if p.stem[4:].isdigit()),
            default=0,
        )

    def save(self, text: str) -> tuple[str, Path]:
        self.directory.mkdir(parents=True, exist_ok=True)
        ref = f"out-{self._next}"
        self._next += 1
        path = self.directory / f"{ref}.txt"
        path.write_text(text, encoding="utf-8", errors="surrogateescape")
        return ref, path

    def adopt(self, source: Path) -> tuple[str, Path]:
        """Register an existing full-output file (a command's log) under a new ref."""
        self.directory.mkdir(parents=True, exist_ok=True)
        ref = f"out-{self._next}"
        self._next += 1
        path = self.directory / f"{ref}.txt"
        source.replace(path)
        return ref, path

    def path_of(self, ref: str) -> Path:
        if not _REF.match(ref):
            raise InvalidParams(f"Unknown log_ref {ref!r}: refs look like 'out-12'")
        path = self.directory / f"{ref}.txt"
        if not path.is_file():
            raise InvalidParams(f"Unknown log_ref {ref!r} in this session")
        return path

    def view(self, ref: str, offset: int = 0, limit: int = 200) -> dict[str, object]:
        path = self.path_of(ref)
        lines: list[str] = []
        total = 0
        with path.open(encoding="utf-8", errors="replace") as fh:
            for number, line in enumerate(fh):
                total = number + 1
                if offset <= number < offset + limit:
                    lines.append(_cap_line(line.rstrip("\n")))
        return {
            "ref": ref,
            "offset": offset,
            "lines": len(lines),
            "total_lines": total,
            "more": offset + len(lines) < total,
            "text": "\n".join(lines),
        }
