"""Parley's session channels: a session's events are broadcast from the database on the
private channel `session:<id>`, which only the session's owner may join (migration policy)."""

from __future__ import annotations

from typing import Any

from realtime import RealtimeSubscribeStates

from local.realtime import RealtimeServer
from shared.db import Database
from shared.events import EventEmitter
from shared.events.realtime import session_topic
from tests.local.realtime.test_private import join, private
from tests.support.event_check import done_data
from tests.support.factories import make_session, make_user
from tests.support.in_memory_publisher import InMemoryPublisher
from tests.support.realtime_clients import ClientFactory, Inbox


async def test_only_the_owner_hears_a_sessions_events(
    realtime: RealtimeServer, db: Database, clients: ClientFactory
) -> None:
    alice, bob = await make_user(db), await make_user(db)
    session = await make_session(db, alice)
    topic = session_topic(session.id)

    owner = (await clients(alice)).channel(topic, private())
    heard: Inbox[dict[str, Any]] = Inbox()
    owner.on_broadcast("done", lambda message: heard.put(message["payload"]))
    assert (await join(owner))[0] == RealtimeSubscribeStates.SUBSCRIBED
    intruder_state, _ = await join((await clients(bob)).channel(topic, private()))
    assert intruder_state == RealtimeSubscribeStates.CHANNEL_ERROR

    emitter = EventEmitter(db, InMemoryPublisher(), session_id=session.id, private=True)
    await emitter.emit("done", done_data(), seq=7)

    received = await heard.get()
    assert (received["type"], received["seq"], received["data"]) == ("done", 7, done_data())
    assert received["session_id"] == str(session.id)
