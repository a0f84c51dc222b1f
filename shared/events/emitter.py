"""Emit a session's events: durable ones from the database, in the transaction of their rows.

Every event about stored state — a message, a dialogue row, a plan's or step's status, usage,
`done` — is sent with `realtime.send()` (Supabase's Broadcast from Database) by the statement
or transaction that stores that state (`parley_private.send_events`): it reaches Realtime if
and only if its transaction commits, with the same `seq` as its row. Code that stores state
stages the events in an `Outbox` and hands it to the statement; once the statement has
returned, `deliver` passes the stamped events to this process's own publishers (an SSE
response, tests, the local stack). `unit()` is a transaction that does both for code that
needs several statements.

Token deltas are ephemeral (the answer they spell is stored when it is complete): they are
buffered and sent as one `token` event per batch (by size, by age, and before any other event)
to the publishers only, never stored. Their numbers come from a block the caller reserved in
the statement before the streamed call (`reserve_tokens`), so streaming costs the database
nothing; a stream that outruns its block reserves another. A reserved number no batch used is
a gap in `seq` — in the tables and the events alike. With a `Pacer` (Realtime configured), a
batch waits as long as the project's Realtime budget asks (`shared.events.pacing`): the load
comes with the reserving statement, and is read again every few seconds while tokens flow.
"""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, NamedTuple
from uuid import UUID

from pydantic import JsonValue

from shared.events.models import Event, EventType
from shared.events.pacing import LOAD_SQL, Load, LoadQuery, Pacer
from shared.events.publisher import Publisher

if TYPE_CHECKING:
    from shared.db import Connection, Database

log = logging.getLogger(__name__)

TOKEN_BLOCK = 32
"""Numbers reserved at a time for a stream's token batches."""
SEND = "parley_private.send_events(%(session)s, %(events)s, %(private)s"
"""How a statement sends an outbox (close it with the base and totals arguments, or `)`)."""
PACED_BATCH_CHARS = 16_000
"""A paced batch leaves at this size whatever its age (a payload far under every plan's limit)."""


class Staged(NamedTuple):
    """An event before its statement ran: its `seq` and parts of its `data` come from it."""

    type: EventType
    data: dict[str, JsonValue]
    plan_id: UUID | None
    agent_id: UUID | None
    ts: datetime
    seq: int | None
    slot: int | None
    totals_at: str | None


@dataclass(slots=True)
class Outbox:
    """The events of one statement or transaction, before their `seq` is known.

    Each is given its row's `seq`, a `slot` (an offset from a block of numbers the statement
    reserves: `base + slot`), or neither (the session's next number). `totals_at` names the
    `data` key that gets the plan's totals as the statement leaves them.
    """

    session_id: UUID
    private: bool
    staged: list[Staged] = field(default_factory=list)

    def add(
        self,
        type: EventType,
        data: dict[str, JsonValue] | None = None,
        *,
        plan_id: UUID | None = None,
        agent_id: UUID | None = None,
        seq: int | None = None,
        slot: int | None = None,
        totals_at: str | None = None,
    ) -> None:
        """Stage one event (see the class docstring for `seq`, `slot` and `totals_at`)."""
        self.staged.append(
            Staged(type, data or {}, plan_id, agent_id, datetime.now(UTC), seq, slot, totals_at)
        )

    def __len__(self) -> int:
        return len(self.staged)

    def params(self) -> dict[str, Any]:
        """The `session`, `events` and `private` parameters of `SEND`."""
        from psycopg.types.json import Jsonb  # psycopg on first use

        events: list[dict[str, Any]] = []
        for e in self.staged:
            payload: dict[str, Any] = {
                "type": e.type,
                "session_id": str(self.session_id),
                "plan_id": str_or_none(e.plan_id),
                "agent_id": str_or_none(e.agent_id),
                "seq": e.seq,
                "ts": e.ts.isoformat().replace("+00:00", "Z"),
                "data": e.data,
            }
            if e.slot is not None:
                payload["slot"] = e.slot
            if e.totals_at is not None:
                payload["totals_at"] = e.totals_at
            events.append(payload)
        return {"session": self.session_id, "events": Jsonb(events), "private": self.private}

    def stamped(self, seqs: Sequence[int], totals: JsonValue = None) -> list[Event]:
        """The events as the database sent them: `seqs` from `send_events`, the totals given."""
        return [
            Event(
                type=e.type,
                session_id=self.session_id,
                plan_id=e.plan_id,
                agent_id=e.agent_id,
                seq=int(seq),
                ts=e.ts,
                data=e.data if e.totals_at is None else {**e.data, e.totals_at: totals},
            )
            for e, seq in zip(self.staged, seqs, strict=True)
        ]


