"""What a repository ships: its files read safely, and the trust they need.

- :mod:`.files`: reading a file the project ships without being led elsewhere;
- :mod:`.trust`: the one mechanism for trusting allowlist.el, config.el, roles.el,
  .mcp.json and hooks.json;
- :mod:`.hooks`: the project's hook commands (``.agent-shell/hooks.json``);
- :mod:`.sexp`: the reader of ``.agent-shell/*.el`` files as data;
- :mod:`.instructions`: AGENTS.md and friends;
- :mod:`.commands`: custom ``/NAME`` prompts;
- :mod:`.roles`: the project's ``roles.el`` and the role configuration model;
- :mod:`.worktree`: the main working tree of a linked git worktree (its records).

The names below load with their module on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._face import lazy_face

if TYPE_CHECKING:
    from .files import read_project_file, reviewed_bytes
    from .hooks import ProjectHooks, load_project_hooks
    from .instructions import Instructions, load_instructions
    from .roles import RoleConfig, load_project_roles
    from .trust import TRUSTED_KINDS, ProjectTrust, project_trust
    from .worktree import main_worktree

__all__ = [
    "TRUSTED_KINDS",
    "Instructions",
    "ProjectHooks",
    "ProjectTrust",
    "RoleConfig",
    "load_instructions",
    "load_project_hooks",
    "load_project_roles",
    "main_worktree",
    "project_trust",
    "read_project_file",
    "reviewed_bytes",
]

_WHERE = {
    "Instructions": "instructions",
    "ProjectHooks": "hooks",
    "ProjectTrust": "trust",
    "RoleConfig": "roles",
    "TRUSTED_KINDS": "trust",
    "load_instructions": "instructions",
    "load_project_hooks": "hooks",
    "load_project_roles": "roles",
    "main_worktree": "worktree",
    "project_trust": "trust",
    "read_project_file": "files",
    "reviewed_bytes": "files",
}

__getattr__ = lazy_face(__name__, _WHERE)
