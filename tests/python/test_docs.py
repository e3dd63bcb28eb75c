"""The documentation keeps up with the code.

Every JSON-RPC method a production bridge registers is documented in doc/protocol.org
(as org verbatim, ``=method=``), and every CLI command, sub-commands included, is
shown in README.org as ``agent-shell-bridge <command>``.
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import pytest

from agent_shell_bridge.cli import build_parser
from agent_shell_bridge.methods import build_dispatcher

REPO = Path(__file__).resolve().parents[2]
PROTOCOL = REPO / "doc" / "protocol.org"
README = REPO / "README.org"


def command_paths(parser: argparse.ArgumentParser, prefix: tuple[str, ...] = ()) -> list[str]:
    """Every runnable command path, e.g. ``serve`` or ``memory search``."""
    paths: list[str] = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                nested = command_paths(sub, (*prefix, name))
                paths.extend(nested or [" ".join((*prefix, name))])
    return paths


METHODS = build_dispatcher(debug_methods=False).names
COMMANDS = command_paths(build_parser())


def test_the_lists_are_not_empty() -> None:
    """Guards the parametrised tests below against silently testing nothing."""
    assert {"initialize", "ping", "shutdown"} <= set(METHODS)
    assert "serve" in COMMANDS
    assert not any(name.startswith("debug/") for name in METHODS)


@pytest.mark.parametrize("method", METHODS)
def test_method_is_documented_in_protocol_org(method: str) -> None:
    text = PROTOCOL.read_text(encoding="utf-8")
    assert f"={method}=" in text, f"document {method} in {PROTOCOL.relative_to(REPO)}"


@pytest.mark.parametrize("command", COMMANDS)
def test_command_is_documented_in_readme(command: str) -> None:
    text = README.read_text(encoding="utf-8")
    pattern = r"agent-shell-bridge\s+" + r"\s+".join(map(re.escape, command.split())) + r"\b"
    assert re.search(pattern, text), f"show `agent-shell-bridge {command}` in README.org"


def test_command_paths_walks_nested_sub_commands() -> None:
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers()
    sub.add_parser("serve")
    memory = sub.add_parser("memory").add_subparsers()
    memory.add_parser("search")
    memory.add_parser("reindex")
    assert command_paths(parser) == ["serve", "memory search", "memory reindex"]
