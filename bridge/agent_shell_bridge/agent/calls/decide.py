"""The policy's say on one validated tool call, before anything runs.

Paths are confined, commands parsed and classified, edits planned against the
file as it is (read before write), and grants the user gave for this session
applied. The answer is a :class:`Prepared` call: the verdict and everything the
later steps need (resolved paths, the command and its directory, the diff).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...errors import PathNotAllowed, ToolFailed
from ...process.test_summary import detect_test_command
from ...sandbox import placement
from ...tools import catalogue as cat
from ...tools.catalogue import ToolSpec
from ...types import Decision, Risk, Verdict
from ..session.grants import grant_key
from ..session.turnstate import TurnState
from .edit_plan import plan_edit
from .prepared import Prepared

if TYPE_CHECKING:
    from ..session.live import LiveSession

__all__ = ["Prepared", "approval_note", "confine_role_writes", "decide"]

_NO_TEST_COMMAND = (
    "no test command could be detected for this project (no Makefile test "
    "target, pytest files, go.mod, Cargo.toml or npm test script); pass one "
    "in `command`"
)


def _denied(
    spec: ToolSpec[Any],
    args: cat.Args,
    risk: Risk,
    reason: str,
    paths: list[tuple[Path, str]] | None = None,
) -> Prepared:
    return Prepared(spec, args, Verdict(Decision.DENY, risk, reason), paths or [])


def confine_role_writes(turn: TurnState, prepared: Prepared) -> Prepared:
    """A role with write globs (the tester) may only edit files that match them."""
    role = turn.role
    if role is None or role.write_globs is None or not prepared.spec.edits:
        return prepared
    outside = [d for _, d in prepared.paths if not role.may_write(d)]
    if not outside:
        return prepared
    reason = f"the {role.name} role may only write test files, not {', '.join(outside)}"
    return _denied(prepared.spec, prepared.args, Risk.WRITE, reason)


async def decide(live: LiveSession, spec: ToolSpec[Any], args: cat.Args) -> Prepared:
    if live.state.mode == "ask" and spec.risk is not Risk.READ and spec.name != "task_complete":
        return _denied(spec, args, spec.risk or Risk.WRITE, "ask mode: no edits or commands")
    if spec.external is not None:
        return _decide_external(live, spec, args)
    paths: list[tuple[Path, str]] = []
    try:
        for arg, candidate in spec.path_values(args):
            if live.remote is not None:  # the host's absolute names of project files
                candidate = live.remote.localize(candidate)
            resolved = live.policy.resolve_path(candidate, arg.op)
            paths.append((resolved, live.display_path(resolved)))
    except PathNotAllowed as exc:
        return _denied(spec, args, spec.risk or Risk.READ, exc.message)

    if isinstance(args, cat.RunTestArgs):
        command = args.command or (
            detect_test_command(live.root)
            if live.remote is None
            else await live.remote.test_command()
        )
        if not command:
            return _denied(spec, args, Risk.READ, _NO_TEST_COMMAND)
        return _decide_command(live, spec, args, command, live.root)
    if isinstance(args, cat.RunCommandArgs):
        # Its one path is the working directory, confined above; the log shows the
        # command rather than a PATH.
        cwd = paths[0][0] if paths else live.root
        return _decide_command(live, spec, args, args.command, cwd)
    if spec.risk is Risk.READ or spec.risk is None:
        return Prepared(spec, args, Verdict(Decision.ALLOW, Risk.READ, "read-only"), paths)

    # Write risk: read before write, then confirm unless allowed for the session.
    diff = None
    texts: tuple[str | None, str] | None = None
    if spec.edits:
        assert isinstance(args, cat.EditArgs)
        resolved, display = paths[0]
        exists = (
            resolved.exists()
            if live.remote is None
            else await live.remote.files.exists(resolved.relative_to(live.root).as_posix())
        )
        if exists and display not in live.state.read_hashes:
            reason = (
                f"{display} exists and has not been read in this session; "
                "read_file it first, then edit"
            )
            return _denied(spec, args, Risk.WRITE, reason, paths)
        try:
            plan = await plan_edit(
                live, args, resolved, display, live.state.read_hashes.get(display)
            )
        except ToolFailed as exc:
            return _denied(spec, args, Risk.WRITE, exc.message, paths)
        diff = plan.diff
        texts = (plan.old if plan.old_bytes is not None else None, plan.new)
    if grant_key(spec.name, None) in live.state.session_allow:
        verdict = Verdict(Decision.ALLOW, Risk.WRITE, "allowed for this session by the user")
    else:
        verdict = Verdict(Decision.CONFIRM, Risk.WRITE, "changes files in the project")
    return Prepared(spec, args, verdict, paths, diff=diff, texts=texts)


def _decide_external(live: LiveSession, spec: ToolSpec[Any], args: cat.Args) -> Prepared:
    assert spec.external is not None
    verdict = spec.external.verdict()
    scope = spec.external.identity()
    if (
        verdict.decision is Decision.CONFIRM
        and grant_key(spec.name, None, scope=scope) in live.state.session_allow
    ):
        verdict = Verdict(Decision.ALLOW, verdict.risk, "allowed for this session by the user")
    secret = live.policy.secret_named_in(args.model_dump())
    if secret is not None and verdict.decision is not Decision.DENY:  # asks, never granted
        why = f"its arguments name {secret!r}, among the user's secrets; {verdict.reason}"
        verdict = Verdict(Decision.CONFIRM, Risk.DANGEROUS, why)
    return Prepared(spec, args, verdict, [], grant_scope=scope)


def _decide_command(
    live: LiveSession, spec: ToolSpec[Any], args: cat.Args, command: str, cwd: Path
) -> Prepared:
    judged = live.policy.judge_command(command, cwd=cwd)
    verdict = placement.unasked_verdict(
        judged.verdict,
        command,
        parsed=judged.parsed,
        roots=live.writable_roots,
        cwd=cwd,
        sandbox=live.sandbox,
    )
    granted = (
        verdict.decision is Decision.CONFIRM
        and verdict.risk is Risk.WRITE
        and grant_key(spec.name, command, str(cwd)) in live.state.session_allow
    )
    if granted:
        verdict = Verdict(Decision.ALLOW, verdict.risk, "allowed for this session by the user")
    return Prepared(
        spec,
        args,
        verdict,
        [],
        command=command,
        cwd=cwd,
        by_user=granted,
        granted=granted,
        parsed=judged.parsed,
    )


def approval_note(live: LiveSession, p: Prepared) -> str | None:
    """Where an approved command will run, said before the user decides."""
    if p.command is None:
        return None
    note = placement.approval_note(
        sandbox=live.sandbox, sandbox_approved=live.config.sandbox_approved_commands
    )
    if isinstance(p.args, cat.RunCommandArgs) and p.args.background:
        note = (
            "As a background job: it goes on running after this step, until it ends, "
            f"is killed or the session ends. {note}"
        )
    return note
