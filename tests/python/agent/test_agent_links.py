"""A symlink planted in the project never turns an approved step into a write outside.

The case from a review: code run by an auto-allowed test plants ``notes_link.md ->
~/.bashrc``; the model then asks for ``cp README.md notes_link.md``. The question must
name where the copy really goes, a grant given before the link existed must not
cover it, and a link planted while the user decides must not ride on their yes.
Real bridge under uvicorn, real sandbox where bubblewrap runs, real subprocesses and
files; only the model is scripted and $HOME is a temporary one.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agent_rig import allow_once, make_project, payload_of, reject, running_rig, tool_messages

BASHRC = "# the user's own shell setup\n"
README = "# 说明\n"
# The project's test target is what plants the link: code the sandbox runs unasked.
MAKEFILE = 'test:\n\trm -f notes_link.md\n\tln -s "$$HOME/.bashrc" notes_link.md\n'


def run(command: str) -> dict[str, Any]:
    return {"tool_calls": [{"name": "run_command", "arguments": {"command": command}}]}


def run_test(command: str) -> dict[str, Any]:
    return {"tool_calls": [{"name": "run_test", "arguments": {"command": command}}]}


def call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"tool_calls": [{"name": name, "arguments": arguments}]}


def allow_session(_params: dict[str, Any]) -> dict[str, Any]:
    return {"outcome": {"outcome": "selected", "optionId": "allow_session"}}


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "authorized_keys").write_text("ssh-ed25519 AAAA mine\n")
    (home / ".bashrc").write_text(BASHRC)
    monkeypatch.setenv("HOME", str(home))
    return home


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return make_project(tmp_path / "proj", {"README.md": README, "Makefile": MAKEFILE})


def _sandbox_or_yes(params: dict[str, Any]) -> bool:
    """Whether a question is the one ``make test`` asks when there is no sandbox."""
    return params["toolCall"]["rawInput"].get("command") == "make test"


def answers(*script: Callable[[dict[str, Any]], dict[str, Any]]) -> Callable[..., Any]:
    """Answer the questions in order; ``make test`` (asked only without a sandbox) is
    allowed once without using up the script."""
    queue = list(script)

    def answer(params: dict[str, Any]) -> dict[str, Any]:
        if _sandbox_or_yes(params):
            return allow_once(params)
        return queue.pop(0)(params)

    return answer


def _wait_text(turn: Any, call_title: str) -> str:
    """The body of the action log's WAIT entry for the step titled ``call_title``."""
    for entry in turn.log_entries():
        if entry.get("todo") == "WAIT" and call_title in entry.get("title", ""):
            return "\n".join(str(block.get("text", "")) for block in entry.get("body", []))
    raise AssertionError(f"no WAIT entry for {call_title!r}")


async def test_a_link_planted_after_a_grant_is_asked_about_with_its_real_target(
    serve_app: Any, project: Path, home: Path
) -> None:
    copy = "cp README.md notes_link.md"
    steps = [run(copy), {"text": "copied"}]
    steps += [run_test("make test"), run(copy), {"text": "asked"}]
    steps += [run(copy), {"text": "approved"}]
    async with running_rig(serve_app, project, steps) as rig:
        sid = await rig.new_session()
        first = await rig.turn(sid, "copy the readme", answer=allow_session)
        [granted] = first.permission_requests
        assert granted["grant"]["command"] == copy  # the user allows it for the session
        assert (project / "notes_link.md").read_text() == README

        second = await rig.turn(sid, "test, then copy again", answer=answers(reject("no")))
        assert os.readlink(project / "notes_link.md") == str(home / ".bashrc")
        tested = payload_of(tool_messages(rig.requests[3])[-1])
        assert tested["sandbox"] == ("bubblewrap" if rig.runtime.sandbox.available else "none")
        [asked] = [p for p in second.permission_requests if not _sandbox_or_yes(p)]
        assert asked["toolCall"]["rawInput"]["command"] == copy
        where = "notes_link.md → ~/.bashrc, outside the project"
        assert where in asked["reason"]
        assert where in _wait_text(second, copy)
        # Asked each time: no grant is offered, and the earlier one did not apply.
        assert "grant" not in asked
        assert [o["optionId"] for o in asked["options"]] == ["allow_once", "reject_once"]
        assert (home / ".bashrc").read_text() == BASHRC

        # The user read where it goes and said yes: that one run may write there.
        third = await rig.turn(sid, "copy it anyway", answer=allow_once)
        [again] = third.permission_requests
        assert where in again["reason"]
    assert (home / ".bashrc").read_text() == README


async def test_a_link_planted_while_the_user_decides_is_refused(
    serve_app: Any, project: Path, home: Path
) -> None:
    """The yes was for a copy inside the project; the link came after the question."""

    def plant_then_allow(params: dict[str, Any]) -> dict[str, Any]:
        assert "outside the project" not in params["reason"]
        os.symlink(home / ".bashrc", project / "notes.md")
        return allow_once(params)

    steps = [run("cp README.md notes.md"), {"text": "done"}]
    async with running_rig(serve_app, project, steps) as rig:
        sid = await rig.new_session()
        turn = await rig.turn(sid, "copy", answer=plant_then_allow)
        result = payload_of(tool_messages(rig.requests[1])[0])
    assert len(turn.permission_requests) == 1
    assert "since you approved it" in result["error"]
    assert "notes.md → ~/.bashrc, outside the project" in result["error"]
    assert (home / ".bashrc").read_text() == BASHRC


@pytest.mark.parametrize(
    ("target", "why"),
    [
        (".bashrc", "outside the project"),
        (".profile.new", "outside the project"),  # dangling: the write would create it
        (".ssh/authorized_keys", "outside the project"),
    ],
)
async def test_file_tools_refuse_a_link_planted_out_of_the_project(
    serve_app: Any, project: Path, home: Path, target: str, why: str
) -> None:
    """The bridge's own file tools (no Emacs connected) resolve links before writing."""
    os.symlink(home / target, project / "notes_link.md")
    os.symlink("notes_link.md", project / "chain.md")
    before = {p: p.read_bytes() for p in home.rglob("*") if p.is_file()}
    steps = [
        call("write_file", path="notes_link.md", content="pwned\n"),
        call("write_file", path="chain.md", content="pwned\n"),
        call("insert_text", path="notes_link.md", line=1, text="pwned\n"),
        call("read_file", path="chain.md"),
        {"text": "done"},
    ]
    async with running_rig(serve_app, project, steps) as rig:
        sid = await rig.new_session()
        turn = await rig.turn(sid, "write", answer=allow_once)
        results = [payload_of(m) for m in tool_messages(rig.requests[-1])]
    assert turn.permission_requests == []  # refused before anyone is asked
    assert len(results) == 4
    for result in results:
        assert why in result["error"], result
        assert "→ ~/" + target in result["error"], result
    assert {p: p.read_bytes() for p in home.rglob("*") if p.is_file()} == before
    assert not (home / ".profile.new").exists()
