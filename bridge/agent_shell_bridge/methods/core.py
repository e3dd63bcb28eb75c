"""Connection-level methods: ``initialize``, ``ping``, ``shutdown``."""

from __future__ import annotations

import os
from dataclasses import replace
from typing import Any, Literal

import httpx
from pydantic import Field, field_validator

from .. import __version__
from ..agent.session.client import REMOTE_TOOLS
from ..policy.secrets import BUILTIN, check_entry
from ..project.trust import TRUSTED_KINDS
from ..runtime import Runtime
from ..tools.catalogue import CATALOGUE
from ..transport.rpc import Dispatcher
from ..wire import ModelConfig, Params

PROTOCOL_VERSION = 1


class NotifyConfig(Params):
    webhook: str = Field(max_length=2000, pattern=r"^https?://")
    kind: Literal["generic", "wecom", "slack"] = "generic"

    @field_validator("webhook")
    @classmethod
    def _parsable(cls, value: str) -> str:
        try:
            url = httpx.URL(value)
        except httpx.InvalidURL as exc:
            raise ValueError(f"not a valid URL: {exc}") from exc
        if not url.host:
            raise ValueError("the URL has no host")
        return value


class InitializeParams(Params):
    protocolVersion: int = 1
    clientInfo: dict[str, Any] = Field(default_factory=dict)
    clientCapabilities: dict[str, Any] = Field(default_factory=dict)
    model: ModelConfig | None = None
    notify: NotifyConfig | None = None
    # agent-shell-sandbox-approved-commands: approved commands run sandboxed too.
    sandbox_approved_commands: bool | None = None
    # agent-shell-sandbox-visible-paths: more read-only paths inside the sandbox.
    sandbox_visible_paths: list[str] | None = Field(default=None, max_length=1000)
    # agent-shell-secret-paths: the user's secrets, added to the built-in list.
    secret_paths: list[str] | None = Field(default=None, max_length=1000)

    @field_validator("secret_paths")
    @classmethod
    def _relative_names(cls, value: list[str] | None) -> list[str] | None:
        return None if value is None else [check_entry(entry) for entry in value]


class Empty(Params):
    pass


def register(d: Dispatcher[Runtime]) -> None:
    @d.method("initialize", InitializeParams)
    async def initialize(rt: Runtime, p: InitializeParams) -> dict[str, Any]:
        rt.client_info = dict(p.clientInfo)
        tools = p.clientCapabilities.get("tools", [])
        if isinstance(tools, list):
            rt.client_tools = frozenset(t for t in tools if isinstance(t, str) and t in CATALOGUE)
        rt.link.buffers = p.clientCapabilities.get("remoteBuffers") is True
        remote_tools = p.clientCapabilities.get("remoteTools", [])
        rt.link.remote_tools = frozenset(
            t for t in (remote_tools if isinstance(remote_tools, list) else []) if t in REMOTE_TOOLS
        )
        if p.model is not None:
            rt.config = rt.config.with_model(p.model)
        if p.sandbox_approved_commands is not None:
            rt.config = replace(rt.config, sandbox_approved_commands=p.sandbox_approved_commands)
        if p.sandbox_visible_paths is not None:
            rt.config = replace(rt.config, sandbox_visible_paths=tuple(p.sandbox_visible_paths))
        if p.notify is not None:
            rt.config = replace(
                rt.config, notify_webhook=p.notify.webhook, notify_kind=p.notify.kind
            )
        if p.secret_paths is not None:
            rt.config = replace(rt.config, extra_secrets=tuple(p.secret_paths))
        return {
            "protocolVersion": PROTOCOL_VERSION,
            "agentInfo": {"name": "agent-shell-bridge", "version": __version__, "pid": os.getpid()},
            "agentCapabilities": {
                "loadSession": True,
                "promptCapabilities": {"image": False, "audio": False, "embeddedContext": True},
            },
            "methods": d.names,
            "tools": [
                {
                    "name": spec.name,
                    "side": spec.side.value,
                    "risk": spec.risk.value if spec.risk else "policy",
                    "kind": spec.kind,
                    "description": spec.description,
                    "parameters": spec.schema()["function"]["parameters"],
                    "clientHandles": spec.name in rt.client_tools,
                }
                for spec in CATALOGUE.values()
            ],
            "model": {
                "api_base": rt.config.api_base,
                "model": rt.config.model,
                "context_window": rt.config.context_window,
                "has_key": rt.config.api_key is not None,
                "key_source": rt.config.api_key_source,
                "echo_reasoning": rt.config.echo_reasoning,
            },
            "sandbox": {
                **rt.sandbox.to_json(),
                "approved_commands": rt.config.sandbox_approved_commands,
                "visible_paths": list(rt.config.sandbox_visible_paths),
            },
            # The files a project ships that need the user's trust (one table, both sides).
            "trusted_files": [kind.to_json() for kind in TRUSTED_KINDS.values()],
            # What the policy, the sandbox and Emacs's own tools hold as secrets.
            "secret_paths": list(BUILTIN.with_extra(rt.config.extra_secrets).entries),
        }

    @d.method("ping", Empty)
    async def ping(rt: Runtime, p: Empty) -> dict[str, Any]:
        return {"pong": True, "lastEventId": rt.hub.last_id}

    @d.method("shutdown", Empty)
    async def shutdown(rt: Runtime, p: Empty) -> dict[str, Any]:
        rt.request_shutdown()
        return {"ok": True}
