"""Shared fixtures: the bridge in-process, on a real socket, and as a real subprocess.

In-process (fast, no sockets):
  ``runtime``          a Runtime with every method, the ``debug/*`` ones included
  ``server_settings``  ServerSettings with a fresh token and a nominal port
  ``app``              ``create_app(server_settings, runtime)``
  ``app_client``       a ``BridgeClient`` (an ``httpx.AsyncClient``) over ASGITransport
                       whose Host and bearer token pass the gate

Real HTTP on 127.0.0.1:
  ``serve_app``        factory: ``await serve_app(runtime, sse_ping_s=0.2)`` runs uvicorn
                       in the test's event loop with the settings a test chooses
  ``start_bridge``     factory: a real ``agent-shell-bridge serve --port 0`` subprocess
                       (default ones come from ``bridge_pool``, started in advance)
  ``live_bridge``      one such subprocess (debug methods on), stopped at teardown
  ``shared_bridge``    one debug bridge for the whole session, for tests that neither
                       stop it nor depend on absolute event ids

``BridgeClient`` adds ``rpc()`` (one JSON-RPC call) and ``events()`` (an SSE stream
parsed from raw bytes, so what a test sees is exactly what was on the wire) to
``httpx.AsyncClient``. The HTTP helpers never sleep: every wait has a deadline.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import secrets
import selectors
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn

from agent_shell_bridge.config import BridgeConfig
from agent_shell_bridge.methods import build_dispatcher
from agent_shell_bridge.runtime import Runtime
from agent_shell_bridge.transport.events import EventHub
from agent_shell_bridge.transport.server import ServerSettings, create_app

REPO_ROOT = Path(__file__).resolve().parents[2]
# ASGITransport opens no socket, so the in-process port is only the one the gate expects.
IN_PROCESS_PORT = 50_123
READY_TIMEOUT_S = 15.0
STOP_TIMEOUT_S = 5.0

# Environment variables a launched bridge must not inherit from the developer's shell
# (AGENT_SHELL_SANDBOX passes: the suite runs once with the sandbox forced off).
_SCRUBBED_ENV = re.compile(
    r"^(?!AGENT_SHELL_SANDBOX$)(AGENT_SHELL_|DEEPSEEK_|OPENAI_).*|.*_(API_KEY|TOKEN)$"
)


# --------------------------------------------------------------------------- SSE


@dataclass(frozen=True, slots=True)
class SSEEvent:
    """One dispatched SSE event; ``raw_data`` holds the data bytes exactly as sent."""

    id: str | None
    event: str | None
    raw_data: bytes

    @property
    def data(self) -> str:
        return self.raw_data.decode("utf-8")

    def json(self) -> Any:
        return json.loads(self.raw_data)


class StreamEnded(Exception):
    """The server closed the event stream."""


class EventStream:
    """Incremental SSE parser over a streaming httpx response.

    Lines end at CRLF, LF or CR only (as the SSE grammar says; ``str.splitlines``
    would also split inside JSON strings holding U+2028). Comment lines, such as
    pings, are collected in ``comments``.
    """

    def __init__(self, response: httpx.Response) -> None:
        self.response = response
        self.comments: list[bytes] = []
        self._lines = self._iter_lines()
        self._pending = SSEEvent(None, None, b"")  # id and event type seen so far
        self._data: list[bytes] = []

    async def _iter_lines(self) -> AsyncIterator[bytes]:
        buffer = b""
        async for chunk in self.response.aiter_raw():
            buffer += chunk
            while True:
                match = re.search(rb"\r\n|\n|\r", buffer)
                # A trailing CR may be the first half of a CRLF split across chunks.
                if match is None or (match.group() == b"\r" and match.end() == len(buffer)):
                    break
                yield buffer[: match.start()]
                buffer = buffer[match.end() :]
        if buffer:
            yield buffer.rstrip(b"\r")

    async def _next_item(self) -> SSEEvent | bytes:
        """The next dispatched event, or the next comment line (without its colon)."""
        async for line in self._lines:
            if not line:
                event = self._pending
                self._pending = SSEEvent(None, None, b"")
                if self._data:
                    data, self._data = self._data, []
                    return SSEEvent(event.id, event.event, b"\n".join(data))
                continue
            if line.startswith(b":"):
                self.comments.append(line[1:])
                return line[1:]
            name, _, value = line.partition(b":")
            value = value.removeprefix(b" ")
            if name == b"data":
                self._data.append(value)
            elif name == b"id":
                self._pending = SSEEvent(value.decode("utf-8"), self._pending.event, b"")
            elif name == b"event":
                self._pending = SSEEvent(self._pending.id, value.decode("utf-8"), b"")
        raise StreamEnded

    async def _next(self) -> SSEEvent:
        while True:
            item = await self._next_item()
            if isinstance(item, SSEEvent):
                return item

    async def next_event(self, timeout: float = 5.0) -> SSEEvent:
        """The next event; StreamEnded when the server closes, TimeoutError on a stall."""
        async with asyncio.timeout(timeout):
            return await self._next()

    async def take(self, n: int, timeout: float = 5.0) -> list[SSEEvent]:
        async with asyncio.timeout(timeout):
            return [await self._next() for _ in range(n)]

    async def until_closed(self, timeout: float = 5.0) -> list[SSEEvent]:
        """Every event left before the server ends the stream."""
        events: list[SSEEvent] = []
        async with asyncio.timeout(timeout):
            while True:
                try:
                    events.append(await self._next())
                except StreamEnded:
                    return events

    async def wait_comment(self, timeout: float = 5.0) -> bytes:
        """Read on until a comment line (e.g. a ping) arrives; events are discarded."""
        async with asyncio.timeout(timeout):
            while True:
                item = await self._next_item()
                if isinstance(item, bytes):
                    return item


# --------------------------------------------------------------------- clients


class BridgeClient(httpx.AsyncClient):
    """An ``httpx.AsyncClient`` aimed at one bridge, with JSON-RPC and SSE helpers."""

    async def post_rpc(self, body: bytes | Any, **kwargs: Any) -> httpx.Response:
        """POST raw bytes, or any other value serialised as JSON, to ``/rpc``."""
        content = body if isinstance(body, bytes) else json.dumps(body).encode()
        return await self.post("/rpc", content=content, **kwargs)

    async def rpc(self, method: str, params: Mapping[str, Any] | None = None, rid: Any = 1) -> Any:
        """One JSON-RPC request; returns the decoded response envelope."""
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": rid, "method": method}
        if params is not None:
            message["params"] = dict(params)
        response = await self.post_rpc(message)
        assert response.status_code == 200, response.text
        return response.json()

    async def result(self, method: str, params: Mapping[str, Any] | None = None) -> Any:
        """One JSON-RPC request that must succeed; returns its ``result``."""
        reply = await self.rpc(method, params)
        assert "error" not in reply, reply
        return reply["result"]

    async def last_event_id(self) -> int:
        return int((await self.result("ping"))["lastEventId"])

    @asynccontextmanager
    async def events(
        self, last_event_id: int | str | None = None, *, from_now: bool = False
    ) -> AsyncIterator[EventStream]:
        """Open ``GET /events``; ``from_now`` resumes after the newest event so far."""
        if from_now:
            last_event_id = await self.last_event_id()
        headers = {} if last_event_id is None else {"Last-Event-ID": str(last_event_id)}
        async with self.stream("GET", "/events", headers=headers) as response:
            assert response.status_code == 200, await response.aread()
            assert response.headers["content-type"].startswith("text/event-stream")
            yield EventStream(response)


@dataclass
class Endpoint:
    """A bridge listening on 127.0.0.1."""

    port: int
    token: str

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def auth_headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"}

    def client(self, **kwargs: Any) -> BridgeClient:
        """A client that passes the gate; reads have no timeout (SSE helpers set one)."""
        kwargs.setdefault("timeout", httpx.Timeout(10.0, read=None))
        return BridgeClient(
            base_url=self.base_url, headers=self.auth_headers, trust_env=False, **kwargs
        )

    def raw_request(self, request: bytes, timeout: float = 5.0) -> RawResponse:
        """Send hand-written HTTP bytes (for what httpx refuses to send) and read the reply."""
        with socket.create_connection(("127.0.0.1", self.port), timeout=timeout) as sock:
            sock.sendall(request)
            return read_raw_response(sock)


@dataclass(frozen=True, slots=True)
class RawResponse:
    status: int
    headers: list[tuple[str, str]]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


def read_raw_response(sock: socket.socket) -> RawResponse:
    """Read one HTTP/1.1 response (Content-Length or close-delimited) from ``sock``."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        if not chunk:
            break
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1])
    headers = [(k.strip().lower(), v.strip()) for k, _, v in (h.partition(":") for h in lines[1:])]
    length = next((int(v) for k, v in headers if k == "content-length"), None)
    while length is None or len(body) < length:
        chunk = sock.recv(65536)
        if not chunk:
            break
        body += chunk
    return RawResponse(status, headers, body)


