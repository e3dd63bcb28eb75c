"""Headless fallbacks of Emacs-side tools: what runs when no Emacs handles the tool.

``agent-shell-bridge run``, an ACP client, or an Emacs that does not offer the tool
get these instead: git for the project state and staging, ripgrep for symbols, the
org file's headings as text. A tool without a fallback (``buffer_overview``) tells
the model it needs Emacs.
"""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import TYPE_CHECKING

from ....errors import ToolFailed
from ....sandbox.safe_git import safe_git_argv
from ....tools import files
from ....tools.catalogue import (
    MagitStageArgs,
    OpenFileArgs,
    OrgSearchArgs,
    ProjectDiagnosticsArgs,
    ProjectStatusArgs,
    SymbolSearchArgs,
)
from ....tools.org_outline import org_headings
from ....tools.results import ToolResult
from ....types import JSONObject
from . import remote_perception
from .base import Run

if TYPE_CHECKING:
    from ...session.live import LiveSession

__all__ = [
    "magit_stage",
    "open_file",
    "org_search",
    "project_diagnostics",
    "project_status",
    "symbol_search",
]

SYMBOL_HITS = 50  # matches symbol_search shows


async def project_status(run: Run, args: ProjectStatusArgs) -> ToolResult:
    return ToolResult(await _git_status(run.live))


async def project_diagnostics(run: Run, args: ProjectDiagnosticsArgs) -> ToolResult:
    """Checkers live in the user's Emacs; without one connected there are none."""
    if (remote := run.live.remote) is not None:
        why = remote_perception.UNAVAILABLE.format(
            tool="project_diagnostics", where=remote.target.label
        )
        return ToolResult({"checked_buffers": 0, "note": why})
    return ToolResult(
        {
            "checked_buffers": 0,
            "note": "No checker: no Emacs is connected, so no Flymake or Flycheck runs; "
            "run the project's linter with run_command instead.",
        }
    )


async def symbol_search(run: Run, args: SymbolSearchArgs) -> ToolResult:
    root = run.live.root
    pattern = r"\b" + re.escape(args.symbol) + r"\b"
    if (remote := run.live.remote) is not None:  # the project is there, not in the mirror
        hits, more = await remote_perception.symbol_matches(
            remote, pattern, SYMBOL_HITS, run.prepared.spec.timeout_s
        )
        found: JSONObject = {"symbol": args.symbol, "backend": "grep on the host", "matches": hits}
        if more:
            found["truncated"] = True
        return ToolResult(found)
    # One more than are shown says whether there were more; ripgrep stops there.
    found = await files.grep(
        pattern, root, ".", None, root, 30, secrets=run.live.policy.secrets, limit=SYMBOL_HITS + 1
    )
    matches = found["matches"]
    assert isinstance(matches, list)
    result: JSONObject = {
        "symbol": args.symbol,
        "backend": "ripgrep",
        "matches": matches[:SYMBOL_HITS],
    }
    if len(matches) > SYMBOL_HITS:
        result["truncated"] = True
    return ToolResult(result)


async def open_file(run: Run, args: OpenFileArgs) -> ToolResult:
    resolved, display = run.paths[0]
    if (remote := run.live.remote) is not None:
        name = await remote_perception.visible_name(remote, display)
        return ToolResult(
            {"path": display, "opened": False, "note": f"a remote project's file: {name}"}
        )
    if not resolved.is_file():
        raise ToolFailed(f"No such file: {display}")
    return ToolResult({"path": display, "opened": False, "note": "no Emacs client connected"})


async def org_search(run: Run, args: OrgSearchArgs) -> ToolResult:
    if (remote := run.live.remote) is not None:
        rel = run.paths[0][1] if run.paths else None
        return ToolResult(await remote_perception.org_outline(remote, rel, args.query))
    return ToolResult(await asyncio.to_thread(_org_outline, run.live, run.paths, args.query))


async def magit_stage(run: Run, args: MagitStageArgs) -> ToolResult:
    staged = [d for _, d in run.paths]
    result = await run.live.quiet_run(
        safe_git_argv("--literal-pathspecs", "add", "--", *staged), timeout_s=30
    )
    if result.exit_code != 0:
        raise ToolFailed("git add failed: " + (result.stderr or result.stdout).strip())
    return ToolResult({"staged": staged, "backend": "git"})


async def _git_status(live: LiveSession) -> JSONObject:
    async def git(*argv: str) -> str:
        res = await live.quiet_run(safe_git_argv("-c", "core.quotepath=off", *argv), timeout_s=20)
        if res.exit_code != 0:
            raise ToolFailed("git failed: " + (res.stderr or res.stdout).strip()[:300])
        return res.stdout

    remote = live.remote
    root = remote.target.tramp_name(remote.root) if remote is not None else str(live.root)
    try:
        branch = (await git("rev-parse", "--abbrev-ref", "HEAD")).strip()
    except ToolFailed:
        return {"root": root, "git": False}
    status = await git("status", "--porcelain=v1")
    staged, changed, untracked = [], [], []
    for line in status.splitlines():
        code, path = line[:2], line[3:]
        if code == "??":
            untracked.append(path)
            continue
        if code[0] not in " ?":
            staged.append(path)
        if code[1] not in " ?":
            changed.append(path)
    commits = (await git("log", "-5", "--format=%h %s")).splitlines()
    stat = (await git("diff", "--stat")).strip().splitlines()
    return {
        "root": root,
        "branch": branch,
        "staged": staged,
        "changed": changed,
        "untracked": untracked,
        "commits": commits,
        "diff_stat": stat[-1] if stat else "",
    }


def _org_outline(live: LiveSession, paths: list[tuple[Path, str]], query: str | None) -> JSONObject:
    root = live.root
    if paths:
        target, display = paths[0]
    else:
        target = next(
            (root / n for n in ("README.org", "TODO.org") if (root / n).is_file()),
            root / "README.org",
        )
        display = live.display_path(target)
    if not target.is_file():
        raise ToolFailed(f"No org file {display}")
    return {"file": display, "headings": org_headings(target.read_text(encoding="utf-8"), query)}
