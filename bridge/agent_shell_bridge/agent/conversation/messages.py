"""A session's conversation: the model's messages and the history the user sees.

Every change to either goes through :class:`Conversation`, so the two stay in step
and the messages stay a history a chat API accepts: each assistant tool call is
followed by exactly one ``tool`` answer. ``messages`` is what the next request
carries (after the system prompt and the compacted summary); ``visible`` is what
``session/resume`` replays to the user.

The conversation keeps no state of its own: it works on the record it is given, a
:class:`~agent_shell_bridge.agent.session.store.SessionState` (saved in the checkpoint) or a
role's :class:`Scratch` (thrown away with the role's run).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from ...model.profiles import PRODUCER_KEY
from ...model.types import Completion, ToolCall
from ...types import JSONObject
from .notes import frame_notes
from .system_prompt import frame_tool_result

__all__ = ["INTERRUPTED", "Conversation", "Record", "Scratch", "repaired"]

# What an unanswered tool call gets as its result when a checkpoint is resumed.
INTERRUPTED = "not run: the turn was interrupted (the bridge stopped)"
CANCELLED = "not run: the turn was cancelled"


class Record(Protocol):
    """Where a conversation lives (SessionState has these fields)."""

    messages: list[JSONObject]
    visible: list[JSONObject]
    summary: str
    pending_notes: list[str]


@dataclass
class Scratch:
    """A conversation that is not saved: a role's sub-session."""

    messages: list[JSONObject] = field(default_factory=list)
    visible: list[JSONObject] = field(default_factory=list)
    summary: str = ""
    pending_notes: list[str] = field(default_factory=list)


def _tool_message(call_id: str, content: str) -> JSONObject:
    return {"role": "tool", "tool_call_id": call_id, "content": content}


def _failed_answer(name: str, call_id: str, reason: str) -> JSONObject:
    return _tool_message(call_id, frame_tool_result(name, call_id, "failed", {"error": reason}))


def _call_parts(call: object) -> tuple[str, str]:
    """A wire tool call's id and function name ('' where the shape is broken)."""
    if not isinstance(call, dict):
        return "", ""
    function = call.get("function")
    name = str(function.get("name", "")) if isinstance(function, dict) else ""
    return str(call.get("id", "")), name


def repaired(messages: Sequence[JSONObject], reason: str = INTERRUPTED) -> list[JSONObject]:
    """``messages`` with every unanswered tool call answered as failed for ``reason``.

    A bridge killed between a model step and its tool results leaves calls with no
    ``tool`` answer; chat APIs refuse such a history. The answers go right after the
    ones the call's step did get, in the order of the calls.
    """
    out: list[JSONObject] = []
    i = 0
    while i < len(messages):
        message = messages[i]
        out.append(message)
        i += 1
        calls = message.get("tool_calls") if message.get("role") == "assistant" else None
        if not isinstance(calls, list) or not calls:
            continue
        answered: set[str] = set()
        while i < len(messages) and messages[i].get("role") == "tool":
            answered.add(str(messages[i].get("tool_call_id")))
            out.append(messages[i])
            i += 1
        for call in calls:
            call_id, name = _call_parts(call)
            if call_id not in answered:
                out.append(_failed_answer(name, call_id, reason))
                answered.add(call_id)
    return out


