"""Admission control: at most `MAX_RUNNING_TURNS` turns run in one process at a time.

A process that takes every send slows every turn it runs (they share its CPU and its database
pool); past the limit a send is refused at once — `Overloaded`, HTTP 503 with `Retry-After` —
before anything is stored, so the client sends the same request again later (with the same
`client_message_id` it can never be stored twice). On Lambda each execution environment serves
one request at a time, so the limit only matters for long-running servers. The ASGI middleware
that refuses the overflow before a body is read is `shared.api.app.TurnAdmission`.
"""

from __future__ import annotations

from shared.kernel.errors import Overloaded

BUSY = (
    "This server is running as many turns as it may ({limit}); nothing was stored. "
    "Send the same request again in {seconds} s."
)


class TurnSlots:
    """The turns running in this process, counted against a limit (0: none)."""

    def __init__(self, limit: int, *, retry_after: int = 1) -> None:
        self.limit = limit
        self.retry_after = retry_after
        self.running = 0

    @property
    def full(self) -> bool:
        """Every slot is taken (never, with no limit)."""
        return bool(self.limit) and self.running >= self.limit

    def overloaded(self) -> Overloaded:
        """The error that refuses a turn while every slot is taken."""
        return Overloaded(
            BUSY.format(limit=self.limit, seconds=self.retry_after), retry_after=self.retry_after
        )

    def take(self) -> Slot:
        """A slot for one turn; raises `Overloaded` when none is free."""
        if self.full:
            raise self.overloaded()
        self.running += 1
        return Slot(self)


class Slot:
    """One taken slot: give it back once (`release`, or leaving a `with`)."""

    def __init__(self, slots: TurnSlots) -> None:
        self._slots: TurnSlots | None = slots

    def release(self) -> None:
        if self._slots is not None:
            self._slots.running -= 1
            self._slots = None

    def __enter__(self) -> Slot:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()
