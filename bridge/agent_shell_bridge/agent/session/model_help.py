"""Plain words for the model API's first-minute failures: no key, a wrong key, no route.

A session with no key says so when it starts, with the three ways to set one; a 401/403
or an unreachable API names the api-base, where the key came from (never the key) and
the proxy option, so the user can tell a wrong key from a wrong address or a proxy.
"""

from __future__ import annotations

import ipaddress

import httpx

from ...config import KEY_ENV_VARS, BridgeConfig
from ...errors import BridgeError, ModelHTTPError, ModelUnavailable

__all__ = ["explain_model_error", "key_notice", "key_source_words"]

_HOW_TO_SET = (
    "Set one with the Emacs option agent-shell-api-key, in auth-source (e.g. ~/.authinfo.gpg: "
    "machine {host} password sk-…), or in the environment ({env}), then restart the session."
)


def _host(api_base: str) -> str:
    try:
        return httpx.URL(api_base).host or api_base
    except httpx.InvalidURL:
        return api_base


def _is_local(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False
    return address.is_loopback or address.is_private


def key_source_words(source: str) -> str:
    """Where the key came from, in words (the label only, never the key)."""
    if source == "option":
        return "the Emacs option agent-shell-api-key"
    if source == "auth-source":
        return "auth-source"
    if source.startswith("env:"):
        return f"the environment variable {source[4:]}"
    if source == "client":
        return "the client"
    return "nowhere: no key was found"


def key_notice(config: BridgeConfig) -> str | None:
    """The session-start warning when no key was found (local servers need none)."""
    if config.api_key:
        return None
    host = _host(config.api_base)
    if _is_local(host):
        return None
    return f"No API key found for {config.api_base}: the model will refuse every prompt. " + (
        _HOW_TO_SET.format(host=host, env=", ".join(KEY_ENV_VARS))
    )


def _where(config: BridgeConfig) -> str:
    proxy = "on (HTTP(S)_PROXY is used)" if config.trust_env else "off (HTTP(S)_PROXY is ignored)"
    return (
        f"api-base {config.api_base}; key from {key_source_words(config.api_key_source)}; "
        f"proxy option agent-shell-trust-env is {proxy}"
    )


def explain_model_error(exc: BridgeError, config: BridgeConfig) -> str:
    """The error's message, with what the user needs to fix a key or a route."""
    if isinstance(exc, ModelHTTPError) and exc.status in (401, 403):
        advice = (
            " " + _HOW_TO_SET.format(host=_host(config.api_base), env=", ".join(KEY_ENV_VARS))
            if not config.api_key
            else " Check that the key belongs to this api-base."
        )
        return f"{exc.message} ({_where(config)}).{advice}"
    if isinstance(exc, ModelUnavailable):
        return (
            f"{exc.message} ({_where(config)}). Check agent-shell-api-base and the network; "
            "behind a proxy, set agent-shell-trust-env to t."
        )
    return exc.message
