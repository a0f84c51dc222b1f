"""When to try a model call again, and how long to wait first."""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from email.utils import parsedate_to_datetime


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """Exponential backoff with full jitter; a server's Retry-After wins, up to `max_delay`."""

    max_retries: int = 3
    """Retries after the first attempt (so `max_retries + 1` attempts in all)."""
    base_delay: float = 0.5
    max_delay: float = 30.0
    """Cap on any single wait, including one a server asks for."""
    rng: random.Random = field(default_factory=random.Random, compare=False)

    @property
    def attempts(self) -> int:
        return self.max_retries + 1

    def delay(self, attempt: int, *, retry_after: float | None = None) -> float:
        """Seconds to wait after failed attempt number `attempt` (1-based)."""
        if retry_after is not None:
            return min(max(retry_after, 0.0), self.max_delay)
        ceiling = min(self.max_delay, self.base_delay * 2 ** (attempt - 1))
        return self.rng.uniform(0.0, ceiling)


def parse_retry_after(
    headers: Mapping[str, str], *, now: Callable[[], float] = time.time
) -> float | None:
    """Seconds from `retry-after-ms`, or `Retry-After` as seconds or an HTTP date; else None."""
    if (millis := _number(headers.get("retry-after-ms"))) is not None:
        return millis / 1000
    value = headers.get("retry-after")
    if value is None:
        return None
    if (seconds := _number(value)) is not None:
        return seconds
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        return None
    return max(when.timestamp() - now(), 0.0)


def _number(value: str | None) -> float | None:
    if value is None:
        return None
    try:
        number = float(value)
    except ValueError:
        return None
    return number if number >= 0 and number == number else None  # NaN is not a delay
