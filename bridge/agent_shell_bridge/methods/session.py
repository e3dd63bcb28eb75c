"""Session methods: ``session/new``, ``prompt``, ``steer``, ``cancel``, ``set_mode``, ``list``,
``resume``, and the session's grants (``grants``, ``revoke_grant``)."""

from __future__ import annotations

import asyncio
import os
import re
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field, field_validator

from ..agent.conversation.attachments import Attachment
from ..agent.conversation.messages import Conversation
from ..agent.session.roles import RoleConfig, merge_roles
from ..agent.session.store import SessionState, SessionStore, new_session_id
from ..agent.session.user_tools import UserToolDecl
from ..config import BridgeConfig
from ..errors import InvalidParams, RootNotAllowed, SessionNotFound
from ..mcp.config import ServerPolicy, WireServer, from_wire
from ..model.profiles import same_provider
from ..project.instructions import user_config_dir
from ..runtime import Runtime
from ..tools.catalogue import CATALOGUE
from ..transport.rpc import Dispatcher
from ..wire import ModelConfig, Params
from .remote_session import RemoteParams, connect_remote, project_settings

if TYPE_CHECKING:
    from ..agent.conversation.attachments import Batch
    from ..agent.session.live import LiveSession

# The agent loop (model client, executor, policy, action log) is imported by the
# first session, not at server start: the ready line comes sooner.

Mode = Literal["act", "ask"]

# "/ask …" or "/act …" at the start of a prompt runs that one turn in that mode.
_MODE_PREFIX = re.compile(r"\A\s*/(ask|act)(?:[ \t]+|\n|\Z)")


def split_mode_prefix(text: str) -> tuple[Mode | None, str]:
    """The turn's mode named by a ``/ask `` or ``/act `` prefix, and the prompt without it."""
    match = _MODE_PREFIX.match(text)
    if match is None:
        return None, text
    mode: Mode = "ask" if match.group(1) == "ask" else "act"
    return mode, text[match.end() :]


class NewParams(Params):
    cwd: str
    mode: Mode = "act"
    model: ModelConfig | None = None
    max_steps: int | None = Field(None, ge=1, le=500)
    extra_allowed_paths: list[str] = Field(default_factory=list)
    dry_run: bool | None = None
    title: str | None = Field(None, max_length=200)
    # Roles the user defines or overrides; the reviewer runs after changing turns.
    roles: list[RoleConfig] = Field(default_factory=list)
    review: bool = False
    # Set by the client only after the user confirmed $HOME or / as the project.
    allow_wide_root: bool = False
    # MCP servers in the Agent Client Protocol's shape, and the user's per-server policy.
    mcpServers: list[WireServer] = Field(default_factory=list, max_length=100)
    mcpServerPolicy: dict[str, ServerPolicy] = Field(default_factory=dict)
    mcpStartTimeoutS: float = Field(30.0, gt=0, le=600)
    # A project on another host (TRAMP): cwd is then ignored (remote_session.py).
    remote: RemoteParams | None = None

    @field_validator("extra_allowed_paths")
    @classmethod
    def _expand(cls, value: list[str]) -> list[str]:
        return [os.path.expanduser(x) for x in value]


class TextContent(Params):
    type: Literal["text"] = "text"
    text: str


class PromptParams(Params):
    sessionId: str
    prompt: list[TextContent] | str
    context: dict[str, Any] | None = None
    mode: Mode | None = None
    # What the user attached (agent/conversation/attachments.py), and their cap.
    attachments: list[Attachment] = Field(default_factory=list, max_length=200)
    attachmentMaxChars: int | None = Field(None, ge=1)
    # The tools the user defined in Emacs, as they are now (absent: unchanged).
    userTools: list[UserToolDecl] | None = Field(None, max_length=200)
    # The user's skill directories (absent: as before); the project's are always looked in.
    skillDirectories: list[str] | None = Field(None, max_length=50)
    # Which hooks the client runs around each step (absent: as before).
    hooks: list[Literal["pre_tool", "post_tool"]] | None = Field(None, max_length=10)

    @field_validator("prompt")
    @classmethod
    def _not_empty(cls, value: list[TextContent] | str) -> list[TextContent] | str:
        joined = value if isinstance(value, str) else "".join(c.text for c in value)
        if not joined.strip():
            raise ValueError("the prompt is empty")
        return value

    @property
    def text(self) -> str:
        if isinstance(self.prompt, str):
            return self.prompt
        return "\n".join(c.text for c in self.prompt)


