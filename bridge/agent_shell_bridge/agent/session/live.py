"""A running session: its state plus the parts that act for it.

Built by ``session/new`` or ``session/resume``; owns the model client, the policy
engine, the process runner, the output store and the action-log reporter, and the
task running the current turn (at most one).
"""

from __future__ import annotations

import asyncio
import functools
import logging
import os
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...config import BridgeConfig
from ...errors import InvalidParams, SessionBusy
from ...model.openai import ModelClient
from ...model.types import ModelSettings, Usage, UsageCounts
from ...orglog import OrgLogWriter, log_path_for
from ...process.jobs import JobTable
from ...process.runner import ProcessResult, ProcessRunner
from ...project.instructions import Instructions, load_instructions
from ...project.roles import ProjectRoles, load_project_roles
from ...project.trust import project_trust
from ...project.worktree import main_worktree
from ...sandbox import SandboxSpec, SandboxStatus, SpecialFileIndex
from ...sandbox.netns import SharedNetwork, SharedNetworkUnavailable
from ...sandbox.project_switch import project_sandbox
from ...sandbox.safe_git import safe_git_argv
from ...tools.catalogue import CATALOGUE, ReadFileArgs, ToolSource, ToolSpec
from ...tools.outputs import OutputStore
from ...types import JSONObject
from .approval import Approver, ClientApprover
from .client import ClientLink
from .grants import Grant, revoke_grant
from .jobs import report_job
from .journal import SessionJournal
from .reporter import Reporter, finish_even_if_cancelled, text
from .roles import BUILTIN_ROLES, Role, RoleConfig, merge_roles
from .store import SessionState, SessionStore, TokenTotals, now_iso

if TYPE_CHECKING:
    # Imported when a session opens, not when the server starts: the policy loads
    # tree-sitter and the memory index sqlite-utils.
    from ...memory.index import MemoryIndex
    from ...policy.engine import PolicyEngine
    from ...remote.project import RemoteProject
    from .turnstate import TurnState

__all__ = ["LiveSession", "head_branch", "open_session"]

log = logging.getLogger(__name__)


