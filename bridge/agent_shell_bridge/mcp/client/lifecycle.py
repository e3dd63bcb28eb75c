"""One MCP server's life: start, serve calls, restart once after a crash, stop.

The official SDK speaks the protocol (``stdio_client`` spawns the process and frames
JSON-RPC on its pipes; ``ClientSession`` does the initialize handshake, ``tools/list``
and ``tools/call``). Its context managers must be entered and left in one task, so
each server has an owner task that holds them open until it is told to stop or the
server's output ends (a crash). Calls from turn tasks go through the session the
owner holds; cancelling such a call makes the SDK send ``notifications/cancelled``.

The server runs under ``supervise.py`` (``PR_SET_PDEATHSIG``), so it dies with the
bridge even when the bridge is SIGKILLed; its stderr is appended to a log file.
The SDK is imported here, lazily, only when a session has servers to start.
"""

from __future__ import annotations

import asyncio
import logging
import os
import shlex
import shutil
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TextIO

from ...errors import ToolFailed
from ...types import JSONObject
from ..config import ServerConfig

if TYPE_CHECKING:
    from mcp import ClientSession
    from mcp.client.session import IncomingMessage

__all__ = ["SUPERVISOR", "McpTool", "ServerConnection"]

log = logging.getLogger(__name__)

SUPERVISOR = Path(__file__).with_name("supervise.py")

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


def describe_error(exc: BaseException) -> str:
    """A one-line reason from whatever a failed start raised (groups unwrapped)."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
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
            if exc.code == CONNECTION_CLOSED:
                self._mark_down()
                raise ToolFailed(
                    f"MCP server {self.name} stopped during the call ({exc.message}); "
                    "it is restarted once"
                ) from exc
            raise ToolFailed(f"MCP server {self.name}: {exc.message}") from exc
        except (ValueError, RuntimeError) as exc:  # a result that breaks its own schema
            raise ToolFailed(f"MCP server {self.name}: {exc}") from exc
        await self._settle_refresh()
        dumped: JSONObject = result.model_dump(by_alias=True, mode="json", exclude_none=True)
        return dumped

    async def _settle_refresh(self) -> None:
        """Let a tools/list_changed sent with the call land before the next model step."""
        for _ in range(3):  # the notification's handler was scheduled before our wake-up
            await asyncio.sleep(0)
        if self._helpers:
            await asyncio.wait(list(self._helpers), timeout=self.start_timeout_s)

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
                await self._on_event(self.name, f"could not start: {self.error}")
                return
            if self.restarts >= 1:
                self.state = "failed"
                self.error = "it stopped again after a restart"
                self._settle_ready()
                await self._on_event(self.name, "stopped again after a restart; not restarted")
                return
            self.restarts += 1
            self.state = "restarting"
            if self._ready.done():
                self._ready = asyncio.get_running_loop().create_future()
            await self._on_event(self.name, "stopped unexpectedly; restarting it once")

    def _settle_ready(self) -> None:
        if not self._ready.done():
            self._ready.set_result(None)

    def _params(self) -> Any:
        from mcp.client.stdio import StdioServerParameters

        env = dict(self.config.env)
        search = env.get("PATH", os.environ.get("PATH", os.defpath))
        cwd = Path(self.config.cwd).expanduser() if self.config.cwd else self.root
        if not cwd.is_absolute():
            cwd = self.root / cwd
        if not cwd.is_dir():
            raise FileNotFoundError(f"working directory not found: {cwd}")
        found = shutil.which(self.config.command, path=search)
        if found is None and os.sep in self.config.command:
            candidate = cwd / self.config.command
            found = str(candidate) if os.access(candidate, os.X_OK) else None
        if found is None:
            raise FileNotFoundError(f"command not found: {self.config.command}")
        return StdioServerParameters(
            command=sys.executable,
            args=["-I", "-S", str(SUPERVISOR), str(os.getpid()), found, *self.config.args],
            env=env or None,
            cwd=str(cwd),
        )

    async def _run_once(self) -> bool:
        """One process: connect, serve until stopped or ended. True if it had connected."""
        import anyio
        from mcp import ClientSession
        from mcp.client.stdio import stdio_client
        from mcp.types import Implementation

        from ... import __version__

        self._wake = asyncio.Event()
        if self._stop.is_set():
            self._wake.set()
        connected = False
        try:
            params = self._params()
            errlog_file = await asyncio.to_thread(_open_stderr_log, self.stderr_path)
            with errlog_file as errlog:
                stamp = datetime.now().astimezone().isoformat(timespec="seconds")
                argv = shlex.join([self.config.command, *self.config.args])
                errlog.write(f"--- {stamp} agent-shell starts {self.name}: {argv}\n")
                errlog.flush()
                async with (
                    stdio_client(params, errlog=errlog) as (read, write),
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
                self.error = describe_error(exc)
            log.info("MCP server %s ended: %s", self.name, self.error)
        finally:
            self._session = None
        if connected and not self._stop.is_set() and self.error is None:
            self.error = "the server exited"
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


def _open_stderr_log(path: Path) -> TextIO:
    """The server's stderr log, opened for appending; never through a symlink.

    The log lives at a predictable place in the project (``.agent-shell/logs/mcp``),
    which a cloned repository can fill with links: one to ``~/.bashrc`` must not
    make the user's server append to it. Then the stderr is dropped instead.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    if os.path.realpath(path.parent) == os.path.abspath(path.parent):
        flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0)
        try:
            fd = os.open(path, flags, 0o644)
        except OSError as exc:
            log.warning("MCP stderr log %s not opened (%s); stderr is dropped", path, exc)
        else:
            return os.fdopen(fd, "a", encoding="utf-8", errors="replace")
    else:
        log.warning("MCP stderr log %s is under a symlink; stderr is dropped", path)
    return open(os.devnull, "a", encoding="utf-8")  # closed by the caller
