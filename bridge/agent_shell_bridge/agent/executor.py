"""One tool call from the model, end to end.

validate → mode check → policy decision → (ask the user) → run (in Emacs or here)
→ record in the action log and the session → a framed result for the model.

The policy decides, not the model: every path is confined, every command parsed
and classified, and anything the policy does not allow outright either waits for
the user or never runs.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from ..errors import BridgeError, Cancelled, PathNotAllowed, ToolFailed
from ..events import ClientError
from ..execution import timeout_for
from ..model.types import ToolCall
from ..orglog import SrcBlock, TextBlock
from ..sandbox import roots_without_git, set_aside_new_git
from ..strict_readonly import strictly_read_only
from ..testing_summary import detect_test_command, summarize_test_output
from ..tools import catalogue as cat
from ..tools import files
from ..tools.catalogue import CATALOGUE, Side, ToolSpec
from ..types import Decision, JSONObject, Risk, Verdict
from .approval import PermissionRequest
from .delegate import run_delegate
from .grants import add_grant, grant_key, grant_record
from .outputs import clip_lines
from .plan import PLAN_TOOLS, handle_plan_tool
from .reporter import src, text
from .roles import role_refusal, test_report
from .turnstate import TurnState, call_signature

if TYPE_CHECKING:
    from .live import LiveSession

__all__ = ["Outcome", "ToolExecutor"]

log = logging.getLogger(__name__)

_PATH_ARGS = {
    "read_file": "path",
    "list_directory": "path",
    "grep": "path",
    "open_file": "path",
    "org_search": "file",
    "replace_region": "path",
    "insert_text": "path",
    "replace_pattern": "path",
    "write_file": "path",
}
_EDITS = frozenset({"replace_region", "insert_text", "replace_pattern", "write_file"})
_TEST_WORDS = ("pytest", "go test", "cargo test", "npm test", "make test", "unittest", "ert-run")


@dataclass(frozen=True, slots=True)
class Outcome:
    status: str  # completed | failed | denied | rejected
    payload: JSONObject

    @property
    def failed(self) -> bool:
        return self.status != "completed"


@dataclass
class _Prepared:
    spec: ToolSpec
    args: cat.Args
    verdict: Verdict
    paths: list[tuple[Path, str]]  # resolved, display (relative to root)
    command: str | None = None
    cwd: Path | None = None
    diff: str | None = None
    # The user said yes to this command (now, or by a grant for this session).
    by_user: bool = False


def _confine_role_writes(turn: TurnState, prepared: _Prepared) -> _Prepared:
    """A role with write globs (the tester) may only edit files that match them."""
    role = turn.role
    if role is None or role.write_globs is None or prepared.spec.name not in _EDITS:
        return prepared
    outside = [d for _, d in prepared.paths if not role.may_write(d)]
    if not outside:
        return prepared
    reason = f"the {role.name} role may only write test files, not {', '.join(outside)}"
    return _Prepared(prepared.spec, prepared.args, Verdict(Decision.DENY, Risk.WRITE, reason), [])


def _title(name: str, raw: JSONObject) -> str:
    if name == "delegate" and isinstance(raw.get("task"), str):
        task = raw["task"].strip().splitlines()[0][:80] if raw["task"].strip() else ""
        return f"delegate {raw.get('role')}: {task}"
    main = raw.get("command") or raw.get("path") or raw.get("symbol") or raw.get("pattern")
    if main is None and isinstance(raw.get("paths"), list):
        main = " ".join(str(p) for p in raw["paths"])
    return f"{name} {main}" if main else name


class ToolExecutor:
    def __init__(self, live: LiveSession) -> None:
        self.live = live

    # -- entry point -----------------------------------------------------------

    async def run(self, call: ToolCall, turn: TurnState) -> Outcome:
        live = self.live
        raw: JSONObject
        try:
            raw = call.parsed_arguments()
        except BridgeError as exc:
            raw = {}
            return await self._early_failure(call, turn, raw, exc.message)
        title = _title(call.name, raw)
        if turn.role is not None:  # a role's step, shown under its name
            title = f"[{turn.role.name}] {title}"
        spec = CATALOGUE.get(call.name) or live.external_tool(call.name)
        await live.reporter.update(
            "tool_call",
            toolCallId=call.id,
            title=title,
            kind=spec.kind if spec else "other",
            status="pending",
            rawInput=raw,
        )
        if spec is None:
            return await self._early_failure(call, turn, raw, f"Unknown tool {call.name!r}")
        try:
            args = spec.args.model_validate(raw)
        except ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(str(x) for x in e['loc']) or 'arguments'}: {e['msg']}"
                for e in exc.errors(include_url=False, include_input=False)
            )
            return await self._early_failure(call, turn, raw, f"Invalid arguments: {problems}")
        refusal = role_refusal(turn, spec.name)
        if refusal:
            return await self._early_failure(call, turn, raw, refusal)
        prepared = await self._decide(spec, args, raw)
        prepared = _confine_role_writes(turn, prepared)
        return await self._carry_out(call, turn, raw, title, prepared)

    async def _early_failure(
        self, call: ToolCall, turn: TurnState, raw: JSONObject, message: str
    ) -> Outcome:
        await self.live.reporter.entry(
            f"{call.name}: refused before running",
            source="tool",
            parent=turn.task_entry,
            todo="FAILED",
            properties={"TOOL": call.name, "DECISION": "deny"},
            body=[text(message)],
        )
        await self.live.reporter.update(
            "tool_call_update", toolCallId=call.id, status="failed", rawOutput={"error": message}
        )
        return Outcome("failed", {"error": message})

    # -- policy ----------------------------------------------------------------

    async def _decide(self, spec: ToolSpec, args: cat.Args, raw: JSONObject) -> _Prepared:
        live = self.live
        if live.state.mode == "ask" and spec.risk is not Risk.READ and spec.name != "task_complete":
            verdict = Verdict(
                Decision.DENY, spec.risk or Risk.WRITE, "ask mode: no edits or commands"
            )
            return _Prepared(spec, args, verdict, [])
        if spec.external is not None:
            return self._decide_external(spec, args)
        op = "write" if spec.risk is Risk.WRITE else "read"
        paths: list[tuple[Path, str]] = []
        try:
            for candidate in self._path_args(spec, args):
                resolved = live.policy.resolve_path(candidate, op)  # type: ignore[arg-type]
                paths.append((resolved, live.display_path(resolved)))
        except PathNotAllowed as exc:
            return _Prepared(
                spec, args, Verdict(Decision.DENY, spec.risk or Risk.READ, exc.message), []
            )

        if spec.name in ("run_command", "run_test"):
            return await self._decide_command(spec, args)
        if spec.risk is Risk.READ or spec.risk is None:
            return _Prepared(spec, args, Verdict(Decision.ALLOW, Risk.READ, "read-only"), paths)

        # Write risk: read before write, then confirm unless allowed for the session.
        diff = None
        if spec.name in _EDITS:
            resolved, display = paths[0]
            if resolved.exists() and display not in live.state.read_hashes:
                reason = (
                    f"{display} exists and has not been read in this session; "
                    "read_file it first, then edit"
                )
                return _Prepared(spec, args, Verdict(Decision.DENY, Risk.WRITE, reason), paths)
            try:
                plan = await self._plan_edit(
                    spec.name, args, resolved, display, live.state.read_hashes.get(display)
                )
            except ToolFailed as exc:
                return _Prepared(spec, args, Verdict(Decision.DENY, Risk.WRITE, exc.message), paths)
            diff = plan.diff
        if grant_key(spec.name, None) in live.state.session_allow:
            verdict = Verdict(Decision.ALLOW, Risk.WRITE, "allowed for this session by the user")
        else:
            verdict = Verdict(Decision.CONFIRM, Risk.WRITE, "changes files in the project")
        return _Prepared(spec, args, verdict, paths, diff=diff)

    async def _plan_edit(
        self, name: str, args: Any, resolved: Path, display: str, expected: str | None
    ) -> files.PlannedEdit:
        """The edit against the file as the client has it, else as the disk has it."""
        client = self.live.runtime.client_files
        if client is None:
            return await asyncio.to_thread(files.plan_edit, name, args, resolved, display, expected)
        text = await client.read(self.live.state.id, resolved)
        current = text.encode("utf-8") if text is not None else None
        return files.plan_edit(name, args, resolved, display, expected, current=current)

    async def _client_edit(
        self, name: str, args: Any, resolved: Path, display: str, ctx: files.EditContext
    ) -> JSONObject:
        """An edit carried out through the client: planned on its text, written back to it."""
        client = self.live.runtime.client_files
        assert client is not None
        plan = await self._plan_edit(name, args, resolved, display, ctx.expected_sha256)
        await asyncio.to_thread(files.snapshot_edit, ctx, resolved, plan)
        await client.write(self.live.state.id, resolved, plan.new)
        return files.edit_result(plan)

    def _decide_external(self, spec: ToolSpec, args: cat.Args) -> _Prepared:
        assert spec.external is not None
        verdict = spec.external.verdict()
        if (
            verdict.decision is Decision.CONFIRM
            and grant_key(spec.name, None) in self.live.state.session_allow
        ):
            verdict = Verdict(Decision.ALLOW, verdict.risk, "allowed for this session by the user")
        secret = self.live.policy.secret_named_in(args.model_dump())
        if secret is not None and verdict.decision is not Decision.DENY:  # asks, never granted
            why = f"its arguments name {secret!r}, among the user's secrets; {verdict.reason}"
            verdict = Verdict(Decision.CONFIRM, Risk.DANGEROUS, why)
        return _Prepared(spec, args, verdict, [])

    def _path_args(self, spec: ToolSpec, args: cat.Args) -> list[str]:
        if spec.name == "magit_stage":
            return list(args.paths)  # type: ignore[attr-defined]
        key = _PATH_ARGS.get(spec.name)
        if key is None:
            return []
        value = getattr(args, key, None)
        if value is None:
            return ["."] if spec.name in ("list_directory", "grep") else []
        return [value]

    async def _decide_command(self, spec: ToolSpec, args: cat.Args) -> _Prepared:
        live = self.live
        if spec.name == "run_test":
            command = args.command or detect_test_command(live.root)  # type: ignore[attr-defined]
            if not command:
                verdict = Verdict(
                    Decision.DENY,
                    Risk.READ,
                    "no test command could be detected for this project (no Makefile test "
                    "target, pytest files, go.mod, Cargo.toml or npm test script); pass one "
                    "in `command`",
                )
                return _Prepared(spec, args, verdict, [])
            cwd = live.root
        else:
            command = args.command  # type: ignore[attr-defined]
            try:
                cwd = (
                    live.policy.resolve_path(args.cwd, "read")  # type: ignore[attr-defined]
                    if args.cwd  # type: ignore[attr-defined]
                    else live.root
                )
            except PathNotAllowed as exc:
                return _Prepared(spec, args, Verdict(Decision.DENY, Risk.READ, exc.message), [])
        verdict = live.policy.check_command(command, cwd=cwd)
        if (
            verdict.decision is Decision.ALLOW
            and not live.sandbox.available
            and not strictly_read_only(command, live.writable_roots)
        ):
            # Nothing would limit it: project code (tests, builds, allowlisted
            # commands) runs only with the user's yes.
            verdict = Verdict(
                Decision.CONFIRM,
                Risk.WRITE,
                f"no sandbox ({live.sandbox.detail}), so only strictly read-only commands "
                f"run without asking; the policy said: {verdict.reason}",
            )
        by_user = False
        if (
            verdict.decision is Decision.CONFIRM
            and verdict.risk is Risk.WRITE
            and grant_key(spec.name, command, str(cwd)) in live.state.session_allow
        ):
            verdict = Verdict(Decision.ALLOW, verdict.risk, "allowed for this session by the user")
            by_user = True
        return _Prepared(spec, args, verdict, [], command=command, cwd=cwd, by_user=by_user)

    # -- carrying out ----------------------------------------------------------

    async def _carry_out(
        self, call: ToolCall, turn: TurnState, raw: JSONObject, title: str, p: _Prepared
    ) -> Outcome:
        live = self.live
        verdict = p.verdict
        props: dict[str, str | int | float] = {
            "TOOL": p.spec.name,
            "DECISION": verdict.decision.value,
            "RISK": verdict.risk.value,
        }
        if p.paths:
            props["PATH"] = p.paths[0][1]
        if p.spec.external is not None:
            props.update(p.spec.external.log_properties())
        if isinstance(raw.get("line") or raw.get("start_line"), int):
            props["LINE"] = int(raw.get("line") or raw.get("start_line") or 1)
        body: list[TextBlock | SrcBlock] = []
        if p.command is not None:
            body.append(src(p.command, "sh"))
        elif raw and p.spec.name not in _EDITS:
            body.append(src(json.dumps(raw, ensure_ascii=False, indent=1), "json"))
        if verdict.decision is not Decision.ALLOW:
            body.append(
                text(f"Policy: {verdict.decision.value} ({verdict.risk.value}): {verdict.reason}")
            )
        note = self._approval_note(p) if verdict.decision is Decision.CONFIRM else None
        if note is not None:
            body.append(text(note))
        if p.diff:
            body.append(src(p.diff, "diff"))

        if verdict.decision is Decision.DENY:
            await live.reporter.entry(
                title,
                source="tool",
                parent=turn.task_entry,
                todo="REJECTED",
                properties=props,
                body=body,
            )
            message = f"Refused by the safety policy: {verdict.reason}"
            await live.reporter.update(
                "tool_call_update",
                toolCallId=call.id,
                status="failed",
                rawOutput={"error": message, "decision": "deny"},
            )
            return Outcome(
                "denied", {"error": message, "decision": "deny", "risk": verdict.risk.value}
            )

        # Dry run: no process at all (a "read-only" test run still runs project code)
        # and no write; the bridge's own file reads go ahead.
        acts = p.command is not None or p.spec.risk is Risk.WRITE
        if live.dry_run and acts:
            await live.reporter.entry(
                f"[dry-run] {title}",
                source="tool",
                parent=turn.task_entry,
                todo="DONE",
                properties={**props, "DRY_RUN": "t"},
                body=body,
            )
            await live.reporter.update(
                "tool_call_update",
                toolCallId=call.id,
                status="completed",
                rawOutput={"dry_run": True},
            )
            return Outcome(
                "completed",
                {
                    "dry_run": True,
                    "decision": verdict.decision.value,
                    "note": "dry-run: nothing was executed",
                },
            )

        entry_id = await live.reporter.entry(
            title,
            source="tool",
            parent=turn.task_entry,
            todo="WAIT" if verdict.decision is Decision.CONFIRM else None,
            properties=props,
            body=body,
        )
        if verdict.decision is Decision.CONFIRM:
            request = PermissionRequest(
                session_id=live.state.id,
                tool_call_id=call.id,
                tool=p.spec.name,
                title=title,
                kind=p.spec.kind,
                raw_input=raw,
                risk=verdict.risk,
                reason=verdict.reason,
                log_entry_id=entry_id,
                diff=p.diff,
                note=note,
                command=p.command,
                cwd=_cwd_text(p),
            )
            try:
                answer = await live.approver.ask(request)
            except asyncio.CancelledError:
                # The turn was cancelled while the step waited: close the WAIT step
                # in the log and tell the client, then let the cancel go on.
                await asyncio.shield(self._cancelled_while_waiting(entry_id, call.id))
                raise
            if answer.option == "cancelled":
                await live.reporter.change(entry_id, todo="REJECTED", body=[text("Cancelled.")])
                raise Cancelled("the turn was cancelled while waiting for approval")
            if not answer.approved:
                why = answer.reason or "no reason given"
                await live.reporter.change(
                    entry_id,
                    todo="REJECTED",
                    properties={"DECISION": "rejected"},
                    body=[text(f"Rejected by the user: {why}")],
                )
                await live.reporter.update(
                    "tool_call_update",
                    toolCallId=call.id,
                    status="failed",
                    rawOutput={"error": "rejected by the user", "reason": why},
                )
                return Outcome(
                    "rejected",
                    {"error": "The user rejected this step.", "user_reason": why},
                )
            p.by_user = True
            if answer.option == "allow_session":
                add_grant(live.state, grant_record(p.spec.name, p.command, _cwd_text(p)))
            await live.reporter.change(
                entry_id,
                todo="APPROVED",
                properties={
                    "DECISION": "approved" if answer.option == "allow_once" else "approved-session"
                },
            )

        await live.reporter.update("tool_call_update", toolCallId=call.id, status="in_progress")
        started = time.monotonic()
        try:
            payload = await self._execute(call, turn, p)
            status = "failed" if payload.get("_failed") else "completed"
        except ToolFailed as exc:
            payload, status = {"error": exc.message}, "failed"
        except ClientError as exc:
            payload, status = {"error": exc.message}, "failed"
        except BridgeError as exc:
            if isinstance(exc, Cancelled):
                raise
            payload, status = {"error": exc.message}, "failed"
        duration = int((time.monotonic() - started) * 1000)
        payload.pop("_failed", None)
        log_body: list[TextBlock | SrcBlock] = []
        shown = payload.get("_log_text")
        payload.pop("_log_text", None)
        link = payload.pop("_log_path", None)
        if isinstance(shown, str) and shown:
            clipped = clip_lines(shown)
            log_body.append(src(clipped.text, "text", link=link, omitted=clipped.omitted_lines))
        elif "error" in payload:
            log_body.append(text(f"Error: {payload['error']}"))
        if isinstance(payload.get("diff"), str) and payload["diff"] and not p.diff:
            log_body.append(src(payload["diff"], "diff"))
        done_props: dict[str, str | int | float] = {"DURATION_MS": duration}
        if isinstance(payload.get("sandbox"), str):
            done_props["SANDBOX"] = payload["sandbox"]
        if "exit_code" in payload and payload["exit_code"] is not None:
            done_props["EXIT_CODE"] = payload["exit_code"]
        await live.reporter.change(
            entry_id,
            todo="DONE" if status == "completed" else "FAILED",
            properties=done_props,
            body=log_body,
        )
        content: list[JSONObject] = []
        if isinstance(payload.get("diff"), str) and p.paths:
            content.append({"type": "diff", "path": p.paths[0][1], "diff": payload["diff"]})
        await live.reporter.update(
            "tool_call_update",
            toolCallId=call.id,
            status=status,
            content=content,
            rawOutput=_summary_for_client(payload),
        )
        return Outcome(status, payload)

    def _approval_note(self, p: _Prepared) -> str | None:
        """Where an approved command will run, said before the user decides."""
        if p.command is None:
            return None
        live = self.live
        if not live.sandbox.available:
            return "No sandbox here: if you approve, it runs with your full permissions."
        if live.config.sandbox_approved_commands:
            return "If you approve, it runs in the sandbox, with network access."
        return (
            "If you approve, it runs outside the sandbox, with your full permissions "
            "and network access."
        )

    async def _cancelled_while_waiting(self, entry_id: str, call_id: str) -> None:
        await self.live.reporter.change(
            entry_id, todo="REJECTED", body=[text("Cancelled before a decision was made.")]
        )
        await self.live.reporter.update(
            "tool_call_update",
            toolCallId=call_id,
            status="failed",
            rawOutput={"error": "cancelled while waiting for approval"},
        )

    # -- execution ---------------------------------------------------------------

    async def _execute(self, call: ToolCall, turn: TurnState, p: _Prepared) -> JSONObject:
        live = self.live
        name = p.spec.name
        args: Any = p.args
        if p.spec.external is not None:
            return await p.spec.external.call(p.args.model_dump())
        if name == "task_complete":
            turn.completed = args.summary
            return {"ok": True}
        if name in PLAN_TOOLS:
            return await handle_plan_tool(live, call, name, args, turn)
        if name == "delegate":
            return await run_delegate(self, args, turn)
        if name == "review_verdict":
            turn.verdict = {"verdict": args.verdict, "comments": args.comments}
            return {"ok": True, "verdict": args.verdict}
        if name == "request_log_view":
            return await asyncio.to_thread(
                live.outputs.view, args.ref, args.offset or 0, args.limit or 200
            )
        if name in ("run_command", "run_test"):
            return await self._run_process(name, p, turn)
        if p.spec.side is Side.EMACS and name in live.client_tools:
            result = await self._client_call(call, turn, p)
        else:
            result = await self._bridge_call(name, args, p, turn)
        if name in _EDITS and isinstance(result.get("sha256_after"), str):
            display = p.paths[0][1]
            live.state.read_hashes[display] = result["sha256_after"]
            turn.record_edit(display)
            if isinstance(result.get("diff"), str):
                turn.diffs.append(result["diff"])
        if name == "read_file" and isinstance(result.get("sha256"), str):
            result = live.remember_read(p.paths[0][1], args, result, call.id)
        return result

    async def _client_call(self, call: ToolCall, turn: TurnState, p: _Prepared) -> JSONObject:
        live = self.live
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

    async def _bridge_call(self, name: str, args: Any, p: _Prepared, turn: TurnState) -> JSONObject:
        live = self.live
        client = live.runtime.client_files
        if name == "read_file":
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
        if name == "list_directory":
            resolved, display = p.paths[0]
            return await asyncio.to_thread(
                files.list_directory, resolved, display, args.depth or 2, live.root
            )
        if name == "grep":
            resolved, display = p.paths[0]
            return await files.grep(
                args.pattern, resolved, display, args.glob, live.root, p.spec.timeout_s
            )
        if name in _EDITS:
            resolved, display = p.paths[0]
            ctx = files.EditContext(
                root=live.root,
                op_id=f"{turn.turn_id}-{len(turn.files_changed)}-{int(time.time() * 1000)}",
                turn_id=turn.turn_id,
                session_id=live.state.id,
                expected_sha256=live.state.read_hashes.get(display),
            )
            if client is not None:
                return await self._client_edit(name, args, resolved, display, ctx)
            return await asyncio.to_thread(files.apply_edit, name, args, resolved, display, ctx)
        return await live.headless_tool(name, args, p.paths)

    async def _run_process(self, name: str, p: _Prepared, turn: TurnState) -> JSONObject:
        live = self.live
        assert p.command is not None and p.cwd is not None
        kind = "test" if name == "run_test" else "command"
        timeout = getattr(p.args, "timeout_s", None) or timeout_for(kind, p.command)
        if p.by_user:
            # Approved: as the user would run it, unless they sandbox approved ones too.
            network = True
            spec = (
                live.sandbox_spec(network=True) if live.config.sandbox_approved_commands else None
            )
        else:
            network = False
            confined = turn.role is not None and turn.role.write_globs is not None
            spec = live.sandbox_spec(network=False, writable=not confined)
            if spec is None and not strictly_read_only(p.command, live.writable_roots):
                # Never project code with neither the sandbox nor the user's yes.
                raise ToolFailed("refused: no sandbox, and the user did not approve this command")
        bare = roots_without_git(spec.roots) if spec is not None else []
        set_aside: list[str] = []
        try:
            result = await live.runner.run_shell(
                p.command, cwd=p.cwd, timeout_s=timeout, sandbox=spec
            )
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
        full_text = ""
        if result.log_path is not None and result.log_path.exists():
            ref, path = live.outputs.adopt(result.log_path)
            payload["log_ref"] = ref
            payload["_log_path"] = str(path)
            full_text = (result.stdout + ("\n" + result.stderr if result.stderr else "")).strip()
        else:
            full_text = (result.stdout + "\n" + result.stderr).strip()
        payload["_log_text"] = full_text
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
        if not ok:
            payload["_failed"] = True
        return payload


def _cwd_text(p: _Prepared) -> str | None:
    return str(p.cwd) if p.command is not None and p.cwd is not None else None


def _summary_for_client(payload: JSONObject) -> JSONObject:
    keep = (
        "exit_code",
        "duration_ms",
        "truncated",
        "timed_out",
        "log_ref",
        "error",
        "path",
        "summary",
        "role",
        "steps",
        "report",
        "sandbox",
        "warning",
    )
    return {k: payload[k] for k in keep if k in payload}


def describe_call(call: ToolCall) -> str:
    """The one-line title of a call (tool and main argument), as clients show it."""
    try:
        return _title(call.name, call.parsed_arguments())
    except BridgeError:
        return call.name


def signature_of(call: ToolCall) -> str:
    try:
        return call_signature(call.name, call.parsed_arguments())
    except BridgeError:
        return call.name + call.arguments
