"""``agent-shell-bridge run``: one task from a terminal or a script, no Emacs needed.

Starts a bridge in-process on 127.0.0.1 and talks to it over real HTTP + SSE, the
same protocol Emacs uses. Text streams to stdout, one line per tool call to stderr.
Risky steps are approved per ``--approve`` or, on a terminal, by asking y/n.
Exit status: 0 when the turn ended normally, 1 otherwise (with the reason on stderr).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import os
import socket
import sys
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import uvicorn

from ..agent.session.approval import Answer, FixedApprover, PermissionRequest, TerminalApprover
from ..agent.turn.plan import plan_text
from ..config import BridgeConfig, echo_setting
from ..errors import BridgeError, InvalidParams, MethodNotFound
from ..methods import build_dispatcher
from ..runtime import Runtime
from ..transport.server import ServerSettings, create_app
from ..types import JSONObject, Risk
from .client import BridgeConnection, RemoteError

__all__ = ["register", "run_task"]

log = logging.getLogger(__name__)


def register(sub: argparse._SubParsersAction[Any]) -> None:
    p = sub.add_parser("run", help="run one task headlessly (no Emacs)")
    p.add_argument("task", help="what the agent should do")
    p.add_argument("--root", type=Path, default=Path.cwd(), help="project root (default: .)")
    p.add_argument("--api-base", help="OpenAI-compatible API base URL")
    p.add_argument("--model", help="model name")
    p.add_argument("--approve", choices=["none", "writes", "all"], help="approve without asking")
    p.add_argument("--dry-run", action="store_true", help="record actions, run nothing")
    p.add_argument("--max-steps", type=int, default=None, help="model steps per turn")
    p.add_argument("--context-window", type=int, default=None, help="model context in tokens")
    p.add_argument(
        "--echo-reasoning",
        choices=["auto", "always", "never"],
        default=None,
        help="send the model's reasoning back with its tool calls (auto: by provider)",
    )
    p.add_argument(
        "--answer",
        action="append",
        default=[],
        metavar="TEXT",
        help="answer the model's next ask_user question (an option's number or words; "
        "repeat for later questions)",
    )
    p.add_argument("--mode", choices=["act", "ask"], default="act")
    p.add_argument("--memory-dir", type=Path, default=None, help="memory index directory")
    p.add_argument("--json", action="store_true", help="print every event as a JSON line")
    p.add_argument(
        "--review",
        action=argparse.BooleanOptionalAction,
        default=False,
        help="have the reviewer role check a turn that changed files",
    )
    p.add_argument(
        "--mcp-config",
        type=Path,
        action="append",
        default=[],
        metavar="FILE",
        help='MCP servers, a .mcp.json-shaped file ({"mcpServers": {...}}); repeatable',
    )
    p.add_argument(
        "--mcp-trust", action="append", default=[], metavar="SERVER", help="allow all its tools"
    )
    p.add_argument(
        "--mcp-deny", action="append", default=[], metavar="SERVER", help="never start it"
    )
    p.set_defaults(func=_main)


class _QuietServer(uvicorn.Server):
    """uvicorn without its own signal handlers: Ctrl-C belongs to this command."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


def _main(args: argparse.Namespace) -> int:
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    return asyncio.run(run_task(args))


async def run_task(args: argparse.Namespace) -> int:
    config = BridgeConfig.from_env()
    overrides: dict[str, Any] = {}
    if args.api_base:
        overrides["api_base"] = args.api_base
    if args.model:
        overrides["model"] = args.model
    if args.context_window:
        overrides["context_window"] = args.context_window
    if args.echo_reasoning:
        overrides["echo_reasoning"] = echo_setting(args.echo_reasoning)
    if args.memory_dir:
        overrides["memory_dir"] = args.memory_dir
    if args.max_steps:
        overrides["max_steps"] = args.max_steps
    overrides["dry_run"] = bool(args.dry_run)
    config = replace(config, **overrides)

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    sock.listen(16)
    port = sock.getsockname()[1]
    token = os.urandom(24).hex()
    runtime = Runtime(config=config, dispatcher=build_dispatcher(debug_methods=False))
    server = _QuietServer(
        uvicorn.Config(
            create_app(ServerSettings(token=token, port=port), runtime),
            log_level="warning",
            access_log=False,
            timeout_graceful_shutdown=1,
        )
    )
    serving = asyncio.create_task(server.serve(sockets=[sock]))
    conn = BridgeConnection(port, token)
    try:
        while not server.started:
            if serving.done():
                serving.result()
            await asyncio.sleep(0.01)
        return await _drive(conn, args)
    finally:
        await conn.aclose()
        await runtime.aclose()
        server.should_exit = True
        with contextlib.suppress(asyncio.CancelledError):
            await serving
        sock.close()


def _mcp_params(args: argparse.Namespace) -> JSONObject:
    """``session/new``'s MCP fields from ``--mcp-config``/``--mcp-trust``/``--mcp-deny``."""
    from ..mcp.config import load_file, merge, to_wire

    servers: list[Any] = []
    for path in args.mcp_config:
        servers = merge(servers, load_file(path, expand=False)[1])
    policy = {name: "trusted" for name in args.mcp_trust}
    policy.update({name: "denied" for name in args.mcp_deny})
    return {"mcpServers": to_wire(servers), "mcpServerPolicy": policy}


