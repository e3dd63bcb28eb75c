"""A prompt for a session: its ``/NAME`` command expanded, its mode chosen, its
turn started (``session/prompt``; methods/session.py parses the request)."""

from __future__ import annotations

import asyncio
import secrets
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from ...errors import InvalidParams, SessionBusy
from ...project.commands import expand_command, resolve_command, split_command
from ...types import JSONObject
from ..conversation.attachments import Batch
from ..session.skills import explicit_skill
from .loop import run_turn

if TYPE_CHECKING:
    from ..session.live import LiveSession

__all__ = ["submit_prompt"]

Mode = Literal["act", "ask"]


async def submit_prompt(
    live: LiveSession,
    text: str,
    *,
    turn_mode: Mode | None,
    session_mode: Mode | None,
    context: JSONObject | None,
    user_dir: Path,
    attachments: Batch | None = None,
) -> tuple[str, str]:
    """Start a turn on ``text``; the turn's id and the mode it runs in.

    ``turn_mode`` is this turn's own mode (a ``/ask`` or ``/act`` prefix), and
    ``session_mode`` a new mode for the session from here on.
    """
    # Refuse before changing anything: a busy session keeps its mode and context.
    if live.busy:
        raise SessionBusy("A turn is already running in this session; cancel it first")
    command = split_command(text)
    if command is not None:
        name, arguments = command
        try:
            found = await asyncio.to_thread(resolve_command, live.root, user_dir, name)
        except InvalidParams:
            # No command of that name: "/NAME" may load the skill NAME instead.
            loaded = await explicit_skill(live, name)
            if loaded is None:
                raise
            found, text = None, f"{loaded}\n\n{arguments}".rstrip()
        if found is not None:
            text = expand_command(found, arguments)
            # A project's file arrives with a clone: it may keep a turn in ask mode but
            # not lift a session the user keeps in ask mode into act mode.
            lifts = found.scope == "project" and found.mode == "act"
            if not (lifts and (session_mode or live.state.mode) == "ask"):
                turn_mode = turn_mode or found.mode
    if not text.strip():
        raise InvalidParams(f"nothing to do after /{turn_mode}")
    if session_mode is not None:
        live.state.mode = session_mode
    if context is not None:
        live.snapshot = context
    turn_id = "t" + secrets.token_hex(4)
    live.start_turn(run_turn(live, text, turn_id, mode=turn_mode, attachments=attachments), turn_id)
    return turn_id, turn_mode or live.state.mode
