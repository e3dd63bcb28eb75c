"""A session's MCP servers as one tool source for the agent loop.

Starts every configured server at once (each with its own timeout), keeps the
session's table of model-facing names, turns each listed tool into a catalogue
``ToolSpec`` whose ``external`` hook applies the MCP policy and calls the server,
and stops every server when the session ends. A server that fails is reported by
name through ``on_event``; the others keep working.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

from ..errors import ToolFailed
from ..tools.catalogue import AnyArgs, Side, ToolSpec
from ..tools.outputs import clip_lines
from ..tools.results import ToolResult
from ..types import JSONObject, Risk, Verdict
from .client.lifecycle import McpTool, ServerConnection
from .config import ServerConfig, ServerPolicy
from .naming import ToolNames
from .policy import decide, is_read_only
from .results import render

__all__ = ["CALL_TIMEOUT_S", "McpHub", "SaveOutput"]

log = logging.getLogger(__name__)

CALL_TIMEOUT_S = 300.0
SaveOutput = Callable[[str], Awaitable[tuple[str, Path]]]
EventSink = Callable[[str, str], Awaitable[None]]
_EMPTY_SCHEMA: JSONObject = {"type": "object", "properties": {}}


@dataclass(frozen=True, slots=True)
class _Binding:
    """The ``ExternalTool`` hook of one MCP tool."""

    hub: McpHub
    server: str
    tool: McpTool

    def verdict(self) -> Verdict:
        return decide(
            self.server, self.tool.name, self.tool.annotations, self.hub.policy_of(self.server)
        )

    def log_properties(self) -> dict[str, str]:
        return {"SERVER": self.server, "TOOL": self.tool.name}

    def identity(self) -> str:
        # A grant covers this server as the user saw it: resumed with another command,
        # other arguments or another directory under the same name -- or, for a remote
        # server, another transport, URL or set of header names -- it asks again.
        # Header values (tokens) are not part of it: a rotated token keeps the grant.
        config = self.hub.config_of(self.server)
        if config is None:
            return "unknown"
        facts: list[object] = [
            config.command,
            list(config.args),
            config.cwd,
            sorted(k for k, _ in config.env),
        ]
        if config.remote:
            facts = [
                config.transport,
                config.url,
                sorted(k.lower() for k, _ in config.headers),
            ]
        raw = json.dumps(facts, ensure_ascii=False).encode("utf-8")
        return hashlib.sha256(raw).hexdigest()[:16]

    async def call(self, arguments: JSONObject) -> ToolResult:
        return await self.hub.call(self.server, self.tool.name, arguments)


class McpHub:
    """The MCP servers of one session."""

    def __init__(
        self,
        servers: list[ServerConfig],
        *,
        root: Path,
        log_dir: Path,
        policies: dict[str, ServerPolicy],
        save_output: SaveOutput,
        on_event: EventSink,
        on_change: Callable[[], Awaitable[None]],
        start_timeout_s: float = 30.0,
    ) -> None:
        self.configs = servers
        self.root = root
        self.log_dir = log_dir
        self.policies = policies
        self.names = ToolNames()
        self._save_output = save_output
        self._on_event = on_event
        self._on_change = on_change
        self.start_timeout_s = start_timeout_s
        self.connections: dict[str, ServerConnection] = {}
        self.skipped: dict[str, str] = {}  # name -> why it was not started

    def config_of(self, server: str) -> ServerConfig | None:
        return next((c for c in self.configs if c.name == server), None)

    def policy_of(self, server: str) -> ServerPolicy:
        return self.policies.get(server, "default")

    async def start(self) -> None:
        """Start every server in parallel; returns when each is connected or failed."""
        for config in self.configs:
            if config.unsupported is not None:
                self.skipped[config.name] = config.unsupported
                continue
            if self.policy_of(config.name) == "denied":
                self.skipped[config.name] = "denied by the user"
                continue
            self.connections[config.name] = ServerConnection(
                config,
                root=self.root,
                stderr_path=self.log_dir / f"{_file_safe(config.name)}.stderr.log",
                start_timeout_s=self.start_timeout_s,
                on_event=self._on_event,
                on_tools_changed=self._tools_changed,
            )
        if self.connections:
            # The SDK takes most of a second to import: not on the event loop.
            remote = any(c.config.remote for c in self.connections.values())
            await asyncio.to_thread(_import_sdk, remote)
            await asyncio.gather(*(c.start() for c in self.connections.values()))
        for connection in self.connections.values():  # names in a stable, config order
            for tool in connection.tools:
                self.names.name_for(connection.name, tool.name)

    async def _tools_changed(self, server: str) -> None:
        connection = self.connections.get(server)
        if connection is not None:
            for tool in connection.tools:
                self.names.name_for(server, tool.name)
        await self._on_change()

    # -- ToolSource ------------------------------------------------------------------

    def specs(self) -> list[ToolSpec[AnyArgs]]:
        out: list[ToolSpec[AnyArgs]] = []
        for connection in self.connections.values():
            if not connection.connected:
                continue
            for tool in connection.tools:
                out.append(self._spec(connection.name, tool))
        return out

    def spec(self, name: str) -> ToolSpec[AnyArgs] | None:
        key = self.names.lookup(name)
        if key is None:
            return None
        server, tool_name = key
        connection = self.connections.get(server)
        if connection is None:
            return None
        for tool in connection.tools:
            if tool.name == tool_name:
                return self._spec(server, tool)
        return None

    def _spec(self, server: str, tool: McpTool) -> ToolSpec[AnyArgs]:
        description = tool.description.strip() or f"{tool.name} (MCP server {server})"
        schema = tool.input_schema if tool.input_schema.get("type") == "object" else _EMPTY_SCHEMA
        return ToolSpec(
            name=self.names.name_for(server, tool.name),
            side=Side.BRIDGE,
            risk=Risk.READ if is_read_only(tool.annotations) else Risk.WRITE,
            args=AnyArgs,
            description=f"[MCP server {server}] {description}"[:1024],
            timeout_s=CALL_TIMEOUT_S,
            kind="read" if is_read_only(tool.annotations) else "other",
            input_schema=schema,
            external=_Binding(self, server, tool),
        )

    async def aclose(self) -> None:
        if self.connections:
            await asyncio.gather(
                *(c.aclose() for c in self.connections.values()), return_exceptions=True
            )

    # -- calls ------------------------------------------------------------------------

    async def call(self, server: str, tool: str, arguments: JSONObject) -> ToolResult:
        connection = self.connections.get(server)
        if connection is None:
            raise ToolFailed(f"MCP server {server} is not running")
        result = await connection.call(tool, arguments, CALL_TIMEOUT_S)
        rendered = render(result)
        ref, path = await self._save_output(rendered.text)
        clipped = clip_lines(rendered.text, ref=ref)
        payload: JSONObject = {
            "server": server,
            "tool": tool,
            "content": clipped.text,
            "log_ref": ref,
        }
        if clipped.truncated:
            payload["truncated"] = True
            payload["omitted_lines"] = clipped.omitted_lines
        if rendered.structured is not None and not clipped.truncated:
            payload["structuredContent"] = rendered.structured
        if rendered.images:
            payload["note"] = f"{rendered.images} image(s) described, not shown"
        if rendered.is_error:
            payload["error"] = f"{server}/{tool} reported an error: {_first_line(rendered.text)}"
        return ToolResult(
            payload, failed=rendered.is_error, log_text=rendered.text, log_path=str(path)
        )

    # -- status -------------------------------------------------------------------------

    def status(self) -> JSONObject:
        servers: list[JSONObject] = []
        for config in self.configs:
            connection = self.connections.get(config.name)
            item: JSONObject = {"name": config.name, "origin": config.origin}
            if connection is None:
                item["status"] = "skipped"
                item["error"] = self.skipped.get(config.name, "not started")
            else:
                item["status"] = connection.state
                item["tools"] = len(connection.tools) if connection.connected else 0
                if connection.error and not connection.connected:
                    item["error"] = connection.error
                if connection.server_info:
                    item["serverInfo"] = connection.server_info
                if not config.remote:
                    item["stderrLog"] = str(connection.stderr_path)
            if config.remote:
                item["transport"] = config.transport
                item["url"] = config.where
            item["policy"] = self.policy_of(config.name)
            servers.append(item)
        connected = sum(1 for c in self.connections.values() if c.connected)
        return {"servers": servers, "connected": connected, "configured": len(self.configs)}


def _import_sdk(remote: bool) -> None:
    import mcp.client.session
    import mcp.client.stdio

    if remote:
        import mcp.client.sse
        import mcp.client.streamable_http
    del mcp


def _first_line(text: str) -> str:
    line = text.strip().splitlines()[0] if text.strip() else "(no message)"
    return line[:300]


def _file_safe(name: str) -> str:
    from .naming import sanitise

    return sanitise(name)
