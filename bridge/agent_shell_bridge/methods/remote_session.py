"""``session/new`` and ``session/resume`` on a remote project: its ``remote`` param.

The client sends the project's TRAMP directory (``/ssh:host:/srv/app``) and, when
it needs them, ssh options of its own (an identity, a known-hosts file). The
bridge connects (remote/), and the session's root becomes the project's local
mirror, where its records live.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import Field, field_validator

from ..config import BridgeConfig
from ..project.settings import read_session_settings
from ..wire import ModelConfig, Params

if TYPE_CHECKING:
    from ..remote.project import RemoteProject

__all__ = ["RemoteParams", "connect_remote", "project_settings"]

# NewParams' bounds, which Emacs's own values would have had to meet.
_MAX_STEPS = 500
_MIN_WINDOW = 1024

_OPTION_RE = re.compile(r"\A[A-Za-z]+=[^\n\r\0]*\Z")
# Options that run a program of their own, take over the bridge's connection, or
# forward something of this machine's to the host.
_REFUSED_OPTIONS = frozenset(
    {
        "proxycommand",
        "localcommand",
        "permitlocalcommand",
        "knownhostscommand",
        "controlpath",
        "controlmaster",
        "controlpersist",
        "remotecommand",
        # Code loaded into ssh itself.
        "pkcs11provider",
        "securitykeyprovider",
        # What would open this machine to the remote host.
        "forwardagent",
        "forwardx11",
        "forwardx11trusted",
        "localforward",
        "remoteforward",
        "dynamicforward",
        "tunnel",
    }
)


class RemoteParams(Params):
    tramp: str = Field(min_length=3, max_length=4096)
    sshOptions: list[str] = Field(default_factory=list, max_length=20)

    @field_validator("sshOptions")
    @classmethod
    def _plain_options(cls, value: list[str]) -> list[str]:
        for option in value:
            if not _OPTION_RE.match(option):
                raise ValueError(f"an ssh option is KEY=VALUE on one line, not {option!r}")
            if option.split("=", 1)[0].lower() in _REFUSED_OPTIONS:
                raise ValueError(f"the ssh option {option.split('=', 1)[0]} is not accepted")
        return value


async def connect_remote(p: RemoteParams, config: BridgeConfig) -> RemoteProject:
    """Connect to the project P names (errors: remote.errors, typed)."""
    from ..remote.connection import default_runtime_dir
    from ..remote.project import RemoteProject
    from ..remote.target import parse_tramp

    target = parse_tramp(p.tramp)
    return await RemoteProject.connect(
        target,
        runtime_dir=default_runtime_dir(),
        ssh_options=p.sshOptions,
        secrets=[config.api_key] if config.api_key else [],
        tramp=p.tramp,
    )


def project_settings(mirror: Path, model: ModelConfig | None) -> dict[str, Any]:
    """What the remote project's ``config.el`` (copied into MIRROR) sets of a new
    session's params, over the user's (MODEL), as Emacs puts a local project's over
    them (:mod:`..project.settings`); a value out of the protocol's bounds is left out."""
    found = read_session_settings(mirror)
    update: dict[str, Any] = {}
    if found.mode is not None:
        update["mode"] = found.mode
    if found.max_steps is not None and found.max_steps <= _MAX_STEPS:
        update["max_steps"] = found.max_steps
    chosen: dict[str, Any] = {}
    if found.model is not None:
        chosen["model"] = found.model
    if found.context_window == 0:
        chosen["context_window"] = None
    elif found.context_window is not None and found.context_window >= _MIN_WINDOW:
        chosen["context_window"] = found.context_window
    if chosen:
        update["model"] = (model or ModelConfig()).model_copy(update=chosen)
    return update
