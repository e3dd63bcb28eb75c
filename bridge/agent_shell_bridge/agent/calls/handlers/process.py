"""``run_command`` and ``run_test``: the command the policy prepared, as a process.

Without the user's yes a command runs in the sandbox (network off; read-only
project for a role confined to some files); an approved one runs as the user would
run it, unless approved commands are sandboxed too. Test-like runs are summarised
and count as the turn's verification.
"""

from __future__ import annotations

import asyncio
import time

from ....errors import ToolFailed
from ....process.runner import timeout_for
from ....process.test_summary import summarize_test_output
from ....sandbox import protected_git, set_aside_after_run
from ....sandbox.granted_git import runs_outside_when_granted
from ....sandbox.safe_git import safe_git_environment
from ....sandbox.strict_readonly import strictly_read_only
from ....tools.catalogue import RunCommandArgs, RunTestArgs
from ....tools.results import ToolResult
from ....types import Decision, JSONObject, Risk
from ...session.roles import test_report
from .base import Run

__all__ = ["run_command", "run_test"]

_TEST_WORDS = ("pytest", "go test", "cargo test", "npm test", "make test", "unittest", "ert-run")


async def run_command(run: Run, args: RunCommandArgs) -> ToolResult:
    return await _run_process(run, "command", args.timeout_s)


async def run_test(run: Run, args: RunTestArgs) -> ToolResult:
    return await _run_process(run, "test", None)


async def _run_process(run: Run, kind: str, timeout_s: float | None) -> ToolResult:
    live, turn, p = run.live, run.turn, run.prepared
    assert p.command is not None and p.cwd is not None
    if p.by_user and not p.granted:
        _still_as_approved(run)
    timeout = timeout_s or timeout_for(kind, p.command)
    confined = turn.role is not None and turn.role.write_globs is not None
    settings: dict[str, str] | None = None
    if p.granted and (confined or not runs_outside_when_granted(p.command, p.cwd, live.root)):
        # A later run of a granted command: nobody looked at this one, and what it
        # runs (a Makefile, a script) may have changed since the yes. The sandbox
        # holds it where there is one, with the network the yes gave it.
        network = True
        spec = live.sandbox_spec(network=True, writable=not confined)
    elif p.granted:
        # Plain git on the project's own repository runs nothing the agent could
        # change, and needs the .git the sandbox keeps read-only: it runs as
        # approved, with nothing the repository's configuration could make it run.
        network, settings = True, safe_git_environment()
        spec = live.sandbox_spec(network=True) if live.config.sandbox_approved_commands else None
    elif p.by_user:
        # Approved: as the user would run it, unless they sandbox approved ones too.
        network = True
        spec = live.sandbox_spec(network=True) if live.config.sandbox_approved_commands else None
    else:
        network = False
        spec = live.sandbox_spec(network=False, writable=not confined)
        if spec is None and not strictly_read_only(p.command, live.writable_roots, cwd=p.cwd):
            # Never project code with neither the sandbox nor the user's yes.
            raise ToolFailed("refused: no sandbox, and the user did not approve this command")
    watched = spec is not None and not spec.roots_read_only
    protected = protected_git(spec.roots) if spec is not None else []
    since = time.time_ns()
    set_aside: list[str] = []
    try:
        result = await live.runner.run_shell(
            p.command, cwd=p.cwd, timeout_s=timeout, sandbox=spec, settings=settings
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
    return ToolResult(payload, failed=not ok, log_text=full_text, log_path=log_path)


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
