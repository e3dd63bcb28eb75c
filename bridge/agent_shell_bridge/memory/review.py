"""Review decisions on experience files: accept, reject, forget, new search terms.

A decision changes one front-matter line (``status:`` or ``search_terms:``) of the
user's file and leaves every other byte as it was (line endings, a BOM, comments,
the sections); a missing line is added just before the closing ``---``. The file
is replaced atomically and never deleted: a forgotten experience stays on disk,
marked, and out of search (index.py keeps its row empty).
"""

from __future__ import annotations

import re
from pathlib import Path

from ..errors import MemoryError_
from .experience import MEMORY_SUBDIR, STATUSES
from .extract import validate_search_terms
from .files import atomic_write_bytes
from .frontmatter import render_list, render_scalar

__all__ = ["DECISIONS", "experience_root", "set_front_matter_line"]

#: Decision → the status it writes.
DECISIONS = {"accept": "accepted", "edit": "accepted", "reject": "rejected", "forget": "forgotten"}

_DELIM = re.compile(rb"^---[ \t]*\r?$")
_CLOSE = re.compile(rb"^(?:---|\.\.\.)[ \t]*\r?$")


def experience_root(path: Path) -> Path:
    """The project root of the experience file ``path`` (``<root>/.agent-shell/memory/x.md``).

    Raises :class:`MemoryError_` for anything else: another directory, another
    suffix, a hidden name, a symbolic link or a missing file.
    """
    if not path.is_absolute():
        raise MemoryError_(f"experience path must be absolute: {path}")
    if path.suffix != ".md" or path.name.startswith("."):
        raise MemoryError_(f"not an experience file (*.md): {path}")
    if path.parent.parent.name != MEMORY_SUBDIR.parts[0] or path.parent.name != "memory":
        raise MemoryError_(f"not in a project's .agent-shell/memory/ directory: {path}")
    if path.is_symlink() or not path.is_file():
        raise MemoryError_(f"no such experience file: {path}")
    return path.parent.parent.parent


def set_front_matter_line(path: Path, key: str, value: str | list[str]) -> None:
    """Write ``key: value`` into ``path``'s front matter, changing nothing else."""
    if key == "status":
        assert isinstance(value, str)
        if value not in STATUSES:
            raise MemoryError_(f"unknown status {value!r} (one of {', '.join(STATUSES)})")
        rendered = render_scalar(value)
    elif key == "search_terms":
        terms, problem = validate_search_terms(
            render_list(value) if isinstance(value, list) else value
        )
        if problem and value:
            raise MemoryError_(problem)
        rendered = render_list(terms)
    else:
        raise MemoryError_(f"this front-matter key cannot be set here: {key}")
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise MemoryError_(f"cannot read {path}: {exc}") from exc
    bom = b"\xef\xbb\xbf" if data.startswith(b"\xef\xbb\xbf") else b""
    lines = data[len(bom) :].split(b"\n")
    if not lines or not _DELIM.match(lines[0]):
        raise MemoryError_(f"{path.name} has no front matter to mark")
    end = next((i for i in range(1, len(lines)) if _CLOSE.match(lines[i])), None)
    if end is None:
        raise MemoryError_(f"{path.name}'s front matter is never closed")
    eol = b"\r" if lines[0].endswith(b"\r") else b""
    new_line = f"{key}: {rendered}".encode() + eol
    pattern = re.compile(
        rb"^" + re.escape(key).encode().replace(b"_", b"[_ -]") + rb"[ \t]*:", re.I
    )
    at = next((i for i in range(1, end) if pattern.match(lines[i])), None)
    if at is None:
        lines.insert(end, new_line)
    else:
        # A YAML-style list goes on in "- item" lines under the key: replace those too.
        stop = at + 1
        while stop < end and re.match(rb"^[ \t]*-([ \t]|\r?$)", lines[stop]):
            stop += 1
        lines[at:stop] = [new_line]
    try:
        atomic_write_bytes(path, bom + b"\n".join(lines))
    except OSError as exc:
        raise MemoryError_(f"cannot write {path}: {exc}") from exc
