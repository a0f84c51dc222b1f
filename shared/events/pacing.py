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
* Both are rates over the time since the oldest one counted (at least `MIN_SPAN_SECONDS`), not
  over the whole window: turns that start together end together, and a burst read over ten
  seconds would look like a trickle.
* The rest is shared by the answers streaming now (`streams`, a row per streaming plan in
  `parley_private.realtime_streams`): each stream sends a batch every `interval` seconds,
  no more often than the emitter's own 0.1 s, and with no budget left only its last one.

The load is read by the statement that reserves a streamed call's token numbers (no statement
of its own), again `FIRST_REFRESH_SECONDS` after that (answers that start together — a crowd
arriving at once — do not see each other yet when they register) and then every
`REFRESH_SECONDS` while tokens flow, and when a stream outruns its numbers; a stream not
renewed for `STREAM_SECONDS` (its process died) stops counting. The
arithmetic is pure (`RealtimeBudget.interval`), so tests hold it with counts, not timings.
"""

import math
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple
from uuid import UUID

WINDOW_SECONDS = 10.0
"""How far back the durable events and the streams' last batches are counted."""
STREAM_SECONDS = 10.0
"""A stream counts this long after it was last registered or renewed."""
FIRST_REFRESH_SECONDS = 0.5
"""When a stream reads the load again after the reading its registration brought."""
REFRESH_SECONDS = 2.0
"""How often a stream reads the load again after that, while its tokens flow."""
MIN_SPAN_SECONDS = 2.0
"""The shortest time a count of recent sends is spread over (one send just now: 0.5 a second)."""
UNMEASURED_DURABLE_PER_STREAM = 1.0
"""Durable events a second assumed per stream when they cannot be counted (public channels)."""

LOAD_SQL = (
    "parley_private.realtime_load(%(load_plan)s, %(load_seconds)s, %(load_window)s, "
    "%(load_private)s, %(load_cap)s)"
)
"""A statement's call that registers a plan's stream and returns the load (`Load.of`)."""


class Load(NamedTuple):
    """The project's Realtime traffic, as the database last told it."""

    streams: int
    """Answers streaming now (the asking one included)."""
    ended: int = 0
    """Streams that ended within the window (each sent a last batch)."""
    durable: int | None = 0
    """Events sent from the database within the window (None: not counted)."""
    window: float = WINDOW_SECONDS
    ended_age: float | None = None
    """Seconds since the oldest of `ended` (None: the whole window)."""
    durable_age: float | None = None
    """Seconds since the oldest of `durable` (None: the whole window)."""

    @classmethod
    def of(cls, value: Mapping[str, Any] | None) -> "Load | None":
        """From `parley_private.realtime_load`'s jsonb (None stays None)."""
        if value is None:
            return None
        durable, ended_age, durable_age = (
            value.get(key) for key in ("durable", "ended_age", "durable_age")
        )
        return cls(
            int(value["streams"]),
            int(value["ended"]),
            None if durable is None else int(durable),
            float(value["window"]),
            None if ended_age is None else float(ended_age),
            None if durable_age is None else float(durable_age),
        )

    def per_second(self, count: int, age: float | None) -> float:
        """`count` sends of the window as a rate: over the time since the oldest of them."""
        span = self.window if age is None else min(self.window, max(MIN_SPAN_SECONDS, age))
        return count / span

    @property
    def durable_per_second(self) -> float | None:
        """The project's durable events a second lately (None: not counted)."""
        return None if self.durable is None else self.per_second(self.durable, self.durable_age)

    @property
    def last_batches_per_second(self) -> float:
        """Streams' last batches a second lately (one per stream that ended)."""
        return self.per_second(self.ended, self.ended_age)


class RealtimeBudget(NamedTuple):
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
        durable = load.durable_per_second
        if durable is None:
            durable = load.streams * UNMEASURED_DURABLE_PER_STREAM
        return max(0.0, self.broadcasts - durable - load.last_batches_per_second)

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


class LoadQuery(NamedTuple):
    """The parameters of `LOAD_SQL` for one plan's stream."""

    plan_id: UUID | None
    budget: RealtimeBudget
    private: bool

    def params(self) -> dict[str, Any]:
        """`LOAD_SQL`'s parameters."""
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
        self._registered = False

    def query(self, plan_id: UUID | None) -> LoadQuery:
        """What a statement needs to register `plan_id`'s stream and read the load."""
        return LoadQuery(plan_id, self.budget, self.private)

    def update(self, load: Load | None, *, registered: bool = False) -> None:
        """The load a statement read (None: it read none; the last one stands);
        `registered`: the statement registered a new stream (read again soon)."""
        if load is not None:
            self.load, self._read_at, self._registered = load, self._clock(), registered

    @property
    def stale(self) -> bool:
        """Time to read the load again: `FIRST_REFRESH_SECONDS` after a stream's registration,
        `REFRESH_SECONDS` after any other reading (or never read)."""
        wait = FIRST_REFRESH_SECONDS if self._registered else REFRESH_SECONDS
        return self._clock() - self._read_at >= wait

    @property
    def interval(self) -> float:
        """Seconds between two batches of this stream, by the load last read."""
        return self.budget.interval(self.load)

    @property
    def paced(self) -> bool:
        """Batches are further apart than the emitter's own interval."""
        return self.interval > self.budget.floor
