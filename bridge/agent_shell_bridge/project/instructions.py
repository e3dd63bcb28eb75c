"""Standing instructions: the user's global file, the project's AGENTS.md, nested ones.

``AGENTS.md`` (or ``CLAUDE.md`` when there is none) at the project root and the
user's ``~/.config/agent-shell/AGENTS.md`` are read at session start. An
``AGENTS.md`` in a subdirectory applies once the agent works on a file under it.
A project's files arrive with a clone, so they are only ever framed as project text
in the system prompt: they cannot lift the policy or pose as the user.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

__all__ = [
    "FILE_CAP",
    "NESTED_NAME",
    "PROJECT_NAMES",
    "READ_CAP",
    "InstructionFile",
    "Instructions",
    "load_instructions",
    "restored_dirs",
    "user_config_dir",
]

# Per file, in characters; the cut is stated in the prompt so the model knows.
FILE_CAP = 16_000
PROJECT_NAMES = ("AGENTS.md", "CLAUDE.md")
NESTED_NAME = "AGENTS.md"
# Tool arguments that name files or directories the agent works on.
PATH_KEYS = ("path", "paths", "cwd", "file")

Scope = Literal["user", "project", "directory"]


def user_config_dir(env: Mapping[str, str] | None = None) -> Path:
    """``$XDG_CONFIG_HOME/agent-shell``, else ``~/.config/agent-shell``."""
    env = os.environ if env is None else env
    base = env.get("XDG_CONFIG_HOME") or str(Path(env.get("HOME") or Path.home()) / ".config")
    return Path(base) / "agent-shell"


@dataclass(frozen=True)
class InstructionFile:
    """One instruction file as it will be shown to the model."""

    path: Path
    label: str  # as the user and the model see it: "AGENTS.md", "src/AGENTS.md", "~/…"
    scope: Scope
    text: str
    truncated: bool

    def describe(self) -> dict[str, object]:
        return {
            "path": str(self.path),
            "label": self.label,
            "scope": self.scope,
            "truncated": self.truncated,
        }


# Never more than the cap can use (at most 4 bytes a character, and each stray
# byte decodes to one character): a cloned file of any size costs no more.
READ_CAP = 4 * FILE_CAP + 4


def _read_capped(path: Path) -> tuple[str, bool] | None:
    try:
        with path.open("rb") as fh:
            raw = fh.read(READ_CAP)
    except OSError:
        return None
    return _decode_capped(raw)


def _decode_capped(raw: bytes) -> tuple[str, bool]:
    text = raw[:READ_CAP].decode("utf-8", errors="replace")
    if len(text) > FILE_CAP:
        return text[:FILE_CAP], True
    return text, False


def _inside(path: Path, root: Path) -> bool:
    try:
        path.relative_to(root)
    except ValueError:
        return False
    return True


def _project_file(root: Path, relative: Path, scope: Scope) -> InstructionFile | None:
    """The file at ``root/relative`` if it is a regular file that stays inside the root.

    A symlink named AGENTS.md pointing at ``~/.ssh/id_rsa`` must not put a secret
    into the prompt, so the resolved target has to be inside the project.
    """
    candidate = root / relative
    try:
        resolved = candidate.resolve(strict=True)
    except (OSError, RuntimeError):
        return None
    if not resolved.is_file() or not _inside(resolved, root):
        return None
    read = _read_capped(resolved)
    if read is None:
        return None
    text, truncated = read
    return InstructionFile(candidate, relative.as_posix(), scope, text, truncated)


@dataclass
class Instructions:
    """The instruction files of one session and which nested ones are active."""

    root: Path
    files: list[InstructionFile] = field(default_factory=list)
    nested: list[InstructionFile] = field(default_factory=list)
    # Directories already looked at (relative to the root), so each is read once.
    seen_dirs: set[str] = field(default_factory=set)

    def describe(self) -> list[dict[str, object]]:
        return [f.describe() for f in (*self.files, *self.nested)]

    def all_files(self) -> list[InstructionFile]:
        return [*self.files, *self.nested]

    def activate_for(self, paths: Iterable[str]) -> list[InstructionFile]:
        """Load nested AGENTS.md files that govern ``paths``; return the newly active ones."""
        found: list[InstructionFile] = []
        for raw in paths:
            for directory in self._dirs_between(raw):
                nested = self._activate_dir(directory)
                if nested is not None:
                    found.append(nested)
        return found

    def restore(self, active: Iterable[str]) -> None:
        """Re-activate nested files a resumed session had (labels like ``src/AGENTS.md``)."""
        for parent in restored_dirs(active):
            self._activate_dir(parent)

    def pending_dirs(self, paths: Iterable[str]) -> list[Path]:
        """For a project whose files are elsewhere (a remote one: ROOT is its mirror),
        the directories not looked at yet that would govern ``paths``, each once.
        Whether a path names a directory is not known here, so its own name counts
        too: a file's ``x.py/AGENTS.md`` is simply never there."""
        out: list[Path] = []
        for raw in paths:
            for directory in self._dirs_between(raw, whole=True):
                if directory.as_posix() not in self.seen_dirs and directory not in out:
                    out.append(directory)
        return out

    def accept(self, directory: Path, raw: bytes | None) -> InstructionFile | None:
        """``directory/AGENTS.md`` read elsewhere (RAW, None when there is none),
        taken as :meth:`activate_for` takes a local one; None when already seen."""
        key = directory.as_posix()
        if key in self.seen_dirs:
            return None
        self.seen_dirs.add(key)
        if raw is None:
            return None
        text, truncated = _decode_capped(raw)
        relative = directory / NESTED_NAME
        nested = InstructionFile(
            self.root / relative, relative.as_posix(), "directory", text, truncated
        )
        self.nested.append(nested)
        return nested

    def _activate_dir(self, directory: Path) -> InstructionFile | None:
        key = directory.as_posix()
        if key in self.seen_dirs:
            return None
        self.seen_dirs.add(key)
        nested = _project_file(self.root, directory / NESTED_NAME, "directory")
        if nested is not None:
            self.nested.append(nested)
        return nested

    def _dirs_between(self, raw: str, *, whole: bool = False) -> list[Path]:
        """Subdirectories from the root (exclusive) down to the one holding ``raw``."""
        if not raw or "\x00" in raw:
            return []
        path = Path(raw)
        if not path.is_absolute():
            path = self.root / path
        try:
            relative = Path(os.path.normpath(path)).relative_to(self.root)
        except ValueError:  # outside the project, ".." included (normpath folded it)
            return []
        # A path naming a directory governs that directory too.
        whole = whole or (self.root / relative).is_dir()
        parts = relative.parts if whole else relative.parts[:-1]
        return [Path(*parts[: i + 1]) for i in range(len(parts))]


