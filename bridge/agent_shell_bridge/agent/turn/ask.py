"""``ask_user``: the model asks the user a question with 2 to 4 options.

The question becomes a WAIT entry in the action log (the options numbered) and the
bridge asks the client with the request ``session/ask_user``; the answer — an
option's text or, when free text is allowed, what the user typed — is the tool's
result, and the log entry becomes DONE with it. Every front end answers the same
request: Emacs in the shell or the log (``1``–``4`` or typed text), ``run`` from its
``--answer`` arguments, ACP as a permission request whose options are the answers.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ...errors import ToolFailed
from ...tools.args import AskUserArgs
from ...tools.results import ToolResult
from ...transport.events import ClientError
from ..session.reporter import src, text

if TYPE_CHECKING:
    from ..calls.handlers import Run

__all__ = ["answer_of", "ask_user"]


def numbered(options: list[str]) -> str:
    return "\n".join(f"{n}. {option}" for n, option in enumerate(options, start=1))


def answer_of(result: Any, args: AskUserArgs) -> tuple[str, int | None]:
    """The answer in a client's reply, and its option's number (None: typed text).

    A reply names an option (``option``: 1–4) or gives ``text``; a text that is an
    option's number or exactly an option's words counts as that option.
    """
    if not isinstance(result, dict):
        raise ToolFailed("the client's answer to ask_user was malformed")
    outcome = result.get("outcome")
    if outcome == "cancelled" or (
        isinstance(outcome, dict) and outcome.get("outcome") == "cancelled"
    ):
        raise ToolFailed("the user did not answer (the question was cancelled)")
    option = result.get("option")
    words = result.get("text")
    if isinstance(words, str):
        stripped = words.strip()
        if stripped.isdigit():
            option = int(stripped)
        elif stripped in args.options:
            option = args.options.index(stripped) + 1
        elif stripped:
            if not args.allow_free_text:
                raise ToolFailed(
                    f"the user's answer {stripped!r} is not one of the options, and free "
                    "text was not allowed"
                )
            return words, None
    if isinstance(option, int) and not isinstance(option, bool):
        if 1 <= option <= len(args.options):
            return args.options[option - 1], option
        raise ToolFailed(f"the user's answer {option} is not an option (1–{len(args.options)})")
    raise ToolFailed("the client's answer to ask_user named no option and no text")


async def ask_user(run: Run, args: AskUserArgs) -> ToolResult:
    live, turn = run.live, run.turn
    first = args.question.strip().splitlines()[0][:200] if args.question.strip() else "?"
    entry = await live.reporter.entry(
        f"Question: {first}",
        source="model",
        parent=turn.task_entry,
        todo="WAIT",
        properties={
            "TOOL": "ask_user",
            "TOOL_CALL": run.call.id,
            "OPTIONS": len(args.options),
            "FREE_TEXT": "yes" if args.allow_free_text else "no",
        },
        body=[
            text(args.question),
            src(numbered(args.options), "text"),
            text(
                "Answer with the option's number"
                + (" or your own words." if args.allow_free_text else ".")
            ),
        ],
    )
    params = {
        "sessionId": live.state.id,
        "toolCallId": run.call.id,
        "logEntryId": entry,
        "question": args.question,
        "options": args.options,
        "allowFreeText": args.allow_free_text,
    }
    try:
        try:
            result = await live.client.hub.request("session/ask_user", params, timeout_s=None)
        except ClientError as exc:
            raise ToolFailed(f"the question could not be asked: {exc.message}") from exc
        answer, option = answer_of(result, args)
    except ToolFailed as exc:
        await live.reporter.change(
            entry, todo="FAILED", body=[text(args.question), text(f"Not answered: {exc}")]
        )
        raise
    await live.reporter.change(
        entry,
        todo="DONE",
        properties={
            "ANSWER": answer.splitlines()[0][:200] if answer else "",
            **({"OPTION": option} if option is not None else {}),
        },
        body=[text(args.question), src(numbered(args.options), "text"), text(f"Answer: {answer}")],
    )
    payload: dict[str, Any] = {"answer": answer}
    if option is not None:
        payload["option"] = option
    return ToolResult(payload)