@dataclass
class LiveSession:
    state: SessionState
    root: Path
    config: BridgeConfig
    client: ClientLink
    store: SessionStore
    model: ModelClient
    policy: PolicyEngine
    runner: ProcessRunner
    outputs: OutputStore
    reporter: Reporter
    approver: Approver
    memory: MemoryIndex | None
    journal: SessionJournal
    dry_run: bool = False
    max_steps: int = 25
    # Whether commands that run without the user's yes are sandboxed in this session.
    sandbox: SandboxStatus = field(default_factory=lambda: SandboxStatus.off("not detected"))
    # The project's config.el on the sandbox: "default", "off" (trusted) or "untrusted".
    sandbox_setting: str = "default"
    snapshot: JSONObject | None = None
    turn_task: asyncio.Task[None] | None = None
    # A turn is open from session/prompt until its turn_end is published.
    turn_open: bool = False
    # The running (or last) turn's id, and whether its turn_end went out.
    turn_id: str | None = None
    turn_end_sent: bool = True
    # The turn task in its last, uncancellable steps (log, checkpoint, turn_end).
    finishing_task: asyncio.Task[Any] | None = None
    background: set[asyncio.Task[None]] = field(default_factory=set)
    checkpoint_lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    # Characters per token, learnt from the API's reported usage (agent/context.py).
    chars_per_token: float = 3.0
    # False from a compaction until a request is back under the threshold.
    compaction_armed: bool = True
    # The window a provider named when it refused a request as too long.
    provider_limit: int | None = None
    # (path, start, end) → (sha256, id of the call whose result holds the text).
    read_cache: dict[tuple[str, int | None, int | None], tuple[str, str]] = field(
        default_factory=dict
    )
    # AGENTS.md and friends; nested files join as the agent reaches their directories.
    instructions: Instructions | None = None
    # The roles the lead may delegate to (and the reviewer), by name.
    roles: dict[str, Role] = field(default_factory=lambda: dict(BUILTIN_ROLES))
    # What became of the project's own .agent-shell/roles.el.
    project_roles: ProjectRoles = field(default_factory=lambda: ProjectRoles("none"))

    # Sockets and FIFOs where the sandbox shows files, kept between its commands.
    specials: SpecialFileIndex = field(default_factory=SpecialFileIndex)
    # Background jobs (agent/session/jobs.py), and the network namespace the
    # session's sandboxed commands share once a job needs it (or why there is none).
    jobs: JobTable = field(default_factory=JobTable)
    shared_net: SharedNetwork | None = None
    shared_net_error: str | None = None

    # Tools gained at run time (the session's MCP servers), after the catalogue's.
    tool_sources: list[ToolSource] = field(default_factory=list)
    # The client's hooks around steps ("pre_tool", "post_tool"), as its last prompt said.
    client_hooks: frozenset[str] = frozenset()
    # What the log already said about the project's hooks.json (once per content).
    hook_notices: set[str] = field(default_factory=set)

    # Where the memory and the allowlist live when not under root: the main working
    # tree of the repository whose linked worktree root is (project/worktree.py).
    records_root: Path | None = None
    # A remote project (remote/): ROOT is then its local mirror, for the records.
    remote: RemoteProject | None = None

    # The name the user knows the model by (agent-shell-models), "" for the default.
    model_name: str = ""
    # A model chosen while a turn streams: it takes over at the next model call.
    pending_model: tuple[BridgeConfig, str] | None = None
    # Clients of models switched away from, closed with the session.
    retired_models: list[ModelClient] = field(default_factory=list)

    @property
    def model_label(self) -> str:
        return self.model_name or self.config.model

    def replace_model(self, config: BridgeConfig, name: str) -> None:
        """Talk to the model of ``config`` from the next request on (agent/turn/models.py
        decides when, and marks what the previous provider wrote)."""
        self.retired_models.append(self.model)
        self.model = model_client(config)
        self.config = replace(config, extra_allowed_paths=self.config.extra_allowed_paths)
        self.model_name = name
        self.state.model = config.model
        self.state.chosen_model = {"name": name, "model": config.model, "api_base": config.api_base}
        self.compaction_armed = True
        self.provider_limit = None

    @property
    def review(self) -> bool:
        return self.state.review

    @property
    def memory_root(self) -> Path:
        """The project whose experiences this session reads and writes."""
        return self.records_root or self.root

    @property
    def project(self) -> str:
        return self.memory_root.name

    @property
    def client_tools(self) -> frozenset[str]:
        return self.client.tools

    @property
    def emacs_tools(self) -> frozenset[str]:
        """The Emacs-side tools Emacs runs for this session (:attr:`ClientLink.routed`)."""
        return self.client.routed

    @property
    def writable_roots(self) -> tuple[Path, ...]:
        """The project root and the user's extra allowed paths (writable in the sandbox)."""
        extra = tuple(p.resolve() for p in self.config.extra_allowed_paths if p.is_dir())
        return (self.root, *extra)

    def sandbox_spec(self, *, network: bool, writable: bool = True) -> SandboxSpec | None:
        """How to sandbox a command of this session, or ``None`` without a sandbox.

        ``writable=False`` leaves the project read-only too: a role confined to some
        files (the tester) must not get around that through what its commands write.
        """
        if not self.sandbox.available or self.sandbox.kit is None:
            return None
        return SandboxSpec(
            kit=self.sandbox.kit,
            roots=self.writable_roots,
            roots_read_only=not writable,
            home=Path.home(),
            network=network,
            visible=self.config.sandbox_visible_paths,
            specials=self.specials,
            extra_secrets=self.config.extra_secrets,
            shared_net=None if network else self.shared_net,
        )

    async def kill_job_group(self, pid: int) -> None:
        """End a background job by its run's pid: on the host for a remote project
        (its processes there first), here otherwise (its whole group)."""
        if self.remote is not None:
            await self.remote.runner.kill_job(pid)
        else:
            await self.runner.kill_group(pid)

    async def shared_network(self) -> SharedNetwork | None:
        """The network namespace the session's sandboxed commands share, made on first
        use; None (the reason in ``shared_net_error``) where the sandbox cannot."""
        current = self.shared_net
        if current is not None and current.alive:
            return current
        if self.shared_net_error is not None:
            return None
        if not self.sandbox.available or self.sandbox.kit is None:
            self.shared_net_error = f"no sandbox here ({self.sandbox.detail})"
            return None
        try:
            self.shared_net = await SharedNetwork.start(self.sandbox.kit)
        except SharedNetworkUnavailable as exc:
            log.warning("session %s: no shared network namespace: %s", self.state.id, exc)
            self.shared_net_error = exc.message
            return None
        return self.shared_net

    def warm_sandbox(self) -> None:
        """Walk the sandbox's shown trees once in the background, so the session's
        first sandboxed command does not pay for the first look at its toolchains."""
        spec = self.sandbox_spec(network=False)
        if spec is not None:
            self.in_background(asyncio.to_thread(spec.mounts, dict(os.environ)))

    @property
    def busy(self) -> bool:
        return self.turn_open

    def external_tools(self) -> list[ToolSpec[Any]]:
        return [spec for source in self.tool_sources for spec in source.specs()]

    def external_tool(self, name: str) -> ToolSpec[Any] | None:
        for source in self.tool_sources:
            spec = source.spec(name)
            if spec is not None:
                return spec
        return None

    def display_path(self, resolved: Path) -> str:
        try:
            return resolved.relative_to(self.root).as_posix() or "."
        except ValueError:
            return str(resolved)

    def remember_read(
        self, display: str, args: ReadFileArgs, result: JSONObject, call_id: str
    ) -> JSONObject:
        """Record the read for read-before-write; skip resending unchanged text.

        The cache only names reads whose text is still in the history: compaction
        drops the others (agent/context.py), so a re-read after it sends the text.
        """
        sha = str(result["sha256"])
        self.state.read_hashes[display] = sha
        key = (display, args.start_line, args.end_line)
        cached = self.read_cache.get(key)
        if cached is not None and cached[0] == sha:
            return {
                "path": display,
                "unchanged": True,
                "sha256": sha,
                "same_as": cached[1],
                "note": "Identical to your earlier read of this range in this session "
                f"(the result of call {cached[1]}); the text is above in the conversation.",
            }
        self.read_cache[key] = (sha, call_id)
        return result

    def account_usage(self, usage: Usage, turn: TurnState | None) -> None:
        """Add one model call's reported usage to the session (and the turn, if any),
        and, once the session has switched models, to the model's own totals."""
        prices = self.model.settings.prices
        self.state.totals.add_priced_call(usage, prices)
        if self.state.model_totals or self.retired_models:
            by_model = self.state.model_totals.setdefault(self.model_label, TokenTotals())
            by_model.add_priced_call(usage, prices)
        if turn is not None:
            turn.usage.add_call(usage)
            turn.usage_by_model.setdefault(self.model_label, UsageCounts()).add_call(usage)
            turn.prices_by_model[self.model_label] = prices

    async def checkpoint(self) -> None:
        """Save what changed since the last save (journal.py), written and fsynced off
        the event loop, in order; a call with nothing new writes nothing."""
        async with self.checkpoint_lock:  # an older step never lands last
            self.state.log_path = str(self.reporter.writer.path)  # it moves on rotation
            self.state.updated = now_iso()
            delta = self.journal.delta(self.state)
            if delta is None:
                return
            try:
                await finish_even_if_cancelled(asyncio.to_thread(self.journal.write, delta))
            except OSError as exc:
                log.error("could not checkpoint session %s: %s", self.state.id, exc)

    def start_turn(self, coro: Any, turn_id: str) -> None:
        if self.busy:
            coro.close()
            raise SessionBusy("A turn is already running in this session; cancel it first")
        self.turn_open = True
        self.turn_id = turn_id
        self.turn_end_sent = False
        self.turn_task = asyncio.create_task(coro, name=f"turn-{self.state.id}")
        self.turn_task.add_done_callback(self._turn_closed)

    def _turn_closed(self, task: asyncio.Task[None]) -> None:
        # However the task ended (even by an error before turn_end), the session is free
        # -- unless a newer turn has started meanwhile.
        if task is self.turn_task:
            self.turn_open = False
        if not task.cancelled() and task.exception() is not None:
            log.error("turn task failed", exc_info=task.exception())

    def in_background(self, coro: Any) -> None:
        """Run work that must not hold the turn open (a webhook); awaited at close."""
        task: asyncio.Task[None] = asyncio.create_task(coro)
        self.background.add(task)
        task.add_done_callback(self.background.discard)

    async def cancel_turn(self, *, force: bool = False) -> bool:
        """Cancel the running turn; a turn already finishing is waited for instead.

        ``force`` (shutdown) cancels even the finishing steps.
        """
        task = self.turn_task
        if task is None or task.done():
            return False
        finishing = self.finishing_task is task
        if finishing and not force:
            await asyncio.wait([task])
            return False
        task.cancel()
        try:
            await task
        except asyncio.CancelledError:
            pass
        except Exception:
            log.exception("turn ended with an error while cancelling")
        if not self.turn_end_sent:
            await self._close_unstarted_turn()
        return True

    async def _close_unstarted_turn(self) -> None:
        """A cancel that landed while the turn was still being set up (before its own
        cancel handling) ends it here: the client still gets its ``turn_end``."""
        self.turn_end_sent = True
        self.state.turn_in_progress = None
        steers, self.state.pending_steers = self.state.pending_steers, []
        await self.checkpoint()
        extra: JSONObject = {"steers": steers} if steers else {}
        await self.reporter.update(
            "turn_end", turnId=self.turn_id, stopReason="cancelled", durationMs=0, **extra
        )

    async def aclose(self) -> None:
        """Shut down: the turn and every child process first, then what can wait."""
        await self.cancel_turn(force=True)
        await self.jobs.aclose(self.kill_job_group)
        if self.shared_net is not None:
            await self.shared_net.aclose()
        await self.runner.kill_all()
        for source in self.tool_sources:
            try:
                await source.aclose()
            except Exception:
                log.exception("error while closing a tool source")
        if self.background:  # a webhook gets a moment, not the shutdown's deadline
            _, late = await asyncio.wait(self.background, timeout=1)
            for task in late:
                task.cancel()
            if late:
                await asyncio.wait(late)
        await self.model.aclose()
        for retired in self.retired_models:
            await retired.aclose()
        if self.memory is not None:
            await asyncio.to_thread(self.memory.close)
        if self.remote is not None:
            await self.remote.aclose()

    async def quiet_run(self, argv: list[str], *, timeout_s: float) -> ProcessResult:
        """Run a small internal command; its output log is not kept (nothing links it).

        In a remote project it runs there, at the remote root (git for the status)."""
        if self.remote is not None:
            result = await self.remote.runner.run_argv(argv, cwd=".", timeout_s=timeout_s)
        else:
            result = await self.runner.run_argv(argv, cwd=self.root, timeout_s=timeout_s)
        if result.log_path is not None:
            await asyncio.to_thread(result.log_path.unlink, missing_ok=True)
        return result

    async def revoke_grant(self, grant_id: str) -> Grant:
        """``session/revoke_grant``: the next such step asks again, even within this turn."""
        grant = revoke_grant(self.state, grant_id)
        if grant is None:
            raise InvalidParams(
                f"no grant {grant_id!r} in this session (session/grants lists them)"
            )
        await self.checkpoint()
        await self.reporter.entry(
            "Grant revoked by the user",
            source="user",
            parent=None,
            properties={"GRANT": grant.id},
            body=[text(f"No longer allowed without asking: {grant.description}.")],
        )
        return grant

    async def current_branch(self) -> str | None:
        """The branch checked out at the root (``HEAD`` when detached).

        Read from ``.git/HEAD`` when the root is a repository's top: a turn asks
        twice, and a ``git`` child forked from the bridge held the event loop for
        tens of milliseconds each time. Anything else asks git.
        """
        name = await asyncio.to_thread(head_branch, self.root)
        if name is not None:
            return name
        res = await self.quiet_run(safe_git_argv("rev-parse", "--abbrev-ref", "HEAD"), timeout_s=10)
        return res.stdout.strip() if res.exit_code == 0 else None


