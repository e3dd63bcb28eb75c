"""Experience files: one Markdown file per remembered task, the memory's source of truth.

``<project-root>/.agent-shell/memory/YYYY-MM-DD--<slug>.md`` holds a front matter
(see :mod:`.frontmatter`) and five ``##`` sections.  People edit and delete these
files, so parsing forgives what it can (CRLF, a BOM, reordered or Chinese section
names, YAML-style lists) and fails with :class:`MemoryError_` only when nothing
usable is left.  The index is derived from the files and can always be rebuilt.
"""

from __future__ import annotations

import datetime as dt
import re
import unicodedata
from dataclasses import dataclass, field, replace
from pathlib import Path

from ..errors import MemoryError_
from .files import atomic_create_bytes
from .frontmatter import render_list, render_scalar, split_front_matter
from .hit import clamp_text

__all__ = [
    "MAX_SUMMARY",
    "MEMORY_SUBDIR",
    "SECTIONS",
    "STATUSES",
    "Experience",
    "clamp_text",
    "experience_dir",
    "parse_experience",
    "parse_experience_text",
    "render_experience",
    "slugify",
    "write_experience",
]

MEMORY_SUBDIR = Path(".agent-shell") / "memory"
MAX_SUMMARY = 300
MAX_SLUG_CHARS = 60
MAX_SLUG_BYTES = 120  # keeps names well under the usual 255-byte limit with CJK

# (field name, heading written, other headings accepted when reading)
SECTIONS: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("goal", "Goal", ("goals", "task goal", "objective", "目标", "任务目标")),
    ("steps", "Steps", ("step", "执行步骤", "执行步骤概要", "步骤")),
    ("key_decisions", "Key decisions", ("decisions", "关键决策", "决策")),
    ("pitfalls", "Pitfalls", ("gotchas", "遇到的坑", "坑", "踩坑")),
    ("open_issues", "Open issues", ("open questions", "todo", "遗留问题")),
)
_LIST_KEYS = frozenset({"tags", "symbols", "search_terms"})
#: Review states of an experience (``status:``); an empty one counts as accepted.
STATUSES = ("new", "accepted", "rejected", "forgotten")
_HEADING_TO_FIELD = {
    alias.casefold(): name for name, heading, aliases in SECTIONS for alias in (heading, *aliases)
}
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_H2 = re.compile(r"^##[ \t]+(.+?)[ \t#]*$")
_FENCE = re.compile(r"^[ \t]{0,3}(```|~~~)")


@dataclass
class Experience:
    """The fields of one experience file (sections hold Markdown text)."""

    title: str
    date: str
    project: str
    task_type: str
    tags: list[str] = field(default_factory=list)
    symbols: list[str] = field(default_factory=list)
    trigger: str = ""
    summary: str = ""
    search_terms: list[str] = field(default_factory=list)
    status: str = ""
    goal: str = ""
    steps: str = ""
    key_decisions: str = ""
    pitfalls: str = ""
    open_issues: str = ""


def _strip_blank_edges(lines: list[str]) -> str:
    while lines and not lines[0].strip():
        lines.pop(0)
    while lines and not lines[-1].strip():
        lines.pop()
    return "\n".join(lines)


def _normalise_newlines(text: str) -> str:
    return text.removeprefix("\ufeff").replace("\r\n", "\n").replace("\r", "\n")


def _parse_sections(body: str) -> tuple[dict[str, str], bool]:
    """Cut the body at known ``##`` headings; unknown headings stay with their section."""
    buckets: dict[str, list[str]] = {name: [] for name, _, _ in SECTIONS}
    current: str | None = None
    preface: list[str] = []
    in_fence = False
    for line in body.split("\n"):
        if _FENCE.match(line):
            in_fence = not in_fence
        m = None if in_fence else _H2.match(line)
        if m is not None:
            key = m.group(1).strip().rstrip(":：").strip().casefold()
            key = " ".join(key.split())
            if key in _HEADING_TO_FIELD:
                current = _HEADING_TO_FIELD[key]
                continue
        (buckets[current] if current else preface).append(line)
    found = current is not None
    # Text before the first section (other than an H1 title) belongs to the goal.
    kept = [ln for ln in preface if not re.match(r"^#[ \t]", ln)]
    if any(ln.strip() for ln in kept):
        goal = _strip_blank_edges(kept)
        rest = _strip_blank_edges(buckets["goal"])
        buckets["goal"] = [goal, "", rest] if rest else [goal]
    return {name: _strip_blank_edges(lines) for name, lines in buckets.items()}, found


def _as_text(value: str | list[str] | None) -> str:
    if value is None:
        return ""
    if isinstance(value, list):
        return ", ".join(value)
    return value


def _as_list(value: str | list[str] | None) -> list[str]:
    if value is None:
        return []
    if isinstance(value, list):
        return [v for v in (x.strip() for x in value) if v]
    return [v for v in (x.strip() for x in value.split(",")) if v]


def parse_experience(text: str) -> Experience:
    """Read an experience file, forgiving human edits.

    Raises :class:`MemoryError_` when the text has no front matter and no known
    sections, or when no title can be found.
    """
    return parse_experience_text(text, require_title=True)


