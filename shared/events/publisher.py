"""Where events go in this process: the `Publisher` seam, an in-memory publisher and a fan-out.

Events about stored state reach Realtime from the database, in their rows' transactions
(`shared.events.emitter`); publishers only pass them on in this process (an SSE response,
tests) and send token batches over REST. That is best effort by design: a publisher that
fails is logged and skipped, and never fails the turn that produced the event.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from typing import Protocol

from shared.events.models import Event

log = logging.getLogger(__name__)


class Publisher(Protocol):
    """Delivers events somewhere (Realtime, an SSE response, memory)."""

    async def publish(self, events: Sequence[Event]) -> None:
        """Deliver `events`, in order."""
        ...

    async def aclose(self) -> None:
        """Flush anything buffered and release resources."""
        ...


class InMemoryPublisher:
    """Keeps every event; tests (and the local SSE bridge) read or await them."""

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


class FanoutPublisher:
    """Publishes to several publishers; one failing never stops the others or the caller."""

    def __init__(self, *publishers: Publisher) -> None:
        self._publishers = publishers

    async def publish(self, events: Sequence[Event]) -> None:
        for publisher in self._publishers:
            try:
                await publisher.publish(events)
            except Exception:
                log.exception("publisher %s failed; events stay in the tables", publisher)

    async def flush(self) -> None:
        """Wait until every publisher that batches has sent what it holds."""
        for publisher in self._publishers:
            flush = getattr(publisher, "flush", None)
            if flush is None:
                continue
            try:
                await flush()
            except Exception:
                log.exception("publisher %s failed to flush", publisher)

    async def aclose(self) -> None:
        for publisher in self._publishers:
            try:
                await publisher.aclose()
            except Exception:
                log.exception("publisher %s failed to close", publisher)
