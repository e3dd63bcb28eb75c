"""When to retry a model request and how long to wait first.

Follows what the official OpenAI client does: retry connection errors, timeouts,
408/409/429/5xx (and Anthropic's 529); honour ``x-should-retry``; wait what
``retry-after-ms`` / ``retry-after`` ask (seconds or an HTTP date, capped), else
``min(base * 2**n, cap)`` minus up to 25% jitter so clients do not retry in step.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from email.utils import parsedate_to_datetime

__all__ = ["NEVER_RETRY", "RetryPolicy", "parse_retry_after"]

# Statuses that mean the request itself is wrong; retrying cannot help.
NEVER_RETRY = frozenset({400, 401, 403, 404, 422})
_RETRY = frozenset({408, 409, 429})


def parse_retry_after(headers: Mapping[str, str], *, now: float) -> float | None:
    """Seconds the server asked us to wait, or None when it did not say (usably)."""
    raw_ms = headers.get("retry-after-ms")
    if raw_ms is not None:
        try:
            value = float(raw_ms) / 1000
        except ValueError:
            value = -1.0
        if value >= 0:
            return value
    raw = headers.get("retry-after")
    if raw is None:
        return None
    try:
        seconds = float(raw)
    except ValueError:
        try:
            when = parsedate_to_datetime(raw)
        except (TypeError, ValueError, IndexError):
            return None
        seconds = when.timestamp() - now
        return max(seconds, 0.0)
    return seconds if seconds >= 0 else None


@dataclass(frozen=True)
class RetryPolicy:
    """Pure decisions about retrying; the client does the sleeping."""

    max_attempts: int = 3
    backoff_base_s: float = 0.5
    backoff_cap_s: float = 8.0
    retry_after_cap_s: float = 60.0
    rng: random.Random = field(default_factory=random.Random, repr=False, compare=False)
    clock: Callable[[], float] = field(default=time.time, repr=False, compare=False)

    def should_retry_status(self, status: int, headers: Mapping[str, str]) -> bool:
        hint = headers.get("x-should-retry", "").lower()
        if status in NEVER_RETRY:
            return False
        if hint in ("true", "false"):
            return hint == "true"
        return status in _RETRY or status >= 500

    def backoff(self, retry_number: int) -> float:
        """Delay before retry ``retry_number`` (0 for the first retry), with jitter."""
        base = min(self.backoff_base_s * (2.0**retry_number), self.backoff_cap_s)
        jitter: float = self.rng.random()
        return base * (1 - 0.25 * jitter)

    def delay(self, retry_number: int, headers: Mapping[str, str] | None = None) -> float:
        """The server's wish when it stated one (up to the cap), else backoff."""
        if headers is not None:
            asked = parse_retry_after(headers, now=self.clock())
            if asked is not None:
                return min(asked, self.retry_after_cap_s)
        return self.backoff(retry_number)
