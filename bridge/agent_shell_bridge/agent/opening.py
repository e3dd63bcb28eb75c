"""Opening a session: a new one announced in the log, a saved one resumed.

The ``session/new`` and ``session/resume`` handlers (methods/session.py) parse the
request and shape the answer; what happens to the session in between is here.
"""

from __future__ import annotations

import asyncio
import functools
import gc
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from ..config import BridgeConfig
from ..errors import InvalidParams
from ..project.trust import TRUSTED_KINDS
from ..sandbox import SandboxStatus
from .calls.project_hooks import announce_project_hooks
from .conversation.instructions import announce_instructions, restore_remote_instructions
from .conversation.memory import recent_memories
from .conversation.messages import Conversation
from .session.client import ClientLink
from .session.grants import drop_unscoped_mcp_grants
from .session.journal import SessionJournal
from .session.live import LiveSession, open_session
from .session.model_help import key_notice
from .session.reporter import text
from .session.store import SessionState, SessionStore

if TYPE_CHECKING:
    from ..remote.project import RemoteProject

__all__ = ["SessionHost", "resume_saved", "start_new"]


class SessionHost(Protocol):
    """What opens sessions and keeps them (the runtime): the client link, the
    sandbox found at start, and the live sessions by id."""

    @property
    def link(self) -> ClientLink: ...

    sandbox: SandboxStatus
    sessions: dict[str, LiveSession]


def _settle_heap() -> None:
    """Keep what is loaded by now (the modules a session needs, its parts) out of the
    cyclic collector's full passes: on a busy bridge each pass over them held the
    event loop for tens of milliseconds. They live as long as the bridge anyway."""
    gc.collect()
    gc.freeze()


async def start_new(
    rt: SessionHost,
    state: SessionState,
    config: BridgeConfig,
    *,
    remote: RemoteProject | None = None,
) -> LiveSession:
    """Open a new session, save it, and tell the log what the user should know."""
    live = await asyncio.to_thread(
        functools.partial(open_session, rt.link, rt.sandbox, state, config, remote=remote)
    )
    _settle_heap()
    rt.sessions[state.id] = live
    live.warm_sandbox()
    await recent_memories(live)
    await announce_instructions(live)
    await live.checkpoint()
    await _announce(live)
    await announce_project_hooks(live)
    await _announce_remote(live)
    return live


async def _announce_remote(live: LiveSession) -> None:
    """A remote project: where its commands and files are, and where its records."""
    remote = live.remote
    if remote is None:
        return
    where = (
        "in its bubblewrap sandbox"
        if remote.probe.sandboxed
        else "with no sandbox there: only strictly read-only commands run without asking"
    )
    await live.reporter.entry(
        f"Remote project: {remote.target.tramp_name(remote.root)}",
        source="bridge",
        parent=None,
        properties={"REMOTE": remote.target.label, "SANDBOX": remote.probe.label},
        body=[
            text(
                f"Commands run on {remote.target.label} through one ssh connection, "
                f"{where}; "
                "files are read and written there. The API key stays on this machine; "
                f"this log, the sessions and the memory stay here too, in {live.root}."
            )
        ],
    )


async def resume_saved(
    rt: SessionHost,
    root: Path,
    session_id: str,
    config: BridgeConfig,
    *,
    remote: RemoteProject | None = None,
) -> LiveSession:
    """Reopen a saved session of the project at ``root``.

    A turn cut short by a crash is said to be interrupted in the history, and its
    unanswered tool calls are answered as failed, so the model can be asked again.
    """
    store = SessionStore(root)
    state = await asyncio.to_thread(store.load, session_id)
    if Path(state.root) != root:
        raise InvalidParams("that session belongs to another project")
    # The journal's baseline is the state as saved, before the repairs below.
    journal = await asyncio.to_thread(SessionJournal, store.path(session_id), state, on_disk=True)
    interrupted = state.turn_in_progress
    state.turn_in_progress = None
    conversation = Conversation(state)
    conversation.repair()
    drop_unscoped_mcp_grants(state)  # granted nothing any more; not listed as active
    # dry-run, step limit and extra paths come back from the checkpoint.
    live = await asyncio.to_thread(
        functools.partial(
            open_session, rt.link, rt.sandbox, state, config, journal=journal, remote=remote
        )
    )
    _settle_heap()
    if interrupted:
        # The bridge died mid-turn; say so in history rather than pretend.
        conversation.show(f"Turn {interrupted} was interrupted (bridge stopped).")
    rt.sessions[state.id] = live
    live.warm_sandbox()
    await restore_remote_instructions(live)
    await live.checkpoint()
    return live


async def _announce(live: LiveSession) -> None:
    """Log entries for what a new session cannot use as it stands."""
    notice = key_notice(live.config)
    if notice:
        await live.reporter.entry(
            "No API key found", source="bridge", parent=None, body=[text(notice)]
        )
    if live.project_roles.status in ("untrusted", "invalid"):
        untrusted = live.project_roles.status == "untrusted"
        await live.reporter.entry(
            "Project roles not applied: "
            + ("not trusted yet" if untrusted else "the file is not valid"),
            source="bridge",
            parent=None,
            todo=None if untrusted else "FAILED",
            properties={"PATH": ".agent-shell/roles.el"},
            body=[
                text(
                    "This project's .agent-shell/roles.el defines roles (prompts, tools, "
                    "models) and arrives with the repository. Review it and run "
                    f"M-x {TRUSTED_KINDS['roles'].command} to use it."
                    if untrusted
                    else f"{live.project_roles.error}"
                )
            ],
        )
    if live.policy.allowlist_status == "invalid":
        await live.reporter.entry(
            "Project allowlist not applied: it is malformed",
            source="bridge",
            parent=None,
            todo="FAILED",
            properties={"PATH": ".agent-shell/allowlist.el"},
            body=[text("Fix the file (agent-shell-bridge policy check --root . shows why).")],
        )
    if not live.sandbox.available:
        await live.reporter.entry(
            "No sandbox: project code runs only with your yes",
            source="bridge",
            parent=None,
            properties={"SANDBOX": "none"},
            body=[
                text(
                    f"Commands cannot be sandboxed here ({live.sandbox.detail}). Only "
                    "strictly read-only commands run without asking; project tests, "
                    "builds and allowlisted commands wait for your approval. Install "
                    "bubblewrap (Debian: apt install bubblewrap) to sandbox them."
                )
            ],
        )
    if live.sandbox_setting == "untrusted":
        await live.reporter.entry(
            "Sandbox stays on: config.el's setting is not trusted",
            source="bridge",
            parent=None,
            properties={"PATH": ".agent-shell/config.el"},
            body=[
                text(
                    "This project's .agent-shell/config.el sets agent-shell-sandbox to "
                    "nil, but you have not trusted the file in its current form, so the "
                    "sandbox stays on. Review it and run "
                    f"M-x {TRUSTED_KINDS['config'].command}."
                )
            ],
        )
    if live.policy.allowlist_status == "untrusted":
        await live.reporter.entry(
            "Project allowlist not applied: not trusted yet",
            source="bridge",
            parent=None,
            properties={"PATH": ".agent-shell/allowlist.el"},
            body=[
                text(
                    "This project's .agent-shell/allowlist.el has not been trusted in its "
                    "current form, so every command in it is judged like any other. "
                    f"Review it and run M-x {TRUSTED_KINDS['allowlist'].command} to apply it."
                )
            ],
        )