def head_branch(root: Path) -> str | None:
    """What ``git rev-parse --abbrev-ref HEAD`` says at ROOT, read from the files of
    the repository whose top ROOT is; None when they cannot tell (ask git)."""
    dot_git = root / ".git"
    try:
        if dot_git.is_file():  # a worktree or submodule: "gitdir: <path>"
            line = dot_git.read_text(encoding="utf-8").strip()
            if not line.startswith("gitdir: "):
                return None
            git_dir = (root / line.removeprefix("gitdir: ")).resolve()
        elif dot_git.is_dir():
            git_dir = dot_git
        else:
            return None
        head = (git_dir / "HEAD").read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError):
        return None
    if head.startswith("ref: refs/heads/"):
        return head.removeprefix("ref: refs/heads/") or None
    if len(head) == 40 and all(c in "0123456789abcdef" for c in head):
        return "HEAD"  # detached
    return None


_GITIGNORE = """\
# agent-shell's own records stay out of the repository; memory/, config.el and
# allowlist.el are yours to commit (or not).
logs/
snapshots/
outputs/
sessions/
workspace/
"""


def model_client(config: BridgeConfig) -> ModelClient:
    """A client for the model ``config`` names."""
    return ModelClient(
        ModelSettings(
            api_base=config.api_base,
            model=config.model,
            api_key=config.api_key,
            context_window=config.context_window,
            trust_env=config.trust_env,
            prices=config.price_list,
            echo_reasoning=config.echo_reasoning,
            reasoning_effort=config.reasoning_effort,
        )
    )


