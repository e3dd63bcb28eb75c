"""``agent-shell-bridge acp``: speak ACP v1 on stdin/stdout for Zed and other editors.

Only protocol messages go to stdout: the real stdout is kept for the protocol and
file descriptor 1 is pointed at stderr, so a stray print or a child process that
inherits it can never corrupt the stream. Logs go to stderr.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
import signal
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any, BinaryIO, cast

__all__ = ["register"]


def register(sub: argparse._SubParsersAction[Any]) -> None:
    p = sub.add_parser("acp", help="run as an Agent Client Protocol agent on stdio")
    p.add_argument("--api-base", help="OpenAI-compatible API base URL")
    p.add_argument("--model", help="model name")
    p.add_argument("--context-window", type=int, default=None, help="model context in tokens")
    p.add_argument("--memory-dir", type=Path, default=None, help="memory index directory")
    p.add_argument("--max-steps", type=int, default=None, help="model steps per turn")
    p.add_argument(
        "--prices",
        type=_prices,
        default=None,
        metavar="IN,OUT[,CACHED]",
        help="USD per million input, output (and cached input) tokens: the cost in usage",
    )
    p.set_defaults(func=_main)


def _prices(text: str) -> tuple[float, float, float]:
    try:
        values = [float(x) for x in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"not numbers: {text!r}") from None
    if len(values) not in (2, 3) or any(v < 0 for v in values):
        raise argparse.ArgumentTypeError("give IN,OUT or IN,OUT,CACHED, none negative")
    return (values[0], values[1], values[2] if len(values) == 3 else values[0])


def _protocol_pipes() -> tuple[BinaryIO, BinaryIO]:
    """stdin for reading, a private copy of stdout for writing; fd 1 becomes stderr."""
    out = os.fdopen(os.dup(sys.stdout.fileno()), "wb", buffering=0)
    sys.stdout.flush()
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    return sys.stdin.buffer, out


async def _streams(
    reader_file: BinaryIO, writer_file: BinaryIO
) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=50 * 1024 * 1024)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), reader_file)
    transport, protocol = await loop.connect_write_pipe(
        lambda: asyncio.streams.FlowControlMixin(), writer_file
    )
    writer = asyncio.StreamWriter(transport, protocol, None, loop)
    return reader, writer


async def serve_acp(args: argparse.Namespace, reader_file: BinaryIO, writer_file: BinaryIO) -> int:
    from acp.agent.connection import AgentSideConnection
    from acp.interfaces import Agent

    from ...config import BridgeConfig
    from ...methods import build_dispatcher
    from ...runtime import Runtime
    from .agent import AcpFrontEnd

    config = BridgeConfig.from_env()
    overrides: dict[str, Any] = {}
    for field in ("api_base", "model", "context_window", "memory_dir", "max_steps", "prices"):
        value = getattr(args, field, None)
        if value:
            overrides[field] = value
    runtime = Runtime(config=replace(config, **overrides), dispatcher=build_dispatcher())
    front = AcpFrontEnd(runtime)
    reader, writer = await _streams(reader_file, writer_file)
    # The SDK answers "method not found" for the optional methods the front end
    # leaves out (resume, close), so it need not define them; session/fork is in
    # the SDK's unstable part of the protocol.
    conn = AgentSideConnection(
        cast("Agent", front), writer, reader, listening=False, use_unstable_protocol=True
    )
    listening = asyncio.ensure_future(conn.listen())  # ends when the client closes stdin
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGHUP):
        loop.add_signal_handler(signum, listening.cancel)
    try:
        with contextlib.suppress(asyncio.CancelledError):
            await listening
    finally:
        await front.aclose()
        await runtime.aclose()
        await conn.close()
    return 0


def _main(args: argparse.Namespace) -> int:
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    reader_file, writer_file = _protocol_pipes()
    return asyncio.run(serve_acp(args, reader_file, writer_file))
