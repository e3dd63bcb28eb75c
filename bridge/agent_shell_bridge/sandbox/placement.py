"""Where a command the policy prepared runs: the one module that decides.

Four outcomes, from who said yes and what this machine offers:

- **in the sandbox, without network**: the policy allowed it and nobody was asked;
  a role confined to some files (the tester) gets the project read-only too;
- **in the sandbox, with network**: a later run of a command granted for the
  session (nobody looked at this run, and what it runs may have changed since the
  yes), or any approved command when the user sandboxes approved ones too;
- **outside, as the user would run it**: approved now, or a granted plain git on
  the project's own repository (it needs the ``.git`` the sandbox keeps read-only,
  and runs with the safe git settings);
- **refused**: neither the sandbox nor the user's yes, and not strictly read-only.

Before anyone is asked, :func:`unasked_verdict` narrows what runs unasked where
there is no sandbox, and :func:`approval_note` says where an approved command will
run. The command's parse (:class:`~..policy.shell_parse.ParsedCommand`) comes from
the policy's judgement, so the line is parsed once.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..policy.shell_words import ParsedCommand
from ..types import Decision, Risk, Verdict
from .granted_git import runs_outside_when_granted
from .safe_git import safe_git_environment
from .status import SandboxStatus
from .strict_readonly import strictly_read_only

__all__ = ["Asked", "Placement", "approval_note", "place", "unasked_verdict"]


@dataclass(frozen=True, slots=True)
class Asked:
    """Who said yes to this run of the command."""

    # The user said yes (now, or by a grant for this session).
    by_user: bool = False
    # The yes came from a grant: this very run was never shown to the user.
    granted: bool = False


@dataclass(frozen=True, slots=True)
class Placement:
    """Where one run goes (see the module doc)."""

    sandboxed: bool
    network: bool
    # The project's roots writable inside (False: a role confined to some files).
    writable: bool = True
    # Environment the bridge sets after the scrub (git's safe settings).
    settings: Mapping[str, str] | None = None
    # Why it does not run at all.
    refused: str | None = None

    @property
    def label(self) -> str:
        """What the tool result's ``sandbox`` field says."""
        if not self.sandboxed:
            return "none"
        return "bubblewrap+net" if self.network else "bubblewrap"


def place(
    command: str,
    *,
    parsed: ParsedCommand | None,
    cwd: Path,
    root: Path,
    roots: Sequence[Path],
    sandbox: SandboxStatus,
    asked: Asked,
    confined: bool,
    sandbox_approved: bool,
) -> Placement:
    """Where ``command`` (approved as ``asked`` says) runs in this session."""
    boxed = sandbox.available
    if asked.granted and (confined or not runs_outside_when_granted(command, cwd, root, parsed)):
        return Placement(sandboxed=boxed, network=True, writable=not confined)
    if asked.granted:
        return Placement(
            sandboxed=boxed and sandbox_approved, network=True, settings=safe_git_environment()
        )
    if asked.by_user:
        return Placement(sandboxed=boxed and sandbox_approved, network=True)
    if boxed:
        return Placement(sandboxed=True, network=False, writable=not confined)
    if strictly_read_only(command, roots, cwd=cwd, parsed=parsed):
        return Placement(sandboxed=False, network=False)
    return Placement(
        sandboxed=False,
        network=False,
        refused="refused: no sandbox, and the user did not approve this command",
    )


def unasked_verdict(
    verdict: Verdict,
    command: str,
    *,
    parsed: ParsedCommand | None,
    roots: Sequence[Path],
    cwd: Path,
    sandbox: SandboxStatus,
) -> Verdict:
    """The policy's ``allow`` where nothing would limit the command: without a sandbox
    only strictly read-only commands run unasked; project code waits for a yes."""
    if verdict.decision is not Decision.ALLOW or sandbox.available:
        return verdict
    if strictly_read_only(command, roots, cwd=cwd, parsed=parsed):
        return verdict
    return Verdict(
        Decision.CONFIRM,
        Risk.WRITE,
        f"no sandbox ({sandbox.detail}), so only strictly read-only commands "
        f"run without asking; the policy said: {verdict.reason}",
    )


def approval_note(*, sandbox: SandboxStatus, sandbox_approved: bool) -> str:
    """Where an approved command will run, said before the user decides."""
    if not sandbox.available:
        return "No sandbox here: if you approve, it runs with your full permissions."
    if sandbox_approved:
        return "If you approve, it runs in the sandbox, with network access."
    return (
        "If you approve, it runs outside the sandbox, with your full permissions "
        "and network access."
    )
