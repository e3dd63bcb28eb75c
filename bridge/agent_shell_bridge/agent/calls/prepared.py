"""A tool call as the policy left it: its verdict, paths, command and diff.

Made by :mod:`.decide`, read by everything after it in the pipeline (approval,
placement, the handlers, the record); it imports nothing of the pipeline itself.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...policy.shell_words import ParsedCommand
from ...tools import catalogue as cat
from ...tools.catalogue import ToolSpec
from ...types import Risk, Verdict

__all__ = ["Prepared"]


@dataclass
class Prepared:
    spec: ToolSpec[Any]
    args: cat.Args
    verdict: Verdict
    paths: list[tuple[Path, str]]  # resolved, display (relative to root)
    command: str | None = None
    cwd: Path | None = None
    diff: str | None = None
    # An edit's text before (None: a new file) and after, for clients that diff themselves.
    texts: tuple[str | None, str] | None = None
    # The user said yes to this command (now, or by a grant for this session).
    by_user: bool = False
    # The yes came from a grant: the user never saw this run, and the project may
    # have changed since (a Makefile, a script), so it is sandboxed where possible.
    granted: bool = False
    # What a grant for this call is bound to besides its tool (an MCP server's setup).
    grant_scope: str | None = None
    # The policy's parse of ``command``, carried to its placement (parsed once).
    parsed: ParsedCommand | None = None
    # The call's id as clients see it: unique in the session whatever the provider sent.
    call_id: str = ""

    @property
    def cwd_text(self) -> str | None:
        return str(self.cwd) if self.command is not None and self.cwd is not None else None

    @property
    def acts(self) -> bool:
        """Runs a process or writes: what a dry run leaves out."""
        return self.command is not None or self.spec.risk is Risk.WRITE
