"""Command-line entry point: ``agent-shell-bridge <command> ...``.

Each area of the bridge contributes its sub-commands through a ``register``
function, so this module only assembles the parser and runs the chosen handler.
A handler returns the process exit code.

Only the chosen command's module is imported: ``--version`` and ``--help`` list the
commands from :data:`COMMANDS` without importing any of them, and ``memory search``
does not pay for the web server, the policy's parser or the agent loop.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from . import __version__

__all__ = ["COMMANDS", "build_parser", "main"]

# Command → (module exposing ``register(subparsers) -> None``, one-line help). Each
# module adds its own command and sets ``func`` (taking the parsed namespace,
# returning an exit code) on it; the help here is what ``--help`` shows unloaded.
COMMANDS: dict[str, tuple[str, str]] = {
    "serve": ("agent_shell_bridge.frontends.serve", "run the bridge for an Emacs client"),
    "mock-model": (
        "agent_shell_bridge.model.mock_cli",
        "serve a scripted OpenAI-compatible model on loopback",
    ),
    "policy": (
        "agent_shell_bridge.frontends.policy_cli",
        "judge commands or paths with the safety policy",
    ),
    "memory": ("agent_shell_bridge.memory.cli", "rebuild or search the experience index"),
    "run": ("agent_shell_bridge.frontends.headless", "run one task headlessly (no Emacs)"),
    "acp": (
        "agent_shell_bridge.frontends.acp.cli",
        "run as an Agent Client Protocol agent on stdio",
    ),
}


def build_parser(load: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The parser; ``load`` names the commands whose modules register for real.

    ``None`` loads every command (the documentation tests walk the whole tree);
    the others get a placeholder with their one-line help.
    """
    parser = argparse.ArgumentParser(
        prog="agent-shell-bridge",
        description="The Python bridge of agent-shell, a coding agent that lives in Emacs.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    wanted = set(COMMANDS) if load is None else set(load)
    for name, (module, help_text) in COMMANDS.items():
        if name in wanted:
            importlib.import_module(module).register(sub)
        else:
            sub.add_parser(name, help=help_text)
    return parser


def _chosen(argv: Sequence[str]) -> list[str]:
    """The command named on the command line (the first word that is not an option)."""
    for word in argv:
        if word == "--":
            return []
        if not word.startswith("-"):
            return [word] if word in COMMANDS else []
    return []


def main(argv: Sequence[str] | None = None) -> int:
    args_in = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser(_chosen(args_in))
    args = parser.parse_args(args_in)
    try:
        code = args.func(args)
    except KeyboardInterrupt:
        return 130
    return int(code)


if __name__ == "__main__":
    sys.exit(main())
