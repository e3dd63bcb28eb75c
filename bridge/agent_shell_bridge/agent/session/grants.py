"""What "allow for this session" grants, said exactly, listed and revoked.

A grant is one kind of edit (every ``write_file`` edit, say) or one exact command in
one directory. Its key is what the executor checks before asking; this module turns a
key into the record a client shows (``session/grants``) and removes it again
(``session/revoke_grant``). Grant ids are short hashes of the key, so they stay the
same across a resume.
"""

from __future__ import annotations

import hashlib
import logging
from dataclasses import dataclass
from typing import Literal

from ...mcp.naming import is_mcp_name
from ...types import JSONObject
from .store import SessionState

__all__ = [
    "Grant",
    "drop_unscoped_mcp_grants",
    "grant_key",
    "grant_record",
    "list_grants",
    "revoke_grant",
]

log = logging.getLogger(__name__)

Kind = Literal["edit", "command"]


def grant_key(
    tool: str, command: str | None, cwd: str | None = None, *, scope: str | None = None
) -> str:
    """The key "allow for this session" adds: one kind of edit, one exact command
    in one directory, or one MCP tool of one server as configured (``scope``).

    A command grant never widens to other commands or places: allowing `mkdir build`
    must not let `curl -d @~/.aws/credentials …` through later, nor `rm -rf *` approved
    in build/ run at the project root. An MCP grant does not pass to another server
    resumed under the same name.
    """
    if command is None:
        return f"write:{tool}" if scope is None else f"write:{tool}@{scope}"
    return f"command:{cwd}:{' '.join(command.split())}"


@dataclass(frozen=True, slots=True)
class Grant:
    key: str
    kind: Kind
    tool: str
    command: str | None
    cwd: str | None

    @property
    def id(self) -> str:
        return hashlib.sha256(self.key.encode("utf-8")).hexdigest()[:12]

    @property
    def description(self) -> str:
        if self.kind == "command":
            return (
                f"run exactly `{self.command}` in {self.cwd} without asking, for the rest "
                "of this session (any other command, or this one in another directory, "
                "still asks); the runs after this one go through the sandbox when there "
                "is one: project writable except .git, network on, your home and secrets "
                "out of reach (plain git commands on the project's own repository run "
                "as you approved them)"
            )
        if is_mcp_name(self.tool):
            return (
                f"run every {self.tool} call without asking, whatever its arguments, for the "
                "rest of this session, while its server keeps the command, arguments and "
                "directory it has now (other tools still ask)"
            )
        return (
            f"make any {self.tool} edit to files of the project without asking, for the "
            "rest of this session (.git and agent-shell's own files stay refused; "
            "commands still ask)"
        )

    def to_json(self) -> JSONObject:
        out: JSONObject = {
            "id": self.id,
            "kind": self.kind,
            "tool": self.tool,
            "description": self.description,
        }
        if self.kind == "command":
            out["command"] = self.command
            out["cwd"] = self.cwd
        return out


def grant_record(
    tool: str, command: str | None, cwd: str | None, *, scope: str | None = None
) -> Grant:
    """The grant that allowing this tool call for the session would make."""
    if command is None:
        return Grant(grant_key(tool, None, scope=scope), "edit", tool, None, None)
    normal = " ".join(command.split())
    return Grant(grant_key(tool, command, cwd), "command", tool, normal, cwd)


def _from_key(key: str, details: JSONObject | None) -> Grant:
    if isinstance(details, dict):
        command = details.get("command")
        cwd = details.get("cwd")
        tool = str(details.get("tool", ""))
        if isinstance(command, str):
            return Grant(key, "command", tool, command, cwd if isinstance(cwd, str) else None)
        return Grant(key, "edit", tool, None, None)
    if key.startswith("write:"):
        return Grant(key, "edit", key.removeprefix("write:").partition("@")[0], None, None)
    # A checkpoint from before grants were described: the key is all there is.
    return Grant(key, "command", "run_command", key.removeprefix("command:"), None)


def add_grant(state: SessionState, grant: Grant) -> None:
    if grant.key not in state.session_allow:
        state.session_allow.append(grant.key)
    state.grant_details[grant.key] = {
        "tool": grant.tool,
        "command": grant.command,
        "cwd": grant.cwd,
    }


def list_grants(state: SessionState) -> list[Grant]:
    return [_from_key(key, state.grant_details.get(key)) for key in state.session_allow]


def drop_unscoped_mcp_grants(state: SessionState) -> list[str]:
    """Remove MCP grants saved before they named their server's identity.

    Such a key (``write:mcp__srv__tool``, no ``@scope``) no longer matches any call,
    so it would only be listed as active while granting nothing. Returns the tools
    whose grants were dropped; the log names only the tools.
    """
    stale = [
        key
        for key in state.session_allow
        if key.startswith("write:") and "@" not in key and is_mcp_name(key.removeprefix("write:"))
    ]
    for key in stale:
        state.session_allow.remove(key)
        state.grant_details.pop(key, None)
    tools = [key.removeprefix("write:") for key in stale]
    if tools:
        log.info(
            "session %s: dropped %d MCP grant(s) saved before grants named their server "
            "(%s); those tools ask again",
            state.id,
            len(tools),
            ", ".join(tools),
        )
    return tools


def revoke_grant(state: SessionState, grant_id: str) -> Grant | None:
    """Remove the grant with ``grant_id``; return it, or ``None`` when there is none."""
    for grant in list_grants(state):
        if grant.id == grant_id:
            state.session_allow.remove(grant.key)
            state.grant_details.pop(grant.key, None)
            return grant
    return None
