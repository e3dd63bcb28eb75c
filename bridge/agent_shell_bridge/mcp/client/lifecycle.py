"""One MCP server's life: start, serve calls, restart once after a crash, stop.

The official SDK speaks the protocol (``transports.py`` opens the streams: a local
process's pipes, or a remote server's streamable HTTP or SSE connection;
``ClientSession`` does the initialize handshake, ``tools/list`` and ``tools/call``).
Its context managers must be entered and left in one task, so each server has an
owner task that holds them open until it is told to stop or the connection is lost
(a local server's output ends; a remote server's connection fails or forgets our
MCP session). Then it is started (reconnected) once more. Calls from turn tasks go
through the session the owner holds; cancelling such a call makes the SDK send
``notifications/cancelled``. The SDK is imported lazily, only when a session has
servers to start.
"""

from __future__ import annotations

import asyncio
import logging
import urllib.parse
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from ...errors import ToolFailed
from ...types import JSONObject
from ..config import ServerConfig
from .transports import SUPERVISOR, is_transport_error, open_streams

if TYPE_CHECKING:
    from mcp.client.session import IncomingMessage

    from mcp import ClientSession

__all__ = ["SUPERVISOR", "McpTool", "ServerConnection"]

log = logging.getLogger(__name__)

CLOSE_TIMEOUT_S = 5.0

State = Literal["starting", "connected", "restarting", "failed", "stopped"]
EventSink = Callable[[str, str], Awaitable[None]]  # (server, what happened)


@dataclass(frozen=True, slots=True)
class McpTool:
    """A tool as its server lists it (plain data, no SDK types)."""

    name: str
    description: str
    input_schema: JSONObject
    annotations: JSONObject | None


class _EofWatch:
    """The SDK's read stream, telling the owner when the server's output ends."""

    def __init__(self, inner: Any, ended: asyncio.Event) -> None:
        self._inner = inner
        self._ended = ended

    async def receive(self) -> Any:
        try:
            return await self._inner.receive()
        except Exception:  # end of stream or closed; a cancellation is not an end
            self._ended.set()
            raise

    async def aclose(self) -> None:
        await self._inner.aclose()

    def __aiter__(self) -> _EofWatch:
        return self

    async def __anext__(self) -> Any:
        try:
            return await self._inner.__anext__()
        except StopAsyncIteration:
            self._ended.set()
            raise

    async def __aenter__(self) -> _EofWatch:
        await self._inner.__aenter__()
        return self

    async def __aexit__(self, *exc: Any) -> bool | None:
        self._ended.set()
        result: bool | None = await self._inner.__aexit__(*exc)
        return result


def describe_error(exc: BaseException, config: ServerConfig | None = None) -> str:
    """A one-line reason from whatever a failed start raised (groups unwrapped).

    For a remote server the reason never holds the URL's query or a header value.
    """
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    if config is not None and config.remote:
        return scrub(_describe(exc), config)
    return _describe(exc)


def scrub(text: str, config: ServerConfig) -> str:
    """``text`` without ``config``'s full URL or header values (they hold tokens).

    The URL's user info, query and fragment also go when they appear on their own
    (a library may quote the URL re-encoded, or just a part of it).
    """
    if config.url:
        text = text.replace(config.url, config.where)
        for secret in _url_secrets(config.url):
            text = text.replace(secret, "[url secret]")
    for _, value in config.headers:
        if len(value) >= 4:
            text = text.replace(value, "[header value]")
    return text


def _url_secrets(url: str) -> list[str]:
    """The parts of ``url`` where tokens hide, longest first (short ones are skipped)."""
    try:
        parts = urllib.parse.urlsplit(url)
        password, username = parts.password, parts.username
    except ValueError:  # not a URL we could have connected to
        return []
    userinfo, at, _ = parts.netloc.rpartition("@")
    found = [userinfo if at else "", parts.query, parts.fragment, password or ""]
    if not password:
        found.append(username or "")  # a token given as the user name
    return sorted({s for s in found if len(s) >= 4}, key=len, reverse=True)


def _describe(exc: BaseException) -> str:
    response = getattr(exc, "response", None)
    status = getattr(response, "status_code", None)
    if isinstance(status, int):  # an HTTP error status (its message holds the full URL)
        return f"HTTP {status} {getattr(response, 'reason_phrase', '')}".strip()
    message = getattr(exc, "message", None)
    if isinstance(message, str) and message:
        return message
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    return str(exc) or type(exc).__name__


