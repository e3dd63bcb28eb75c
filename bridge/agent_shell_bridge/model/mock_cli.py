"""The ``mock-model`` command: serve a scripted model for Emacs tests and the demo.

Prints one JSON line ``{"ready": true, "port": N, "api_base": ..., "pid": N}`` once
listening, then runs until stdin closes or SIGTERM/SIGINT arrives.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import signal
import sys
from typing import Any

from ..errors import BridgeError
from .mock_script import MockScript, load_script
from .mock_server import MockServer, check_loopback

__all__ = ["register", "run"]


def register(sub: argparse._SubParsersAction[Any]) -> None:
    """Add ``mock-model`` to the bridge CLI."""
    parser = sub.add_parser(
        "mock-model",
        help="serve a scripted OpenAI-compatible model on loopback",
        description="Serve a scripted OpenAI-compatible chat-completions API on loopback.",
    )
    parser.add_argument("--script", required=True, help="JSON script file ({'steps': [...]})")
    parser.add_argument("--port", type=int, default=0, help="port (0 picks a free one)")
    parser.add_argument("--host", default="127.0.0.1", help="loopback address to bind")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    try:
        host = check_loopback(args.host)
        script = load_script(args.script)
    except BridgeError as exc:
        print(f"mock-model: {exc.message}", file=sys.stderr)
        return 2
    return asyncio.run(_serve(script, host, args.port))


async def _serve(script: MockScript, host: str, port: int) -> int:
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    transport = await _watch_stdin(stop)
    try:
        async with MockServer(script, host=host, port=port) as server:
            ready = {"ready": True, "port": server.port, "api_base": server.api_base}
            ready["pid"] = os.getpid()
            sys.stdout.write(json.dumps(ready) + "\n")
            sys.stdout.flush()
            await server.serve_until(stop)
    finally:
        if transport is not None:
            transport.close()
    return 0


class _StdinWatcher(asyncio.Protocol):
    def __init__(self, stop: asyncio.Event) -> None:
        self.stop = stop

    def eof_received(self) -> bool | None:
        self.stop.set()
        return None

    def connection_lost(self, exc: Exception | None) -> None:
        self.stop.set()


async def _watch_stdin(stop: asyncio.Event) -> asyncio.BaseTransport | None:
    """Set ``stop`` when stdin closes; None when stdin cannot be watched (a file)."""
    loop = asyncio.get_running_loop()
    with contextlib.suppress(ValueError, OSError):
        transport, _ = await loop.connect_read_pipe(lambda: _StdinWatcher(stop), sys.stdin)
        return transport
    return None
