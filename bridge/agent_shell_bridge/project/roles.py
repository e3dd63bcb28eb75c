"""A project's own roles: ``.agent-shell/roles.el``, used only once trusted.

The file arrives with the repository, so whoever wrote the repository wrote its
roles (their prompts, tools and models). It is data, read with the allowlist's
reader and never evaluated, and it takes effect only after the user trusted its
exact bytes (``M-x agent-shell-trust-roles``); any change needs trust again. The
user's own roles (``agent-shell-roles``) win on a name.

The shape is the option's own::

    (setq agent-shell-roles
          '((:name "explorer" :max-steps 8)
            (:name "docs" :prompt "Improve the docs." :tools ("read_file" "task_complete"))))
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from .files import read_project_file
from .sexp import SexpError, Symbol, read_all
from .trust import TrustRecord

__all__ = [
    "ProjectRoles",
    "RoleConfig",
    "load_project_roles",
    "parse_roles",
    "roles_path",
]

Status = Literal["none", "trusted", "untrusted", "invalid"]
_VARIABLE = "agent-shell-roles"


class RoleConfig(BaseModel):
    """A role definition or override: a user's in ``session/new``, a project's in
    ``roles.el`` (the agent's own roles are built from these)."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(pattern=r"^[a-z][a-z0-9_-]{0,31}$")
    description: str | None = Field(None, max_length=300)
    prompt: str | None = Field(None, max_length=8000)
    tools: list[str] | None = None
    max_steps: int | None = Field(None, ge=1, le=100)
    model: str | None = Field(None, max_length=200)
    write_globs: list[str] | None = None


def roles_path(root: Path) -> Path:
    return root / ".agent-shell" / "roles.el"


def read_roles(root: Path) -> bytes | None:
    """The bytes of ``roles.el``; None if absent, a symlink or not a regular file."""
    return read_project_file(roles_path(root))


def _plain(value: Any) -> Any:
    """A datum as JSON-like data: strings, numbers, lists of them."""
    if isinstance(value, Symbol):
        raise SexpError(f"unexpected symbol {value.name!r} in a role (use strings)")
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def _role(item: Any) -> RoleConfig:
    if not isinstance(item, list) or len(item) % 2:
        raise SexpError('each role is a plist: (:name "..." :prompt "..." ...)')
    fields: dict[str, Any] = {}
    for key, value in zip(item[::2], item[1::2], strict=True):
        if not isinstance(key, Symbol) or not key.name.startswith(":"):
            raise SexpError(f"role keys are keywords like :name, not {key!r}")
        fields[key.name[1:].replace("-", "_")] = _plain(value)
    try:
        return RoleConfig.model_validate(fields)
    except ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        where = ".".join(str(x) for x in first["loc"])
        raise SexpError(f"role {fields.get('name')!r}: {where}: {first['msg']}") from exc


def parse_roles(text: str) -> list[RoleConfig]:
    """The roles set by ``(setq agent-shell-roles '(...))`` forms; anything else refused."""
    roles: list[RoleConfig] = []
    for form in read_all(text):
        if (
            isinstance(form, list)
            and len(form) == 3
            and form[0] == Symbol("setq")
            and form[1] == Symbol(_VARIABLE)
            and isinstance(form[2], list)
            and len(form[2]) == 2
            and form[2][0] == Symbol("quote")
            and isinstance(form[2][1], list)
        ):
            roles.extend(_role(item) for item in form[2][1])
            continue
        raise SexpError(f"only (setq {_VARIABLE} '(...)) is read from roles.el")
    return roles


@dataclass(frozen=True)
class ProjectRoles:
    status: Status
    roles: tuple[RoleConfig, ...] = ()
    error: str | None = None


def load_project_roles(root: Path, trust: TrustRecord) -> ProjectRoles:
    """The project's roles when its file is trusted as it is now."""
    content = read_roles(root)
    if content is None:
        return ProjectRoles("none")
    if not trust.is_trusted_content(root, content):
        return ProjectRoles("untrusted")
    try:
        return ProjectRoles("trusted", tuple(parse_roles(content.decode("utf-8"))))
    except (SexpError, UnicodeDecodeError) as exc:
        return ProjectRoles("invalid", error=str(getattr(exc, "message", exc)))