class ServerConnection:
    """A started (or failed) MCP server of one session."""

    def __init__(
        self,
        config: ServerConfig,
        *,
        root: Path,
        stderr_path: Path,
        start_timeout_s: float,
        on_event: EventSink,
        on_tools_changed: Callable[[str], Awaitable[None]],
    ) -> None:
        self.config = config
        self.name = config.name
        self.root = root
        self.stderr_path = stderr_path
        self.start_timeout_s = start_timeout_s
        self._on_event = on_event
        self._on_tools_changed = on_tools_changed
        self.state: State = "starting"
        self.error: str | None = None
        self.tools: list[McpTool] = []
        self.server_info: str | None = None
        self.restarts = 0
        self._session: ClientSession | None = None
        self._stop = asyncio.Event()
        self._wake = asyncio.Event()
        self._ready: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._owner: asyncio.Task[None] | None = None
        self._helpers: set[asyncio.Task[None]] = set()

    # -- public ------------------------------------------------------------------

    async def start(self) -> None:
        """Start the server and wait until it is connected or has failed (never raises)."""
        self._owner = asyncio.create_task(self._lifetime(), name=f"mcp-{self.name}")
        await asyncio.wait([self._ready, self._owner], return_when=asyncio.FIRST_COMPLETED)

    @property
    def connected(self) -> bool:
        return self.state == "connected"

    async def call(self, tool: str, arguments: JSONObject, timeout_s: float) -> JSONObject:
        """Call ``tool``; the result as JSON. Failures of the server raise ToolFailed."""
        from mcp.shared.exceptions import MCPError
        from mcp.types import CONNECTION_CLOSED

        if self._wake.is_set() and not self._stop.is_set():
            self._mark_down()  # its output ended; the owner restarts it
        if self.state == "restarting":
            await asyncio.wait([self._ready], timeout=self.start_timeout_s + 5)
        session = self._session
        if session is None or self.state != "connected":
            raise ToolFailed(f"MCP server {self.name} is not running: {self.error or self.state}")
        try:
            result = await session.call_tool(tool, arguments, read_timeout_seconds=timeout_s)
        except MCPError as exc:
            if exc.code == CONNECTION_CLOSED or self._session_lost(exc):
                self._mark_down()
                raise ToolFailed(
                    f"MCP server {self.name} {self._lost} during the call "
                    f"({scrub(exc.message, self.config)}); "
                    f"it is {self._again} once"
                ) from exc
            raise ToolFailed(f"MCP server {self.name}: {scrub(exc.message, self.config)}") from exc
        except (ValueError, RuntimeError) as exc:  # a result that breaks its own schema
            raise ToolFailed(f"MCP server {self.name}: {scrub(str(exc), self.config)}") from exc
        except Exception as exc:
            if not is_transport_error(exc):
                raise
            self._mark_down()
            raise ToolFailed(
                f"MCP server {self.name} {self._lost} during the call "
                f"({describe_error(exc, self.config)}); "
                f"it is {self._again} once"
            ) from exc
        await self._settle_refresh()
        dumped: JSONObject = result.model_dump(by_alias=True, mode="json", exclude_none=True)
        return dumped

    async def _settle_refresh(self) -> None:
        """Let a tools/list_changed sent with the call land before the next model step."""
        for _ in range(3):  # the notification's handler was scheduled before our wake-up
            await asyncio.sleep(0)
        if self._helpers:
            await asyncio.wait(list(self._helpers), timeout=self.start_timeout_s)

    @property
    def _lost(self) -> str:
        return "lost its connection" if self.config.remote else "stopped"

    @property
    def _again(self) -> str:
        return "reconnected" if self.config.remote else "restarted"

    def _session_lost(self, exc: Any) -> bool:
        """A remote server that answers 404 to our MCP session id has forgotten it
        (restarted, or expired it): the spec says to start a new session."""
        from mcp.types import INVALID_REQUEST

        return (
            self.config.remote
            and exc.code == INVALID_REQUEST
            and exc.message in ("Session not found", "Session terminated")
        )

    def _mark_down(self) -> None:
        """The connection is gone: calls wait for the restart from here on."""
        if self.state != "connected":
            return
        self.state = "restarting"
        self._session = None
        self._ready = asyncio.get_running_loop().create_future()
        self._wake.set()

    async def aclose(self) -> None:
        """Stop the server (stdin closed, then the SDK's kill escalation)."""
        self._stop.set()
        self._wake.set()
        owner = self._owner
        if owner is not None and not owner.done():
            # A remote server that stopped answering must not hold up the session's end
            # for the HTTP client's timeouts (the SDK's goodbye is a DELETE request).
            limit = CLOSE_TIMEOUT_S if self.config.remote else None
            await asyncio.wait([owner], timeout=limit)
            if not owner.done():
                owner.cancel()
                await asyncio.wait([owner])
        for task in list(self._helpers):
            task.cancel()
        if self._helpers:
            await asyncio.wait(self._helpers)
        if self.state != "failed":
            self.state = "stopped"

    # -- the owner task ------------------------------------------------------------

    async def _lifetime(self) -> None:
        while True:
            crashed = await self._run_once()
            if self._stop.is_set():
                return
            if not crashed:  # never connected: a start failure, not restarted
                self.state = "failed"
                self._settle_ready()
                verb = "connect" if self.config.remote else "start"
                await self._on_event(self.name, f"could not {verb}: {self.error}")
                return
            if self.restarts >= 1 and not self.config.remote:
                self.state = "failed"
                self.error = "it stopped again after a restart"
                self._settle_ready()
                await self._on_event(self.name, "stopped again after a restart; not restarted")
                return
            if self.restarts >= 1:
                self.state = "failed"
                self.error = "it lost its connection again after a reconnect"
                self._settle_ready()
                await self._on_event(
                    self.name, f"({self.config.where}) lost its connection again; not reconnected"
                )
                return
            self.restarts += 1
            self.state = "restarting"
            if self._ready.done():
                self._ready = asyncio.get_running_loop().create_future()
            if self.config.remote:
                await self._on_event(
                    self.name, f"({self.config.where}) lost its connection; reconnecting once"
                )
            else:
                await self._on_event(self.name, "stopped unexpectedly; restarting it once")

    def _settle_ready(self) -> None:
        if not self._ready.done():
            self._ready.set_result(None)

    async def _run_once(self) -> bool:
        """One process: connect, serve until stopped or ended. True if it had connected."""
        import anyio
        from mcp.types import Implementation

        from mcp import ClientSession

        from ... import __version__

        self._wake = asyncio.Event()
        if self._stop.is_set():
            self._wake.set()
        connected = False
        try:
            async with (
                open_streams(self.config, root=self.root, stderr_path=self.stderr_path) as (
                    read,
                    write,
                ),
                ClientSession(
                    _EofWatch(read, self._wake),
                    write,
                    message_handler=self._on_message,
                    client_info=Implementation(name="agent-shell", version=__version__),
                ) as session,
            ):
                with anyio.fail_after(self.start_timeout_s):
                    init = await session.initialize()
                    self.tools = await self._list(session)
                self.server_info = f"{init.server_info.name} {init.server_info.version}"
                self._session = session
                self.state = "connected"
                self.error = None
                connected = True
                self._settle_ready()
                if self.restarts:
                    await self._on_tools_changed(self.name)
                await self._wake.wait()
                self._session = None
        except asyncio.CancelledError:
            raise
        except BaseException as exc:
            if isinstance(exc, TimeoutError) or (
                isinstance(exc, BaseExceptionGroup) and exc.subgroup(TimeoutError) is not None
            ):
                self.error = f"no answer to the MCP handshake within {self.start_timeout_s:g} s"
            else:
                self.error = describe_error(exc, self.config)
                if self.config.remote and not connected:
                    self.error = f"{self.config.where}: {self.error}"
            log.info("MCP server %s ended: %s", self.name, self.error)
        finally:
            self._session = None
        if connected and not self._stop.is_set() and self.error is None:
            self.error = "the connection was lost" if self.config.remote else "the server exited"
        return connected

    async def _list(self, session: ClientSession) -> list[McpTool]:
        tools: list[McpTool] = []
        cursor: str | None = None
        from mcp.types import PaginatedRequestParams

        for _ in range(100):  # a paginator that never ends cannot hang the start
            params = PaginatedRequestParams(cursor=cursor) if cursor else None
            page = await session.list_tools(params=params)
            for tool in page.tools:
                annotations = (
                    tool.annotations.model_dump(by_alias=True, exclude_none=True)
                    if tool.annotations is not None
                    else None
                )
                tools.append(
                    McpTool(
                        name=tool.name,
                        description=tool.description or tool.title or "",
                        input_schema=dict(tool.input_schema),
                        annotations=annotations,
                    )
                )
            cursor = page.next_cursor
            if not cursor:
                break
        return tools

    async def _on_message(self, message: IncomingMessage) -> None:
        from mcp.types import ToolListChangedNotification

        if isinstance(message, ToolListChangedNotification):
            task = asyncio.create_task(self._refresh())
            self._helpers.add(task)
            task.add_done_callback(self._helpers.discard)

    async def _refresh(self) -> None:
        session = self._session
        if session is None:
            return
        try:
            self.tools = await self._list(session)
        except Exception as exc:
            log.warning("refreshing the tools of MCP server %s failed: %s", self.name, exc)
            return
        await self._on_tools_changed(self.name)
