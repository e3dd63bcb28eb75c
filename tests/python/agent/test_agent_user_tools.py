"""Declarations of tools defined in Emacs Lisp, as ``session/prompt`` carries them."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from agent_shell_bridge.agent.session.user_tool_args import args_model
from agent_shell_bridge.agent.session.user_tools import UserToolDecl, _EmacsTool
from agent_shell_bridge.types import Decision, Risk


def _decl(**kw: object) -> UserToolDecl:
    fields: dict[str, object] = {"name": "org_agenda_today", "description": "议程 agenda"}
    fields.update(kw)
    return UserToolDecl.model_validate(fields)


@pytest.mark.parametrize("name", ["write_file", "mcp__x__y", "bad name", "", "x" * 65, "9lives"])
def test_a_built_in_or_malformed_name_is_refused(name: str) -> None:
    with pytest.raises(ValidationError):
        _decl(name=name)


def test_an_unknown_risk_is_refused() -> None:
    with pytest.raises(ValidationError):
        _decl(risk="delete")


@pytest.mark.parametrize(
    ("risk", "decision", "level"),
    [
        ("read", Decision.ALLOW, Risk.READ),
        ("write", Decision.CONFIRM, Risk.WRITE),
        ("exec", Decision.CONFIRM, Risk.WRITE),
    ],
)
def test_the_policy_follows_the_declared_risk(risk: str, decision: Decision, level: Risk) -> None:
    verdict = _EmacsTool(None, _decl(risk=risk)).verdict()  # type: ignore[arg-type]
    assert (verdict.decision, verdict.risk) == (decision, level)


def test_a_redefined_tool_has_another_identity() -> None:
    """A session grant is bound to the declaration: a changed tool asks again."""
    assert _decl().identity() == _decl().identity()
    assert _decl().identity() != _decl(description="changed").identity()
    assert _decl().identity() != _decl(risk="write").identity()


def test_a_tool_that_is_not_grantable_asks_every_time() -> None:
    verdict = _EmacsTool(None, _decl(risk="exec", grantable=False)).verdict()  # type: ignore[arg-type]
    assert (verdict.decision, verdict.risk) == (Decision.CONFIRM, Risk.DANGEROUS)


# -- the arguments, checked by the bridge against the declaration -------------------------

_PARAMS = {
    "type": "object",
    "properties": {
        "days": {"type": "integer", "description": "天数"},
        "ratio": {"type": "number", "description": "r"},
        "title": {"type": "string", "description": "标题"},
        "done": {"type": "boolean", "description": "d"},
        "tags": {"type": "array", "description": "t"},
        "meta": {"type": "object", "description": "m"},
    },
    "required": ["days"],
}


def _problem(arguments: object) -> str:
    model = args_model("org_agenda_today", _PARAMS)
    with pytest.raises(ValidationError) as info:
        model.model_validate(arguments)
    return str(info.value)


def test_declared_arguments_of_the_right_types_pass() -> None:
    model = args_model("org_agenda_today", _PARAMS)
    args = {"days": 3, "ratio": 1, "title": "周报", "done": False, "tags": ["a"], "meta": {}}
    assert model.model_validate(args).model_dump() == args
    # null stands for "not given": an optional argument may be null.
    assert model.model_validate({"days": 2, "title": None}).model_dump() == {"days": 2}


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"days": "3"}, "argument `days` must be an integer, not a string"),
        ({"days": True}, "argument `days` must be an integer, not a boolean"),
        ({"days": 2.5}, "argument `days` must be an integer, not a number"),
        ({"days": 1, "ratio": "x"}, "argument `ratio` must be a number, not a string"),
        ({"days": 1, "done": 0}, "argument `done` must be true or false, not an integer"),
        ({"days": 1, "tags": "a,b"}, "argument `tags` must be an array, not a string"),
        ({"days": 1, "meta": []}, "argument `meta` must be an object, not an array"),
        ({"days": 1, "title": 7}, "argument `title` must be a string, not an integer"),
        ({}, "missing required argument `days` (integer)"),
        ({"days": None}, "missing required argument `days`"),
        ({"days": 1, "weeks": 2}, "no argument `weeks` (the tool takes `days`, `ratio`"),
    ],
)
def test_a_call_that_does_not_fit_names_the_argument(arguments: object, message: str) -> None:
    assert message in _problem(arguments)


@pytest.mark.parametrize(
    "parameters",
    [
        {"type": "object", "properties": {"x": {"type": "date"}}},
        {"type": "object", "properties": {"x": {"description": "no type"}}},
        {"type": "object", "properties": {}, "required": ["ghost"]},
    ],
)
def test_a_declaration_with_unknown_types_is_refused(parameters: dict[str, object]) -> None:
    with pytest.raises(ValidationError):
        _decl(parameters=parameters)
