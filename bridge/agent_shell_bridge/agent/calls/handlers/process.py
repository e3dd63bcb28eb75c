"""``run_command`` and ``run_test``: the command the policy prepared, as a process.

Where it runs is :mod:`...sandbox.placement`'s to say; this runs it there, sets
aside git metadata a sandboxed run planted, and summarises test-like runs, which
count as the turn's verification.
"""

from __future__ import annotations

import asyncio
import time

from ....errors import ToolFailed
from ....process.runner import ProcessResult, timeout_for
from ....process.test_summary import summarize_test_output
from ....sandbox import placement, protected_git, set_aside_after_run
from ....tools.catalogue import RunCommandArgs, RunTestArgs
from ....tools.results import ToolResult
from ....types import Decision, JSONObject, Risk
from ...session.roles import test_report
from .base import Run
from .jobs import remote_cwd, start_job

__all__ = ["run_command", "run_test"]

_TEST_WORDS = ("pytest", "go test", "cargo test", "npm test", "make test", "unittest", "ert-run")


async def run_command(run: Run, args: RunCommandArgs) -> ToolResult:
    if args.background:
        return await start_job(run, args, _place(run))
    return await _run_process(run, "command", args.timeout_s)


async def run_test(run: Run, args: RunTestArgs) -> ToolResult:
    return await _run_process(run, "test", None)


def _place(run: Run) -> placement.Placement:
    """Where the prepared command runs (refused: raised), after the user's yes is
    checked against what the command means now."""
    live, turn, p = run.live, run.turn, run.prepared
    assert p.command is not None and p.cwd is not None
    if p.by_user and not p.granted:
        _still_as_approved(run)
    where = placement.place(
        p.command,
        parsed=p.parsed,
        cwd=p.cwd,
        root=live.root,
        roots=live.writable_roots,
        sandbox=live.sandbox,
        asked=placement.Asked(by_user=p.by_user, granted=p.granted),
        confined=turn.role is not None and turn.role.write_globs is not None,
        sandbox_approved=live.config.sandbox_approved_commands,
    )
    if where.refused is not None:
        raise ToolFailed(where.refused)
    return where


async def _run_process(run: Run, kind: str, timeout_s: float | None) -> ToolResult:
    live, p = run.live, run.prepared
    assert p.command is not None and p.cwd is not None
    where = _place(run)
    timeout = timeout_s or timeout_for(kind, p.command)
    if live.remote is not None:
        ran = await live.remote.runner.run_placement(
            p.command, where, cwd=remote_cwd(run), timeout_s=timeout
        )
        label = where.label + " (remote)"
        return _result(run, kind, timeout, ran.result, label, list(ran.set_aside))
    spec = (
        live.sandbox_spec(network=where.network, writable=where.writable)
        if where.sandboxed
        else None
    )
    watched = spec is not None and not spec.roots_read_only
    protected = protected_git(spec.roots) if spec is not None else []
    since = time.time_ns()
    set_aside: list[str] = []
    try:
        result = await live.runner.run_shell(
            p.command, cwd=p.cwd, timeout_s=timeout, sandbox=spec, settings=where.settings
        )
    finally:
        if watched and spec is not None:
            # Also when the run was cancelled: the walk finishes in its thread.
            set_aside = await asyncio.shield(
                asyncio.to_thread(
                    set_aside_after_run,
                    spec.roots,
                    since_ns=since,
                    protected=protected,
                    display=live.root,
                )
            )
    return _result(run, kind, timeout, result, "none" if spec is None else where.label, set_aside)


def _result(
    run: Run,
    kind: str,
    timeout: float,
    result: ProcessResult,
    label: str,
    set_aside: list[str],
) -> ToolResult:
    """The tool result of a finished run (a remote one's too)."""
    live, turn, p = run.live, run.turn, run.prepared
    assert p.command is not None
    payload: JSONObject = {
        "exit_code": result.exit_code,
        "stdout": result.stdout,
        "stderr": result.stderr,
        "duration_ms": result.duration_ms,
        "truncated": result.truncated,
        "timed_out": result.timed_out,
        "sandbox": label,
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
    is_verification = kind == "test" or any(w in p.command for w in _TEST_WORDS)
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
    return ToolResult(
        payload,
        failed=not ok,
        log_text=full_text,
        log_path=log_path,
        log_omitted=result.omitted_lines,
    )


def _still_as_approved(run: Run) -> None:
    """Refuse an approved command that means something else now than when it was asked.

    The user may take minutes to answer; a symlink planted meanwhile would turn the
    in-project write they approved into one outside (or a new reason to refuse it).
    """
    p = run.prepared
    assert p.command is not None and p.cwd is not None
    now = run.live.policy.check_command(p.command, cwd=p.cwd)
    changed = now.risk is Risk.DANGEROUS and now.reason != p.verdict.reason
    if now.decision is Decision.DENY or changed:
        raise ToolFailed(
            f"refused: since you approved it, this command has come to mean more: {now.reason}"
        )