def _ignore_records(base: Path) -> None:
    """Give ``.agent-shell/`` a .gitignore for the bridge's records, unless one exists."""
    ignore = base / ".gitignore"
    if ignore.exists() or ignore.is_symlink():
        return
    base.mkdir(parents=True, exist_ok=True)
    try:
        with ignore.open("x", encoding="utf-8") as fh:
            fh.write(_GITIGNORE)
    except OSError as exc:  # a read-only checkout still gets a session
        log.warning("could not write %s: %s", ignore, exc)


def open_session(
    client: ClientLink,
    detected: SandboxStatus,
    state: SessionState,
    config: BridgeConfig,
    *,
    approver: Approver | None = None,
    journal: SessionJournal | None = None,
    remote: RemoteProject | None = None,
) -> LiveSession:
    """Assemble the parts of a session (new or resumed) from its state.

    A resumed session passes the JOURNAL made when its state was loaded, and keeps
    appending to its current log file; a new one starts a log file. A REMOTE
    project's session has its mirror as root, the host's sandbox, and its files
    through the connection, or through the Emacs buffers visiting them; of the
    Emacs-side tools only those that look at these buffers go to Emacs
    (``REMOTE_TOOLS``), the others would look here.
    """
    from ...memory.index import MemoryIndex
    from ...policy.engine import PolicyEngine

    root = Path(state.root)
    main = main_worktree(root)
    config = replace(config, extra_allowed_paths=tuple(Path(x) for x in state.extra_allowed_paths))
    base = root / ".agent-shell"
    _ignore_records(base)
    current = _current_log(root, state)
    log_path = current or log_path_for(root, state.id, datetime.now())
    writer = OrgLogWriter(
        log_path,
        title=f"agent-shell: {root.name} — session {state.id}",
        session_id=state.id,
        resumed=current is not None,
        limit=config.log_rotate_bytes,
    )
    state.log_path = str(writer.path)
    store = SessionStore(root)
    if journal is None:
        journal = SessionJournal(store.path(state.id), state, on_disk=False)
    secrets = [config.api_key] if config.api_key else []
    model = model_client(config)
    memory_dir = config.memory_dir
    roles, project_roles = _session_roles(root, state, memory_dir)
    instructions = load_instructions(root, config.user_config_dir)
    if remote is None:  # a remote project's are read there once it is open
        instructions.restore(state.active_instructions)
    if remote is not None:
        from ...remote.buffers import EditorBuffers
        from ...remote.client_files import RemoteClientFiles

        shared = client  # Emacs initializing again changes what it serves
        buffers = EditorBuffers(
            client.hub, lambda: shared.buffers, timeout_s=config.client_tool_timeout_s
        )
        files = RemoteClientFiles(remote.files, root, tramp_root=remote.tramp, buffers=buffers)
        client = ClientLink(client.hub, files=files, served_by=shared)
        detected = remote.probe.status()  # the host's, which its config.el may turn off
    sandbox = project_sandbox(root, detected, project_trust("config", memory_dir))
    live = LiveSession(
        state=state,
        root=root,
        config=config,
        client=client,
        store=store,
        model=model,
        policy=PolicyEngine.for_project(
            root,
            extra_paths=config.extra_allowed_paths,
            trust=project_trust("allowlist", config.memory_dir),
            extra_secrets=config.extra_secrets,
            allowlist_root=main,
        ),
        runner=ProcessRunner(base / "outputs" / state.id / "raw", secrets=secrets),
        outputs=OutputStore(base / "outputs" / state.id),
        reporter=Reporter(client.hub, state.id, writer),
        approver=approver or ClientApprover(client.hub),
        memory=(
            MemoryIndex(memory_dir, full_scan_every_s=config.memory_full_scan_s)
            if memory_dir is not None
            else None
        ),
        journal=journal,
        dry_run=state.dry_run,
        max_steps=state.max_steps,
        instructions=instructions,
        roles=roles,
        project_roles=project_roles,
        sandbox=sandbox.status,
        sandbox_setting=sandbox.setting,
        records_root=main if main != root else None,
        remote=remote,
    )
    live.jobs.on_change = functools.partial(
        report_job, client.hub, state.id, live.reporter, live.jobs
    )
    return live


def _current_log(root: Path, state: SessionState) -> Path | None:
    """The log file a resumed session goes on with: its saved one, when that is still
    a file in this project's log directory."""
    if not state.log_path:
        return None
    path = Path(state.log_path)
    logs = root / ".agent-shell" / "logs"
    try:
        if path.parent.resolve() != logs.resolve() or path.is_symlink() or not path.is_file():
            return None
    except OSError:
        return None
    return path


def _session_roles(
    root: Path, state: SessionState, memory_dir: Path | None
) -> tuple[dict[str, Role], ProjectRoles]:
    """Built-in roles, then the project's trusted roles.el, then the user's own."""
    user = [RoleConfig.model_validate(c) for c in state.role_configs]
    project = load_project_roles(root, project_trust("roles", memory_dir))
    try:
        return merge_roles([*project.roles, *user], CATALOGUE.keys()), project
    except ValueError as exc:  # a trusted file can still name a tool roles cannot have
        invalid = ProjectRoles("invalid", error=str(exc))
        return merge_roles(user, CATALOGUE.keys()), invalid
