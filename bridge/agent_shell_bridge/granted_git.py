"""Which granted commands may run outside the sandbox again: plain git.

A command allowed for the session runs in the sandbox from its second run on,
because what it runs (a Makefile, a script) may have changed since the user's yes.
Inside the sandbox ``.git`` is read-only, so a granted ``git add`` or ``git commit``
would fail there from its second run. Such a command runs outside again when git
runs nothing the agent could have changed without a yes:

- every simple command is the system's ``git`` (found on ``PATH`` outside the
  project), written plainly, with literal words only: no assignments,
  substitutions, functions or redirections;
- its sub-command comes first (no global options: ``-c``, ``--exec-path``,
  ``--git-dir`` and ``-C`` would point git at other code or another repository) and
  is one of a fixed list, without the options that make it run a program
  (``--upload-pack``, ``--receive-pack``, ``--exec``);
- the repository is the project's own ``.git``: no ``.git`` lies between the
  working directory and the project root, so hooks and configuration come from
  the one ``.git`` that the sandbox and the policy keep from the agent.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from .policy.rules.common import effective_name
from .policy.shell_parse import parse_command

__all__ = ["runs_outside_when_granted"]

_SUBCOMMANDS = frozenset(
    {
        "add",
        "branch",
        "checkout",
        "cherry-pick",
        "commit",
        "diff",
        "fetch",
        "log",
        "merge",
        "mv",
        "pull",
        "push",
        "reset",
        "restore",
        "revert",
        "rm",
        "show",
        "stash",
        "status",
        "switch",
        "tag",
    }
)
# Options of those sub-commands that name a program to run.
_RUNS_PROGRAM = ("--upload-pack", "--receive-pack", "--exec")


def runs_outside_when_granted(
    command: str, cwd: Path, root: Path, path_env: str | None = None
) -> bool:
    """Whether a granted ``command`` in ``cwd`` runs outside the sandbox (see module doc)."""
    parsed = parse_command(command)
    if not parsed.commands or parsed.issues or parsed.functions or parsed.redirects:
        return False
    real_root = Path(os.path.realpath(root))
    for cmd in parsed.commands:
        if cmd.assignments or cmd.redirects or cmd.in_substitution or len(cmd.argv) < 2:
            return False
        if not all(word.literal and not word.glob for word in cmd.argv):
            return False
        name, plain = effective_name(cmd.argv[0])
        if not plain or name != "git" or "/" in cmd.argv[0].text:
            return False
        if cmd.argv[1].text not in _SUBCOMMANDS:
            return False
        if any(word.text.startswith(_RUNS_PROGRAM) for word in cmd.argv[2:]):
            return False
    found = shutil.which("git", path=path_env if path_env is not None else os.environ.get("PATH"))
    if found is None:
        return False
    real_git = Path(os.path.realpath(found))
    if real_git == real_root or real_root in real_git.parents:
        return False
    return _repository_is_the_root(Path(os.path.realpath(cwd)), real_root)


def _repository_is_the_root(cwd: Path, root: Path) -> bool:
    """No ``.git`` between ``cwd`` and ``root``, and ``root`` has one."""
    if cwd != root and root not in cwd.parents:
        return False
    here = cwd
    while here != root:
        if os.path.lexists(here / ".git"):
            return False
        here = here.parent
    return os.path.lexists(root / ".git")
