"""Pydantic models of what the client sends, shared by the method areas.

Kept apart from :mod:`.rpc` and :mod:`.config` so that starting the bridge loads no
pydantic model: the method modules that use these load with their first call.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["ModelConfig", "Params", "TrustParams"]


class Params(BaseModel):
    """Base for method parameter models: unknown keys are ignored, as ACP allows."""

    model_config = ConfigDict(extra="ignore")


class ModelConfig(BaseModel):
    """Model settings as they arrive on the wire (``initialize`` or ``session/new``)."""

    model_config = ConfigDict(extra="ignore")

    api_base: str | None = None
    model: str | None = None
    api_key: str | None = Field(default=None, repr=False)
    # Where the client found the key: a label, never the key ("option", "auth-source",
    # "env:DEEPSEEK_API_KEY", "none").
    api_key_source: str | None = Field(
        default=None, pattern=r"^(option|auth-source|env:[A-Z][A-Z0-9_]{0,63}|none)$"
    )
    context_window: int | None = Field(default=None, ge=1024)
    trust_env: bool | None = None
    # Send reasoning back on tool-call messages; absent or null = by provider profile.
    echo_reasoning: bool | None = None
    # Sent as the request's reasoning_effort when set (providers that take it).
    reasoning_effort: str | None = Field(default=None, pattern=r"^[a-z]{1,16}$")
    price_input_per_mtok: float | None = None
    price_output_per_mtok: float | None = None
    price_cached_input_per_mtok: float | None = None


class TrustParams(Params):
    """Trusting a file a project ships: its root, and the hash of what the user read."""

    cwd: str
    # The sha256 of the bytes the user reviewed; trust is refused if the file differs.
    sha256: str | None = Field(None, pattern=r"^[0-9a-f]{64}$")