def restored_dirs(active: Iterable[str]) -> list[Path]:
    """The directories of a resumed session's active nested files (their labels)."""
    out: list[Path] = []
    for label in active:
        parent = Path(label).parent
        if not parent.is_absolute() and ".." not in parent.parts and parent.parts:
            out.append(parent)
    return out


def _user_file(config_dir: Path) -> InstructionFile | None:
    path = config_dir / "AGENTS.md"
    if not path.is_file():
        return None
    read = _read_capped(path)
    if read is None:
        return None
    text, truncated = read
    home = Path.home()
    label = f"~/{path.relative_to(home).as_posix()}" if _inside(path, home) else str(path)
    return InstructionFile(path, label, "user", text, truncated)


def load_instructions(root: Path, config_dir: Path | None = None) -> Instructions:
    """The user's global file and the project's own (AGENTS.md, else CLAUDE.md)."""
    found = Instructions(root=root)
    user = _user_file(config_dir if config_dir is not None else user_config_dir())
    if user is not None:
        found.files.append(user)
    for name in PROJECT_NAMES:
        project = _project_file(root, Path(name), "project")
        if project is not None:
            found.files.append(project)
            break
    return found


def paths_in_arguments(arguments: Mapping[str, object]) -> list[str]:
    """The file and directory names a tool call's arguments mention."""
    out: list[str] = []
    for key in PATH_KEYS:
        value = arguments.get(key)
        if isinstance(value, str):
            out.append(value)
        elif isinstance(value, list):
            out.extend(v for v in value if isinstance(v, str))
    return out
