"""A small MCP server for lifecycle tests, built on the official SDK's ``MCPServer``.

Run as ``python mcp_fixture_server.py RECORD_FILE`` (stdio), or with ``--http`` or
``--sse`` after RECORD_FILE to serve streamable HTTP (at ``/mcp``) or the older
HTTP+SSE transport (at ``/sse``) on 127.0.0.1. Then the process binds port 0 itself,
prints the port as its first stdout line, and serves from a child process that
inherits the listening socket: when the child exits with status 3 (the ``crash``
tool) a new child serves the same socket, so a client can reconnect without a port
race. Over HTTP every request's ``Authorization`` and ``X-Fixture-*`` headers are
appended to RECORD_FILE as ``header NAME: VALUE`` lines. Its tools provoke what the
third-party servers never do on demand: ``grow`` adds a tool and sends
``notifications/tools/list_changed``; ``crash`` kills the process mid-call; ``slow``
waits until cancelled and appends ``started``/``cancelled`` lines to RECORD_FILE;
``picture`` answers with an image; ``fail`` answers ``isError: true``; ``lines``
answers with many lines; ``run`` takes a ``command`` argument (as shell servers do)
and only records it. ``echo`` and ``lines`` are annotated read-only.
"""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ImageContent, TextContent, ToolAnnotations

RECORD = Path(sys.argv[1])
server = MCPServer("fixture")


def record(line: str) -> None:
    with RECORD.open("a", encoding="utf-8") as fh:
        fh.write(line + "\n")


@server.tool(annotations=ToolAnnotations(read_only_hint=True, open_world_hint=False))
def echo(text: str) -> str:
    """Return the text unchanged."""
    return text


@server.tool()
async def grow(ctx: Context) -> str:  # type: ignore[type-arg]
    """Add the tool added_later and announce the new list."""

    def added_later() -> str:
        return "I was added later"

    server.add_tool(added_later, description="A tool that appeared at run time")
    await ctx.session.send_tool_list_changed()
    return "grown"


@server.tool()
def crash() -> str:
    """Exit the process in the middle of the call."""
    os._exit(3)


@server.tool()
async def slow() -> str:
    """Wait for a minute unless cancelled."""
    record("started")
    try:
        await asyncio.sleep(60)
    except asyncio.CancelledError:
        record("cancelled")
        raise
    return "late"


@server.tool()
def picture() -> list[TextContent | ImageContent]:
    """A caption and a tiny PNG."""
    return [
        TextContent(type="text", text="图：一个像素"),
        ImageContent(type="image", data="iVBORw0KGgo=", mimeType="image/png"),
    ]


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def lines(count: int) -> str:
    """COUNT numbered lines of text."""
    return "\n".join(f"行 {n}" for n in range(1, count + 1))


@server.tool()
def fail() -> str:
    """Always fails."""
    raise ToolError("失败了：on purpose")


@server.tool()
def run(command: str) -> str:
    """Record the command (a stand-in for a shell server's tool; nothing runs)."""
    record(f"run {command}")
    return f"ran {command}"


def _recording(app: Any) -> Any:
    async def wrapped(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope["method"] == "POST":
            for key, value in scope["headers"]:
                name = key.decode("latin-1").lower()
                if name == "authorization" or name.startswith("x-fixture"):
                    record(f"header {name}: {value.decode('utf-8', 'replace')}")
        await app(scope, receive, send)

    return wrapped


def _serve_child(transport: str, fd: int) -> None:
    import uvicorn

    app = server.sse_app() if transport == "--sse" else server.streamable_http_app()
    config = uvicorn.Config(_recording(app), log_level="warning", lifespan="on")
    sock = socket.socket(fileno=fd)
    asyncio.run(uvicorn.Server(config).serve(sockets=[sock]))


def _serve_parent(transport: str) -> int:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    print(sock.getsockname()[1], flush=True)
    fd = sock.fileno()
    while True:
        child = subprocess.run(
            [sys.executable, __file__, str(RECORD), transport, "--child", str(fd)],
            pass_fds=(fd,),
            check=False,
        )
        if child.returncode != 3:
            return child.returncode


if __name__ == "__main__":
    if len(sys.argv) > 3 and sys.argv[3] == "--child":
        _serve_child(sys.argv[2], int(sys.argv[4]))
    elif len(sys.argv) > 2 and sys.argv[2] in ("--http", "--sse"):
        sys.exit(_serve_parent(sys.argv[2]))
    else:
        asyncio.run(server.run_stdio_async())
