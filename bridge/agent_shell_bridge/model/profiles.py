"""What each provider wants back in the history it is sent, keyed by API base.

The history keeps everything the model said, reasoning included (see
:meth:`~.types.Completion.to_message`); :func:`wire_messages` decides per request
what the provider gets. Only DeepSeek wants reasoning echoed: its thinking mode
answers 400 ("Missing ``reasoning_content`` field") when an assistant message that
made tool calls comes back without it. Groq, and others per their users' reports,
answer 400 ("property 'reasoning_content' is unsupported") when it is present, so
the default for everyone else is to leave it out.

A setting overrides the profile (``echo_reasoning``: true/false, absent = by
profile). When a provider still answers 400 naming the field, the client flips the
choice and retries once (:func:`flip_for_error`), and keeps the flipped choice for
the rest of the session.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlsplit

from ..types import JSONObject

__all__ = [
    "PRODUCER_KEY",
    "REASONING_FIELD",
    "ProviderProfile",
    "carries_reasoning",
    "flip_for_error",
    "profile_for",
    "same_provider",
    "wire_messages",
]

REASONING_FIELD = "reasoning_content"
# Which provider (API base) wrote an assistant message, once the session has had two.
PRODUCER_KEY = "_provider"
# Reasoning-shaped keys a history message may carry; none is sent unless echoed.
_REASONING_KEYS = ("reasoning_content", "reasoning", "reasoning_details")


@dataclass(frozen=True, slots=True)
class ProviderProfile:
    """How one provider wants the history: ``name`` is for messages and docs."""

    name: str
    echo_reasoning: bool = False


# Host suffix → profile. Anything not listed gets the default profile.
_PROFILES: tuple[tuple[str, ProviderProfile], ...] = (
    ("api.deepseek.com", ProviderProfile("deepseek", echo_reasoning=True)),
)
_DEFAULT = ProviderProfile("openai-compatible")


def profile_for(api_base: str) -> ProviderProfile:
    """The profile of the provider behind ``api_base`` (matched on the host name)."""
    host = (urlsplit(api_base).hostname or "").lower().rstrip(".")
    for suffix, profile in _PROFILES:
        if host == suffix or host.endswith("." + suffix):
            return profile
    return _DEFAULT


def same_provider(a: str, b: str) -> bool:
    """Whether two API bases are one provider (the same URL, give or take a slash)."""
    return a.rstrip("/") == b.rstrip("/")


def wire_messages(
    messages: list[JSONObject], *, echo_reasoning: bool, provider: str | None = None
) -> list[JSONObject]:
    """The history as this provider should get it.

    With ``echo_reasoning`` an assistant message that made tool calls keeps its
    ``reasoning_content`` (DeepSeek needs it there and ignores it elsewhere); every
    other reasoning key is dropped from every message. A message another provider
    wrote (``PRODUCER_KEY``, set when the session switched models) never carries its
    reasoning to this ``provider``: with echo on, its field is sent empty. The
    producer key itself never leaves. Messages that need no change are passed
    through as they are.
    """
    out: list[JSONObject] = []
    for message in messages:
        keys = [k for k in _REASONING_KEYS if k in message]
        producer = message.get(PRODUCER_KEY)
        if not keys and producer is None:
            out.append(message)
            continue
        foreign = (
            isinstance(producer, str)
            and provider is not None
            and not same_provider(producer, provider)
        )
        calls = bool(message.get("tool_calls"))
        keep = echo_reasoning and calls and not foreign
        shaped = {
            k: v
            for k, v in message.items()
            if k != PRODUCER_KEY and (k not in keys or (keep and k == REASONING_FIELD))
        }
        if foreign and echo_reasoning and calls and REASONING_FIELD in message:
            shaped[REASONING_FIELD] = ""
        out.append(shaped)
    return out


def carries_reasoning(messages: list[JSONObject]) -> bool:
    """True when some assistant tool-call message has reasoning that could be echoed."""
    return any(m.get(REASONING_FIELD) and m.get("tool_calls") for m in messages)


def flip_for_error(
    status: int, message: str, messages: list[JSONObject], *, echo_reasoning: bool
) -> bool | None:
    """The echo choice to retry with after an error, or None when no retry helps.

    Only a 400 that names ``reasoning_content`` qualifies, and only when the other
    choice would send something different: we echoed and the provider rejects the
    field, or we left it out, have some to send, and the provider asks for it.
    """
    if status != 400 or REASONING_FIELD not in message:
        return None
    if not carries_reasoning(messages):
        return None
    return not echo_reasoning
