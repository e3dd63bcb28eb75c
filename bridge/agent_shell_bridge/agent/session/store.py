"""Session state and its checkpoints on disk.

A session's state is saved under ``<root>/.agent-shell/sessions/``: a snapshot
``<id>.json`` and the journal of the steps since (``journal.py``), so a killed bridge
can ``session/resume`` and a later Emacs can reopen the conversation with its visible
history. A checkpoint written before the journal existed is a snapshot alone and
loads as it did.
"""

from __future__ import annotations

import json
import logging
import re
import secrets
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ...errors import SessionNotFound
from ...model.types import Usage, UsageCounts
from ...types import JSONObject, Prices
from .journal import apply_journal, journal_path, write_atomic

__all__ = ["SessionState", "SessionStore", "TokenTotals", "new_session_id"]

log = logging.getLogger(__name__)

_ID = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


def new_session_id() -> str:
    return datetime.now(UTC).strftime("%Y%m%d%H%M%S") + "-" + secrets.token_hex(3)


def now_iso() -> str:
    return datetime.now().astimezone().isoformat(timespec="seconds")


@dataclass(slots=True)
class TokenTotals(UsageCounts):
    """A session's counts so far, with their running cost (saved in the checkpoint).

    The checkpoint's ``totals`` object keeps its keys and their order: the counts,
    then ``cost`` and ``last_prompt_tokens``.
    """

    cost: float = 0.0
    # The prompt size of the last request: the API's own count, our context fill.
    last_prompt_tokens: int = 0

    def add_priced_call(self, usage: Usage, prices: Prices | None) -> None:
        """Count one model call; with prices, add what it cost."""
        self.add_call(usage)
        if prices is not None:
            self.cost += usage.cost(prices)


_OMITTED_WHEN_EMPTY = ("pending_steers", "turn_times", "rewinds", "model_totals", "chosen_model")


@dataclass
class SessionState:
    id: str
    root: str
    mode: str = "act"
    title: str = ""
    created: str = field(default_factory=now_iso)
    updated: str = field(default_factory=now_iso)
    model: str = ""
    messages: list[JSONObject] = field(default_factory=list)
    summary: str = ""  # compacted history
    visible: list[JSONObject] = field(default_factory=list)
    read_hashes: dict[str, str] = field(default_factory=dict)
    session_allow: list[str] = field(default_factory=list)
    # What each "allow for this session" key covers, for listing (agent/grants.py).
    grant_details: dict[str, JSONObject] = field(default_factory=dict)
    totals: TokenTotals = field(default_factory=TokenTotals)
    turns: int = 0
    log_path: str = ""
    memories: list[JSONObject] = field(default_factory=list)
    # A turn interrupted by a crash is marked so resume can say so.
    turn_in_progress: str | None = None
    # The current plan and its progress (agent/plan.py: Plan.to_json()).
    plan: JSONObject | None = None
    # Settings chosen at session/new that a resume must keep (a dry run stays dry).
    dry_run: bool = False
    max_steps: int = 25
    extra_allowed_paths: list[str] = field(default_factory=list)
    # Nested AGENTS.md files already in force (labels such as "src/AGENTS.md").
    active_instructions: list[str] = field(default_factory=list)
    # Notes for the model's next request (agent/notes.py), e.g. "the user undid turn t1".
    pending_notes: list[str] = field(default_factory=list)
    # The user's role definitions (RoleConfig as JSON) and whether changes are reviewed.
    role_configs: list[JSONObject] = field(default_factory=list)
    review: bool = False
    # What the user said to steer the running turn, not yet in a request (turn/steer.py).
    pending_steers: list[str] = field(default_factory=list)
    # When each turn began (turn id → ISO time), for choosing a prompt to rewind to.
    turn_times: dict[str, str] = field(default_factory=dict)
    # Rewinds that can still be undone, newest last (agent/turn/rewind.py).
    rewinds: list[JSONObject] = field(default_factory=list)
    # Totals per model (its name), once the session has switched models.
    model_totals: dict[str, TokenTotals] = field(default_factory=dict)
    # The model the user switched to (name, model, api_base; never its key), so a
    # resumed session can ask the client to choose it again.
    chosen_model: JSONObject = field(default_factory=dict)

    def to_json(self) -> JSONObject:
        data = asdict(self)
        # A checkpoint without these reads (and is written) as before they existed.
        for key in _OMITTED_WHEN_EMPTY:
            if not data[key]:
                del data[key]
        return data

    @classmethod
    def from_json(cls, data: JSONObject) -> SessionState:
        fields = dict(data)
        fields["totals"] = TokenTotals(**fields.get("totals", {}))
        fields["model_totals"] = {
            str(name): TokenTotals(**counts)
            for name, counts in (fields.get("model_totals") or {}).items()
        }
        known = set(cls.__dataclass_fields__)
        return cls(**{k: v for k, v in fields.items() if k in known})


class SessionStore:
    """Checkpoints of one project's sessions."""

    def __init__(self, root: Path) -> None:
        self.directory = root / ".agent-shell" / "sessions"

    def path(self, session_id: str) -> Path:
        if not _ID.match(session_id):
            raise SessionNotFound(f"Invalid session id {session_id!r}")
        return self.directory / f"{session_id}.json"

    def save(self, state: SessionState) -> None:
        """Write STATE whole as the snapshot, with no journal after it (blocking)."""
        state.updated = now_iso()
        path = self.path(state.id)
        write_atomic(path, json.dumps(state.to_json(), ensure_ascii=False).encode("utf-8"))
        journal_path(path).unlink(missing_ok=True)

    def read(self, session_id: str) -> JSONObject:
        """The saved state as JSON: the snapshot with its journal's steps applied."""
        path = self.path(session_id)
        try:
            data: Any = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError as exc:
            raise SessionNotFound(f"No saved session {session_id} under {self.directory}") from exc
        except (OSError, ValueError) as exc:
            raise SessionNotFound(
                f"The checkpoint of session {session_id} is unreadable: {exc}"
            ) from exc
        if not isinstance(data, dict):
            raise SessionNotFound(f"The checkpoint of session {session_id} is not an object")
        try:
            merged, _, _ = apply_journal(data, journal_path(path))
        except (OSError, ValueError, TypeError) as exc:
            raise SessionNotFound(
                f"The journal of session {session_id} is unreadable: {exc}"
            ) from exc
        merged.pop("journal_seq", None)
        return merged

    def load(self, session_id: str) -> SessionState:
        try:
            return SessionState.from_json(self.read(session_id))
        except TypeError as exc:
            raise SessionNotFound(
                f"The checkpoint of session {session_id} is unreadable: {exc}"
            ) from exc

    def list(self) -> list[JSONObject]:
        out: list[JSONObject] = []
        if not self.directory.is_dir():
            return out
        for path in self.directory.glob("*.json"):
            try:
                state = self.load(path.stem)
            except SessionNotFound as exc:
                log.warning("skipping unreadable checkpoint %s: %s", path, exc)
                continue
            out.append(
                {
                    "sessionId": state.id,
                    "root": state.root,
                    "title": state.title,
                    "created": state.created,
                    "updated": state.updated,
                    "turns": state.turns,
                    "logPath": state.log_path,
                    "mode": state.mode,
                }
            )
        out.sort(key=lambda s: str(s["updated"]), reverse=True)
        return out
