"""A publisher that keeps every event in memory, for tests and benchmarks (it never ships:
the functions' events go to the database, SSE responses and Realtime)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence

from shared.events import Event


class InMemoryPublisher:
    """Keeps every event; tests read or await them."""

    def __init__(self) -> None:
        self.events: list[Event] = []
        self._changed = asyncio.Condition()

    async def publish(self, events: Sequence[Event]) -> None:
        async with self._changed:
            self.events.extend(events)
            self._changed.notify_all()

    async def aclose(self) -> None:
        return None

    async def wait_for(self, predicate: Callable[[list[Event]], bool]) -> None:
        """Wait until `predicate(events)` holds; bound it with `asyncio.timeout`."""
        async with self._changed:
            await self._changed.wait_for(lambda: predicate(self.events))

    def types(self) -> list[str]:
        """The event types seen so far, in order."""
        return [event.type for event in self.events]
