"""Agent Skills: folders holding a ``SKILL.md`` (frontmatter, then instructions).

A skill is found in the project's ``.agents/skills/`` and ``.claude/skills/`` and in the
user's own directories. Only its name and description go into every request; its body
and the list of its files are read when the model loads it. Everything is read with
caps and without following a link out of the skill's folder: a ``SKILL.md`` (or the
folder itself) that is a symlink is skipped, a file listing does not descend into
links, and a ``SKILL.md`` is read only up to :data:`BODY_CAP` bytes, whatever its size.
"""

from __future__ import annotations

import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

__all__ = [
    "BODY_CAP",
    "PROJECT_SKILL_DIRS",
    "Skill",
    "SkillBody",
    "find_skills",
    "load_skill",
]

Origin = Literal["project", "user"]

PROJECT_SKILL_DIRS = (".agents/skills", ".claude/skills")
BODY_CAP = 64 * 1024  # bytes of a SKILL.md read, at most
DESCRIPTION_CAP = 1024
MAX_SKILLS = 100
MAX_FILES = 200
_NAME = re.compile(r"\A[a-z0-9][a-z0-9_-]{0,63}\Z")


@dataclass(frozen=True, slots=True)
class Skill:
    name: str
    description: str
    origin: Origin
    folder: Path
    allowed_tools: tuple[str, ...] = ()

    def to_json(self) -> dict[str, object]:
        return {
            "name": self.name,
            "description": self.description,
            "origin": self.origin,
            "path": str(self.folder),
            "allowedTools": list(self.allowed_tools),
        }


@dataclass(frozen=True, slots=True)
class SkillBody:
    skill: Skill
    text: str
    truncated: bool
    files: list[str]


def _read_capped(path: Path) -> tuple[str, bool] | None:
    """The start of ``path`` (a regular file, no link), at most ``BODY_CAP`` bytes."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as fh:
        if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
            return None
        data = fh.read(BODY_CAP + 1)
    truncated = len(data) > BODY_CAP
    return data[:BODY_CAP].decode("utf-8", errors="replace"), truncated


def _frontmatter(text: str) -> tuple[dict[str, str], str]:
    """``key: value`` lines between leading ``---`` lines, and the body after them."""
    lines = text.splitlines(keepends=True)
    if not lines or lines[0].strip() != "---":
        return {}, text
    fields: dict[str, str] = {}
    for n, line in enumerate(lines[1:], 1):
        if line.strip() == "---":
            return fields, "".join(lines[n + 1 :])
        key, sep, value = line.partition(":")
        if sep and key.strip():
            fields[key.strip().lower()] = value.strip().strip("\"'")
    return {}, text  # never closed: no frontmatter


def _skill_at(folder: Path, origin: Origin) -> Skill | None:
    if folder.is_symlink() or not folder.is_dir():
        return None
    read = _read_capped(folder / "SKILL.md")
    if read is None:
        return None
    fields, _ = _frontmatter(read[0])
    name = fields.get("name") or folder.name
    description = fields.get("description", "").strip()
    if not _NAME.match(name) or not description:
        return None
    tools = tuple(t for t in re.split(r"[,\s]+", fields.get("allowed-tools", "")) if t)
    return Skill(name, description[:DESCRIPTION_CAP], origin, folder, tools)


def _skills_in(base: Path, origin: Origin) -> list[Skill]:
    if base.is_symlink() or not base.is_dir():
        return []
    try:
        entries = sorted(base.iterdir())
    except OSError:
        return []
    found = []
    for entry in entries[: MAX_SKILLS * 2]:
        skill = _skill_at(entry, origin)
        if skill is not None:
            found.append(skill)
    return found


def find_skills(root: Path, user_dirs: list[Path]) -> list[Skill]:
    """The skills of the project at ``root`` then the user's; the first of a name wins."""
    found: dict[str, Skill] = {}
    bases: list[tuple[Path, Origin]] = [(root / d, "project") for d in PROJECT_SKILL_DIRS]
    bases += [(d.expanduser(), "user") for d in user_dirs]
    inside = root.resolve()
    for base, origin in bases:
        if origin == "project" and not base.resolve().is_relative_to(inside):
            continue  # .agents or .claude is a link out of the project
        for skill in _skills_in(base, origin):
            found.setdefault(skill.name, skill)
    return list(found.values())[:MAX_SKILLS]


def _files(folder: Path) -> list[str]:
    listed: list[str] = []
    for top, dirs, names in os.walk(folder, followlinks=False):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in sorted(names):
            rel = Path(top, name).relative_to(folder).as_posix()
            if rel != "SKILL.md":
                listed.append(rel)
            if len(listed) >= MAX_FILES:
                return listed
    return listed


def load_skill(skill: Skill) -> SkillBody | None:
    """The skill's instructions (after its frontmatter) and its other files."""
    read = _read_capped(skill.folder / "SKILL.md")
    if read is None:
        return None
    _, body = _frontmatter(read[0])
    return SkillBody(skill, body.strip(), read[1], _files(skill.folder))
