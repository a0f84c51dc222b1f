"""Emit a session's events: stamp `seq` and `ts`, coalesce token deltas, publish.

Events about stored rows reuse the row's `seq`; every other event draws the next number from the
session's counter in Postgres (`allocate_session_seq`), so rows and events share one order. Token
deltas are buffered and sent as one `token` event per batch (flushed by size, by age, and before
any other event), which keeps Realtime traffic and counter updates small.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import UTC, datetime
from uuid import UUID

from pydantic import JsonValue

from shared.db import Database
from shared.events.models import Event, EventType
from shared.events.publisher import Publisher


class EventEmitter:
    """Publishes the events of one chat session."""

    def __init__(
        self,
        db: Database,
        publisher: Publisher,
        *,
        session_id: UUID,
        token_batch_chars: int = 400,
        token_batch_seconds: float = 0.1,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._db = db
        self._publisher = publisher
        self.session_id = session_id
        self._batch_chars = token_batch_chars
        self._batch_seconds = token_batch_seconds
        self._clock = clock
        self._tokens: list[str] = []
        self._token_owner: tuple[UUID | None, UUID | None] = (None, None)
        self._token_started = 0.0

    @property
    def publisher(self) -> Publisher:
        """Where this emitter's events go (shared with the emitters of other agents' work)."""
        return self._publisher

    async def emit(
        self,
        type: EventType,
        data: dict[str, JsonValue] | None = None,
        *,
        plan_id: UUID | None = None,
        agent_id: UUID | None = None,
        seq: int | None = None,
    ) -> Event:
        """Publish one event (after any buffered tokens); `seq` given for row-backed events."""
        await self.flush_tokens()
        return await self._send(type, data or {}, plan_id=plan_id, agent_id=agent_id, seq=seq)

    async def token(self, text: str, *, plan_id: UUID | None, agent_id: UUID | None) -> None:
        """Buffer a streamed text delta; it goes out with its batch."""
        if not text:
            return
        if self._tokens and self._token_owner != (plan_id, agent_id):
            await self.flush_tokens()
        if not self._tokens:
            self._token_owner, self._token_started = (plan_id, agent_id), self._clock()
        self._tokens.append(text)
        full = sum(map(len, self._tokens)) >= self._batch_chars
        if full or self._clock() - self._token_started >= self._batch_seconds:
            await self.flush_tokens()

    async def flush_tokens(self) -> None:
        """Send buffered tokens now, as one `token` event."""
        if not self._tokens:
            return
        text, (plan_id, agent_id) = "".join(self._tokens), self._token_owner
        self._tokens = []
        await self._send("token", {"text": text}, plan_id=plan_id, agent_id=agent_id, seq=None)

    async def _send(
        self,
        type: EventType,
        data: dict[str, JsonValue],
        *,
        plan_id: UUID | None,
        agent_id: UUID | None,
        seq: int | None,
    ) -> Event:
        if seq is None:
            seq = await self._allocate_seq()
        event = Event(
            type=type,
            session_id=self.session_id,
            plan_id=plan_id,
            agent_id=agent_id,
            seq=seq,
            ts=datetime.now(UTC),
            data=data,
        )
        await self._publisher.publish([event])
        return event

    async def _allocate_seq(self) -> int:
        async with self._db.service() as conn:
            cur = await conn.execute(
                "SELECT parley_private.allocate_session_seq(%s) AS seq", (self.session_id,)
            )
            row = await cur.fetchone()
        assert row is not None
        return int(row["seq"])
