"""``agent-shell-bridge policy check|path|secrets``: the policy engine from a shell.

``check`` and ``path`` judge each stdin line independently and answer with one JSON
object per line, so the same engine the agent uses can be audited from a shell or a
test. ``secrets`` prints the list of the user's secrets the policy, the sandbox and
Emacs share (Emacs asks for it this way before any bridge has started).

``check`` first says on stderr whether commands can be sandboxed here. ``decision``
is the policy's; ``effective`` is what the agent does on this machine: without a
sandbox an allowed command that is not strictly read-only asks instead.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any, BinaryIO

from ..errors import BridgeError
from ..policy.allowlist import load_allowlist
from ..policy.engine import PolicyEngine
from ..policy.secrets import BUILTIN
from ..sandbox import detect_sandbox
from ..sandbox.strict_readonly import strictly_read_only

__all__ = ["register"]


def register(sub: argparse._SubParsersAction[Any]) -> None:
    """Add ``policy check``, ``policy path`` and ``policy secrets`` to the bridge CLI."""
    policy = sub.add_parser("policy", help="judge commands or paths with the safety policy")
    inner = policy.add_subparsers(dest="policy_command", metavar="SUBCOMMAND", required=True)

    check = inner.add_parser("check", help="judge one shell command per stdin line")
    check.add_argument("--root", type=Path, required=True, help="project root")
    check.add_argument("--allowlist", type=Path, help="allowlist.el (default: the project's)")
    check.add_argument("--cwd", type=Path, help="directory the commands would run in")
    check.add_argument("--jsonl", action="store_true", help="print one JSON object per line")
    check.set_defaults(func=_run_check)

    path = inner.add_parser("path", help="judge one file path per stdin line")
    path.add_argument("--root", type=Path, required=True, help="project root")
    path.add_argument("--extra", type=Path, action="append", default=[], help="extra allowed path")
    path.add_argument("--op", choices=("read", "write"), required=True)
    path.add_argument("--jsonl", action="store_true", help="print one JSON object per line")
    path.set_defaults(func=_run_path)

    secrets = inner.add_parser(
        "secrets", help="print the built-in list of the user's secrets (one JSON array)"
    )
    secrets.add_argument(
        "--extra", action="append", default=[], help="an entry of the user's own to add"
    )
    secrets.set_defaults(func=_run_secrets)


def _lines(stream: BinaryIO) -> list[str]:
    """Split stdin on LF only: a CR or U+2028 inside a command is part of it."""
    lines = stream.read().decode("utf-8", "replace").split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return lines


def _emit(obj: dict[str, Any], jsonl: bool) -> None:
    if jsonl:
        sys.stdout.write(json.dumps(obj, ensure_ascii=False) + "\n")
    else:
        sys.stdout.write("\t".join(str(v) for v in obj.values()) + "\n")


def _run_check(args: argparse.Namespace) -> int:
    try:
        if args.allowlist is not None:
            engine = PolicyEngine(args.root, allowlist=load_allowlist(args.allowlist))
        else:
            engine = PolicyEngine.for_project(args.root)
    except BridgeError as exc:
        sys.stderr.write(f"agent-shell-bridge policy: {exc.message}\n")
        return 2
    sandbox = detect_sandbox()
    if sandbox.available:
        sys.stderr.write(f"sandbox: {sandbox.detail}; allowed commands run inside it\n")
    else:
        sys.stderr.write(
            f"no sandbox ({sandbox.detail}): only strictly read-only commands run without asking\n"
        )
    for command in _lines(sys.stdin.buffer):
        verdict = engine.check_command(command, cwd=args.cwd)
        effective = verdict.decision.value
        if (
            effective == "allow"
            and not sandbox.available
            and not strictly_read_only(command, [engine.root], cwd=args.cwd)
        ):
            effective = "confirm"
        _emit(
            {
                "command": command,
                "decision": verdict.decision.value,
                "risk": verdict.risk.value,
                "reason": verdict.reason,
                "sandbox": "bubblewrap" if sandbox.available else "none",
                "effective": effective,
            },
            args.jsonl,
        )
    return 0


def _run_path(args: argparse.Namespace) -> int:
    engine = PolicyEngine(args.root, extra_paths=args.extra)
    for path in _lines(sys.stdin.buffer):
        verdict = engine.check_path(path, args.op)
        resolved: str | None = None
        if verdict.decision.value == "allow":
            resolved = str(engine.resolve_path(path, args.op))
        _emit(
            {
                "path": path,
                "decision": verdict.decision.value,
                "risk": verdict.risk.value,
                "reason": verdict.reason,
                "resolved": resolved,
            },
            args.jsonl,
        )
    return 0


def _run_secrets(args: argparse.Namespace) -> int:
    try:
        secrets = BUILTIN.with_extra(args.extra)
    except ValueError as exc:
        sys.stderr.write(f"agent-shell-bridge policy secrets: {exc}\n")
        return 2
    sys.stdout.write(json.dumps(list(secrets.entries), ensure_ascii=False) + "\n")
    return 0