# ------------------------------------------------------------------ in-process


def make_runtime(*, debug_methods: bool = True, ring_size: int = 4096) -> Runtime:
    """A Runtime with default config (never the developer's environment)."""
    return Runtime(
        config=BridgeConfig(),
        hub=EventHub(ring_size=ring_size),
        dispatcher=build_dispatcher(debug_methods=debug_methods),
    )


@pytest.fixture
async def runtime() -> AsyncIterator[Runtime]:
    """A Runtime with all methods, ``debug/*`` included; closed at teardown."""
    rt = make_runtime()
    yield rt
    await rt.aclose()


@pytest.fixture
def server_settings() -> ServerSettings:
    return ServerSettings(token=secrets.token_urlsafe(32), port=IN_PROCESS_PORT)


@pytest.fixture
def app(server_settings: ServerSettings, runtime: Runtime) -> Any:
    return create_app(server_settings, runtime)


@pytest.fixture
async def app_client(app: Any, server_settings: ServerSettings) -> AsyncIterator[BridgeClient]:
    """In-process client with a Host and token that pass the gate."""
    async with BridgeClient(
        transport=httpx.ASGITransport(app=app),
        base_url=f"http://127.0.0.1:{server_settings.port}",
        headers={"Authorization": f"Bearer {server_settings.token}"},
    ) as client:
        yield client


