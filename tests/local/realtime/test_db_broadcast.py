"""Broadcast from Database and replay: `realtime.send()` rows reach channels when they commit.

The channels are Parley's own private `session:<id>` channels, authorised by the migrations'
policy (the session's owner may read), and public channels of any name.
"""

from __future__ import annotations

import json
import time
from typing import Any
from uuid import UUID

import psycopg
import pytest
from psycopg.types.json import Jsonb
from realtime import AsyncRealtimeChannel
from realtime.types import BroadcastPayload, RealtimeChannelOptions

from local.realtime import RealtimeServer
from local.realtime.messages import store
from shared.db import Database
from tests.support.factories import make_session, make_user
from tests.support.realtime_clients import ClientFactory, Inbox

Received = BroadcastPayload


def options(*, private: bool = True, replay: Any = None) -> RealtimeChannelOptions:
    broadcast: dict[str, Any] = {"self": False, "ack": False}
    if replay is not None:
        broadcast["replay"] = replay
    return {
        "config": {
            "broadcast": broadcast,  # type: ignore[typeddict-item]
            "presence": {"key": "", "enabled": False},
            "private": private,
        }
    }


async def join(channel: AsyncRealtimeChannel, inbox: Inbox[Received]) -> tuple[str, str | None]:
    channel.on_broadcast("*", inbox.put)
    outcome: Inbox[tuple[str, str | None]] = Inbox()
    await channel.subscribe(
        lambda state, error: outcome.put((state.value, str(error) if error else None))
    )
    return await outcome.get()


async def send(
    db: Database, topic: str, payload: dict[str, Any], *, event: str = "note", private: bool = True
) -> None:
    async with db.service() as conn:
        await conn.execute(
            "SELECT realtime.send(%s, %s, %s, %s)", (Jsonb(payload), event, topic, private)
        )


def now_ms() -> int:
    return int(time.time() * 1000)


async def owned_topic(db: Database) -> tuple[UUID, str]:
    user = await make_user(db)
    return user, f"session:{(await make_session(db, user)).id}"


async def test_send_reaches_a_public_channel_with_the_row_id(
    db: Database, clients: ClientFactory
) -> None:
    inbox: Inbox[Received] = Inbox()
    assert await join((await clients()).channel("lobby", options(private=False)), inbox) == (
        "SUBSCRIBED",
        None,
    )
    await send(db, "lobby", {"text": "hello"}, event="greeting", private=False)
    got = await inbox.get()
    async with db.service() as conn:
        cur = await conn.execute("SELECT id::text FROM realtime.messages WHERE topic = 'lobby'")
        row = await cur.fetchone()
    assert row is not None
    assert got == {
        "event": "greeting",
        "meta": {"id": row["id"]},
        "payload": {"text": "hello", "id": row["id"]},
    }


async def test_private_messages_reach_the_owner_only_when_committed(
    db: Database, clients: ClientFactory
) -> None:
    user, topic = await owned_topic(db)
    private_inbox: Inbox[Received] = Inbox()
    public_inbox: Inbox[Received] = Inbox()
    assert (await join((await clients(user)).channel(topic, options()), private_inbox))[0] == (
        "SUBSCRIBED"
    )
    assert await join((await clients()).channel(topic, options(private=False)), public_inbox) == (
        "SUBSCRIBED",
        None,
    )
    with pytest.raises(RuntimeError):
        async with db.service() as conn:
            await conn.execute("SELECT realtime.send(%s, 'note', %s)", (Jsonb({"n": 0}), topic))
            raise RuntimeError("roll back")  # a message whose transaction never commits
    await send(db, topic, {"n": 1})
    await send(db, topic, {"n": 2}, private=False)
    assert (await private_inbox.get())["payload"]["n"] == 1  # not 0: it was never committed
    assert (await public_inbox.get())["payload"]["n"] == 2  # same name, other namespace
    await send(db, topic, {"n": 3})
    assert (await private_inbox.get())["payload"]["n"] == 3


async def test_another_user_is_refused_and_cannot_send(
    db: Database, clients: ClientFactory
) -> None:
    owner, topic = await owned_topic(db)
    intruder = await make_user(db)
    state, error = await join((await clients(intruder)).channel(topic, options()), Inbox())
    assert state == "CHANNEL_ERROR"
    assert json.loads(error or "{}") == {
        "reason": f"Unauthorized: You do not have permissions to read from this Channel topic: "
        f"{topic}"
    }
    owner_inbox: Inbox[Received] = Inbox()
    assert (await join((await clients(owner)).channel(topic, options()), owner_inbox))[0] == (
        "SUBSCRIBED"
    )
    async with db.as_user(intruder) as conn:  # no INSERT policy: send() only warns
        await conn.execute("SELECT realtime.send(%s, 'note', %s)", (Jsonb({"n": "x"}), topic))
    await send(db, topic, {"n": "owner's"})
    assert (await owner_inbox.get())["payload"]["n"] == "owner's"


