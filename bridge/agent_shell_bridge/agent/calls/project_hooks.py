"""Running a project's hook commands (``.agent-shell/hooks.json``) around a step.

The file counts only while the user trusts its current bytes; it is read again at
every event, so a change stops it at once (and says so in the log, once). Each
command runs like a command the policy let run unasked: in the sandbox, without
network, the project as working directory, with a timeout and bounded output, the
event as JSON on stdin (``{"event", "tool", "args", "session", "root"}``, and
``result`` after a step). Never outside the sandbox: without one, no hook runs and
the log says so.

What a command says becomes an answer of the shape the Emacs hooks give
(``decision``, ``reason``, ``args``, ``hook``, or ``text`` after a step), judged by
the one tighten-only code in :mod:`.hooks`:

- exit 0 and no output: no opinion;
- exit 2, or ``{"decision": "deny", "reason": …}``: the step is denied;
- ``{"decision": "ask"}``: the user is asked where the policy would allow;
- ``{"args": {…}}``: the arguments are rewritten and judged again;
- after a step, the text it prints is added to the result.

A ``pre_tool`` command that fails otherwise (another exit code, a timeout, output
that is not such an answer), or that cannot run for want of a sandbox, makes the
step ask: the guard the user trusted did not look at it. After a step or a turn, a
failure is a log line and no opinion. A dry run runs none of them.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from ...orglog import SrcBlock, TextBlock
from ...process.runner import ProcessResult
from ...project.hooks import HookCommand, ProjectHooks, load_project_hooks
from ...project.trust import TRUSTED_KINDS, project_trust
from ...sandbox import protected_git, set_aside_after_run
from ...types import JSONObject
from ..session.reporter import src, text

if TYPE_CHECKING:
    from ..session.live import LiveSession

__all__ = [
    "ProjectHook",
    "announce_project_hooks",
    "post_tool_text",
    "pre_tool_answer",
    "project_hooks",
    "run_turn_end_hooks",
]

log = logging.getLogger(__name__)

_REASON_CHARS = 2_000
_TEXT_CHARS = 20_000
_PATH = TRUSTED_KINDS["hooks"].path

Event = Literal["pre_tool", "post_tool", "turn_end"]


@dataclass(frozen=True, slots=True)
class ProjectHook:
    """One command of the file for one event, named as the log names it."""

    event: Event
    index: int
    command: HookCommand

    @property
    def name(self) -> str:
        line = self.command.command.strip().splitlines()[0] if self.command.command.strip() else ""
        line = line if len(line) <= 80 else line[:77] + "..."
        return f"{_PATH} {self.event}[{self.index}] ({line})"


async def _load(live: LiveSession) -> ProjectHooks:
    trust = project_trust("hooks", live.config.memory_dir)
    try:
        return await asyncio.to_thread(load_project_hooks, live.root, trust)
    except OSError as exc:
        return ProjectHooks("invalid", error=f"{_PATH} could not be read ({exc.strerror})")


async def _notice_once(live: LiveSession, key: str, title: str, body: str) -> None:
    if key in live.hook_notices:
        return
    live.hook_notices.add(key)
    await live.reporter.entry(
        title, source="bridge", parent=None, properties={"PATH": _PATH}, body=[text(body)]
    )


async def announce_project_hooks(live: LiveSession, found: ProjectHooks | None = None) -> str:
    """Say in the log (once per file content) why the project's hooks are not used;
    return the file's status."""
    found = found or await _load(live)
    if found.status == "untrusted":
        await _notice_once(
            live,
            f"untrusted:{found.digest}",
            "Project hooks not applied: not trusted yet",
            f"This project's {_PATH} names commands to run around the agent's steps and "
            "arrives with the repository; it is not trusted in its current form, so none "
            f"of them runs. Review it and run M-x {TRUSTED_KINDS['hooks'].command}.",
        )
    elif found.status == "invalid":
        await _notice_once(
            live,
            f"invalid:{found.digest}",
            "Project hooks not applied: the file is not valid",
            f"{found.error}",
        )
    elif found.status == "trusted" and live.sandbox_spec(network=False) is None:
        await _notice_once(
            live,
            "no-sandbox",
            "Project hooks do not run: no sandbox",
            f"{_PATH} is trusted, but its commands run only in the sandbox, and there is "
            f"none here ({live.sandbox.detail}). Steps its pre_tool hooks would look at "
            "wait for your yes instead.",
        )
    return found.status


async def project_hooks(live: LiveSession, event: Event, tool: str | None) -> list[ProjectHook]:
    """The trusted commands of ``event`` that apply to ``tool``, in the file's order
    (none in a dry run, which runs nothing)."""
    if live.dry_run:
        return []
    found = await _load(live)
    if found.status != "trusted" or found.hooks is None:
        await announce_project_hooks(live, found)
        return []
    hooks = [ProjectHook(event, i, h) for i, h in found.hooks.commands(event, tool)]
    if hooks and live.sandbox_spec(network=False) is None:
        await announce_project_hooks(live, found)
    return hooks


def _event(live: LiveSession, hook: ProjectHook, tool: str | None, args: Any) -> JSONObject:
    return {
        "event": hook.event,
        "tool": tool,
        "args": args,
        "session": live.state.id,
        "root": str(live.root),
    }