async def _drive(conn: BridgeConnection, args: argparse.Namespace) -> int:
    await conn.call("initialize", {"clientInfo": {"name": "agent-shell-bridge run"}})
    try:
        session = await conn.call(
            "session/new",
            {
                "cwd": str(args.root.resolve()),
                "mode": args.mode,
                "dry_run": bool(args.dry_run),
                "review": bool(args.review),
                **_mcp_params(args),
            },
        )
    except (RemoteError, BridgeError) as exc:
        print(f"agent-shell: {exc.message}", file=sys.stderr)
        return 2
    sandbox = session.get("sandbox") or {}
    if sandbox.get("available") is False:
        print(
            f"agent-shell: no sandbox ({sandbox.get('detail')}): only strictly read-only "
            "commands run without asking",
            file=sys.stderr,
        )
    for notice in (session.get("mcp") or {}).get("notices", []):
        print(f"agent-shell: {notice}", file=sys.stderr, flush=True)
    if args.approve:
        approver: FixedApprover | TerminalApprover = FixedApprover(args.approve)
    elif sys.stdin.isatty():
        approver = TerminalApprover()
    else:
        approver = FixedApprover("none")
    sid = session["sessionId"]
    answers = list(args.answer)
    messages = conn.messages()
    try:
        await conn.call("session/prompt", {"sessionId": sid, "prompt": args.task})
    except RemoteError as exc:  # an unknown /command, an empty prompt: nothing ran
        print(f"agent-shell: {exc.message}", file=sys.stderr)
        return 2
    async for msg in messages:
        if args.json:
            print(json.dumps(msg, ensure_ascii=False), flush=True)
        method = msg.get("method")
        params = msg.get("params") or {}
        if method == "session/request_permission" and "id" in msg:
            answer = await approver.ask(_request_from(params))
            await conn.respond(msg["id"], _answer_wire(answer))
            continue
        if method == "session/ask_user" and "id" in msg:
            await _answer_question(conn, msg["id"], params, answers)
            continue
        if "id" in msg and method:
            await conn.respond_error(
                msg["id"], MethodNotFound.code, f"{method} is not handled by run"
            )
            continue
        if method != "session/update" or params.get("sessionId") != sid:
            continue
        update = params.get("update", {})
        kind = update.get("sessionUpdate")
        if args.json:
            if kind == "turn_end":
                return _exit_code(update)
            continue
        if kind == "agent_message_chunk":
            sys.stdout.write(update.get("content", {}).get("text", ""))
            sys.stdout.flush()
        elif kind == "tool_call":
            print(f"\n• {update.get('title')}", file=sys.stderr, flush=True)
        elif kind == "tool_call_update" and update.get("status") in ("completed", "failed"):
            raw = update.get("rawOutput") or {}
            detail = raw.get("error") or (f"exit {raw['exit_code']}" if "exit_code" in raw else "")
            print(f"  {update.get('status')} {detail}".rstrip(), file=sys.stderr, flush=True)
        elif kind == "plan":
            print("\n" + plan_text(update), file=sys.stderr, flush=True)
        elif kind == "mcp_servers" and update.get("notice"):
            print(f"agent-shell: {update['notice']}", file=sys.stderr, flush=True)
        elif kind == "turn_end":
            sys.stdout.write("\n")
            return _exit_code(update)
    return 1


async def _answer_question(
    conn: BridgeConnection, rid: Any, params: JSONObject, answers: list[str]
) -> None:
    """Answer ``ask_user`` with the next ``--answer``, or fail the call clearly."""
    options = params.get("options") or []
    listed = "; ".join(f"{n}. {o}" for n, o in enumerate(options, start=1))
    print(f"\n? {params.get('question')} [{listed}]", file=sys.stderr, flush=True)
    if not answers:
        await conn.respond_error(
            rid,
            InvalidParams.code,
            "the model asked a question and this run has no answer left for it: "
            "give one with --answer TEXT (an option's number or your words)",
        )
        return
    answer = answers.pop(0)
    print(f"  answered: {answer}", file=sys.stderr, flush=True)
    await conn.respond(rid, {"text": answer})


def _exit_code(update: JSONObject) -> int:
    reason = update.get("stopReason")
    if reason == "end_turn":
        return 0
    error = update.get("error") or {}
    detail = f": {error.get('message')}" if error else ""
    print(f"agent-shell: the turn ended with {reason}{detail}", file=sys.stderr)
    return 1


def _request_from(params: JSONObject) -> PermissionRequest:
    call = params.get("toolCall", {})
    risk = params.get("risk", "write")
    return PermissionRequest(
        session_id=str(params.get("sessionId", "")),
        tool_call_id=str(call.get("toolCallId", "")),
        tool=str(call.get("title", "")).split(" ")[0],
        title=str(call.get("title", "")),
        kind=str(call.get("kind", "other")),
        raw_input=call.get("rawInput") or {},
        risk=Risk(risk) if risk in ("read", "write", "dangerous") else Risk.DANGEROUS,
        reason=str(params.get("reason", "")),
        log_entry_id=str(params.get("logEntryId", "")),
        diff=params.get("diff"),
    )


def _answer_wire(answer: Answer) -> JSONObject:
    if answer.option == "cancelled":
        return {"outcome": {"outcome": "cancelled"}}
    return {"outcome": {"outcome": "selected", "optionId": answer.option}, "reason": answer.reason}
