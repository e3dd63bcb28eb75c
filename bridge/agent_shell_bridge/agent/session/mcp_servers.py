"""Attaching MCP servers to a live session: the session-level entry point.

``attach_mcp`` takes the ACP-shaped ``mcpServers`` list (what Emacs sends, and what
an ACP front end passes through from its editor) plus the user's per-server policy,
adds the project's own ``.mcp.json`` only when the user has trusted its current
bytes, starts the servers, writes notices to the action log, and registers the
servers as a tool source of the session. Later events (a crash, a restart, a
refreshed tool list) become log entries and ``mcp_servers`` session updates.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import TYPE_CHECKING

from ...errors import InvalidParams
from ...mcp.config import PROJECT_CONFIG, ServerConfig, ServerPolicy, from_claude_json, merge
from ...mcp.hub import McpHub
from ...project.trust import TRUSTED_KINDS, project_trust
from ...types import JSONObject
from .reporter import text

if TYPE_CHECKING:
    from .live import LiveSession

__all__ = ["attach_mcp", "project_config_path"]

log = logging.getLogger(__name__)


def project_config_path(root: Path) -> Path:
    return root / PROJECT_CONFIG


def _project_servers(live: LiveSession) -> tuple[str, list[ServerConfig], list[str]]:
    """The project's trusted servers: (status, servers, notices). Reads the file once."""
    path = project_config_path(live.root)
    if not path.exists() and not path.is_symlink():
        return "none", [], []
    if path.is_symlink() or not path.is_file():
        return "invalid", [], [f"{PROJECT_CONFIG} is a symlink or not a file; it was ignored"]
    try:
        content = path.read_bytes()
    except OSError as exc:
        return "invalid", [], [f"{PROJECT_CONFIG} could not be read ({exc.strerror}); ignored"]
    try:
        servers = from_claude_json(content, PROJECT_CONFIG)
    except InvalidParams as exc:
        return "invalid", [], [f"{exc.message}; the file was ignored"]
    names = ", ".join(s.name for s in servers) or "none"
    if not project_trust("mcp", live.config.memory_dir).is_trusted_content(live.root, content):
        return (
            "untrusted",
            [],
            [
                f"This project's {PROJECT_CONFIG} (servers: {names}) was found and ignored: "
                "it is not trusted in its current form. Review it and run "
                f"M-x {TRUSTED_KINDS['mcp'].command} to use it."
            ],
        )
    return "trusted", [_from_project(s) for s in servers], []


def _from_project(server: ServerConfig) -> ServerConfig:
    from dataclasses import replace

    return replace(server, origin="project")


async def attach_mcp(
    live: LiveSession,
    servers: list[ServerConfig],
    policies: dict[str, ServerPolicy],
    *,
    start_timeout_s: float = 30.0,
) -> JSONObject:
    """Start the session's MCP servers; the status (with notices) for the client."""
    project_status, project, notices = await asyncio.to_thread(_project_servers, live)
    configs = merge(servers, project)
    if not configs:
        for notice in notices:
            await _notice(live, notice, failed=False)
        return {
            "servers": [],
            "connected": 0,
            "configured": 0,
            "projectConfig": project_status,
            "notices": notices,
        }

    async def save(body: str) -> tuple[str, Path]:
        return await asyncio.to_thread(live.outputs.save, body)

    started = False

    async def on_event(server: str, what: str) -> None:
        if not started:  # failures while starting are in the summary below
            return
        message = f"MCP server {server} {what}"
        await _notice(live, message, failed="could not" in what or "again" in what)
        await live.reporter.update("mcp_servers", notice=message, **hub.status())

    async def on_change() -> None:
        await live.reporter.update("mcp_servers", **hub.status())

    hub = McpHub(
        configs,
        root=live.root,
        log_dir=live.root / ".agent-shell" / "logs" / "mcp",
        policies=policies,
        save_output=save,
        on_event=on_event,
        on_change=on_change,
        start_timeout_s=start_timeout_s,
    )
    live.tool_sources.append(hub)
    await hub.start()
    started = True
    status = hub.status()
    for item in status["servers"]:
        if item["status"] == "skipped":
            notices.append(f"MCP server {item['name']} not started: {item['error']}")
    connected = [s for s in status["servers"] if s["status"] == "connected"]
    summary = f"MCP: {len(connected)} of {len(configs)} server(s) connected"
    if connected:
        summary += " (" + ", ".join(f"{s['name']}: {s['tools']} tools" for s in connected) + ")"
    for notice in notices:
        await _notice(live, notice, failed=False)
    failed = [s for s in status["servers"] if s["status"] == "failed"]
    await live.reporter.entry(
        summary,
        source="bridge",
        parent=None,
        todo="FAILED" if failed else None,
        properties={"MCP_CONNECTED": len(connected), "MCP_CONFIGURED": len(configs)},
        body=[text(f"{s['name']}: {s.get('error', '')}") for s in failed],
    )
    status["projectConfig"] = project_status
    status["notices"] = [
        *notices,
        *(f"MCP server {s['name']} could not start: {s.get('error', '')}" for s in failed),
    ]
    return status


async def _notice(live: LiveSession, message: str, *, failed: bool) -> None:
    await live.reporter.entry(
        message, source="bridge", parent=None, todo="FAILED" if failed else None
    )