def parse_experience_text(text: str, *, require_title: bool) -> Experience:
    """:func:`parse_experience`, optionally accepting an empty title."""
    text = _normalise_newlines(text)
    fm, body = split_front_matter(text, _LIST_KEYS)
    sections, found = _parse_sections(body)
    if fm is None and not found:
        raise MemoryError_(
            "not an experience file: expected a '---' front matter or '## Goal'-style sections"
        )
    fm = fm or {}
    title = _as_text(fm.get("title")).strip()
    if not title:
        h1 = re.search(r"^#[ \t]+(.+)$", body, re.MULTILINE)
        title = h1.group(1).strip() if h1 else ""
    if not title and require_title:
        raise MemoryError_("experience file has no title (front matter 'title:' is empty)")
    return Experience(
        title=title,
        date=_as_text(fm.get("date")).strip(),
        project=_as_text(fm.get("project")).strip(),
        task_type=_as_text(fm.get("task_type") or fm.get("type")).strip(),
        tags=_as_list(fm.get("tags")),
        symbols=_as_list(fm.get("symbols")),
        trigger=_as_text(fm.get("trigger")).strip(),
        summary=_as_text(fm.get("summary")).strip(),
        search_terms=_as_list(fm.get("search_terms")),
        status=_as_text(fm.get("status")).strip().lower(),
        **{name: sections.get(name, "") for name, _, _ in SECTIONS},
    )


def render_experience(exp: Experience) -> str:
    """Write ``exp`` in the file format; :func:`parse_experience` reads it back equal."""
    lines = [
        "---",
        f"title: {render_scalar(exp.title)}",
        f"date: {render_scalar(exp.date)}",
        f"project: {render_scalar(exp.project)}",
        f"task_type: {render_scalar(exp.task_type)}",
        f"tags: {render_list(exp.tags)}",
        f"symbols: {render_list(exp.symbols)}",
        f"trigger: {render_scalar(exp.trigger)}",
        f"summary: {render_scalar(exp.summary)}",
    ]
    if exp.search_terms:
        lines.append(f"search_terms: {render_list(exp.search_terms)}")
    if exp.status:
        lines.append(f"status: {render_scalar(exp.status)}")
    lines.append("---")
    out = "\n".join(lines) + "\n"
    for name, heading, _ in SECTIONS:
        content = _strip_blank_edges(_normalise_newlines(getattr(exp, name)).split("\n"))
        out += f"\n## {heading}\n"
        if content:
            out += f"\n{content}\n"
    return out


_UNSAFE_CHARS = re.compile(r'[/\\<>:"|?*#%{}^`\[\]\'!@$&=+;,~]')


def slugify(text: str) -> str:
    """Make a file-name-safe slug; CJK survives, separators and control chars do not."""
    s = unicodedata.normalize("NFKC", text)
    s = "".join(
        "-" if unicodedata.category(c)[0] in "CZ" or _UNSAFE_CHARS.match(c) else c for c in s
    )
    s = re.sub(r"-{2,}", "-", s.lower()).strip("-.")
    s = s.lstrip(".-")
    out = ""
    for c in s[:MAX_SLUG_CHARS]:
        if len((out + c).encode("utf-8")) > MAX_SLUG_BYTES:
            break
        out += c
    out = out.strip("-.")
    return out or "untitled"


def experience_dir(root: Path) -> Path:
    return root / MEMORY_SUBDIR


def _safe_memory_dir(root: Path) -> Path:
    """Create the memory dir, refusing one that a symlink points outside the root."""
    directory = experience_dir(root)
    try:
        directory.mkdir(parents=True, exist_ok=True)
        real_root = root.resolve(strict=True)
        real_dir = directory.resolve(strict=True)
    except OSError as exc:
        raise MemoryError_(f"cannot create memory directory {directory}: {exc}") from exc
    if not real_dir.is_relative_to(real_root):
        raise MemoryError_(f"memory directory {directory} resolves outside the project root")
    return real_dir


def write_experience(root: Path, exp: Experience) -> Path:
    """Write ``exp`` as a new file under ``<root>/.agent-shell/memory/``; never overwrite.

    The summary is cut to 300 characters; a taken name gets ``-2``, ``-3`` ….
    """
    if not _DATE.match(exp.date):
        raise MemoryError_(f"experience date must be YYYY-MM-DD, got {exp.date!r}")
    try:
        dt.date.fromisoformat(exp.date)
    except ValueError as exc:
        raise MemoryError_(f"experience date is not a calendar date: {exp.date!r}") from exc
    if not exp.title.strip():
        raise MemoryError_("experience has no title")
    exp = replace(exp, summary=clamp_text(exp.summary, MAX_SUMMARY))
    data = render_experience(exp).encode("utf-8")
    directory = _safe_memory_dir(root)
    stem = f"{exp.date}--{slugify(exp.title or exp.task_type)}"
    for n in range(1, 10_000):
        path = directory / (f"{stem}.md" if n == 1 else f"{stem}-{n}.md")
        try:
            if atomic_create_bytes(path, data):
                return path
        except OSError as exc:
            raise MemoryError_(f"cannot write experience file {path}: {exc}") from exc
    raise MemoryError_(f"too many experience files named {stem}")
