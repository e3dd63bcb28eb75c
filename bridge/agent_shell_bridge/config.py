"""Bridge configuration: defaults, environment, and what the client sends.

The API key is resolved by the client (Emacs: ``agent-shell-api-key``, auth-source)
or, failing that, from the environment. It is kept out of every repr. What the client
sends is validated by :class:`~.wire.ModelConfig` (pydantic, loaded with the first
method that takes it, not when the bridge starts).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from .types import Prices

if TYPE_CHECKING:
    from .wire import ModelConfig

__all__ = [
    "KEY_ENV_VARS",
    "BridgeConfig",
    "echo_setting",
    "key_from_env",
    "key_source_from_env",
]

KEY_ENV_VARS = ("AGENT_SHELL_API_KEY", "DEEPSEEK_API_KEY", "OPENAI_API_KEY")
_ECHO_WORDS = {"always": True, "never": False, "auto": None}


def echo_setting(word: str | None) -> bool | None:
    """``always``/``never``/``auto`` (or unset) as the ``echo_reasoning`` setting."""
    if word is None or not word.strip():
        return None
    key = word.strip().lower()
    if key not in _ECHO_WORDS:
        raise ValueError(f"echo reasoning must be always, never or auto, not {word!r}")
    return _ECHO_WORDS[key]


def key_from_env(env: Mapping[str, str]) -> str | None:
    for name in KEY_ENV_VARS:
        value = env.get(name, "").strip()
        if value:
            return value
    return None


def key_source_from_env(env: Mapping[str, str]) -> str:
    """Where :func:`key_from_env` found the key (``env:NAME``), or ``none``."""
    for name in KEY_ENV_VARS:
        if env.get(name, "").strip():
            return f"env:{name}"
    return "none"


def _positive_int(value: str | None, default: int) -> int:
    """VALUE as a positive integer; DEFAULT when it is unset or not one."""
    try:
        number = int(value) if value else default
    except ValueError:
        return default
    return number if number > 0 else default


@dataclass(frozen=True)
class BridgeConfig:
    """Process-wide settings; sessions may override the model part."""

    api_base: str = "https://api.deepseek.com/v1"
    model: str = "deepseek-chat"
    api_key: str | None = field(default=None, repr=False)
    # Where the key came from, for error messages (never the key itself).
    api_key_source: str = "none"
    context_window: int = 64_000
    trust_env: bool = False
    echo_reasoning: bool | None = None
    reasoning_effort: str | None = None
    prices: tuple[float, float, float] | None = None
    memory_dir: Path | None = None
    # How often a turn starts a full scan of the project's experience files in the
    # background (it finds files rewritten in place; see memory/index.py).
    memory_full_scan_s: float = 300.0
    # Inject only experiences the user accepted in the review inbox (default: new
    # ones too). AGENT_SHELL_MEMORY_ACCEPTED_ONLY=1; agent-shell-memory-accepted-only.
    memory_accepted_only: bool = False
    max_steps: int = 25
    dry_run: bool = False
    # A session's log goes on in a new file before it passes this size (Emacs asks
    # before opening a file over 10 MB).
    log_rotate_bytes: int = 9 * 1024 * 1024
    extra_allowed_paths: tuple[Path, ...] = ()
    # How long to wait for the client to answer an Emacs-side tool call.
    client_tool_timeout_s: float = 120.0
    # How long a command of the project's hooks.json may run before it is killed.
    project_hook_timeout_s: float = 30.0
    # Where task completions and failures are posted ("generic", "wecom", "slack").
    notify_webhook: str | None = field(default=None, repr=False)
    notify_kind: str = "generic"
    # The user's own agent-shell files (global AGENTS.md, commands/); None: XDG default.
    user_config_dir: Path | None = None
    # Run the commands the user approves in the sandbox too (with network).
    sandbox_approved_commands: bool = False
    # Shown read-only inside the sandbox besides the built-in toolchains (absolute,
    # or relative to $HOME): agent-shell-sandbox-visible-paths.
    sandbox_visible_paths: tuple[str, ...] = ()
    # The user's own secrets, added to the built-in list (relative to $HOME, `*` globs).
    extra_secrets: tuple[str, ...] = ()

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> BridgeConfig:
        env = os.environ if env is None else env
        memory_dir = env.get("AGENT_SHELL_MEMORY_DIR")
        return cls(
            api_base=env.get("AGENT_SHELL_API_BASE", cls.api_base),
            model=env.get("AGENT_SHELL_MODEL", cls.model),
            api_key=key_from_env(env),
            api_key_source=key_source_from_env(env),
            memory_dir=Path(memory_dir).expanduser() if memory_dir else None,
            memory_accepted_only=env.get("AGENT_SHELL_MEMORY_ACCEPTED_ONLY", "").strip().lower()
            in ("1", "true", "yes", "on"),
            sandbox_visible_paths=tuple(
                p for p in env.get("AGENT_SHELL_SANDBOX_PATHS", "").split(os.pathsep) if p
            ),
            log_rotate_bytes=_positive_int(
                env.get("AGENT_SHELL_LOG_ROTATE_BYTES"), cls.log_rotate_bytes
            ),
        )

    @property
    def price_list(self) -> Prices | None:
        """The prices to charge tokens at (input, output, cached input per million)."""
        return Prices(*self.prices) if self.prices is not None else None

    def with_model(self, wire: ModelConfig | None) -> BridgeConfig:
        """Overlay the fields the client set; absent ones keep their value."""
        if wire is None:
            return self
        prices = self.prices
        if wire.price_input_per_mtok is not None and wire.price_output_per_mtok is not None:
            prices = (
                wire.price_input_per_mtok,
                wire.price_output_per_mtok,
                wire.price_cached_input_per_mtok
                if wire.price_cached_input_per_mtok is not None
                else wire.price_input_per_mtok,
            )
        source = self.api_key_source
        if wire.api_key:
            source = wire.api_key_source or "client"
        return replace(
            self,
            api_base=wire.api_base or self.api_base,
            model=wire.model or self.model,
            api_key=wire.api_key or self.api_key,
            api_key_source=source,
            context_window=wire.context_window or self.context_window,
            trust_env=self.trust_env if wire.trust_env is None else wire.trust_env,
            echo_reasoning=(
                self.echo_reasoning if wire.echo_reasoning is None else wire.echo_reasoning
            ),
            prices=prices,
            reasoning_effort=wire.reasoning_effort or self.reasoning_effort,
        )
