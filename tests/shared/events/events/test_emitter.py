"""Event emission: seq shared with stored rows, token coalescing, failing publishers."""

from __future__ import annotations

from collections.abc import Sequence

from shared.agents.event_data import dialogue_data
from shared.db import Database, chats
from shared.db.records import DialogueEntry
from shared.events import Event, EventEmitter, FanoutPublisher
from tests.support.event_check import done_data
from tests.support.factories import make_session, make_user
from tests.support.in_memory_publisher import InMemoryPublisher


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


async def test_events_and_rows_share_one_monotonic_seq(db: Database) -> None:
    user = await make_user(db)
    session = await make_session(db, user)
    memory = InMemoryPublisher()
    emitter = EventEmitter(db, memory, session_id=session.id)
    await emitter.emit("status_update", {"status": "thinking"})
    async with db.service() as conn:
        row = await chats.add_message(
            conn, session_id=session.id, user_id=user, role="assistant", content="hi"
        )
    said = dialogue_data(row.id, DialogueEntry("status", "hi"), thread_id=None, step_id=None)
    await emitter.emit("agent_message", said, seq=row.seq)
    await emitter.emit("done", done_data())
    assert [e.seq for e in memory.events] == [1, 2, 3]
    assert memory.types() == ["status_update", "agent_message", "done"]
    assert all(e.session_id == session.id for e in memory.events)


async def test_tokens_are_coalesced_and_flushed_before_other_events(db: Database) -> None:
    session = await make_session(db, await make_user(db))
    memory, clock = InMemoryPublisher(), Clock()
    emitter = EventEmitter(db, memory, session_id=session.id, token_batch_chars=10, clock=clock)
    for piece in ["Hel", "lo ", "wor", "ld", "!"]:  # the 4th delta fills the 10-char batch
        await emitter.token(piece, plan_id=None, agent_id=None)
    await emitter.emit("done", done_data())
    assert [(e.type, e.data) for e in memory.events] == [
        ("token", {"text": "Hello world"}),
        ("token", {"text": "!"}),
        ("done", done_data()),
    ]


async def test_token_batches_are_flushed_by_age(db: Database) -> None:
    session = await make_session(db, await make_user(db))
    memory, clock = InMemoryPublisher(), Clock()
    emitter = EventEmitter(db, memory, session_id=session.id, token_batch_seconds=0.1, clock=clock)
    await emitter.token("a", plan_id=None, agent_id=None)
    assert memory.events == []
    clock.now = 0.2
    await emitter.token("b", plan_id=None, agent_id=None)
    assert [e.data for e in memory.events] == [{"text": "ab"}]


class Broken:
    async def publish(self, events: Sequence[Event]) -> None:
        raise ConnectionError("realtime is down")

    async def aclose(self) -> None:
        raise ConnectionError("still down")


async def test_a_failing_publisher_never_fails_the_turn(db: Database) -> None:
    session = await make_session(db, await make_user(db))
    memory = InMemoryPublisher()
    emitter = EventEmitter(db, FanoutPublisher(Broken(), memory), session_id=session.id)
    await emitter.emit("done", done_data())
    await FanoutPublisher(Broken()).aclose()
    assert memory.types() == ["done"]