class SessionRef(Params):
    sessionId: str


class KillJobParams(SessionRef):
    jobId: str = Field(min_length=1, max_length=64)


class SteerParams(SessionRef):
    text: str = Field(min_length=1, max_length=200_000)

    @field_validator("text")
    @classmethod
    def _words(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("the steer is empty")
        return value


class RewindParams(SessionRef):
    turnId: str = Field(min_length=1, max_length=120)
    conversation: bool = True
    restored: list[str] = Field(default_factory=list, max_length=10_000)
    skipped: list[str] = Field(default_factory=list, max_length=10_000)


class ForkParams(SessionRef):
    turnId: str | None = Field(None, min_length=1, max_length=120)
    # The fork's MCP servers, as for a new session (the client's list; the project's
    # trusted .mcp.json is added as always).
    mcpServers: list[WireServer] = Field(default_factory=list, max_length=100)
    mcpServerPolicy: dict[str, ServerPolicy] = Field(default_factory=dict)
    mcpStartTimeoutS: float = Field(30.0, gt=0, le=600)


class RewindUndoParams(SessionRef):
    rewindId: str | None = Field(None, max_length=64)


class SetModelParams(SessionRef):
    # The name the user knows the model by (agent-shell-models' :name).
    name: str = Field("", max_length=80)
    model: ModelConfig


class ModeParams(SessionRef):
    mode: Mode


class RevokeParams(SessionRef):
    grantId: str = Field(min_length=1, max_length=64)


class ListParams(Params):
    cwd: str | None = None
    # A remote project's sessions, from its local mirror (no connection is made).
    remote: RemoteParams | None = None


class ResumeParams(SessionRef):
    cwd: str
    remote: RemoteParams | None = None
    model: ModelConfig | None = None
    mcpServers: list[WireServer] = Field(default_factory=list, max_length=100)
    mcpServerPolicy: dict[str, ServerPolicy] = Field(default_factory=dict)
    mcpStartTimeoutS: float = Field(30.0, gt=0, le=600)


def project_root(cwd: str) -> Path:
    if "\x00" in cwd or not cwd.strip():
        raise InvalidParams("cwd must be an absolute directory path")
    path = Path(cwd).expanduser()
    if not path.is_absolute():
        raise InvalidParams(f"cwd must be absolute, got {cwd!r}")
    resolved = path.resolve()
    if not resolved.is_dir():
        raise InvalidParams(f"cwd is not a directory: {cwd}")
    return resolved


def check_wide_root(root: Path, *, home: Path | None = None) -> None:
    """Refuse ``/``, ``$HOME`` or a folder holding ``$HOME`` as a project root.

    The root is what the agent may read and edit without asking for each path; at
    ``$HOME`` that would be every dotfile, at ``/`` the whole machine.
    """
    where = (home or Path(os.path.expanduser("~"))).resolve()
    if root == Path(root.anchor):
        why, kind = "it is the file system root /", "filesystem_root"
    elif root == where:
        why, kind = f"it is your home directory {where}", "home"
    elif where.is_relative_to(root):
        why, kind = f"it contains your home directory {where}", "above_home"
    else:
        return
    raise RootNotAllowed(
        f"{root} cannot be a project root without confirmation: {why}, so the agent "
        "could read and edit every file in it; start from a project directory, or "
        "confirm this one (allow_wide_root)",
        data={"root": str(root), "kind": kind},
    )


def session_of(rt: Runtime, session_id: str) -> LiveSession:
    live = rt.sessions.get(session_id)
    if live is None:
        raise SessionNotFound(f"Unknown session {session_id!r}; start one with session/new")
    return live


def _config_for(rt: Runtime, p: NewParams | ResumeParams) -> BridgeConfig:
    return rt.config.with_model(p.model)


async def _start_mcp(live: LiveSession, p: NewParams | ResumeParams | ForkParams) -> dict[str, Any]:
    from ..agent.session.mcp_servers import attach_mcp

    servers = from_wire(p.mcpServers)  # bad entries: -32602 before anything starts
    return await attach_mcp(
        live, servers, dict(p.mcpServerPolicy), start_timeout_s=p.mcpStartTimeoutS
    )


def _mcp_status(live: LiveSession) -> dict[str, Any]:
    for source in live.tool_sources:
        status = getattr(source, "status", None)
        if callable(status):
            return {**status(), "notices": []}
    return {"servers": [], "connected": 0, "configured": 0, "notices": []}


def _describe(live: LiveSession) -> dict[str, Any]:
    from ..agent.session.model_help import key_notice

    notice = key_notice(live.config)
    return {
        "notices": [notice] if notice else [],
        "sessionId": live.state.id,
        "root": str(live.root),
        "logPath": live.state.log_path,
        "mode": live.state.mode,
        "model": live.config.model,
        "modelName": live.model_name or None,
        "contextWindow": live.config.context_window,
        # Set when the session had switched models and this one still talks to the
        # default: the client chooses it again (it holds the keys).
        "chosenModel": live.state.chosen_model if not live.model_name else None,
        "dryRun": live.dry_run,
        "memories": live.state.memories,
        "allowlist": live.policy.allowlist_status,
        "instructions": live.instructions.describe() if live.instructions else [],
        "roles": [
            {"name": r.name, "description": r.description, "model": r.model}
            for r in live.roles.values()
        ],
        "review": live.review,
        "projectRoles": {
            "status": live.project_roles.status,
            "roles": [r.name for r in live.project_roles.roles],
            "error": live.project_roles.error,
        },
        "sandbox": {**live.sandbox.to_json(), "projectSetting": live.sandbox_setting},
        "projectHooks": _hooks_status(live),
        **({"remote": live.remote.describe()} if live.remote is not None else {}),
    }


def _hooks_status(live: LiveSession) -> str:
    """What the project's hooks.json is now: none, trusted, untrusted or invalid."""
    from ..project.hooks import load_project_hooks
    from ..project.trust import project_trust

    try:
        return load_project_hooks(live.root, project_trust("hooks", live.config.memory_dir)).status
    except OSError:
        return "invalid"


def _attachments(live: LiveSession, p: PromptParams) -> Batch:
    """The prompt's attachments, cut to the cap and checked by the session's policy."""
    from ..agent.conversation.attachments import accept
    from ..types import Decision

    def refusal(path: str) -> str | None:
        verdict = live.policy.check_path(path, "read")
        return verdict.reason if verdict.decision is Decision.DENY else None

    return accept(p.attachments, max_chars=p.attachmentMaxChars, path_refusal=refusal)


class UndoParams(Params):
    sessionId: str
    turnId: str = Field(min_length=1, max_length=120)
    paths: list[str] = Field(default_factory=list, max_length=10_000)


def register(d: Dispatcher[Runtime]) -> None:
    @d.method("session/new", NewParams)
    async def new(rt: Runtime, p: NewParams) -> dict[str, Any]:
        from ..agent.opening import start_new

        from_wire(p.mcpServers)  # refuse a bad server list before the session exists
        config = _config_for(rt, p)
        remote = await connect_remote(p.remote, config) if p.remote is not None else None
        if remote is not None:
            root = remote.mirror  # its records; the root there was checked on connecting
            # Its config.el's settings, as Emacs reads a local project's.
            p = p.model_copy(update=project_settings(root, p.model))
            config = _config_for(rt, p)
        else:
            root = project_root(p.cwd)
            if not p.allow_wide_root:
                check_wide_root(root)
        state = SessionState(
            id=new_session_id(),
            root=str(root),
            mode=p.mode,
            model=config.model,
            title=p.title or "",
            dry_run=rt.config.dry_run if p.dry_run is None else p.dry_run,
            max_steps=p.max_steps or config.max_steps,
            extra_allowed_paths=p.extra_allowed_paths
            or [str(x) for x in config.extra_allowed_paths],
            role_configs=[r.model_dump(exclude_none=True) for r in p.roles],
            review=p.review,
        )
        try:
            merge_roles(p.roles, CATALOGUE.keys())
        except ValueError as exc:
            if remote is not None:
                await remote.aclose()
            raise InvalidParams(str(exc)) from exc
        try:
            live = await start_new(rt, state, config, remote=remote)
        except BaseException:
            if remote is not None:
                await remote.aclose()
            raise
        return {**_describe(live), "mcp": await _start_mcp(live, p)}

    @d.method("session/prompt", PromptParams)
    async def prompt(rt: Runtime, p: PromptParams) -> dict[str, Any]:
        from ..agent.turn.submit import submit_prompt

        turn_mode, text = split_mode_prefix(p.text)
        live = session_of(rt, p.sessionId)
        if p.userTools is not None:
            from ..agent.session.user_tools import set_user_tools

            set_user_tools(live, p.userTools)
        if p.hooks is not None:
            live.client_hooks = frozenset(p.hooks)
        if not live.busy:  # a busy session refuses the prompt below
            from ..agent.session.skills import refresh_skills

            await refresh_skills(live, p.skillDirectories)
        batch = _attachments(live, p)
        turn_id, mode = await submit_prompt(
            live,
            text,
            turn_mode=turn_mode,
            session_mode=p.mode,
            context=p.context,
            user_dir=rt.config.user_config_dir or user_config_dir(),
            attachments=batch,
        )
        return {"turnId": turn_id, "mode": mode, **batch.to_json()}

    @d.method("session/steer", SteerParams)
    async def steer(rt: Runtime, p: SteerParams) -> dict[str, Any]:
        """Words for the running turn's next model call; ``accepted: false`` when no turn
        runs (the client then sends them as a prompt: a steer is never dropped)."""
        from ..agent.turn.steer import accept_steer

        live = session_of(rt, p.sessionId)
        if not accept_steer(live, p.text):
            return {"accepted": False, "reason": "no turn is running"}
        return {"accepted": True, "turnId": live.turn_id, "queued": len(live.state.pending_steers)}

    @d.method("session/cancel", SessionRef)
    async def cancel(rt: Runtime, p: SessionRef) -> dict[str, Any]:
        live = session_of(rt, p.sessionId)
        return {"cancelled": await live.cancel_turn()}

    @d.method("session/jobs", SessionRef)
    async def jobs(rt: Runtime, p: SessionRef) -> dict[str, Any]:
        live = session_of(rt, p.sessionId)
        return {"jobs": [job.to_json() for job in live.jobs.all()]}

    @d.method("session/kill_job", KillJobParams)
    async def kill_job(rt: Runtime, p: KillJobParams) -> dict[str, Any]:
        """The user ends a job (the model's job_kill, from the client)."""
        live = session_of(rt, p.sessionId)
        was = live.jobs.get(p.jobId).state
        job = await live.jobs.kill(p.jobId, live.kill_job_group)
        if was == "running":
            await live.reporter.entry(
                f"Job {job.id} killed by the user: {job.command}",
                source="user",
                parent=None,
                properties={"JOB": job.id},
            )
        return {"job": job.to_json()}

    @d.method("session/close", SessionRef)
    async def close(rt: Runtime, p: SessionRef) -> dict[str, Any]:
        """End a live session: its turn, its jobs, its processes (it can be resumed)."""
        live = session_of(rt, p.sessionId)
        running = len(live.jobs.running())
        rt.sessions.pop(p.sessionId, None)
        await live.checkpoint()
        await live.aclose()
        return {"closed": True, "jobsKilled": running}

    @d.method("session/set_mode", ModeParams)
    async def set_mode(rt: Runtime, p: ModeParams) -> dict[str, Any]:
        live = session_of(rt, p.sessionId)
        live.state.mode = p.mode
        await live.checkpoint()
        return {"mode": p.mode}

    @d.method("session/set_model", SetModelParams)
    async def set_model(rt: Runtime, p: SetModelParams) -> dict[str, Any]:
        """Another model from the next request on (the running turn's next call)."""
        from ..agent.turn.models import choose_model, model_totals

        live = session_of(rt, p.sessionId)
        if not (p.model.api_base and p.model.model):
            raise InvalidParams("a model needs api_base and model")
        config = live.config.with_model(p.model)
        if p.model.api_key is None and not same_provider(p.model.api_base, live.config.api_base):
            # One provider's key is never sent to another.
            config = replace(config, api_key=None, api_key_source="none")
        now = await choose_model(live, config, p.name or p.model.model)
        return {
            "model": config.model,
            "name": p.name or p.model.model,
            "contextWindow": config.context_window,
            "applied": now,
            "byModel": model_totals(live),
        }

    @d.method("session/grants", SessionRef)
    async def grants(rt: Runtime, p: SessionRef) -> dict[str, Any]:
        """What "allow for this session" has granted so far, oldest first."""
        from ..agent.session.grants import list_grants

        live = session_of(rt, p.sessionId)
        return {"grants": [g.to_json() for g in list_grants(live.state)]}

    @d.method("session/revoke_grant", RevokeParams)
    async def revoke(rt: Runtime, p: RevokeParams) -> dict[str, Any]:
        """Take a grant back: the next such step asks again, even within this turn."""
        from ..agent.session.grants import list_grants

        live = session_of(rt, p.sessionId)
        grant = await live.revoke_grant(p.grantId)
        return {
            "revoked": grant.to_json(),
            "grants": [g.to_json() for g in list_grants(live.state)],
        }

    @d.method("session/list", ListParams)
    async def list_sessions(rt: Runtime, p: ListParams) -> dict[str, Any]:
        if p.remote is not None:
            from ..remote.mirror import mirror_dir
            from ..remote.target import parse_tramp

            roots = {mirror_dir(parse_tramp(p.remote.tramp))}
        elif p.cwd:
            roots = {project_root(p.cwd)}
        else:
            roots = {s.root for s in rt.sessions.values()}
        found: list[dict[str, Any]] = []
        for root in roots:
            found.extend(await asyncio.to_thread(SessionStore(root).list))
        for item in found:
            item["live"] = item["sessionId"] in rt.sessions
        return {"sessions": found}

    @d.method("session/resume", ResumeParams)
    async def resume(rt: Runtime, p: ResumeParams) -> dict[str, Any]:
        from ..agent.opening import resume_saved

        live = rt.sessions.get(p.sessionId)
        if live is None:
            config = _config_for(rt, p)
            remote = await connect_remote(p.remote, config) if p.remote is not None else None
            root = remote.mirror if remote is not None else project_root(p.cwd)
            try:
                live = await resume_saved(rt, root, p.sessionId, config, remote=remote)
            except BaseException:
                if remote is not None:
                    await remote.aclose()
                raise
            mcp = await _start_mcp(live, p)
        else:
            mcp = _mcp_status(live)
        return {**_describe(live), "history": list(Conversation(live.state).visible), "mcp": mcp}

    @d.method("session/turns", SessionRef)
    async def turns(rt: Runtime, p: SessionRef) -> dict[str, Any]:
        """The session's prompts, oldest first (what a rewind can go back to)."""
        from ..agent.turn.rewind import list_prompts

        return {"turns": list_prompts(session_of(rt, p.sessionId))}

    @d.method("session/rewind", RewindParams)
    async def rewind(rt: Runtime, p: RewindParams) -> dict[str, Any]:
        """Back to just before a prompt: the conversation cut (when asked), the files
        the client restored noted for the model, a REWIND entry in the log."""
        from ..agent.turn.rewind import rewind

        return await rewind(
            session_of(rt, p.sessionId),
            p.turnId,
            conversation=p.conversation,
            restored=[x[:500] for x in p.restored],
            skipped=[x[:500] for x in p.skipped],
        )

    @d.method("session/fork", ForkParams)
    async def fork(rt: Runtime, p: ForkParams) -> dict[str, Any]:
        """A new session with this one's history (before ``turnId``, when given)."""
        from ..agent.opening import start_new
        from ..agent.session.reporter import text
        from ..agent.turn.rewind import fork_state

        live = session_of(rt, p.sessionId)
        from_wire(p.mcpServers)  # refuse a bad server list before the fork exists
        state, prompt = fork_state(live, p.turnId)
        fork = await start_new(rt, state, live.config)
        fork.model_name = live.model_name
        where = f"before turn {p.turnId}" if p.turnId else "with its whole history"
        await fork.reporter.entry(
            f"Forked from session {live.state.id} {where}",
            source="user",
            parent=None,
            properties={"FORK_OF": live.state.id, **({"FORK_AT": p.turnId} if p.turnId else {})},
        )
        await live.reporter.entry(
            f"Forked into session {state.id} {where}",
            source="user",
            parent=None,
            properties={"FORK": state.id},
            body=[text(f"The fork's log: {state.log_path}")],
        )
        return {
            **_describe(fork),
            "mcp": await _start_mcp(fork, p),
            "history": list(Conversation(fork.state).visible),
            "prompt": prompt,
            "forkOf": live.state.id,
        }

    @d.method("session/rewind_undo", RewindUndoParams)
    async def rewind_undo(rt: Runtime, p: RewindUndoParams) -> dict[str, Any]:
        """Put back what the newest rewind cut."""
        from ..agent.turn.rewind import undo_rewind

        return await undo_rewind(session_of(rt, p.sessionId), p.rewindId)

    @d.method("session/undo_turn_done", UndoParams)
    async def undo_turn_done(rt: Runtime, p: UndoParams) -> dict[str, Any]:
        """The user undid a turn's edits in Emacs: the log records it, and the model's
        next request says the changes are gone (read again)."""
        from ..agent.turn.undo import record_undo

        live = session_of(rt, p.sessionId)
        await record_undo(live, p.turnId, [x[:500] for x in p.paths])
        return {"recorded": True, "noteQueued": True}
