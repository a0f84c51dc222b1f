"""Token batches paced to the project's Realtime quota, by what the database knows.

Hosted Realtime counts every message a project sends and every delivery of it to a channel
(a broadcast to a session with one client counts twice), averages that per second over the
last minute, and while the average is at or over the plan's quota (Free 100 a second, Pro 500)
shuts down every channel a message reaches. Parley keeps all it sends under a share of the
quota (`RealtimeBudget`):

* Durable events (everything but `token`) must arrive: they are not paced. The budget counts
  those the project sent lately — `realtime.messages` rows of the last `WINDOW_SECONDS`, read
  by `parley_private.realtime_load` — and gives token batches what is left.
* Each streamed call sends one last batch as it ends (before its `done` or its tool calls);
  those are counted too, from the streams that ended lately.
* The rest is shared by the answers streaming now (`streams`, a row per streaming plan in
  `parley_private.realtime_streams`): each stream sends a batch every `interval` seconds,
  no more often than the emitter's own 0.1 s, and with no budget left only its last one.

The load is read by the statement that reserves a streamed call's token numbers (no statement
of its own), again every `REFRESH_SECONDS` while tokens flow, and when a stream outruns its
numbers; a stream not renewed for `STREAM_SECONDS` (its process died) stops counting. The
arithmetic is pure (`RealtimeBudget.interval`), so tests hold it with counts, not timings.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any
from uuid import UUID

WINDOW_SECONDS = 10.0
"""How far back the durable events and the streams' last batches are counted."""
STREAM_SECONDS = 10.0
"""A stream counts this long after it was last registered or renewed."""
REFRESH_SECONDS = 2.0
"""How often a stream reads the load again while its tokens flow."""
UNMEASURED_DURABLE_PER_STREAM = 1.0
"""Durable events a second assumed per stream when they cannot be counted (public channels)."""

LOAD_SQL = (
    "parley_private.realtime_load(%(load_plan)s, %(load_seconds)s, %(load_window)s, "
    "%(load_private)s, %(load_cap)s)"
)
"""A statement's call that registers a plan's stream and returns the load (`Load.of`)."""


@dataclass(frozen=True, slots=True)
class Load:
    """The project's Realtime traffic, as the database last told it."""

    streams: int
    """Answers streaming now (the asking one included)."""
    ended: int = 0
    """Streams that ended within the window (each sent a last batch)."""
    durable: int | None = 0
    """Events sent from the database within the window (None: not counted)."""
    window: float = WINDOW_SECONDS

    @classmethod
    def of(cls, value: Mapping[str, Any] | None) -> Load | None:
        """From `parley_private.realtime_load`'s jsonb (None stays None)."""
        if value is None:
            return None
        durable = value.get("durable")
        counted = None if durable is None else int(durable)
        return cls(int(value["streams"]), int(value["ended"]), counted, float(value["window"]))


@dataclass(frozen=True, slots=True)
class RealtimeBudget:
    """The project's quota and the share of it Parley keeps under."""

    quota: float
    """Messages a second the plan allows (Free 100, Pro 500)."""
    share: float = 0.8
    """The fraction of it Parley plans to use (the rest is headroom)."""
    subscribers: int = 1
    """Clients watching a session's channel: each delivery counts as a message."""
    floor: float = 0.1
    """The shortest interval between two batches of one stream (the emitter's own)."""

    @property
    def broadcasts(self) -> float:
        """Broadcasts a second Parley may send: each counts once sent and once per delivery."""
        return self.quota * self.share / (1 + self.subscribers)

    def token_broadcasts(self, load: Load) -> float:
        """Broadcasts a second left for token batches sent on a timer, given `load`."""
        durable = (
            load.streams * UNMEASURED_DURABLE_PER_STREAM
            if load.durable is None
            else load.durable / load.window
        )
        last_batches = load.ended / load.window
        return max(0.0, self.broadcasts - durable - last_batches)

    def interval(self, load: Load | None) -> float:
        """Seconds between two batches of one stream (`math.inf`: only its last one)."""
        if load is None:
            return self.floor
        left = self.token_broadcasts(load)
        if left <= 0:
            return math.inf
        return max(self.floor, max(load.streams, 1) / left)

    def cap(self) -> int:
        """Durable events worth counting in a window: past this many nothing is left anyway."""
        return math.ceil(self.broadcasts * WINDOW_SECONDS) + 1


@dataclass(frozen=True, slots=True)
class LoadQuery:
    """The parameters of `LOAD_SQL` for one plan's stream."""

    plan_id: UUID | None
    budget: RealtimeBudget
    private: bool

    def params(self) -> dict[str, Any]:
        return {
            "load_plan": self.plan_id,
            "load_seconds": STREAM_SECONDS,
            "load_window": WINDOW_SECONDS,
            "load_private": self.private,
            "load_cap": self.budget.cap(),
        }


class Pacer:
    """One emitter's pace: the budget, the load last read, and when it was read."""

    def __init__(
        self, budget: RealtimeBudget, *, private: bool, clock: Callable[[], float]
    ) -> None:
        self.budget = budget
        self.private = private
        self._clock = clock
        self.load: Load | None = None
        self._read_at = -math.inf

    def query(self, plan_id: UUID | None) -> LoadQuery:
        """What a statement needs to register `plan_id`'s stream and read the load."""
        return LoadQuery(plan_id, self.budget, self.private)

    def update(self, load: Load | None) -> None:
        """The load a statement read (None: it read none; the last one stands)."""
        if load is not None:
            self.load, self._read_at = load, self._clock()

    @property
    def stale(self) -> bool:
        """Read more than `REFRESH_SECONDS` ago (or never)."""
        return self._clock() - self._read_at >= REFRESH_SECONDS

    @property
    def interval(self) -> float:
        return self.budget.interval(self.load)

    @property
    def paced(self) -> bool:
        """Batches are further apart than the emitter's own interval."""
        return self.interval > self.budget.floor