def _content_text(message: Mapping[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return ""


class Conversation:
    """The one writer of a record's messages and visible history."""

    def __init__(self, record: Record, *, shown: bool = True) -> None:
        self._record = record
        # A role's scratch conversation has no history anyone sees.
        self._shown = shown

    @classmethod
    def scratch(cls) -> Conversation:
        return cls(Scratch(), shown=False)

    # -- reading ------------------------------------------------------------------

    @property
    def messages(self) -> Sequence[JSONObject]:
        """The model's messages, oldest first (read only: change them through here)."""
        return self._record.messages

    @property
    def visible(self) -> Sequence[JSONObject]:
        """The history ``session/resume`` replays, oldest first."""
        return self._record.visible

    @property
    def summary(self) -> str:
        """The compacted earlier history (empty until the first compaction)."""
        return self._record.summary

    def since(self, start: int) -> list[JSONObject]:
        """The messages from index ``start`` on (a turn's, for the memory step)."""
        return list(self._record.messages[start:])

    # -- what the user and the model say ---------------------------------------------

    def add_user(
        self,
        text: str,
        *,
        turn_id: str | None = None,
        attached: str = "",
        attachments: Sequence[JSONObject] = (),
    ) -> int:
        """The user's prompt, to the model and the history; returns its index.

        ``attached`` is the framed attachments the model gets after the prompt; the
        history keeps only their ``attachments`` summaries (name, lines, size).
        """
        start = len(self._record.messages)
        content = f"{text}\n\n{attached}" if attached else text
        self._record.messages.append({"role": "user", "content": content})
        if self._shown:
            item: JSONObject = {"role": "user", "text": text}
            if turn_id is not None:
                item["turnId"] = turn_id
            if attachments:
                item["attachments"] = list(attachments)
            self._record.visible.append(item)
        return start

    def add_steer(self, text: str, *, turn_id: str | None = None) -> None:
        """The user's words mid-turn: a user message to the model, a steer in the history.

        Right after the user's own message (no model call yet) they join it: some
        providers refuse two user messages in a row.
        """
        messages = self._record.messages
        last = messages[-1] if messages else None
        if last is not None and last.get("role") == "user" and isinstance(last.get("content"), str):
            messages[-1] = {**last, "content": f"{last['content']}\n\n{text}"}
        else:
            messages.append({"role": "user", "content": text})
        if self._shown:
            item: JSONObject = {"role": "user", "text": text, "steer": True}
            if turn_id is not None:
                item["turnId"] = turn_id
            self._record.visible.append(item)

    def add_feedback(self, note: str, *, shown: str) -> None:
        """A message for the model in the user's place (the reviewer's), ``shown`` as a
        system line in the history."""
        self._record.messages.append({"role": "user", "content": note})
        self.show(shown)

    def add_assistant(self, completion: Completion) -> None:
        """The model's step: its message, and its answer (if any) in the history."""
        self._record.messages.append(completion.to_message())
        if completion.answer and self._shown:
            self._record.visible.append({"role": "assistant", "text": completion.answer})

    def add_tool_result(
        self,
        call: ToolCall,
        status: str,
        payload: Mapping[str, Any],
        *,
        title: str = "",
        view: Mapping[str, Any] | None = None,
    ) -> None:
        """One call's result, framed as data; ``title`` names the call in the history,
        ``view`` is the call as the client last saw it (kept to show it again)."""
        content = frame_tool_result(call.name, call.id, status, dict(payload))
        self._record.messages.append(_tool_message(call.id, content))
        if self._shown:
            item: JSONObject = {
                "role": "tool",
                "toolCallId": call.id,
                "title": title,
                "status": status,
                "text": str(payload.get("error", ""))[:300],
            }
            if view is not None:
                item["toolCallId"] = view.get("toolCallId", call.id)
                item["view"] = dict(view)
            self._record.visible.append(item)

    def answer_unrun(self, calls: Iterable[ToolCall], reason: str = CANCELLED) -> None:
        """Answer calls that will not run (the turn was cancelled) as failed."""
        for call in calls:
            self._record.messages.append(_failed_answer(call.name, call.id, reason))

    def show(self, text: str, *, role: str = "system") -> None:
        """A line in the history only: the model does not get it."""
        if self._shown:
            self._record.visible.append({"role": role, "text": text})

    # -- notes from outside the model's sight ------------------------------------------

    def queue_note(self, note: str) -> None:
        """A note for the model's next request (see :mod:`.notes`)."""
        self._record.pending_notes.append(note)

    def deliver_notes(self) -> bool:
        """Put the queued notes into the messages just before the next request.

        At a turn's start they go in front of the user's prompt (one user message, as
        some providers refuse two in a row); mid-turn they follow the tool results.
        """
        record = self._record
        if not record.pending_notes:
            return False
        framed = frame_notes(record.pending_notes)
        record.pending_notes = []
        last = record.messages[-1] if record.messages else None
        if last is not None and last.get("role") == "user" and isinstance(last.get("content"), str):
            record.messages[-1] = {**last, "content": f"{framed}\n\n{last['content']}"}
        else:
            record.messages.append({"role": "user", "content": framed})
        return True

    # -- a switch of model ----------------------------------------------------------

    def mark_producer(self, provider: str) -> int:
        """Name ``provider`` as the writer of the assistant messages not yet marked
        (the session leaves it for another model); how many were marked. The model
        client never sends one provider's reasoning to another (model/profiles.py)."""
        marked = 0
        for i, message in enumerate(self._record.messages):
            if message.get("role") == "assistant" and PRODUCER_KEY not in message:
                self._record.messages[i] = {**message, PRODUCER_KEY: provider}
                marked += 1
        return marked

    # -- rewinding to an earlier prompt ---------------------------------------------

    def prompts(self) -> list[JSONObject]:
        """The user's prompts in the history (steers left out), oldest first."""
        return [
            item
            for item in self._record.visible
            if item.get("role") == "user" and item.get("turnId") and not item.get("steer")
        ]

    def commands_since(self, turn_id: str) -> list[str]:
        """The commands that ran from turn ``turn_id``'s prompt on, as the history shows
        them: what a rewind of files cannot take back (their effects are unknown)."""
        visible = self._record.visible
        at = next(
            (
                i
                for i, item in enumerate(visible)
                if item.get("turnId") == turn_id and item.get("role") == "user"
            ),
            None,
        )
        if at is None:
            return []
        found: list[str] = []
        for item in visible[at:]:
            view = item.get("view")
            if item.get("role") != "tool" or not isinstance(view, Mapping):
                continue
            raw = view.get("rawInput")
            command = raw.get("command") if isinstance(raw, Mapping) else None
            if view.get("kind") == "execute" and item.get("status") in ("completed", "failed"):
                found.append(str(command or item.get("title") or "a command"))
        return found

    def cut_before(self, turn_id: str) -> JSONObject:
        """Cut the history and the messages just before turn ``turn_id``'s prompt.

        Returns what was cut (``messages``, ``visible``, ``prompt``), for
        :meth:`put_back`. The prompt's message is found from the newest end (a
        compaction keeps the newest messages as they were); a prompt no longer
        among the messages (compacted into the summary) cannot be cut there:
        ``LookupError``, nothing changed.
        """
        record = self._record
        at = next(
            (
                i
                for i, item in enumerate(record.visible)
                if item.get("turnId") == turn_id
                and item.get("role") == "user"
                and not item.get("steer")
            ),
            None,
        )
        if at is None:
            raise LookupError(f"no prompt of turn {turn_id!r} in this session")
        prompt = str(record.visible[at].get("text") or "")
        later = sum(
            1
            for item in record.visible[at + 1 :]
            if item.get("role") == "user" and not item.get("steer") and item.get("text") == prompt
        )
        cut = None
        for i in range(len(record.messages) - 1, -1, -1):
            message = record.messages[i]
            if message.get("role") == "user" and prompt in _content_text(message):
                if later == 0:
                    cut = i
                    break
                later -= 1
        if cut is None:
            raise LookupError(
                f"the prompt of turn {turn_id} is in the compacted summary now; "
                "its conversation cannot be cut there"
            )
        removed: JSONObject = {
            "messages": record.messages[cut:],
            "visible": record.visible[at:],
            "prompt": prompt,
        }
        record.messages = record.messages[:cut]
        record.visible = record.visible[:at]
        return removed

    def put_back(self, removed: Mapping[str, Any]) -> None:
        """Undo :meth:`cut_before`: what it cut follows the history again."""
        self._record.messages.extend(removed.get("messages") or [])
        self._record.visible.extend(removed.get("visible") or [])

    # -- repair and compaction -------------------------------------------------------

    def repair(self, reason: str = INTERRUPTED) -> int:
        """Answer every unanswered tool call as failed; how many were answered."""
        fixed = repaired(self._record.messages, reason)
        added = len(fixed) - len(self._record.messages)
        if added:
            self._record.messages = fixed
        return added

    def replace_tool_content(self, index: int, content: str) -> None:
        """Rewrite one tool result's text (a stub, a note); its pairing is kept."""
        message = self._record.messages[index]
        if message.get("role") != "tool":
            raise ValueError(f"message {index} is a {message.get('role')} message, not a result")
        self._record.messages[index] = {**message, "content": content}

    def replace_for_compaction(self, kept: list[JSONObject], summary: str) -> None:
        """After compaction: ``summary`` stands for what went, ``kept`` is what stays."""
        self._record.summary = summary
        self._record.messages = kept
