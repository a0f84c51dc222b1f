"""Hosted Realtime's limits, for the one tenant a local server has.

Rates are measured the way `Realtime.RateCounter` measures them: events are counted between
ticks (every `rate_tick`, 5 s hosted), the last 12 counts are kept, and at each tick their
average per second is compared with the limit. So a limit trips at a tick, not on the event
that crosses it, and clears at the first tick whose average is back under it. What is refused
once it trips, and with which words, is decided where the limit applies (joins, channels, REST).

The client presence limit is per channel and works differently: a fixed window that opens with
a channel's first presence call (5 calls per 30 s hosted; the 6th shuts the channel down).
"""

from __future__ import annotations

import time
from collections import deque
from dataclasses import dataclass, field

from local.realtime.config import RealtimeConfig

_BUCKETS = 12


class RateCounter:
    """Events per second averaged over the last 12 ticks, and whether that tripped a limit."""

    def __init__(self, limit: int, tick_seconds: float) -> None:
        self.limit = limit
        self._tick_seconds = tick_seconds
        self._pending = 0
        self._buckets: deque[int] = deque(maxlen=_BUCKETS)
        self.avg = 0.0
        self.triggered = False
        """Set at a tick whose average reached the limit; cleared at one below it."""

    def add(self, count: int = 1) -> None:
        self._pending += count

    def tick(self) -> None:
        self._buckets.append(self._pending)
        self._pending = 0
        self.avg = sum(self._buckets) / len(self._buckets) / self._tick_seconds
        self.triggered = self.avg >= self.limit


@dataclass
class ClientPresenceWindow:
    """Presence calls of one channel: at most `max_calls` per window opened by the first."""

    max_calls: int
    window: float
    _count: int = 0
    _resets_at: float | None = field(default=None, repr=False)

    def allow(self) -> bool:
        """Count a call; False when it is one too many for the current window."""
        now = time.monotonic()
        if self._resets_at is None or now > self._resets_at:
            self._count, self._resets_at = 1, now + self.window
            return True
        if self._count >= self.max_calls:
            return False
        self._count += 1
        return True


class TenantLimits:
    """The tenant-wide counters, and the socket-level caps from the configuration."""

    def __init__(self, config: RealtimeConfig) -> None:
        self.config = config
        self.events = RateCounter(config.max_events_per_second, config.rate_tick)
        self.joins = RateCounter(config.max_joins_per_second, config.rate_tick)
        self.presence = RateCounter(config.max_presence_events_per_second, config.rate_tick)
        self.users: set[object] = set()
        """Sockets that have joined a channel (hosted's `UsersCounter`), until they close."""

    def tick(self) -> None:
        """Close the current measurement interval of every rate (the server does it every tick)."""
        for counter in (self.events, self.joins, self.presence):
            counter.tick()

    def refuses_connection(self) -> str | None:
        """Why a new socket is refused (HTTP 429) while the tenant is at a limit, if it is."""
        if len(self.users) >= self.config.max_concurrent_users:
            return "Too many connected users"
        if self.joins.triggered:
            return "Too many joins per second"
        return None

    def client_presence(self) -> ClientPresenceWindow:
        return ClientPresenceWindow(
            self.config.client_presence_max_calls, self.config.client_presence_window
        )

    def presence_exceeded(self) -> bool:
        """Hosted checks presence against the average itself, strictly above the limit."""
        return self.presence.avg > self.presence.limit
