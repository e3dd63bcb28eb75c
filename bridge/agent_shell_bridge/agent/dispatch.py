"""Running one allowed (or approved) tool call: in Emacs, here, or as a process.

Each tool's handler returns a :class:`ToolResult`; what the executor records of it
(log entry, client update) happens in :mod:`.record`.
"""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING

from ..errors import ToolFailed
from ..execution import timeout_for
from ..model.types import ToolCall
from ..sandbox import roots_without_git, set_aside_new_git
from ..strict_readonly import strictly_read_only
from ..testing_summary import summarize_test_output
from ..tools import catalogue as cat
from ..tools import files
from ..tools.catalogue import Side
from ..tools.results import ToolResult
from ..types import JSONObject
from .decide import EDITS, Prepared, plan_edit
from .delegate import run_delegate
from .plan import PLAN_TOOLS, handle_plan_tool
from .roles import test_report
from .turnstate import TurnState

if TYPE_CHECKING:
    from .executor import ToolExecutor
    from .live import LiveSession

__all__ = ["execute"]

_TEST_WORDS = ("pytest", "go test", "cargo test", "npm test", "make test", "unittest", "ert-run")


async def execute(
    executor: ToolExecutor, call: ToolCall, turn: TurnState, p: Prepared
) -> ToolResult:
    live = executor.live
    name = p.spec.name
    args = p.args
    if p.spec.external is not None:
        return await p.spec.external.call(args.model_dump())
    if isinstance(args, cat.TaskCompleteArgs):
        turn.completed = args.summary
        return ToolResult({"ok": True})
    if name in PLAN_TOOLS:
        return await handle_plan_tool(live, call, name, args, turn, executor.run)
    if isinstance(args, cat.DelegateArgs):
        return ToolResult(await run_delegate(executor, args, turn))
    if isinstance(args, cat.ReviewVerdictArgs):
        turn.verdict = {"verdict": args.verdict, "comments": args.comments}
        return ToolResult({"ok": True, "verdict": args.verdict})
    if isinstance(args, cat.RequestLogViewArgs):
        view = await asyncio.to_thread(
            live.outputs.view, args.ref, args.offset or 0, args.limit or 200
        )
        return ToolResult(view)
    if isinstance(args, (cat.RunCommandArgs, cat.RunTestArgs)):
        return await _run_process(live, name, p, turn)
    if p.spec.side is Side.EMACS and name in live.client_tools:
        result = await _client_call(live, call, turn, p)
    else:
        result = await _bridge_call(live, name, p, turn)
    if name in EDITS and isinstance(result.get("sha256_after"), str):
        display = p.paths[0][1]
        live.state.read_hashes[display] = result["sha256_after"]
        turn.record_edit(display)
        if isinstance(result.get("diff"), str):
            turn.diffs.append(result["diff"])
    if name == "read_file" and isinstance(result.get("sha256"), str):
        result = live.remember_read(p.paths[0][1], args, result, call.id)
    return ToolResult(result)


async def _client_call(
    live: LiveSession, call: ToolCall, turn: TurnState, p: Prepared
) -> JSONObject:
    display = p.paths[0][1] if p.paths else None
    params = {
        "sessionId": live.state.id,
        "toolCallId": call.id,
        "name": p.spec.name,
        "arguments": p.args.model_dump(exclude_none=True),
        "context": {
            "root": str(live.root),
            "op_id": f"{turn.turn_id}-{call.id}"[:120],
            "turn_id": turn.turn_id,
            "session_id": live.state.id,
            "expected_sha256": live.state.read_hashes.get(display) if display else None,
            "extra_roots": [str(x) for x in live.config.extra_allowed_paths],
        },
    }
    result = await live.runtime.hub.request(
        "tool/call", params, timeout_s=max(p.spec.timeout_s, live.config.client_tool_timeout_s)
    )
    if not isinstance(result, dict):
        return {"result": result}
    return result