async def _run(live: LiveSession, hook: ProjectHook, event: JSONObject) -> ProcessResult | str:
    """Run the hook's command in the sandbox; the result, or why it could not run."""
    spec = live.sandbox_spec(network=False)
    if spec is None:
        return f"{hook.name} cannot run: no sandbox ({live.sandbox.detail})"
    data = json.dumps(event, ensure_ascii=False).encode("utf-8")
    protected = protected_git(spec.roots)
    since = time.time_ns()
    try:
        result = await live.runner.run_shell(
            hook.command.command,
            cwd=live.root,
            timeout_s=live.config.project_hook_timeout_s,
            sandbox=spec,
            stdin=data,
        )
    except OSError as exc:
        return f"{hook.name} could not start: {exc.strerror or exc}"
    finally:
        await asyncio.shield(
            asyncio.to_thread(
                set_aside_after_run,
                spec.roots,
                since_ns=since,
                protected=protected,
                display=live.root,
            )
        )
    if result.log_path is not None:
        await asyncio.to_thread(result.log_path.unlink, missing_ok=True)
    return result


async def _failed(
    live: LiveSession, hook: ProjectHook, why: str, result: ProcessResult | None
) -> None:
    log.warning("%s", why)
    body: list[TextBlock | SrcBlock] = [text(why)]
    if result is not None and (result.stdout.strip() or result.stderr.strip()):
        shown = (result.stdout + ("\n" + result.stderr if result.stderr else "")).strip()
        body.append(src(shown[:_TEXT_CHARS], "text"))
    props: dict[str, str | int | float] = {"HOOK": hook.name, "PATH": _PATH}
    if result is not None and result.exit_code is not None:
        props["EXIT_CODE"] = result.exit_code
    await live.reporter.entry(
        f"Project hook failed: {hook.name}",
        source="bridge",
        parent=None,
        todo="FAILED",
        properties=props,
        body=body,
    )


def _problem(result: ProcessResult) -> str | None:
    if result.timed_out:
        return "timed out"
    if result.exit_code is None:
        return "was stopped"
    if result.exit_code not in (0, 2):
        return f"exited with {result.exit_code}"
    return None


def _answer_of(stdout: str) -> JSONObject | None:
    """The JSON answer a command printed; None when it printed something else."""
    try:
        value = json.loads(stdout)
    except ValueError:
        return None
    if not isinstance(value, dict):
        return None
    if value.get("decision") not in (None, "deny", "ask", "allow"):
        return None
    if "args" in value and not isinstance(value["args"], dict):
        return None
    return value


async def pre_tool_answer(
    live: LiveSession, hook: ProjectHook, tool: str, args: JSONObject
) -> JSONObject | None:
    """What ``hook`` says about the call, as an answer of the Emacs hooks' shape."""
    ran = await _run(live, hook, _event(live, hook, tool, args))
    if isinstance(ran, str):
        await _failed(live, hook, ran, None)
        return _broken(hook, "could not run (no sandbox)")
    problem = _problem(ran)
    out = ran.stdout.strip()
    if problem is not None:
        await _failed(live, hook, f"{hook.name} {problem}", ran)
        return _broken(hook, problem)
    answer = _answer_of(out) if out else {}
    if ran.exit_code == 2:
        reason = (answer or {}).get("reason") or ran.stderr.strip() or out or "exit status 2"
        return {"decision": "deny", "reason": str(reason)[:_REASON_CHARS], "hook": hook.name}
    if answer is None:
        await _failed(live, hook, f"{hook.name} printed something that is not an answer", ran)
        return _broken(hook, "printed something that is not an answer")
    if not answer:
        return None
    said: JSONObject = {"hook": hook.name}
    if answer.get("decision") in ("deny", "ask"):  # an "allow" loosens nothing
        said["decision"] = answer["decision"]
    if isinstance(answer.get("reason"), str):
        said["reason"] = answer["reason"][:_REASON_CHARS]
    if isinstance(answer.get("args"), dict):
        said["args"] = answer["args"]
    return said


def _broken(hook: ProjectHook, problem: str) -> JSONObject:
    return {
        "decision": "ask",
        "hook": hook.name,
        "reason": f"the hook {problem}, so the step waits for your yes",
    }


async def post_tool_text(
    live: LiveSession, hook: ProjectHook, tool: str, args: JSONObject, result: JSONObject
) -> str | None:
    """The text ``hook`` adds to the result of the call, or None."""
    event = {**_event(live, hook, tool, args), "result": result}
    ran = await _run(live, hook, event)
    if isinstance(ran, str):
        await _failed(live, hook, ran, None)
        return None
    problem = _problem(ran) or (f"exited with {ran.exit_code}" if ran.exit_code else None)
    if problem is not None:
        await _failed(live, hook, f"{hook.name} {problem}", ran)
        return None
    out = ran.stdout.strip()
    return out[:_TEXT_CHARS] if out else None


async def run_turn_end_hooks(live: LiveSession, stop_reason: str) -> None:
    """Run the ``turn_end`` commands (never raises: a failure is a log line)."""
    try:
        for hook in await project_hooks(live, "turn_end", None):
            event = {**_event(live, hook, None, None), "stop_reason": stop_reason}
            ran = await _run(live, hook, event)
            if isinstance(ran, str):
                await _failed(live, hook, ran, None)
                continue
            problem = _problem(ran) or (f"exited with {ran.exit_code}" if ran.exit_code else None)
            if problem is not None:
                await _failed(live, hook, f"{hook.name} {problem}", ran)
    except Exception:
        log.exception("the project's turn_end hooks failed")
