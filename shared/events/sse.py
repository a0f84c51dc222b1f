"""Server-sent events: a publisher that feeds one HTTP response, for hosts that can stream.

Each event is one SSE message: `id` is the event's `seq` (so `Last-Event-ID` means "after this
seq"), `event` its type, `data` the event as JSON. The stream ends after the publisher closes.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Sequence

from shared.events.models import Event

_CLOSED = None


def encode(event: Event) -> str:
    """One event as an SSE message."""
    data = json.dumps(event.wire(), separators=(",", ":"), ensure_ascii=False)
    return f"id: {event.seq}\nevent: {event.type}\ndata: {data}\n\n"


class SSEPublisher:
    """Queues events for one streaming response; `stream()` yields them as SSE text."""

    def __init__(self) -> None:
        self._queue: asyncio.Queue[Event | None] = asyncio.Queue()

    async def publish(self, events: Sequence[Event]) -> None:
        for event in events:
            self._queue.put_nowait(event)

    async def aclose(self) -> None:
        self._queue.put_nowait(_CLOSED)

    async def stream(self) -> AsyncIterator[str]:
        """SSE messages until the publisher is closed."""
        while (event := await self._queue.get()) is not _CLOSED:
            yield encode(event)
