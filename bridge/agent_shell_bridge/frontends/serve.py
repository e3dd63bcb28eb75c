"""``agent-shell-bridge serve``: run the bridge for one Emacs.

Binds 127.0.0.1 on the given port (0 = any free one), prints one JSON ready line on
stdout, logs to stderr, and exits — killing every child process group — when stdin
reaches EOF (Emacs died), on SIGTERM/SIGINT, or on the ``shutdown`` method.

Start-up is on the user's path (Emacs waits for the ready line): the server's modules
load only once ``serve`` runs, the bubblewrap probe (two short processes) runs in a
thread while they load, and the method areas load with their first call
(:mod:`.methods`).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import secrets
import signal
import socket
import sys
import threading
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import __version__

if TYPE_CHECKING:
    from ..config import BridgeConfig
    from ..runtime import Runtime
    from ..sandbox import SandboxStatus

__all__ = ["listening_socket", "register", "serve"]

log = logging.getLogger(__name__)


def register(sub: argparse._SubParsersAction[Any]) -> None:
    p = sub.add_parser("serve", help="run the bridge for an Emacs client")
    p.add_argument("--port", type=int, default=0, help="TCP port on 127.0.0.1 (0: any free)")
    p.add_argument("--memory-dir", type=Path, default=None, help="memory index directory")
    p.add_argument("--dry-run", action="store_true", help="record actions, run nothing")
    p.add_argument(
        "--no-stdin-watch",
        action="store_true",
        help="do not exit when stdin closes (for running by hand)",
    )
    p.add_argument("--log-level", default="INFO", help="stderr log level")
    p.set_defaults(func=_main)


def _probe_sandbox() -> Callable[[], SandboxStatus]:
    """Start finding out whether bubblewrap works; the result waits for the caller."""
    from ..sandbox import detect_sandbox

    found: Future[SandboxStatus] = Future()

    def probe() -> None:
        try:
            found.set_result(detect_sandbox())
        except BaseException as exc:
            found.set_exception(exc)

    threading.Thread(target=probe, name="sandbox-probe", daemon=True).start()
    return found.result


def _main(args: argparse.Namespace) -> int:
    sandbox = _probe_sandbox()
    from ..config import BridgeConfig

    logging.basicConfig(
        level=args.log_level.upper(),
        stream=sys.stderr,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    config = BridgeConfig.from_env()
    if args.memory_dir is not None:
        config = replace(config, memory_dir=args.memory_dir)
    if args.dry_run:
        config = replace(config, dry_run=True)
    asyncio.run(serve(config, port=args.port, watch_stdin=not args.no_stdin_watch, sandbox=sandbox))
    return 0


def _watch_stdin(loop: asyncio.AbstractEventLoop, runtime: Runtime) -> None:
    """Block on stdin in a thread; EOF means the parent is gone."""
    try:
        fd = sys.stdin.fileno()
        while os.read(fd, 65536):
            pass
    except (OSError, ValueError):
        pass
    loop.call_soon_threadsafe(runtime.request_shutdown)


def listening_socket(port: int) -> socket.socket:
    """The loopback listener, named as TCP: asyncio turns Nagle's algorithm off only
    for sockets whose protocol says TCP, and without that a keep-alive client waits
    ~40 ms for every response body sent after its headers. Accepted connections
    inherit the option from the listener too."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.bind(("127.0.0.1", port))
    sock.listen(64)
    return sock


async def serve(
    config: BridgeConfig,
    *,
    port: int = 0,
    watch_stdin: bool = True,
    sandbox: Callable[[], SandboxStatus] | None = None,
) -> None:
    """Serve until asked to stop; ``sandbox`` gives the probe's result (None: probe now)."""
    import uvicorn

    from ..methods import build_dispatcher
    from ..runtime import Runtime
    from ..sandbox import detect_sandbox
    from ..transport.server import ServerSettings, create_app

    sock = listening_socket(port)
    bound_port = sock.getsockname()[1]
    token = secrets.token_urlsafe(32)
    runtime = Runtime(
        config=config,
        dispatcher=build_dispatcher(),
        sandbox=(sandbox or detect_sandbox)(),
    )
    app = create_app(ServerSettings(token=token, port=bound_port), runtime)
    server = uvicorn.Server(
        uvicorn.Config(
            app,
            log_level="warning",
            access_log=False,
            timeout_graceful_shutdown=2,
            lifespan="on",
        )
    )
    loop = asyncio.get_running_loop()
    # From the ready line on, a signal must run the orderly shutdown: uvicorn installs
    # its own handlers only once it starts serving, and the default action would kill
    # the bridge without closing the runtime (and its children's process groups).
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, runtime.request_shutdown)
    if watch_stdin:
        threading.Thread(target=_watch_stdin, args=(loop, runtime), daemon=True).start()

    async def stop_when_asked() -> None:
        await runtime.shutdown_requested.wait()
        log.info("shutting down")
        await runtime.aclose()  # ends SSE streams and kills children before uvicorn waits
        server.should_exit = True

    stopper = asyncio.create_task(stop_when_asked())
    ready = {
        "ready": True,
        "port": bound_port,
        "token": token,
        "pid": os.getpid(),
        "version": __version__,
    }
    sys.stdout.write(json.dumps(ready) + "\n")
    sys.stdout.flush()
    try:
        await server.serve(sockets=[sock])
    finally:
        stopper.cancel()
        await runtime.aclose()
        sock.close()
