"""Where events go in this process: the `Publisher` seam and a fan-out (the tests' in-memory
publisher is `tests.support.in_memory_publisher.InMemoryPublisher`).

Events about stored state reach Realtime from the database, in their rows' transactions
(`shared.events.emitter`); publishers only pass them on in this process (an SSE response,
tests) and send token batches over REST. That is best effort by design: a publisher that
fails is logged and skipped, and never fails the turn that produced the event.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
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
