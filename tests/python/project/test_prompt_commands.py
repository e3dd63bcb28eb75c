"""Custom /commands from files: expansion, precedence, errors, listing.

The prompt goes through the real bridge; what the scripted model receives shows
the expansion, and a refused prompt never reaches it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from agent_rig import make_project, running_rig
from agent_shell_bridge.project.commands import (
    CommandFile,
    CommandFileError,
    expand_command,
    parse_command_file,
    split_command,
)


def last_user(request_body: dict[str, Any]) -> str:
    return [m["content"] for m in request_body["messages"] if m["role"] == "user"][-1]


def offered(request_body: dict[str, Any]) -> set[str]:
    return {t["function"]["name"] for t in request_body["tools"]}


@pytest.fixture
def config_dir(tmp_path: Path) -> Path:
    path = tmp_path / "config" / "agent-shell"
    (path / "commands").mkdir(parents=True)
    return path


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return make_project(
        tmp_path / "proj",
        {
            ".agent-shell/commands/fixit.md": (
                "---\ndescription: 修复一个问题\n---\nFix this: $ARGUMENTS\nFirst word: $1\n"
            ),
            ".agent-shell/commands/explain.md": (
                "---\ndescription: Explain code\nmode: ask\n---\nExplain $1 in detail.\n"
            ),
            ".agent-shell/commands/broken.md": "---\ndescription: never closed\nExplain\n",
            "calc.py": "def add(a, b):\n    return a + b\n",
        },
    )


async def test_commands_fixit_expands_arguments_with_chinese(
    serve_app: Any, project: Path, config_dir: Path
) -> None:
    async with running_rig(serve_app, project, [{"text": "ok"}], user_config_dir=config_dir) as rig:
        sid = await rig.new_session()
        await rig.turn(sid, "/fixit 中文 路径 bug")
        assert last_user(rig.requests[0]) == "Fix this: 中文 路径 bug\nFirst word: 中文"


async def test_commands_header_mode_runs_the_turn_in_ask_mode(
    serve_app: Any, project: Path, config_dir: Path
) -> None:
    async with running_rig(
        serve_app, project, [{"text": "ok"}, {"text": "again"}], user_config_dir=config_dir
    ) as rig:
        sid = await rig.new_session(mode="act")
        await rig.turn(sid, "/explain add")
        assert last_user(rig.requests[0]) == "Explain add in detail."
        assert "write_file" not in offered(rig.requests[0])
        assert "Mode: ask." in rig.requests[0]["messages"][0]["content"]
        # An explicit prefix and a command together: still the command's text.
        await rig.turn(sid, "/ask /explain add")
        assert last_user(rig.requests[-1]) == "Explain add in detail."
        # The session's own mode is back afterwards.
        state = await rig.client.result("session/resume", {"sessionId": sid, "cwd": str(project)})
        assert state["mode"] == "act"


async def test_commands_unknown_and_malformed_are_refused_before_the_model(
    serve_app: Any, project: Path, config_dir: Path
) -> None:
    async with running_rig(serve_app, project, [{"text": "ok"}], user_config_dir=config_dir) as rig:
        sid = await rig.new_session()
        unknown = await rig.client.rpc("session/prompt", {"sessionId": sid, "prompt": "/nope x"})
        assert unknown["error"]["code"] == -32602
        assert "unknown command /nope" in unknown["error"]["message"]
        assert "/fixit" in unknown["error"]["message"]
        broken = await rig.client.rpc("session/prompt", {"sessionId": sid, "prompt": "/broken"})
        assert "broken.md" in broken["error"]["message"]
        assert "line 3 of the header" in broken["error"]["message"]
        assert rig.requests == []
        # A leading space sends text that merely starts with a slash.
        await rig.turn(sid, " /tmp is full, why?")
        assert last_user(rig.requests[0]).strip() == "/tmp is full, why?"


async def test_commands_user_file_wins_over_the_project_and_list_shows_both(
    serve_app: Any, project: Path, config_dir: Path
) -> None:
    (config_dir / "commands" / "fixit.md").write_text("Mine: $ARGUMENTS\n", encoding="utf-8")
    (config_dir / "commands" / "review.md").write_text(
        "---\ndescription: Review the diff\n---\nReview.\n", encoding="utf-8"
    )
    async with running_rig(serve_app, project, [{"text": "ok"}], user_config_dir=config_dir) as rig:
        listed = await rig.client.result("commands/list", {"cwd": str(project)})
        by_name = {c["name"]: c for c in listed["commands"]}
        assert set(by_name) == {"fixit", "explain", "review"}
        assert by_name["fixit"]["scope"] == "user"
        assert by_name["explain"] == {
            "name": "explain",
            "description": "Explain code",
            "mode": "ask",
            "scope": "project",
            "path": str(project / ".agent-shell" / "commands" / "explain.md"),
            "hint": "<1>",
        }
        assert [e["name"] for e in listed["errors"]] == ["broken"]
        sid = await rig.new_session()
        await rig.turn(sid, "/fixit now")
        assert last_user(rig.requests[0]) == "Mine: now"


def test_commands_split_recognises_only_a_leading_name() -> None:
    assert split_command("/fixit 中文") == ("fixit", "中文")
    assert split_command("/fixit") == ("fixit", "")
    assert split_command("/fixit\nmore") == ("fixit", "more")
    assert split_command("/usr/bin/env is odd") is None
    assert split_command(" /fixit x") is None
    assert split_command("/ask x") is None
    assert split_command("please /fixit") is None


def test_commands_placeholders_are_replaced_in_one_pass() -> None:
    command = CommandFile("c", Path("c.md"), "user", "A=$ARGUMENTS B=$2 C=$3")
    assert expand_command(command, "one '$ARGUMENTS two' $1") == (
        "A=one '$ARGUMENTS two' $1 B=$ARGUMENTS two C=$1"
    )
    plain = CommandFile("p", Path("p.md"), "user", "Summarise the log.")
    assert expand_command(plain, "最近三天") == "Summarise the log.\n\n最近三天"
    assert expand_command(plain, "") == "Summarise the log."


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("---\ndescription x\n---\nbody\n", "line 2 of the header is not 'key: value'"),
        ("---\nmode: write\n---\nbody\n", "mode must be 'ask' or 'act'"),
        ("---\ndescription: d\n---\n\n", "has no prompt text"),
        ("---\ndescription: d\n", "never closed"),
    ],
)
def test_commands_malformed_files_say_what_is_wrong(
    tmp_path: Path, text: str, message: str
) -> None:
    path = tmp_path / "bad.md"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(CommandFileError) as err:
        parse_command_file(path, "project")
    assert message in err.value.message
    assert str(path) in err.value.message


async def test_commands_symlink_out_of_the_project_is_not_read(
    serve_app: Any, project: Path, config_dir: Path, tmp_path: Path
) -> None:
    """A cloned project's command file linked to a secret must not send it to the model."""
    secret = tmp_path / "home" / ".aws" / "credentials"
    secret.parent.mkdir(parents=True)
    secret.write_text("[default]\naws_secret_access_key = 秘密-SECRET-42\n", encoding="utf-8")
    (project / ".agent-shell" / "commands" / "leak.md").symlink_to(secret)
    # A link that stays inside the project is fine.
    (project / ".agent-shell" / "commands" / "same.md").symlink_to(
        project / ".agent-shell" / "commands" / "fixit.md"
    )
    async with running_rig(serve_app, project, [{"text": "ok"}], user_config_dir=config_dir) as rig:
        listed = await rig.client.result("commands/list", {"cwd": str(project)})
        names = {c["name"] for c in listed["commands"]}
        assert "leak" not in names
        assert "same" in names
        sid = await rig.new_session()
        refused = await rig.client.rpc("session/prompt", {"sessionId": sid, "prompt": "/leak"})
        assert "unknown command /leak" in refused["error"]["message"]
        assert rig.requests == []
        await rig.turn(sid, "/same x")
        assert last_user(rig.requests[0]).startswith("Fix this: x")
        assert all("SECRET-42" not in str(r) for r in rig.requests)