async def _bridge_call(live: LiveSession, name: str, p: Prepared, turn: TurnState) -> JSONObject:
    client = live.runtime.client_files
    args = p.args
    if isinstance(args, cat.ReadFileArgs):
        resolved, display = p.paths[0]
        if client is not None:
            text = await client.read(live.state.id, resolved)
            if text is None:
                raise ToolFailed(f"No such file: {display}")
            return files.text_range(
                text.encode("utf-8"), resolved, display, args.start_line, args.end_line
            )
        return await asyncio.to_thread(
            files.read_text, resolved, display, args.start_line, args.end_line
        )
    if isinstance(args, cat.ListDirectoryArgs):
        resolved, display = p.paths[0]
        return await asyncio.to_thread(
            files.list_directory, resolved, display, args.depth or 2, live.root
        )
    if isinstance(args, cat.GrepArgs):
        resolved, display = p.paths[0]
        return await files.grep(
            args.pattern, resolved, display, args.glob, live.root, p.spec.timeout_s
        )
    if name in EDITS:
        resolved, display = p.paths[0]
        ctx = files.EditContext(
            root=live.root,
            op_id=f"{turn.turn_id}-{len(turn.files_changed)}-{int(time.time() * 1000)}",
            turn_id=turn.turn_id,
            session_id=live.state.id,
            expected_sha256=live.state.read_hashes.get(display),
        )
        if client is not None:
            # Planned on the client's text, written back to it.
            plan = await plan_edit(live, name, args, resolved, display, ctx.expected_sha256)
            await asyncio.to_thread(files.snapshot_edit, ctx, resolved, plan)
            await client.write(live.state.id, resolved, plan.new)
            return files.edit_result(plan)
        return await asyncio.to_thread(files.apply_edit, name, args, resolved, display, ctx)
    return await live.headless_tool(name, args, p.paths)


async def _run_process(live: LiveSession, name: str, p: Prepared, turn: TurnState) -> ToolResult:
    assert p.command is not None and p.cwd is not None
    kind = "test" if name == "run_test" else "command"
    timeout = getattr(p.args, "timeout_s", None) or timeout_for(kind, p.command)
    confined = turn.role is not None and turn.role.write_globs is not None
    if p.granted:
        # A later run of a granted command: nobody looked at this one, and what it
        # runs (a Makefile, a script) may have changed since the yes. The sandbox
        # holds it where there is one, with the network the yes gave it.
        network = True
        spec = live.sandbox_spec(network=True, writable=not confined)
    elif p.by_user:
        # Approved: as the user would run it, unless they sandbox approved ones too.
        network = True
        spec = live.sandbox_spec(network=True) if live.config.sandbox_approved_commands else None
    else:
        network = False
        spec = live.sandbox_spec(network=False, writable=not confined)
        if spec is None and not strictly_read_only(p.command, live.writable_roots):
            # Never project code with neither the sandbox nor the user's yes.
            raise ToolFailed("refused: no sandbox, and the user did not approve this command")
    bare = roots_without_git(spec.roots) if spec is not None else []
    set_aside: list[str] = []
    try:
        result = await live.runner.run_shell(p.command, cwd=p.cwd, timeout_s=timeout, sandbox=spec)
    finally:
        if bare:  # also when the run was cancelled: a rename or two, at once
            set_aside = set_aside_new_git(bare)
    payload: JSONObject = {
        "exit_code": result.exit_code,
        "stdout": result.stdout,
        "stderr": result.stderr,
        "duration_ms": result.duration_ms,
        "truncated": result.truncated,
        "timed_out": result.timed_out,
        "sandbox": "none" if spec is None else ("bubblewrap+net" if network else "bubblewrap"),
    }
    if set_aside:
        payload["warning"] = "; ".join(set_aside)
    log_path: str | None = None
    if result.log_path is not None and result.log_path.exists():
        ref, path = live.outputs.adopt(result.log_path)
        payload["log_ref"] = ref
        log_path = str(path)
        full_text = (result.stdout + ("\n" + result.stderr if result.stderr else "")).strip()
    else:
        full_text = (result.stdout + "\n" + result.stderr).strip()
    is_verification = name == "run_test" or any(w in p.command for w in _TEST_WORDS)
    ok = result.exit_code == 0 and not result.timed_out
    if is_verification:
        summary = summarize_test_output(result.stdout + "\n" + result.stderr)
        ok = summary.ok(result.exit_code) and not result.timed_out
        payload["summary"] = {
            "passed": summary.passed,
            "failed": summary.failed,
            "errors": summary.errors,
            "runner": summary.runner,
            "failures": summary.failures[:20],
            "ok": ok,
        }
        turn.verification.append(ok)
        turn.last_test_report = test_report(p.command, result.exit_code, full_text)
    if result.timed_out:
        payload["error"] = f"timed out after {timeout:g} s; the process group was killed"
    return ToolResult(payload, failed=not ok, log_text=full_text, log_path=log_path)
