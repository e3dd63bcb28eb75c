"""MCP server configuration in the shapes users already have.

Two shapes describe the same thing, a list of servers, local (stdio) or remote
(streamable HTTP or the older HTTP+SSE transport):

- Claude Code's ``.mcp.json``: ``{"mcpServers": {"NAME": {"command": "...",
  "args": [...], "env": {"K": "V"}, "cwd": "..."}}}`` for a local server,
  ``{"type": "http"|"sse", "url": "...", "headers": {"K": "V"}}`` for a remote one
  (``type`` defaults to ``http`` when a ``url`` is given) -- files, headless
  ``--mcp-config``, the Emacs option ``agent-shell-mcp-servers`` when it names a file;
- the Agent Client Protocol's ``session/new`` ``mcpServers``: ``[{"name", "command",
  "args", "env": [{"name", "value"}]}]``, or ``{"type": "http"|"sse", "name", "url",
  "headers": [{"name", "value"}]}`` (what Emacs sends, and what an ACP front end passes
  straight through from its editor).

Both parse into :class:`ServerConfig`. As in Claude Code, ``${VAR}`` and
``${VAR:-default}`` in the command, args, env values, cwd, url and header values are
taken from the bridge's environment (a server needing an unset variable is not
started, and the notice names the variable). Bad input raises :class:`InvalidParams`
with the server's name and the field at fault -- never a header's value, which often
holds a token. Only ``http``/``https`` URLs are accepted.
"""

from __future__ import annotations

import json
import os
import re
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from ..errors import InvalidParams

__all__ = [
    "PROJECT_CONFIG",
    "REMOTE",
    "ServerConfig",
    "ServerPolicy",
    "Transport",
    "WireServer",
    "from_claude_json",
    "from_wire",
    "load_file",
    "merge",
    "public_url",
    "to_wire",
]

PROJECT_CONFIG = ".mcp.json"

ServerPolicy = Literal["default", "trusted", "denied"]
Transport = Literal["stdio", "http", "sse"]
REMOTE: tuple[Transport, ...] = ("http", "sse")


@dataclass(frozen=True, slots=True)
class ServerConfig:
    """One MCP server as the user configured it: local (``command``) or remote (``url``)."""

    name: str
    command: str
    args: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = ()
    cwd: str | None = None
    # Set for servers we cannot start (an unset variable): the reason, for the notice.
    unsupported: str | None = None
    # Where it came from ("session", "project", a file path), for notices.
    origin: str = "session"
    transport: Transport = "stdio"
    url: str | None = None
    # Sent with every request to a remote server; never logged (they hold tokens).
    headers: tuple[tuple[str, str], ...] = ()

    @property
    def remote(self) -> bool:
        return self.transport in REMOTE

    @property
    def where(self) -> str:
        """The server as notices and logs show it: a command, or a URL without secrets."""
        if self.remote:
            return public_url(self.url or "")
        return self.command

    def __repr__(self) -> str:  # no header values, no URL query in tracebacks and logs
        return (
            f"ServerConfig(name={self.name!r}, transport={self.transport!r}, "
            f"where={self.where!r}, origin={self.origin!r})"
        )


def public_url(url: str) -> str:
    """``url`` without user info, query or fragment (where tokens hide)."""
    try:
        parts = urllib.parse.urlsplit(url)
        host = parts.hostname or ""
        port = parts.port
    except ValueError:
        return "(invalid URL)"
    if ":" in host:
        host = f"[{host}]"
    netloc = f"{host}:{port}" if port is not None else host
    return urllib.parse.urlunsplit((parts.scheme, netloc, parts.path, "", ""))


class _EnvVar(BaseModel):
    model_config = ConfigDict(extra="ignore")

    name: str = Field(min_length=1)
    value: str


class _Header(BaseModel):
    model_config = ConfigDict(extra="ignore")

    name: str = Field(min_length=1, max_length=256)
    value: str = Field(max_length=16384)

    def __repr__(self) -> str:
        return f"_Header(name={self.name!r})"