# ----------------------------------------------------------- uvicorn in-process


@dataclass
class InProcessServer(Endpoint):
    runtime: Runtime
    settings: ServerSettings


@pytest.fixture
async def serve_app() -> AsyncIterator[Callable[..., Awaitable[InProcessServer]]]:
    """Factory running ``create_app`` under a real uvicorn on 127.0.0.1 in this loop.

    ``await serve_app(runtime, **settings)``: ``settings`` are ServerSettings fields
    other than token and port (e.g. ``sse_ping_s=0.2``, ``max_body_bytes=1024``).
    """
    running: list[tuple[uvicorn.Server, asyncio.Task[None], socket.socket]] = []

    async def start(rt: Runtime | None = None, **settings: Any) -> InProcessServer:
        rt = make_runtime() if rt is None else rt
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.bind(("127.0.0.1", 0))
        sock.listen(64)  # connections queue until uvicorn accepts: no start-up wait
        port = sock.getsockname()[1]
        server_settings = ServerSettings(token=secrets.token_urlsafe(32), port=port, **settings)
        server = uvicorn.Server(
            uvicorn.Config(
                create_app(server_settings, rt),
                log_level="warning",
                access_log=False,
                lifespan="on",
                timeout_graceful_shutdown=1,
            )
        )
        task = asyncio.create_task(server.serve(sockets=[sock]))
        running.append((server, task, sock))
        return InProcessServer(port, server_settings.token, rt, server_settings)

    yield start
    for server, task, sock in running:
        server.should_exit = True
        await asyncio.wait_for(task, STOP_TIMEOUT_S)
        sock.close()


