"""Rewinding a session to an earlier prompt, and undoing a rewind.

The files come back in Emacs (``agent-shell-rewind`` restores them from the per-turn
snapshots); the bridge owns the conversation. ``session/rewind`` cuts the history
just before the chosen prompt (when the user asked for the conversation), tells the
model which files were put back (what it read of them is stale), and writes a
REWIND entry in the log listing what was restored and what was skipped. What a
rewind cut is kept in ``SessionState.rewinds``, so ``session/rewind_undo`` puts it
back; a resumed session shows the history as the rewind left it.
"""

from __future__ import annotations

import copy
import secrets
from collections.abc import Sequence
from typing import TYPE_CHECKING

from ...errors import InvalidParams, SessionBusy
from ...orglog import SrcBlock, TextBlock
from ...types import JSONObject
from ..conversation.messages import Conversation
from ..session.reporter import src, text
from ..session.store import SessionState, new_session_id, now_iso

if TYPE_CHECKING:
    from ..session.live import LiveSession

__all__ = ["fork_state", "list_prompts", "rewind", "undo_rewind"]

_MAX_KEPT = 20  # rewinds that can be undone, newest kept


def list_prompts(live: LiveSession) -> list[JSONObject]:
    """The session's prompts, oldest first: turn id, text and when the turn began."""
    times = live.state.turn_times
    return [
        {
            "turnId": item["turnId"],
            "prompt": item.get("text", ""),
            "time": times.get(str(item["turnId"])),
        }
        for item in Conversation(live.state).prompts()
    ]


def _forget_reads(live: LiveSession, paths: Sequence[str]) -> None:
    gone = set(paths)
    for path in gone:
        live.state.read_hashes.pop(path, None)
    live.read_cache = {k: v for k, v in live.read_cache.items() if k[0] not in gone}


def _label(turn_id: str, prompt: str) -> str:
    first = prompt.strip().splitlines()[0][:120] if prompt.strip() else ""
    return f"turn {turn_id}" + (f" ({first!r})" if first else "")


async def rewind(
    live: LiveSession,
    turn_id: str,
    *,
    conversation: bool,
    restored: list[str],
    skipped: list[str],
) -> JSONObject:
    """Rewind to just before ``turn_id``: cut the conversation (when asked), note the
    restored files for the model, log it; the answer carries the prompt's text."""
    if live.busy:
        raise SessionBusy("A turn is running in this session; cancel it before a rewind")
    chat = Conversation(live.state)
    prompt = next((p["text"] for p in chat.prompts() if p.get("turnId") == turn_id), None)
    if prompt is None:
        raise InvalidParams(f"no prompt of turn {turn_id!r} in this session")
    # Read before the cut: what commands did is not in any snapshot.
    commands = chat.commands_since(turn_id)
    record: JSONObject = {
        "id": "r" + secrets.token_hex(4),
        "turnId": turn_id,
        "restored": restored,
    }
    if conversation:
        try:
            record["cut"] = chat.cut_before(turn_id)
        except LookupError as exc:
            raise InvalidParams(str(exc)) from exc
        record["promptsAfter"] = len(chat.prompts())
        live.state.pending_steers = []
    if restored:
        _forget_reads(live, restored)
        chat.queue_note(
            f"The user rewound {len(restored)} file(s) to their state before "
            f"{_label(turn_id, str(prompt))}: {', '.join(restored[:50])}. What you read or "
            "wrote of them since is gone; read them again before relying on them."
        )
    live.state.rewinds = [*live.state.rewinds, record][-_MAX_KEPT:]
    kept = len(record.get("cut", {}).get("messages", []))
    what = (
        ("code and conversation" if restored or skipped else "conversation")
        if conversation
        else "code"
    )
    body: list[TextBlock | SrcBlock] = [
        text(f"Rewound the {what} to before {_label(turn_id, str(prompt))}.")
    ]
    if restored:
        body += [text("Files restored from the snapshots:"), src("\n".join(restored), "text")]
    if skipped:
        body += [
            text("Edited by the user since, left as they are:"),
            src("\n".join(skipped), "text"),
        ]
    if commands:
        body += [
            text("Commands that ran since then; what they changed is not undone:"),
            src("\n".join(commands[:50]), "sh"),
        ]
    if conversation:
        body.append(text(f"The conversation from that prompt on ({kept} messages) was cut."))
    await live.reporter.entry(
        f"REWIND: to before {_label(turn_id, str(prompt))}",
        source="user",
        parent=None,
        properties={
            "REWIND_TO": turn_id,
            "REWIND_ID": str(record["id"]),
            "FILES": len(restored),
            "SKIPPED": len(skipped),
            "CONVERSATION": "cut" if conversation else "kept",
            "COMMANDS": len(commands),
        },
        body=body,
    )
    chat.show(f"[rewound the {what} to before {_label(turn_id, str(prompt))}]")
    await live.checkpoint()
    return {
        "rewindId": record["id"],
        "prompt": prompt,
        "history": list(chat.visible),
        "commandsNotUndone": commands[:50],
    }


