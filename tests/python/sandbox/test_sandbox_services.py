"""Project code the agent runs without asking reaches none of the user's live services.

Beside the bridge run real services of a user's login, as that user (root, and an
unprivileged one): an Emacs server with its socket in ``$XDG_RUNTIME_DIR/emacs``, a
D-Bus session bus (on a path and an abstract address), a tmux server, an ssh-agent
holding a fresh key, a FIFO, a Unix listener in ``$HOME``, an abstract listener,
and a secret in the kernel session keyring. The bridge gets the environment a login
hands down (``SSH_AUTH_SOCK``, ``DBUS_SESSION_BUS_ADDRESS``, ``TMUX``,
``EMACS_SOCKET_NAME``, ``XDG_RUNTIME_DIR`` …); the hostile project also has every
path written down. Its ``conftest.py`` and ``Makefile`` try each door from an
auto-allowed ``run_test`` (and from an approved command sandboxed with network),
while its own tests make their own sockets, FIFO and manager under its private
``/tmp`` and must pass.

Everything is real (services, bridge process, HTTP + SSE, bubblewrap, make, pytest)
but the model, which is the rigs' scripted server. Each attack is first shown to
work outside the sandbox, so "blocked" inside means the sandbox stopped it; each
service then tells, on the host, whether anybody came.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from typing import Any

import pytest

from agent_rig import Answerer, Turn, allow_once, payload_of, reject, tool_messages
from agent_shell_bridge.model.mock_script import MockScript
from agent_shell_bridge.model.mock_server import MockServer
from services_project import (
    MAKE_ATTEMPTS,
    OWN_TESTS,
    OWN_TEXT,
    SERVICE_ATTEMPTS,
    VISIBLE_ATTEMPTS,
    WALL_ATTEMPTS,
    escapes,
    status_fields,
)
from services_rig import (
    Account,
    Counts,
    Session,
    account_for,
    git_state,
    in_keyring,
    require_tools,
    run_turn,
    running_bridge,
    start_session,
    untouched,
    wait_for,
)

RUN_TEST = {"tool_calls": [{"name": "run_test", "arguments": {"command": "make test"}}]}
RUN_APPROVED = {"tool_calls": [{"name": "run_command", "arguments": {"command": "make escape"}}]}


@pytest.fixture(params=["root", "unprivileged"])
def account(request: pytest.FixtureRequest) -> Account:
    require_tools()
    return account_for(str(request.param))


@pytest.fixture
def session(account: Account) -> Iterator[Session]:
    with contextlib.ExitStack() as stack:
        yield start_session(stack, account)


def test_every_attack_gets_through_without_the_sandbox(session: Session) -> None:
    """The control: the attacks run as the user, no agent, no sandbox; each door opens
    and each service notices, so the same attacks failing inside mean something."""
    before = Counts.now(session)
    git = git_state(session.project)
    done = session.account.run(
        in_keyring(session, [session.interp.python, "conftest.py", "services", "visible"]),
        session.env,
        cwd=session.project,
        timeout=120,
    )
    output = done.stdout + done.stderr
    assert done.returncode == 0, output
    outcome = escapes(output)
    assert sorted(outcome) == sorted((*SERVICE_ATTEMPTS, *VISIBLE_ATTEMPTS)), output
    assert [name for name, how in outcome.items() if how != "SUCCEEDED"] == [], output
    # The secrets the sandboxed runs must not show are the very ones shown here.
    assert [secret for secret in session.secrets if secret not in output] == []
    assert session.emacs.marker.exists()
    wait_for("the keys typed into tmux to run", session.tmux.marker.exists)
    found = untouched(session, before, git)
    for trace in (
        "the Emacs server saw",
        "an emacsclient eval ran",
        "the session bus saw",
        "the bus started",
        "activation environment was changed",
        "the ssh-agent saw",
        "the ssh-agent signed something",
        "a signature was written",
        "keys were typed",
    ):
        assert any(trace in line for line in found), (trace, found)
    # What came through the FIFO and the listeners is what the project sent.
    for channel in (
        "the FIFO",
        "the Unix listener",
        "the abstract listener",
        "the toolchain's socket",
        "the project's socket",
        "the project's FIFO",
    ):
        [line] = [f for f in found if f.startswith(f"{channel} received")]
        assert session.token in line, line


def test_the_walls_attempts_get_through_bubblewrap_without_the_walls(session: Session) -> None:
    """The walls' control: the same attempts in a bubblewrap with none of the walls (all
    of / shown, .git bound read-only, root keeping its capabilities), so that an attempt
    broken in itself cannot pass for one the sandbox stopped."""
    git = session.project / ".git"
    argv = ["bwrap", "--bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--unshare-pid"]
    argv += ["--ro-bind", str(git), str(git), "--chdir", str(session.project)]
    done = session.account.run(
        [*argv, "--", session.interp.python, "conftest.py", "walls"],
        session.env,
        cwd=session.project,
    )
    output = done.stdout + done.stderr
    assert done.returncode == 0, output
    outcome = escapes(output)
    assert sorted(outcome) == sorted(WALL_ATTEMPTS), output
    # Run by an unprivileged user, bubblewrap leaves the command no capability anyway.
    expected = set(WALL_ATTEMPTS) if session.account.uid == 0 else {"new-userns", "run-dir"}
    assert {name for name, how in outcome.items() if how == "SUCCEEDED"} == expected, output
    assert (git / "hooks" / "pre-commit").exists() is (session.account.uid == 0)


async def _drive(
    session: Session,
    steps: list[dict[str, Any]],
    *,
    answer: Answerer,
    approved_in_sandbox: bool = False,
    sandbox: bool = True,
) -> tuple[Turn, list[dict[str, Any]]]:
    """One turn of the real bridge (as the account) against the scripted model."""
    mock = MockServer(MockScript.model_validate({"steps": steps}))
    await mock.start()
    try:
        with running_bridge(session) as bridge:
            async with bridge.endpoint.client() as client:
                init = await client.result(
                    "initialize",
                    {
                        "clientInfo": {"name": "services-test"},
                        "model": {
                            "api_base": mock.api_base,
                            "model": "mock-model",
                            "api_key": "sk-services-secret",
                        },
                        "sandbox_approved_commands": approved_in_sandbox,
                    },
                )
                if sandbox and not init["sandbox"]["available"]:
                    pytest.fail(
                        f"the bridge running as {session.account.name} has no sandbox: "
                        f"{init['sandbox']['detail']}\n{bridge.log_text()}"
                    )
                assert init["sandbox"]["available"] is sandbox, init["sandbox"]
                made = await client.result("session/new", {"cwd": str(session.project)})
                turn = await run_turn(
                    client, str(made["sessionId"]), "运行测试 run the tests", answer
                )
        requests = [r.body for r in mock.recorder.records]
    finally:
        await mock.stop()
    assert len(requests) == 2, requests
    return turn, requests


def _assert_contained(
    session: Session,
    requests: list[dict[str, Any]],
    *,
    network: bool = False,
    attempts: tuple[str, ...] = (*SERVICE_ATTEMPTS, *WALL_ATTEMPTS),
) -> None:
    [framed] = tool_messages(requests[1])
    result = payload_of(framed)
    output = result["stdout"] + result["stderr"]
    outcome = escapes(output)
    # Every attempt was made, and each failed.
    assert sorted(outcome) == sorted((*attempts, *MAKE_ATTEMPTS)), output
    assert [name for name, how in outcome.items() if how != "blocked"] == [], output
    # No capability, and no way to gain one (as root too).
    status = status_fields(output)
    for cap in ("CapEff", "CapPrm", "CapBnd"):
        assert int(status[cap], 16) == 0, status
    assert status["NoNewPrivs"] == "1", status
    # The project's own tests passed, Chinese and all, and the model got their results.
    assert f"{OWN_TESTS} passed" in output and OWN_TEXT in output, output
    assert result["exit_code"] == 0, output
    if not network:  # run_test: the results read for the model
        assert result["summary"]["passed"] == OWN_TESTS and result["summary"]["ok"] is True
    # In the sandbox; with the host's network (and so its abstract sockets) if approved.
    assert result["sandbox"] == ("bubblewrap+net" if network else "bubblewrap")
    # No secret reached the model: not the key, not the keyring's, not the environment's.
    sent = json.dumps(requests, ensure_ascii=False)
    assert [secret for secret in session.secrets if secret in sent] == []


async def test_auto_allowed_tests_reach_no_service(session: Session) -> None:
    before = Counts.now(session)
    git = git_state(session.project)
    turn, requests = await _drive(
        session, [RUN_TEST, {"text": "测试已运行"}], answer=reject("this one must not ask")
    )
    assert turn.permission_requests == []  # auto-allowed: nobody was asked
    _assert_contained(session, requests)
    assert untouched(session, before, git) == []


async def test_sockets_left_where_the_sandbox_shows_files_are_not_reached(
    session: Session,
) -> None:
    """A build server's socket in a toolchain directory of $HOME (shown read-only),
    a development database's socket and a FIFO of the user's in the (writable)
    project: made by the user's processes, not the command's, so out of its reach."""
    session.choose_attempts(["visible"])
    before = Counts.now(session)
    git = git_state(session.project)
    turn, requests = await _drive(
        session, [RUN_TEST, {"text": "测试已运行"}], answer=reject("this one must not ask")
    )
    assert turn.permission_requests == []
    _assert_contained(session, requests, attempts=VISIBLE_ATTEMPTS)
    assert untouched(session, before, git) == []


async def test_approved_command_sandboxed_with_network_reaches_no_service(
    session: Session,
) -> None:
    """The host's network is shared, so are its abstract sockets: still none is reached."""
    before = Counts.now(session)
    git = git_state(session.project)
    turn, requests = await _drive(
        session, [RUN_APPROVED, {"text": "已运行"}], answer=allow_once, approved_in_sandbox=True
    )
    [asked] = turn.permission_requests
    assert asked["toolCall"]["rawInput"]["command"] == "make escape"
    _assert_contained(session, requests, network=True)
    assert untouched(session, before, git) == []


async def test_without_a_sandbox_the_project_code_asks_and_a_no_runs_nothing(
    session: Session,
) -> None:
    session.env["AGENT_SHELL_SANDBOX"] = "off"
    before = Counts.now(session)
    git = git_state(session.project)
    turn, requests = await _drive(
        session, [RUN_TEST, {"text": "没有运行"}], answer=reject("不要"), sandbox=False
    )
    [asked] = turn.permission_requests
    assert asked["toolCall"]["rawInput"]["command"] == "make test"
    assert "no sandbox" in asked["reason"]
    [framed] = tool_messages(requests[1])
    assert "The user rejected this step" in framed and "ESCAPE" not in framed
    sent = json.dumps(requests, ensure_ascii=False)
    assert [secret for secret in session.secrets if secret in sent] == []
    assert untouched(session, before, git) == []