class WireServer(BaseModel):
    """One entry of ``session/new``'s ``mcpServers`` (ACP's stdio, http or sse shape)."""

    model_config = ConfigDict(extra="ignore")

    name: str = Field(min_length=1, max_length=200)
    command: str | None = Field(None, max_length=4096)
    args: list[str] = Field(default_factory=list)
    env: list[_EnvVar] = Field(default_factory=list)
    cwd: str | None = None
    type: str | None = None
    url: str | None = Field(None, max_length=8192)
    headers: list[_Header] = Field(default_factory=list, max_length=100)

    @field_validator("command")
    @classmethod
    def _no_nul(cls, value: str | None) -> str | None:
        if value is not None and "\x00" in value:
            raise ValueError("command contains a NUL byte")
        return value


class _ClaudeServer(BaseModel):
    model_config = ConfigDict(extra="ignore")

    command: str | None = None
    args: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)
    cwd: str | None = None
    type: str | None = None
    url: str | None = None
    headers: dict[str, str] = Field(default_factory=dict)


class _ClaudeFile(BaseModel):
    model_config = ConfigDict(extra="ignore")

    mcpServers: dict[str, _ClaudeServer] = Field(default_factory=dict)


_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


class _Unset(Exception):
    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.name = name


def _expand(value: str, environ: Mapping[str, str]) -> str:
    def one(match: re.Match[str]) -> str:
        name, default = match.group(1), match.group(2)
        if name in environ:
            return environ[name]
        if default is not None:
            return default
        raise _Unset(name)

    return _VAR.sub(one, value)


_TOKEN = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")  # an HTTP header name (RFC 9110)


def _make(
    name: str,
    command: str | None,
    args: list[str],
    env: list[tuple[str, str]],
    cwd: str | None,
    kind: str | None,
    url: str | None,
    origin: str,
    expand: bool = True,
    headers: list[tuple[str, str]] | None = None,
) -> ServerConfig:
    if not name.strip():
        raise InvalidParams("an MCP server needs a non-empty name")
    if kind not in (None, "stdio", *REMOTE):
        raise InvalidParams(
            f'MCP server {name!r}: \'type\' must be "stdio", "http" or "sse", not {kind!r}'
        )
    if kind in REMOTE or (kind is None and url is not None):
        return _make_remote(
            name, "sse" if kind == "sse" else "http", url, headers or [], origin, expand
        )
    if not command or not command.strip():
        raise InvalidParams(f"MCP server {name!r}: 'command' is required")
    for value in (command, *args, *(v for pair in env for v in pair)):
        if "\x00" in value:
            raise InvalidParams(f"MCP server {name!r}: NUL byte in its command, args or env")
    environ = os.environ
    if not expand:
        return ServerConfig(name, command, tuple(args), tuple(env), cwd, origin=origin)
    try:
        command = _expand(command, environ)
        args = [_expand(a, environ) for a in args]
        env = [(k, _expand(v, environ)) for k, v in env]
        cwd = _expand(cwd, environ) if cwd is not None else None
    except _Unset as unset:
        return ServerConfig(
            name,
            command,
            origin=origin,
            unsupported=f"environment variable {unset.name} is not set",
        )
    return ServerConfig(name, command, tuple(args), tuple(env), cwd, origin=origin)


def _make_remote(
    name: str,
    transport: Transport,
    url: str | None,
    headers: list[tuple[str, str]],
    origin: str,
    expand: bool,
) -> ServerConfig:
    if not url or not url.strip():
        raise InvalidParams(f"MCP server {name!r}: 'url' is required for type {transport}")
    seen: set[str] = set()
    for key, _ in headers:
        if not _TOKEN.match(key):
            raise InvalidParams(f"MCP server {name!r}: 'headers' has an invalid name {key!r}")
        if key.lower() in seen:
            raise InvalidParams(f"MCP server {name!r}: 'headers' names {key!r} twice")
        seen.add(key.lower())
    unset: str | None = None
    if expand:
        try:
            url = _expand(url, os.environ)
            headers = [(k, _expand(v, os.environ)) for k, v in headers]
        except _Unset as exc:
            unset = exc.name
    for key, value in headers:  # as sent: a variable's value must not add a header
        if any(c in value for c in "\r\n\x00"):  # the value itself is never shown
            raise InvalidParams(
                f"MCP server {name!r}: the value of header {key!r} has a line break or NUL"
            )
    if unset is None and (expand or "${" not in url):
        _check_url(name, url)
    return ServerConfig(
        name,
        "",
        origin=origin,
        transport=transport,
        url=url,
        headers=tuple(headers),
        unsupported=None if unset is None else f"environment variable {unset} is not set",
    )