# ------------------------------------------------------------ real subprocess


@dataclass
class BridgeProcess(Endpoint):
    """A running ``agent-shell-bridge serve`` and what it printed."""

    process: subprocess.Popen[bytes] = field(repr=False)
    ready: dict[str, Any] = field(default_factory=dict)
    ready_line: bytes = b""
    stderr_path: Path | None = None

    @property
    def pid(self) -> int:
        return self.process.pid

    def stderr_text(self) -> str:
        return self.stderr_path.read_text("utf-8", "replace") if self.stderr_path else ""

    def close_stdin(self) -> None:
        if self.process.stdin is not None and not self.process.stdin.closed:
            self.process.stdin.close()

    def stop(self) -> None:
        """Close stdin as Emacs dying would; kill only if that fails."""
        self.close_stdin()
        try:
            self.process.wait(timeout=STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=STOP_TIMEOUT_S)
        if self.process.stdout is not None:
            self.process.stdout.close()


def bridge_command() -> list[str]:
    """The installed console script: $AGENT_SHELL_TEST_BRIDGE, the venv's bin, or PATH."""
    candidates = [
        os.environ.get("AGENT_SHELL_TEST_BRIDGE", ""),
        str(Path(sys.executable).parent / "agent-shell-bridge"),
        shutil.which("agent-shell-bridge") or "",
    ]
    for candidate in candidates:
        if candidate and os.access(candidate, os.X_OK):
            return [candidate]
    pytest.fail("agent-shell-bridge is not installed (pip install -e '.[test]')")


def bridge_env(overrides: Mapping[str, str] | None = None, *, debug: bool = True) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not _SCRUBBED_ENV.match(k)}
    env["AGENT_SHELL_BRIDGE_DEBUG"] = "1" if debug else "0"
    env["PYTHONUNBUFFERED"] = "1"
    env.update(overrides or {})
    return env


def read_line_with_deadline(stream: Any, timeout: float) -> bytes:
    """Read one line from a pipe without blocking past ``timeout`` seconds."""
    fd = stream.fileno()
    line = b""
    with selectors.DefaultSelector() as selector:
        selector.register(fd, selectors.EVENT_READ)
        deadline = time.monotonic() + timeout
        while not line.endswith(b"\n"):
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not selector.select(remaining):
                raise TimeoutError(f"no complete line within {timeout} s: {line!r}")
            chunk = os.read(fd, 1)  # one byte at a time: never consume past the line
            if not chunk:
                break
            line += chunk
    return line