def str_or_none(value: UUID | None) -> str | None:
    """An id as JSON carries it (None stays None)."""
    return str(value) if value is not None else None


async def send_outbox(conn: Connection, outbox: Outbox) -> list[Event]:
    """Send `outbox` in `conn`'s transaction (one statement); returns the stamped events, to
    deliver to this process's publishers once the transaction has committed — code with none
    of its own may drop them: Realtime gets the events from the database at the commit."""
    if not outbox:
        return []
    cur = await conn.execute(f"SELECT {SEND}) AS seqs", outbox.params())
    row = await cur.fetchone()
    assert row is not None
    return outbox.stamped(row["seqs"])


class EventEmitter:
    """Emits the events of one chat session."""

    def __init__(
        self,
        db: Database,
        publisher: Publisher,
        *,
        session_id: UUID,
        private: bool = True,
        token_batch_chars: int = 400,
        token_batch_seconds: float = 0.1,
        clock: Callable[[], float] = time.monotonic,
        pacer: Pacer | None = None,
    ) -> None:
        self._db = db
        self._publisher = publisher
        self.session_id = session_id
        self.private = private
        self._batch_chars = token_batch_chars
        self._batch_seconds = token_batch_seconds
        self._clock = clock
        self._tokens: list[str] = []
        self._token_owner: tuple[UUID | None, UUID | None] = (None, None)
        self._token_started = 0.0
        self._token_seqs: list[int] = []
        self._pacer = pacer

    @property
    def pacer(self) -> Pacer | None:
        """How token batches are paced to the Realtime budget (None: they are not)."""
        return self._pacer

    def load_query(self, plan_id: UUID) -> LoadQuery | None:
        """What the statement before a streamed call adds to register the plan's stream and
        read the project's load (None: nothing, batches are not paced)."""
        return self._pacer.query(plan_id) if self._pacer is not None else None

    @property
    def publisher(self) -> Publisher:
        """Where this emitter's events go in this process (shared with other agents' work)."""
        return self._publisher

    def outbox(self) -> Outbox:
        """An empty outbox for the next statement or transaction."""
        return Outbox(self.session_id, self.private)

    async def deliver(self, events: Sequence[Event]) -> None:
        """Pass events the database has sent (their transaction committed) to this process's
        publishers, after any buffered tokens."""
        if events:
            await self.flush_tokens()
            await self._publisher.publish(events)

    async def send(self, conn: Connection, outbox: Outbox) -> list[Event]:
        """Send `outbox` in `conn`'s transaction (one statement, `send_outbox`); returns the
        stamped events, to `deliver` once the transaction has committed."""
        return await send_outbox(conn, outbox)

    @asynccontextmanager
    async def unit(self) -> AsyncIterator[tuple[Connection, Outbox]]:
        """A service transaction whose staged events are sent by its last statement and
        delivered once it has committed. It locks the session's row first — the order every
        statement that writes a session's rows and its plan takes the two locks in."""
        outbox = self.outbox()
        async with self._db.service() as conn:
            await conn.execute(
                "SELECT 1 FROM chat_sessions WHERE id = %s FOR UPDATE", (self.session_id,)
            )
            yield conn, outbox
            sent = await self.send(conn, outbox)
        await self.deliver(sent)

    async def emit(
        self,
        type: EventType,
        data: dict[str, JsonValue] | None = None,
        *,
        plan_id: UUID | None = None,
        agent_id: UUID | None = None,
        seq: int | None = None,
    ) -> Event:
        """Send one event on its own (a statement of its own); `seq` given for a row's event.
        State changes send their events with their rows instead (`outbox`, `unit`)."""
        outbox = self.outbox()
        outbox.add(type, data, plan_id=plan_id, agent_id=agent_id, seq=seq)
        async with self._db.autocommit() as conn:
            (event,) = await self.send(conn, outbox)
        await self.deliver([event])
        return event

    def reserve_tokens(self, last: int, count: int, load: Load | None = None) -> None:
        """Numbers `last - count + 1 … last` are reserved for the next streamed call's tokens
        (and `load`: the project's Realtime load, as the reserving statement read it)."""
        self._token_seqs = list(range(last - count + 1, last + 1))
        if self._pacer is not None:
            self._pacer.update(load, registered=True)

    async def token(self, text: str, *, plan_id: UUID | None, agent_id: UUID | None) -> None:
        """Buffer a streamed text delta; it goes out with its batch."""
        if not text:
            return
        if self._tokens and self._token_owner != (plan_id, agent_id):
            await self.flush_tokens()
        if not self._tokens:
            self._token_owner, self._token_started = (plan_id, agent_id), self._clock()
        self._tokens.append(text)
        await self._refresh(plan_id)
        if self._due():
            await self.flush_tokens()

    def _due(self) -> bool:
        """The buffered batch should leave now: by size or age, as paced if it is."""
        chars, age = sum(map(len, self._tokens)), self._clock() - self._token_started
        pacer = self._pacer
        if pacer is None or not pacer.paced:
            return chars >= self._batch_chars or age >= self._batch_seconds
        return chars >= PACED_BATCH_CHARS or age >= pacer.interval

    async def _refresh(self, plan_id: UUID | None) -> None:
        """Read the load again (renewing the plan's stream) when the last reading is stale —
        with the stream's next block of numbers when it is running short, so a long stream's
        refreshes are the statements that number its batches too."""
        pacer = self._pacer
        if pacer is None or plan_id is None or not pacer.stale:
            return
        try:
            await self._read(plan_id, block=len(self._token_seqs) < TOKEN_BLOCK // 2)
        except Exception:  # pacing is best effort: the last reading stands
            log.warning("could not read the Realtime load; batches keep their pace", exc_info=True)

    async def _read(self, plan_id: UUID | None, *, block: bool) -> None:
        """One statement: `TOKEN_BLOCK` more numbers for the stream (`block`) and, paced, the
        project's Realtime load (renewing `plan_id`'s stream)."""
        query = self.load_query(plan_id) if plan_id is not None else None
        parts, params = [], {}
        if block:
            parts.append("parley_private.allocate_session_seq(%(session)s, %(count)s) AS last")
            params = {"session": self.session_id, "count": TOKEN_BLOCK}
        if query is not None:
            parts.append(f"{LOAD_SQL} AS load")
            params |= query.params()
        async with self._db.autocommit() as conn:
            cur = await conn.execute(f"SELECT {', '.join(parts)}", params)
            row = await cur.fetchone()
        assert row is not None
        if block:
            last = int(row["last"])
            self._token_seqs += range(last - TOKEN_BLOCK + 1, last + 1)
        if query is not None and self._pacer is not None:
            self._pacer.update(Load.of(row["load"]))

    async def flush_tokens(self) -> None:
        """Send buffered tokens now, as one `token` event (to this process's publishers and
        Realtime's REST endpoint: tokens are not stored)."""
        if not self._tokens:
            return
        text, (plan_id, agent_id) = "".join(self._tokens), self._token_owner
        self._tokens = []
        if not self._token_seqs:
            await self._reserve_token_block()
        event = Event(
            type="token",
            session_id=self.session_id,
            plan_id=plan_id,
            agent_id=agent_id,
            seq=self._token_seqs.pop(0),
            ts=datetime.now(UTC),
            data={"text": text},
        )
        await self._publisher.publish([event])

    async def tokens_delivered(self) -> None:
        """Send buffered tokens and wait until the publishers that batch them (Realtime's REST
        endpoint) have: called before a statement sends `done`, so the last words of an
        answer never reach a client after the event that ends the turn."""
        await self.flush_tokens()
        flush = getattr(self._publisher, "flush", None)
        if flush is not None:
            await flush()

    async def _reserve_token_block(self) -> None:
        """Another block for a stream that outran its own (and, paced, the load again)."""
        await self._read(self._token_owner[0], block=True)