def _check_url(name: str, url: str) -> None:
    problem = f"MCP server {name!r}: 'url' must be an http:// or https:// URL with a host"
    if any(c in url for c in "\r\n\x00 "):
        raise InvalidParams(f"{problem} (it has a space, line break or NUL)")
    try:
        parts = urllib.parse.urlsplit(url)
        host = parts.hostname
        parts.port  # noqa: B018 (raises on a bad port)
    except ValueError as exc:
        raise InvalidParams(f"{problem} ({exc})") from exc
    if parts.scheme.lower() not in ("http", "https"):
        shown = f"not {parts.scheme}:" if parts.scheme else "it has no scheme"
        raise InvalidParams(f"{problem} ({shown})")
    if not host:
        raise InvalidParams(problem)


def from_wire(servers: list[WireServer], origin: str = "session") -> list[ServerConfig]:
    """Servers from ``session/new`` (ACP shape)."""
    return _unique(
        [
            _make(
                s.name,
                s.command,
                s.args,
                [(e.name, e.value) for e in s.env],
                s.cwd,
                s.type,
                s.url,
                origin,
                headers=[(h.name, h.value) for h in s.headers],
            )
            for s in servers
        ]
    )


def from_claude_json(text: str | bytes, origin: str, *, expand: bool = True) -> list[ServerConfig]:
    """Servers from a ``.mcp.json``-shaped document; ``origin`` names it in errors.

    ``expand=False`` keeps ``${VAR}`` as written (for a client passing the servers on
    to the bridge, which expands them).
    """
    try:
        data = json.loads(text)
    except (ValueError, UnicodeDecodeError) as exc:
        raise InvalidParams(f"{origin}: not valid JSON: {exc}") from exc
    if not isinstance(data, dict) or not isinstance(data.get("mcpServers", {}), dict):
        raise InvalidParams(f'{origin}: expected {{"mcpServers": {{"NAME": {{...}}}}}}')
    try:
        parsed = _ClaudeFile.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(x) for x in e['loc'])}: {e['msg']}"
            for e in exc.errors(include_url=False, include_input=False)
        )
        raise InvalidParams(f"{origin}: {problems}") from exc
    return _unique(
        [
            _make(
                name,
                s.command,
                s.args,
                list(s.env.items()),
                s.cwd,
                s.type,
                s.url,
                origin,
                expand,
                list(s.headers.items()),
            )
            for name, s in parsed.mcpServers.items()
        ]
    )


def load_file(path: Path, *, expand: bool = True) -> tuple[bytes, list[ServerConfig]]:
    """Read a ``.mcp.json``-shaped file once; return its bytes and its servers."""
    try:
        content = path.read_bytes()
    except OSError as exc:
        raise InvalidParams(f"cannot read MCP configuration {path}: {exc.strerror}") from exc
    return content, from_claude_json(content, str(path), expand=expand)


def to_wire(servers: list[ServerConfig]) -> list[dict[str, Any]]:
    """The ACP ``mcpServers`` list for ``servers`` (what ``run --mcp-config`` sends)."""
    out: list[dict[str, Any]] = []
    for s in servers:
        if s.remote:
            out.append(
                {
                    "type": s.transport,
                    "name": s.name,
                    "url": s.url or "",
                    "headers": [{"name": k, "value": v} for k, v in s.headers],
                }
            )
            continue
        item: dict[str, Any] = {
            "name": s.name,
            "command": s.command,
            "args": list(s.args),
            "env": [{"name": k, "value": v} for k, v in s.env],
        }
        if s.cwd is not None:
            item["cwd"] = s.cwd
        out.append(item)
    return out


def _unique(servers: list[ServerConfig]) -> list[ServerConfig]:
    seen: set[str] = set()
    for s in servers:
        if s.name in seen:
            raise InvalidParams(f"MCP server name {s.name!r} appears twice")
        seen.add(s.name)
    return servers


def merge(first: list[ServerConfig], second: list[ServerConfig]) -> list[ServerConfig]:
    """``first`` plus the servers of ``second`` whose names it does not use."""
    names = {s.name for s in first}
    return [*first, *(s for s in second if s.name not in names)]
