"""Path confinement: which files the agent may read or write.

Paths are resolved the way the kernel would follow them (``..``, symlinks, dangling
links, links to not-yet-existing targets) before being compared component-wise with
the allowed roots, so neither ``/proj-evil`` next to ``/proj`` nor a symlink inside
the project pointing outside it passes. Writes are further refused for the files that
steer the agent itself (``.agent-shell/allowlist.el`` and ``config.el``), for its
records (``.agent-shell/{logs,snapshots,sessions}`` and the folder itself) and for
anything under ``.git/``, whose hooks would run code; names are compared case-folded
so a case-insensitive file system cannot be used to sneak past.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from ..errors import PathNotAllowed
from .secrets import BUILTIN, SecretList, is_any_secret

__all__ = [
    "MAX_PATH_CHARS",
    "Confinement",
    "expand_home",
    "protected_reason_for_parts",
    "resolve_physical",
    "resolve_physical_text",
]

MAX_PATH_CHARS = 4096
_MAX_COMPONENT_BYTES = 255
_MAX_SYMLINK_HOPS = 40
_PROTECTED_FILES = frozenset({"allowlist.el", "config.el"})
# The bridge's own records: the audit trail, undo snapshots and session checkpoints
# (which hold what the user allowed) must not be forged by the agent.
_PROTECTED_DIRS = frozenset({"logs", "snapshots", "sessions"})
_AGENT_DIR = ".agent-shell"
# $HOME ends where a shell ends the name: "$HOME.bak" is $HOME then ".bak";
# "$HOME_x" is another variable. ${HOME} ends at its brace.
_HOME_VAR_RE = re.compile(r"^(\$\{HOME\}|\$HOME(?![A-Za-z0-9_]))")


def expand_home(path: str, home: Path) -> str:
    """Expand a leading ``~`` or ``$HOME``/``${HOME}`` the way a shell would.

    Only ``~`` and ``~/...``, ``$HOME`` (where a shell ends the name) and
    ``${HOME}`` are expanded. ``~user`` (``~root``, ``~+``, ``~-``) and any other leading
    ``$VARIABLE`` are refused: a shell would expand them to something this side
    cannot know for sure. Any other text is returned unchanged, so ``./~`` and
    ``src/$x`` stay names in the project.
    """
    if path == "~" or path.startswith("~/"):
        return str(home) + path[1:]
    if path.startswith("~"):
        raise PathNotAllowed(
            f"{path!r}: ~user paths are not expanded; write the full path "
            "(or ./~... for a file literally named ~)"
        )
    match = _HOME_VAR_RE.match(path)
    if match is not None:
        return str(home) + path[match.end() :]
    if path.startswith("$"):
        raise PathNotAllowed(
            f"{path!r}: only $HOME and ${{HOME}} are expanded at the start of a path; "
            "write the path in full (or ./$... for a file literally named so)"
        )
    return path


def protected_reason_for_parts(parts: Sequence[str]) -> str | None:
    """Why writing or removing the path made of ``parts`` must be refused, or ``None``.

    ``parts`` are the components below an allowed root. This one predicate serves
    file tools and shell commands alike: anything under ``.git``, the agent's own
    settings, its records (logs, snapshots, sessions) and the ``.agent-shell`` folder
    itself, whose removal or replacement would take the records with it. Other
    folders under ``.agent-shell`` (memory, workspace) stay writable.
    """
    folded = [p.casefold() for p in parts]
    if ".git" in folded:
        return "files under .git/ cannot be written (hooks there would run code)"
    for i, part in enumerate(folded):
        if part != _AGENT_DIR:
            continue
        if i + 1 == len(folded):
            return f"{parts[i]}/ holds the agent's settings and records; it cannot be replaced"
        if folded[i + 1] in _PROTECTED_FILES:
            return f"{parts[i]}/{parts[i + 1]} steers the agent and cannot be written by it"
        if folded[i + 1] in _PROTECTED_DIRS:
            return (
                f"{parts[i]}/{parts[i + 1]}/ holds the bridge's records; the agent cannot change it"
            )
    return None


def resolve_physical(path: Path, known: Sequence[Path] = ()) -> Path:
    """Resolve ``path`` (absolute) following every symlink that exists.

    Components that do not exist are kept literally, with ``..`` after them applied
    lexically; a dangling link is followed to its (missing) target. Raises
    :class:`PathNotAllowed` on symlink loops. ``known`` are directories already
    resolved (no link on their way): a path below one of them starts from there
    instead of looking at each of its components again.
    """
    return Path(resolve_physical_text(str(path), tuple(str(k) for k in known)))


def _anchor_and_parts(text: str) -> tuple[str, list[str]]:
    """Split ``text`` as :class:`pathlib.PurePosixPath` does: anchor, then components.

    Exactly two leading slashes stay the anchor ``//`` (POSIX leaves their meaning
    to the system); empty and ``.`` components are dropped, ``..`` is kept.
    """
    if text.startswith("/"):
        anchor = "//" if text.startswith("//") and not text.startswith("///") else "/"
    else:
        anchor = ""
    return anchor, [p for p in text.split("/") if p and p != "."]


def _parent(path: str) -> str:
    """The parent of a normalised absolute ``path``, as ``PurePosixPath.parent``."""
    i = path.rfind("/")
    if i <= 0:
        return "/"
    if i == 1 and path.startswith("//"):
        return "//"
    return path[:i]


def resolve_physical_text(path: str, known: Sequence[str] = ()) -> str:
    """:func:`resolve_physical` on strings (the result is normalised like a ``Path``).

    The policy resolves every path word of every command; plain string work keeps
    that cheap. ``known`` are the ``str`` of already resolved directories.
    """
    anchor, parts = _anchor_and_parts(path)
    text = anchor + "/".join(parts) or "."
    if not anchor:
        parts = parts[1:]  # as Path.parts[1:] of a relative path (callers pass absolute)
    pending = parts[::-1]
    current = anchor or "/"
    for prefix in known:
        if text.startswith(prefix) and text[len(prefix) : len(prefix) + 1] == "/":
            pending = _anchor_and_parts(text[len(prefix) + 1 :])[1][::-1]
            current = prefix
            break
    hops = 0
    exists = True
    while pending:
        part = pending.pop()
        if part == "..":
            current = _parent(current)
            continue
        candidate = current + part if current.endswith("/") else current + "/" + part
        if not exists:
            current = candidate
            continue
        try:
            st = os.lstat(candidate)
        except FileNotFoundError:
            exists = False
            current = candidate
            continue
        except NotADirectoryError:
            exists = False
            current = candidate
            continue
        except OSError as exc:
            raise PathNotAllowed(f"cannot inspect {candidate}: {exc.strerror}") from exc
        if stat.S_ISLNK(st.st_mode):
            hops += 1
            if hops > _MAX_SYMLINK_HOPS:
                raise PathNotAllowed(f"too many levels of symbolic links at {candidate}")
            target = os.readlink(candidate)
            pending.extend(_anchor_and_parts(target)[1][::-1])
            if os.path.isabs(target):
                current = "/"
            continue
        current = candidate
    return current


@dataclass(frozen=True, slots=True)
class Confinement:
    """The allowed roots and the rules for reading and writing inside them."""

    root: Path
    extra: tuple[Path, ...]
    home: Path
    secrets: SecretList = BUILTIN

    @classmethod
    def create(
        cls,
        root: Path,
        extra_paths: Sequence[Path] = (),
        *,
        home: Path | None = None,
        secrets: SecretList = BUILTIN,
    ) -> Confinement:
        real_root = resolve_physical(Path(os.path.abspath(root)))
        extras = tuple(resolve_physical(Path(os.path.abspath(p))) for p in extra_paths)
        where = home if home is not None else Path(os.path.expanduser("~"))
        return cls(real_root, extras, resolve_physical(Path(os.path.abspath(where))), secrets)

    @property
    def roots(self) -> tuple[Path, ...]:
        return (self.root, *self.extra)

    def containing_root(self, resolved: Path) -> Path | None:
        for base in self.roots:
            if resolved == base or resolved.is_relative_to(base):
                return base
        return None

    def protected_reason(self, resolved: Path) -> str | None:
        """Why a write to ``resolved`` must be refused, or ``None``."""
        base = self.containing_root(resolved)
        rel = resolved.relative_to(base).parts if base is not None else resolved.parts
        return protected_reason_for_parts(rel)

    def shown(self, path: Path) -> str:
        """``path`` as a person reads it: ``~/.bashrc`` rather than ``/home/me/.bashrc``."""
        if path == self.home:
            return "~"
        return f"~/{path.relative_to(self.home)}" if path.is_relative_to(self.home) else str(path)

    def check_syntax(self, path: str) -> None:
        if not isinstance(path, str) or path == "":
            raise PathNotAllowed("empty path")
        if "\x00" in path:
            raise PathNotAllowed("path contains a NUL byte")
        if len(path) > MAX_PATH_CHARS:
            raise PathNotAllowed(f"path is longer than {MAX_PATH_CHARS} characters")
        for part in path.split("/"):
            if len(part.encode("utf-8", "surrogatepass")) > _MAX_COMPONENT_BYTES:
                raise PathNotAllowed(
                    f"a path component is longer than {_MAX_COMPONENT_BYTES} bytes"
                )

    def resolve(
        self,
        path: str,
        op: Literal["read", "write"],
        *,
        cwd: Path | None = None,
        secret_roots: tuple[Path, ...] | None = None,
    ) -> Path:
        """Resolve ``path`` and check it is allowed for ``op``; raise otherwise.

        A leading ``~``/``$HOME`` is expanded first (see :func:`expand_home`); the
        user's secrets (``~/.ssh``, ``~/.aws`` …) are refused whatever the roots.
        ``secret_roots`` are where symlinked secrets really live, when the caller
        found them already (:meth:`SecretList.real_roots`).
        """
        self.check_syntax(path)
        path = expand_home(path, self.home)
        base = cwd if cwd is not None else self.root
        joined = Path(path) if os.path.isabs(path) else base / path
        resolved = resolve_physical(joined, self.roots)
        if self.containing_root(resolved) is None:
            allowed = ", ".join(str(r) for r in self.roots)
            if self.containing_root(Path(os.path.normpath(joined))) is not None:
                # It looks like a file of the project: say where it really leads.
                raise PathNotAllowed(
                    f"{path} → {self.shown(resolved)}, outside the project through a "
                    f"symlink (outside the allowed roots: {allowed})"
                )
            raise PathNotAllowed(
                f"{path!r} resolves to {resolved}, outside the allowed roots ({allowed})"
            )
        if is_any_secret((joined, resolved), self.home, self.secrets, secret_roots):
            raise PathNotAllowed(
                f"{path!r} is among the user's secrets under {self.home} (keys, tokens, "
                "credentials); the agent does not read or write them"
            )
        if op == "write":
            reason = self.protected_reason(resolved)
            if reason is None:
                # The path as written may name .git through a symlink that resolves elsewhere.
                reason = self.protected_reason(Path(os.path.normpath(joined)))
            if reason is not None:
                raise PathNotAllowed(reason)
            try:
                st = os.stat(resolved)
            except OSError:
                st = None
            if st is not None and stat.S_ISREG(st.st_mode) and st.st_nlink > 1:
                raise PathNotAllowed(f"{path!r} is hard-linked elsewhere; writing it is refused")
        return resolved
