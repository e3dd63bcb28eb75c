"""Command-line entry point: ``agent-shell-bridge <command> ...``.

Each area of the bridge contributes its sub-commands through a ``register``
function, so this module only assembles the parser and runs the chosen handler.
A handler returns the process exit code.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from . import __version__

__all__ = ["build_parser", "main"]

# Modules exposing ``register(subparsers) -> None``; each adds its own commands and
# sets ``func`` (taking the parsed namespace, returning an exit code) on them.
_COMMAND_MODULES: tuple[str, ...] = (
    "agent_shell_bridge.serve",
    "agent_shell_bridge.model.mock_cli",
    "agent_shell_bridge.policy.cli",
    "agent_shell_bridge.memory.cli",
    "agent_shell_bridge.headless",
    "agent_shell_bridge.acp_agent.cli",
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="agent-shell-bridge",
        description="The Python bridge of agent-shell, a coding agent that lives in Emacs.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in _COMMAND_MODULES:
        importlib.import_module(name).register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        code = args.func(args)
    except KeyboardInterrupt:
        return 130
    return int(code)


if __name__ == "__main__":
    sys.exit(main())
