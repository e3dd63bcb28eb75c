"""The streams one MCP server connection runs over: a local process or a URL.

- stdio: the SDK's ``stdio_client`` spawns the server under ``supervise.py``
  (``PR_SET_PDEATHSIG``, so it dies with the bridge even when the bridge is
  SIGKILLed) with its stderr appended to a log file;
- http: the SDK's ``streamable_http_client`` with an ``httpx2`` client carrying the
  configured headers;
- sse: the SDK's ``sse_client`` (the older HTTP+SSE transport), same headers.

Remote servers have no process of ours: nothing to supervise, no stderr log. Their
headers often hold tokens, so they are never logged; the URL appears in logs and
notices only as ``ServerConfig.where`` (no user info, query or fragment), and the
HTTP client library's request log lines get the same treatment.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import re
import shlex
import shutil
import sys
from collections.abc import AsyncIterator
from datetime import datetime
from pathlib import Path
from typing import Any, TextIO

from ..config import ServerConfig, public_url

__all__ = ["SUPERVISOR", "is_transport_error", "open_streams"]

log = logging.getLogger(__name__)

SUPERVISOR = Path(__file__).with_name("supervise.py")
CONNECT_TIMEOUT_S = 30.0
READ_TIMEOUT_S = 300.0  # a server may hold a response stream open this long


@contextlib.asynccontextmanager
async def open_streams(
    config: ServerConfig, *, root: Path, stderr_path: Path
) -> AsyncIterator[tuple[Any, Any]]:
    """The (read, write) streams of one connection to ``config``'s server."""
    if config.remote:
        async with _remote(config) as streams:
            yield streams
        return
    params = _stdio_params(config, root)
    from mcp.client.stdio import stdio_client

    errlog_file = await asyncio.to_thread(_open_stderr_log, stderr_path)
    with errlog_file as errlog:
        stamp = datetime.now().astimezone().isoformat(timespec="seconds")
        argv = shlex.join([config.command, *config.args])
        errlog.write(f"--- {stamp} agent-shell starts {config.name}: {argv}\n")
        errlog.flush()
        async with stdio_client(params, errlog=errlog) as streams:
            yield streams


@contextlib.asynccontextmanager
async def _remote(config: ServerConfig) -> AsyncIterator[tuple[Any, Any]]:
    import httpx2

    _redact_http_logs()
    # Header values go out as UTF-8 bytes: httpx2 would refuse a str outside ASCII.
    headers: dict[str, Any] = {k: v.encode("utf-8") for k, v in config.headers}
    url = config.url or ""
    if config.transport == "sse":
        from mcp.client.sse import sse_client

        async with sse_client(
            url, headers=headers, timeout=CONNECT_TIMEOUT_S, sse_read_timeout=READ_TIMEOUT_S
        ) as streams:
            yield streams[0], streams[1]
        return
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    timeout = httpx2.Timeout(CONNECT_TIMEOUT_S, read=READ_TIMEOUT_S)
    async with (
        create_mcp_http_client(headers=headers, timeout=timeout) as client,
        streamable_http_client(url, http_client=client) as streams,
    ):
        yield streams[0], streams[1]


def is_transport_error(exc: BaseException) -> bool:
    """Whether ``exc`` says the connection (not the tool) failed: reconnect."""
    import httpx2

    return isinstance(exc, (httpx2.TransportError, OSError))


_URL = re.compile(r"https?://[^\s\"'<>]+")


def _public_urls(text: str) -> str:
    """``text`` with every URL in it cut to its public form: no user info, query or
    fragment (``user:password@`` and ``?key=`` are where tokens hide)."""
    return _URL.sub(lambda m: public_url(m.group(0)), text)


class _PublicUrls(logging.Filter):
    """Cuts every URL in a log record (message and arguments) to its public form."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except (TypeError, ValueError):
            return True
        public = _public_urls(message)
        if public != message:
            record.msg, record.args = public, None
        return True


# Filters only see records of the logger they are on, not of its children.
_HTTP_LOGGERS = ("httpx2", "httpx", "mcp.client.streamable_http", "mcp.client.sse")


def _redact_http_logs() -> None:
    """httpx2 logs every request's URL at INFO (the SDK at DEBUG); a query can hold
    a token, and so can its user info. Header values are not logged by either."""
    for name in _HTTP_LOGGERS:
        logger = logging.getLogger(name)
        if not any(isinstance(f, _PublicUrls) for f in logger.filters):
            logger.addFilter(_PublicUrls())


def _stdio_params(config: ServerConfig, root: Path) -> Any:
    from mcp.client.stdio import StdioServerParameters

    env = dict(config.env)
    search = env.get("PATH", os.environ.get("PATH", os.defpath))
    cwd = Path(config.cwd).expanduser() if config.cwd else root
    if not cwd.is_absolute():
        cwd = root / cwd
    if not cwd.is_dir():
        raise FileNotFoundError(f"working directory not found: {cwd}")
    found = shutil.which(config.command, path=search)
    if found is None and os.sep in config.command:
        candidate = cwd / config.command
        found = str(candidate) if os.access(candidate, os.X_OK) else None
    if found is None:
        raise FileNotFoundError(f"command not found: {config.command}")
    return StdioServerParameters(
        command=sys.executable,
        args=["-I", "-S", str(SUPERVISOR), str(os.getpid()), found, *config.args],
        env=env or None,
        cwd=str(cwd),
    )


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
