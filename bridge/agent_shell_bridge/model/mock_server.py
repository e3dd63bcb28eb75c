"""Run the mock model on a real loopback socket inside the current event loop.

Used by tests (``async with MockServer(script) as mock: ...``) and by the
``mock-model`` command. The socket is bound and listening before uvicorn starts,
so the port is known at once and early connections simply wait in the backlog.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import socket
from collections.abc import Generator
from types import TracebackType

import uvicorn
from starlette.applications import Starlette

from ..errors import InvalidParams
from .mock import Recorder, create_mock_app
from .mock_script import MockScript

__all__ = ["MockServer", "check_loopback"]


def check_loopback(host: str) -> str:
    """Refuse anything but a loopback address: the mock has no authentication."""
    if host == "localhost":
        return "127.0.0.1"
    try:
        if ipaddress.ip_address(host).is_loopback:
            return host
    except ValueError:
        pass
    raise InvalidParams(f"the mock model binds loopback only, not {host!r}")


class _QuietServer(uvicorn.Server):
    """uvicorn, event-driven: no signal handling, no polling ticks, fast shutdown.

    Whoever owns the loop decides when to stop (:meth:`request_stop`); test
    suites start and stop many of these, so stopping must not cost 0.2 s each.
    """

    def __init__(self, config: uvicorn.Config) -> None:
        super().__init__(config)
        self._stop = asyncio.Event()

    def request_stop(self) -> None:
        self.should_exit = True
        self._stop.set()

    @contextlib.contextmanager
    def capture_signals(self) -> Generator[None, None, None]:
        yield

    async def main_loop(self) -> None:
        await self._stop.wait()

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        for server in self.servers:
            server.close()
        for sock in sockets or []:
            sock.close()
        for connection in list(self.server_state.connections):
            connection.shutdown()
        grace = self.config.timeout_graceful_shutdown or 2
        try:
            async with asyncio.timeout(grace):
                # uvicorn offers no event for "all connections drained".
                while self.server_state.connections or self.server_state.tasks:  # noqa: ASYNC110
                    await asyncio.sleep(0.005)
        except TimeoutError:
            for task in self.server_state.tasks:
                task.cancel()
        for server in self.servers:
            await server.wait_closed()


class MockServer:
    """A started mock model; ``api_base`` is what a client's settings need."""

    def __init__(self, script: MockScript, *, host: str = "127.0.0.1", port: int = 0) -> None:
        self.host = check_loopback(host)
        self.requested_port = port
        self.app: Starlette = create_mock_app(script)
        self.port = 0
        self._server: _QuietServer | None = None
        self._task: asyncio.Task[None] | None = None

    @property
    def recorder(self) -> Recorder:
        recorder: Recorder = self.app.state.recorder
        return recorder

    @property
    def api_base(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}/v1"

    async def start(self) -> None:
        family = socket.AF_INET6 if ":" in self.host else socket.AF_INET
        sock = socket.socket(family, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((self.host, self.requested_port))
        sock.listen(64)
        sock.setblocking(False)
        self.port = sock.getsockname()[1]
        config = uvicorn.Config(
            self.app,
            lifespan="off",
            log_level="warning",
            access_log=False,
            timeout_graceful_shutdown=2,
        )
        self._server = _QuietServer(config)
        self._task = asyncio.create_task(self._server.serve(sockets=[sock]))
        async with asyncio.timeout(10):
            while not self._server.started:
                if self._task.done():
                    self._task.result()
                    raise RuntimeError("the mock model server stopped during startup")
                await asyncio.sleep(0.005)

    async def stop(self) -> None:
        if self._server is None or self._task is None:
            return
        self._server.request_stop()
        await self._task
        self._server = None
        self._task = None

    async def serve_until(self, stop: asyncio.Event) -> None:
        """Run until ``stop`` is set (or the server dies on its own)."""
        assert self._task is not None
        waiter = asyncio.create_task(stop.wait())
        await asyncio.wait({waiter, self._task}, return_when=asyncio.FIRST_COMPLETED)
        waiter.cancel()

    async def __aenter__(self) -> MockServer:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.stop()