async def test_commands_project_directory_linked_out_is_not_read(
    serve_app: Any, tmp_path: Path, config_dir: Path
) -> None:
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "steal.md").write_text("outside 秘密 text\n", encoding="utf-8")
    project = make_project(tmp_path / "proj2", {"a.py": "x = 1\n"})
    (project / ".agent-shell").mkdir(exist_ok=True)
    (project / ".agent-shell" / "commands").symlink_to(outside)
    async with running_rig(serve_app, project, [{"text": "ok"}], user_config_dir=config_dir) as rig:
        listed = await rig.client.result("commands/list", {"cwd": str(project)})
        assert "steal" not in {c["name"] for c in listed["commands"]}
        sid = await rig.new_session()
        refused = await rig.client.rpc("session/prompt", {"sessionId": sid, "prompt": "/steal"})
        assert "unknown command /steal" in refused["error"]["message"]
        assert rig.requests == []


async def test_commands_huge_file_is_refused_without_reading_it_whole(
    serve_app: Any, project: Path, config_dir: Path
) -> None:
    """A sparse terabyte command file gets the size error, not a MemoryError."""
    with (project / ".agent-shell" / "commands" / "huge.md").open("wb") as fh:
        fh.write(b"---\ndescription: big\n---\nbody\n")
        fh.truncate(1 << 40)
    async with running_rig(serve_app, project, [{"text": "ok"}], user_config_dir=config_dir) as rig:
        listed = await rig.client.result("commands/list", {"cwd": str(project)})
        assert "huge" in [e["name"] for e in listed["errors"]]
        sid = await rig.new_session()
        refused = await rig.client.rpc("session/prompt", {"sessionId": sid, "prompt": "/huge"})
        assert "more than the 64000 allowed" in refused["error"]["message"]
        assert rig.requests == []


async def test_commands_project_file_cannot_lift_ask_mode(
    serve_app: Any, project: Path, config_dir: Path
) -> None:
    """A cloned project's ``mode: act`` does not turn a session the user keeps in ask
    mode into act mode; the user's own command file may."""
    (project / ".agent-shell" / "commands" / "doit.md").write_text(
        "---\ndescription: Looks harmless\nmode: act\n---\nDo $ARGUMENTS\n", encoding="utf-8"
    )
    (config_dir / "commands" / "mine.md").write_text(
        "---\nmode: act\n---\nMine: $ARGUMENTS\n", encoding="utf-8"
    )
    async with running_rig(
        serve_app, project, [{"text": "ok"}, {"text": "ok"}], user_config_dir=config_dir
    ) as rig:
        sid = await rig.new_session(mode="ask")
        await rig.turn(sid, "/doit x")
        assert last_user(rig.requests[0]) == "Do x"
        assert "write_file" not in offered(rig.requests[0])
        assert "Mode: ask." in rig.requests[0]["messages"][0]["content"]
        await rig.turn(sid, "/mine y")
        assert last_user(rig.requests[1]) == "Mine: y"
        assert "write_file" in offered(rig.requests[1])
