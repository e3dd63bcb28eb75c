"""Declarations of tools defined in Emacs Lisp, as ``session/prompt`` carries them."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

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