async def test_broadcast_changes_from_a_trigger(db: Database, clients: ClientFactory) -> None:
    user, topic = await owned_topic(db)
    async with db.service() as conn:
        await conn.execute(f"""
            CREATE TABLE public.rt_notes (id int PRIMARY KEY, body text);
            CREATE FUNCTION public.rt_notes_broadcast() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN
                PERFORM realtime.broadcast_changes('{topic}', TG_OP, TG_OP, TG_TABLE_NAME,
                                                   TG_TABLE_SCHEMA, NEW, OLD);
                RETURN NULL;
            END $$;
            CREATE TRIGGER rt_notes_broadcast AFTER INSERT OR UPDATE ON public.rt_notes
                FOR EACH ROW EXECUTE FUNCTION public.rt_notes_broadcast();
        """)
    inbox: Inbox[Received] = Inbox()
    assert (await join((await clients(user)).channel(topic, options()), inbox))[0] == "SUBSCRIBED"
    async with db.service() as conn:
        await conn.execute("INSERT INTO public.rt_notes VALUES (1, 'first')")
        await conn.execute("UPDATE public.rt_notes SET body = 'second' WHERE id = 1")
    inserted, updated = await inbox.get(), await inbox.get()
    change = inserted["payload"]
    assert (inserted["event"], change["record"], change["old_record"]) == (
        "INSERT",
        {"id": 1, "body": "first"},
        None,
    )
    assert updated["event"] == "UPDATE"
    assert {k: updated["payload"][k] for k in ("operation", "table", "schema", "record")} == {
        "operation": "UPDATE",
        "table": "rt_notes",
        "schema": "public",
        "record": {"id": 1, "body": "second"},
    }


async def test_a_message_too_large_for_notify_still_arrives(
    db: Database, clients: ClientFactory
) -> None:
    user, topic = await owned_topic(db)
    inbox: Inbox[Received] = Inbox()
    assert (await join((await clients(user)).channel(topic, options()), inbox))[0] == "SUBSCRIBED"
    text = "x" * 20_000  # NOTIFY carries at most 8000 bytes: the server reads the row
    await send(db, topic, {"text": text})
    assert (await inbox.get())["payload"]["text"] == text


async def test_replay_returns_the_newest_messages_since_oldest_first(
    db: Database, clients: ClientFactory
) -> None:
    user, topic = await owned_topic(db)
    await send(db, topic, {"n": 0})
    since = now_ms()
    async with db.service() as conn:  # older than `since`: never replayed
        await conn.execute(
            "UPDATE realtime.messages SET inserted_at = inserted_at - interval '1 minute' "
            "WHERE topic = %s",
            (topic,),
        )
    for n in range(1, 5):
        await send(db, topic, {"n": n})
    await send(db, topic, {"n": 99}, private=False)  # public messages are never replayed

    everything: Inbox[Received] = Inbox()
    channel = (await clients(user)).channel(topic, options(replay={"since": since}))
    assert await join(channel, everything) == ("SUBSCRIBED", None)
    replayed = [await everything.get() for _ in range(4)]
    assert [m["payload"]["n"] for m in replayed] == [1, 2, 3, 4]
    assert all(m["meta"] == {"replayed": True, "id": m["payload"]["id"]} for m in replayed)

    newest: Inbox[Received] = Inbox()
    channel = (await clients(user)).channel(topic, options(replay={"since": since, "limit": 2}))
    assert await join(channel, newest) == ("SUBSCRIBED", None)
    assert [(await newest.get())["payload"]["n"] for _ in range(2)] == [3, 4]
    await send(db, topic, {"n": 5})  # then live, without a `replayed` mark
    live = await newest.get()
    assert (live["payload"]["n"], live["meta"]) == (5, {"id": live["payload"]["id"]})
    assert (await everything.get())["payload"]["n"] == 5


@pytest.mark.parametrize(
    ("private", "replay", "reason"),
    [
        (False, {"since": 0}, "UnableToReplayMessages: Replay is not allowed for public channels"),
        (False, {}, "UnableToReplayMessages: Replay is not allowed for public channels"),
        (True, {"since": "yesterday"}, "UnableToReplayMessages: Replay params are not valid"),
        (True, {"limit": 5}, "UnableToReplayMessages: Replay params are not valid"),
    ],
)
async def test_replay_is_refused_like_hosted(
    private: bool, replay: Any, reason: str, db: Database, clients: ClientFactory
) -> None:
    user, topic = await owned_topic(db)
    channel = (await clients(user)).channel(topic, options(private=private, replay=replay))
    state, error = await join(channel, Inbox())
    assert (state, json.loads(error or "{}")) == ("CHANNEL_ERROR", {"reason": reason})


async def test_another_user_cannot_replay(db: Database, clients: ClientFactory) -> None:
    _, topic = await owned_topic(db)
    await send(db, topic, {"n": 1})
    intruder = await make_user(db)
    channel = (await clients(intruder)).channel(topic, options(replay={"since": 0}))
    inbox: Inbox[Received] = Inbox()
    state, error = await join(channel, inbox)
    assert state == "CHANNEL_ERROR"
    assert json.loads(error or "{}")["reason"].startswith("Unauthorized: ")


async def test_old_partitions_are_dropped_and_new_ones_made(
    realtime: RealtimeServer, database_url: str
) -> None:
    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute(
            "CREATE TABLE realtime.messages_2020_01_01 PARTITION OF realtime.messages "
            "FOR VALUES FROM ('2020-01-01') TO ('2020-01-02')"
        )
    async with await psycopg.AsyncConnection.connect(database_url, autocommit=True) as conn:
        dropped = await store.tend(conn, retention_hours=72)
        cur = await conn.execute(
            "SELECT count(*) FROM pg_inherits WHERE inhparent = 'realtime.messages'::regclass "
            "AND inhrelid::regclass::text >= 'realtime.messages_' || "
            "to_char((now() AT TIME ZONE 'UTC')::date + 3, 'YYYY_MM_DD')"
        )
        ahead = await cur.fetchone()
    assert dropped == ["realtime.messages_2020_01_01"]
    assert ahead == (1,)