def spawn_bridge(
    directory: Path,
    *,
    debug: bool = True,
    env: Mapping[str, str] | None = None,
    args: Sequence[str] = (),
) -> BridgeProcess:
    """Start ``agent-shell-bridge serve --port 0``; ``wait_ready`` completes it."""
    directory.mkdir(parents=True, exist_ok=True)
    stderr_path = directory / "bridge-stderr.log"
    overrides = {"AGENT_SHELL_MEMORY_DIR": str(directory / "memory"), **(env or {})}
    with stderr_path.open("wb") as stderr:
        process = subprocess.Popen(
            [*bridge_command(), "serve", "--port", "0", *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=stderr,
            env=bridge_env(overrides, debug=debug),
            cwd=directory,
        )
    return BridgeProcess(0, "", process=process, stderr_path=stderr_path)


def wait_ready(bridge: BridgeProcess) -> BridgeProcess:
    """Read the ready line (with a deadline) and fill in port and token."""
    try:
        assert bridge.process.stdout is not None
        bridge.ready_line = read_line_with_deadline(bridge.process.stdout, READY_TIMEOUT_S)
        bridge.ready = json.loads(bridge.ready_line)
    except Exception:
        bridge.stop()
        raise RuntimeError(f"bridge did not start; stderr:\n{bridge.stderr_text()}") from None
    bridge.port = int(bridge.ready["port"])
    bridge.token = str(bridge.ready["token"])
    return bridge


def launch_bridge(
    directory: Path,
    *,
    debug: bool = True,
    env: Mapping[str, str] | None = None,
    args: Sequence[str] = (),
) -> BridgeProcess:
    """Start ``agent-shell-bridge serve --port 0`` and wait for its ready line."""
    return wait_ready(spawn_bridge(directory, debug=debug, env=env, args=args))


class BridgePool:
    """Keeps one default (debug) bridge starting in the background.

    Start-up is mostly Python imports; overlapping it with the previous test keeps
    suites that need a fresh process per test fast.
    """

    def __init__(self, factory: pytest.TempPathFactory) -> None:
        self._factory = factory
        self._spare: BridgeProcess | None = None

    def _spawn(self) -> BridgeProcess:
        return spawn_bridge(self._factory.mktemp("bridge"), debug=True)

    def take(self) -> BridgeProcess:
        bridge = self._spare or self._spawn()
        self._spare = self._spawn()
        return wait_ready(bridge)

    def close(self) -> None:
        if self._spare is not None:
            self._spare.stop()
            self._spare = None


@pytest.fixture(scope="session")
def bridge_pool(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BridgePool]:
    pool = BridgePool(tmp_path_factory)
    yield pool
    pool.close()


@pytest.fixture
def start_bridge(tmp_path: Path, bridge_pool: BridgePool) -> Iterator[Callable[..., BridgeProcess]]:
    """Factory: ``start_bridge(debug=True, env={...}, args=[...])``; all stopped at teardown.

    A debug bridge without ``env`` or ``args`` comes from a pool started in advance.
    """
    started: list[BridgeProcess] = []

    def start(
        *, debug: bool = True, env: Mapping[str, str] | None = None, args: Sequence[str] = ()
    ) -> BridgeProcess:
        if debug and env is None and not args:
            bridge = bridge_pool.take()
        else:
            directory = tmp_path / f"bridge{len(started)}"
            bridge = launch_bridge(directory, debug=debug, env=env, args=args)
        started.append(bridge)
        return bridge

    yield start
    for bridge in started:
        bridge.stop()


@pytest.fixture
def live_bridge(start_bridge: Callable[..., BridgeProcess]) -> BridgeProcess:
    """A real bridge subprocess with debug methods, stopped (stdin closed) at teardown."""
    return start_bridge()


@pytest.fixture(scope="session")
def shared_bridge(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BridgeProcess]:
    """One debug bridge for the session: do not stop it or rely on absolute event ids."""
    bridge = launch_bridge(tmp_path_factory.mktemp("shared-bridge"))
    yield bridge
    bridge.stop()


@pytest.fixture
def mock_model_process(tmp_path: Path) -> Iterator[Callable[[list[dict[str, Any]]], str]]:
    """Factory starting ``agent-shell-bridge mock-model`` processes; returns the API base.

    For tests of commands that take the model's address (``run``, MCP headless):
    every process started is stopped (stdin closed) when the test ends.
    """
    procs: list[subprocess.Popen[bytes]] = []

    def start(steps: list[dict[str, Any]]) -> str:
        script = tmp_path / f"script{len(procs)}.json"
        script.write_text(json.dumps({"steps": steps}, ensure_ascii=False), encoding="utf-8")
        proc = subprocess.Popen(
            [*bridge_command(), "mock-model", "--script", str(script), "--port", "0"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        procs.append(proc)
        ready = json.loads(read_line_with_deadline(proc.stdout, 15))
        return str(ready["api_base"])

    yield start
    for proc in procs:
        assert proc.stdin is not None
        proc.stdin.close()
        proc.wait(timeout=10)
        if proc.stdout is not None:
            proc.stdout.close()
