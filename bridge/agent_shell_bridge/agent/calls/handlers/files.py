"""The file tools the bridge runs: reading, listing, searching, and edits without Emacs.

When an editor client shares its files (an ACP client's ``fs``), reads see its
unsaved text and edits are planned on it and written back to it; otherwise the disk.
"""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING

from ....errors import NotWritten, ToolFailed
from ....tools import files
from ....tools.catalogue import EditArgs, GrepArgs, ListDirectoryArgs, ReadFileArgs
from ....tools.results import ToolResult
from ....types import JSONObject
from ..edit_plan import plan_edit
from .base import Run

if TYPE_CHECKING:
    pass

__all__ = ["edit", "grep", "list_directory", "read_file"]


async def read_file(run: Run, args: ReadFileArgs) -> ToolResult:
    live = run.live
    resolved, display = run.paths[0]
    client = live.client.files
    if client is not None:
        text = await client.read(live.state.id, resolved)
        if text is None:
            raise ToolFailed(f"No such file: {display}")
        result = files.text_range(
            text.encode("utf-8"), resolved, display, args.start_line, args.end_line
        )
    else:
        result = await asyncio.to_thread(
            files.read_text, resolved, display, args.start_line, args.end_line
        )
    if isinstance(result.get("sha256"), str):
        result = live.remember_read(display, args, result, run.call.id)
    return ToolResult(result)


async def list_directory(run: Run, args: ListDirectoryArgs) -> ToolResult:
    resolved, display = run.paths[0]
    root = run.live.root
    if run.live.remote is not None:  # listed there, links never followed
        rel = resolved.relative_to(root).as_posix() or "."
        depth = args.depth or 2
        listing = await run.live.remote.files.list(rel, depth=depth, skip=sorted(files.SKIP_DIRS))
        result: JSONObject = {"path": display, "depth": depth, "entries": listing["entries"]}
        if listing.get("truncated"):
            result["truncated"] = True
        return ToolResult(result)
    secrets = run.live.policy.secrets
    return ToolResult(
        await asyncio.to_thread(
            files.list_directory, resolved, display, args.depth or 2, root, secrets=secrets
        )
    )


async def grep(run: Run, args: GrepArgs) -> ToolResult:
    resolved, display = run.paths[0]
    live = run.live
    if live.remote is not None:  # searched there
        found = await live.remote.files.grep(
            args.pattern,
            resolved.relative_to(live.root).as_posix() or ".",
            glob=args.glob,
            skip=sorted(files.SKIP_DIRS),
            limit=files.MAX_GREP_HITS,
            timeout_s=run.prepared.spec.timeout_s,
        )
        result: JSONObject = {"pattern": args.pattern, "path": display, "matches": found["matches"]}
        if found.get("truncated"):
            result["truncated"] = True
        return ToolResult(result)
    timeout = run.prepared.spec.timeout_s
    return ToolResult(
        await files.grep(
            args.pattern,
            resolved,
            display,
            args.glob,
            run.live.root,
            timeout,
            secrets=run.live.policy.secrets,
        )
    )


async def edit(run: Run, args: EditArgs) -> ToolResult:
    """An edit tool without Emacs: planned and written here, with an undo snapshot."""
    live, turn = run.live, run.turn
    resolved, display = run.paths[0]
    ctx = files.EditContext(
        root=live.root,
        op_id=f"{turn.turn_id}-{len(turn.files_changed)}-{int(time.time() * 1000)}",
        turn_id=turn.turn_id,
        session_id=live.state.id,
        expected_sha256=live.state.read_hashes.get(display),
    )
    client = live.client.files
    if client is not None:
        # Planned on the client's text, written back to it.
        plan = await plan_edit(live, args, resolved, display, ctx.expected_sha256)
        await asyncio.to_thread(files.snapshot_edit, ctx, resolved, plan)
        try:
            await client.write(live.state.id, resolved, plan.new)
        except NotWritten:  # refused before anything changed: no edit to undo
            await asyncio.to_thread(files.drop_snapshot, ctx, plan)
            raise
        return ToolResult(files.edit_result(plan))
    return ToolResult(await asyncio.to_thread(files.apply_edit, args, resolved, display, ctx))