async def undo_rewind(live: LiveSession, rewind_id: str | None) -> JSONObject:
    """Put back what the newest rewind (or ``rewind_id``, which must be it) cut."""
    if live.busy:
        raise SessionBusy("A turn is running in this session; cancel it before undoing a rewind")
    if not live.state.rewinds:
        raise InvalidParams("no rewind to undo in this session")
    record = live.state.rewinds[-1]
    if rewind_id is not None and record.get("id") != rewind_id:
        raise InvalidParams(
            f"rewind {rewind_id!r} is not the newest one of this session; undo "
            f"{record.get('id')!r} first"
        )
    chat = Conversation(live.state)
    cut = record.get("cut")
    if cut is not None and len(chat.prompts()) != record.get("promptsAfter"):
        raise InvalidParams(
            "the conversation went on after the rewind; putting the cut part back would "
            "mix two histories (agent-shell-fork keeps both)"
        )
    live.state.rewinds = live.state.rewinds[:-1]
    if cut is not None:
        chat.put_back(cut)
    restored = [str(p) for p in record.get("restored") or []]
    if restored:
        _forget_reads(live, restored)
        chat.queue_note(
            f"The user undid a rewind: {len(restored)} file(s) are back as they were "
            f"before it: {', '.join(restored[:50])}. Read them again before relying on them."
        )
    await live.reporter.entry(
        f"Rewind undone: {record.get('id')}",
        source="user",
        parent=None,
        properties={"REWIND_UNDONE": str(record.get("id")), "FILES": len(restored)},
        body=[text("Files put back as the rewind found them:"), src("\n".join(restored), "text")]
        if restored
        else [text("The cut conversation is back.")],
    )
    await live.checkpoint()
    return {
        "rewindId": record.get("id"),
        "turnId": record.get("turnId"),
        "conversationRestored": cut is not None,
        "restored": restored,
        "history": list(chat.visible),
    }


def fork_state(live: LiveSession, turn_id: str | None) -> tuple[SessionState, str | None]:
    """A new session's state with this one's history: all of it, or (``turn_id``) the
    part before that prompt, whose text is returned for the new shell's input.

    The fork has its own id (so its own log and checkpoints), no grants (the user
    gave those to this session), no steers, no rewinds, and totals from zero.
    """
    if live.busy:
        raise SessionBusy("A turn is running in this session; fork it when the turn is over")
    data = copy.deepcopy(live.state.to_json())
    state = SessionState.from_json(data)
    state.id = new_session_id()
    state.created = state.updated = now_iso()
    state.log_path = ""
    state.turn_in_progress = None
    state.session_allow = []
    state.grant_details = {}
    state.pending_steers = []
    state.rewinds = []
    state.model_totals = {}
    state.totals = type(state.totals)()
    prompt = None
    if turn_id is not None:
        try:
            prompt = str(Conversation(state).cut_before(turn_id)["prompt"])
        except LookupError as exc:
            raise InvalidParams(str(exc)) from exc
    base = live.state.title or live.state.id
    state.title = f"fork of {base}"[:200]
    return state, prompt
