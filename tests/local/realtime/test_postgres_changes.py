"""postgres_changes: RLS per subscriber, filters, sizes, identities, token switches."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any
from uuid import UUID, uuid4

import psycopg
import pytest
from realtime import AsyncRealtimeChannel, RealtimePostgresChangesListenEvent

from local.realtime import RealtimeServer
from local.realtime.changes import capture
from local.realtime.listener import APPLICATION_NAME
from shared.db import Database, chats, dialogue
from shared.db.records import AgentThread, DialogueEntry
from tests.support.factories import make_session, make_thread, make_user
from tests.support.realtime_clients import (
    ClientFactory,
    Inbox,
    RawSocket,
    anon_key,
    config,
    service_key,
    user_token,
)

ALL = RealtimePostgresChangesListenEvent.All
Change = dict[str, Any]


@pytest.fixture(scope="module")
async def items(db: Database) -> AsyncIterator[str]:
    """A table added to the publication after the server started (its trigger comes on demand)."""
    async with db.service() as conn:
        await conn.execute(
            """CREATE TABLE public.rt_items (
                   id bigint PRIMARY KEY, n integer, label text, ref uuid, flag boolean);
               GRANT SELECT ON public.rt_items TO service_role;
               ALTER PUBLICATION supabase_realtime ADD TABLE public.rt_items"""
        )
    yield "rt_items"


async def watch(channel: AsyncRealtimeChannel, inbox: Inbox[Change], **binding: Any) -> None:
    event = binding.pop("event", ALL)
    channel.on_postgres_changes(event, lambda change: inbox.put(dict(change)), **binding)


async def subscribed(channel: AsyncRealtimeChannel) -> AsyncRealtimeChannel:
    system: Inbox[str] = Inbox()
    channel.on_system(lambda payload: system.put(payload.message))
    await channel.subscribe()
    assert await system.get() == "Subscribed to PostgreSQL"
    return channel


async def say(db: Database, thread: AgentThread, content: str) -> UUID:
    async with db.service() as conn:
        message = await dialogue.add_agent_message(
            conn, DialogueEntry("answer", content), plan_id=thread.plan_id, thread_id=thread.id
        )
    return message.id


async def test_rls_keeps_other_users_rows_away(db: Database, clients: ClientFactory) -> None:
    alice, bob = await make_user(db), await make_user(db)
    alice_thread, bob_thread = await make_thread(db, alice), await make_thread(db, bob)
    inboxes: dict[UUID, Inbox[Change]] = {}
    for user in (alice, bob):
        inboxes[user] = Inbox()
        channel = (await clients(user)).channel("dialogue:all")
        await watch(channel, inboxes[user], table="agent_chat_messages")
        await subscribed(channel)

    alice_first = await say(db, alice_thread, "alice 1")
    await say(db, bob_thread, "bob 1")
    await say(db, alice_thread, "alice 2")

    # Changes arrive in commit order, so each first message proves what came before it.
    assert (await inboxes[bob].get())["data"]["record"]["content"] == "bob 1"
    alice_saw = [(await inboxes[alice].get())["data"]["record"]["content"] for _ in range(2)]
    assert alice_saw == ["alice 1", "alice 2"]
    assert inboxes[bob].pending() == []

    # As on Supabase, DELETEs skip the RLS check (the row is gone): everyone subscribed to the
    # table learns that a row went, but only its primary key.
    async with db.service() as conn:
        await conn.execute("DELETE FROM agent_chat_messages WHERE id = %s", (alice_first,))
    for user in (alice, bob):
        delete = (await inboxes[user].get())["data"]
        assert (delete["type"], delete["old_record"]) == ("DELETE", {"id": str(alice_first)})


async def test_filters_on_int_text_uuid(
    realtime: RealtimeServer, db: Database, items: str, clients: ClientFactory
) -> None:
    ref = uuid4()
    filters = {
        "eq": "n=eq.5",
        "neq": "n=neq.5",
        "lt": "n=lt.5",
        "lte": "n=lte.5",
        "gt": "n=gt.5",
        "gte": "n=gte.5",
        "in": "label=in.(red,blue)",
        "uuid": f"ref=eq.{ref}",
    }
    client = await clients()
    await client.set_auth(service_key())
    channel = client.channel("items")
    inboxes = {name: Inbox[Change]() for name in filters}
    for name, filter_ in filters.items():
        await watch(channel, inboxes[name], table=items, filter=filter_)
    await subscribed(channel)
    rows = [(1, 4, "red", None), (2, 5, "green", ref), (3, 6, "blue", None), (4, None, None, None)]
    async with db.service() as conn:
        for row in rows:
            await conn.execute(
                "INSERT INTO rt_items (id, n, label, ref) VALUES (%s, %s, %s, %s)", row
            )
        await conn.execute("INSERT INTO rt_items (id, n) VALUES (99, 0)")  # a marker, last
    expected = {
        "eq": [2],
        "neq": [1, 3, 99],
        "lt": [1, 99],
        "lte": [1, 2, 99],
        "gt": [3],
        "gte": [2, 3],
        "in": [1, 3],
        "uuid": [2],
    }
    for name, ids in expected.items():
        got = [(await inboxes[name].get())["data"]["record"]["id"] for _ in ids]
        assert got == ids, name  # row 4 (all NULL) matched nothing, not even neq
    assert all(inbox.pending() == [] for inbox in inboxes.values())


async def test_a_20_kb_row_arrives_intact(db: Database, clients: ClientFactory) -> None:
    user = await make_user(db)
    thread = await make_thread(db, user)
    inbox: Inbox[Change] = Inbox()
    channel = (await clients(user)).channel("big")
    await watch(
        channel, inbox, table="agent_chat_messages", filter=f"session_id=eq.{thread.session_id}"
    )
    await subscribed(channel)
    content = "".join(f"{i:05d}é" for i in range(20_000 // 6 + 1))
    await say(db, thread, content)
    record = (await inbox.get())["data"]["record"]
    assert len(content.encode()) > 20_000
    assert record["content"] == content


async def test_changes_over_the_size_limit_carry_error_413(database_url: str, db: Database) -> None:
    user = await make_user(db)
    thread = await make_thread(db, user)
    async with RealtimeServer(config(database_url, max_record_bytes=2_000)) as server:
        sock = await RawSocket.open(server.realtime_url, anon_key())
        binding = {"event": "INSERT", "schema": "public", "table": "agent_chat_messages"}
        await sock.join(
            "realtime:small", {"postgres_changes": [binding]}, access_token=user_token(user)
        )
        assert (await sock.recv_json())["payload"]["status"] == "ok"  # system message
        await say(db, thread, "x" * 5_000)
        data = (await sock.recv_json())["payload"]["data"]
        await sock.close()
    assert data["errors"] == ["Error 413: Payload Too Large"]
    assert "content" not in data["record"] and data["record"]["message_type"] == "answer"


async def test_default_replica_identity_delete_and_update(
    db: Database, clients: ClientFactory
) -> None:
    user = await make_user(db)
    session = await make_session(db, user)
    async with db.service() as conn:
        # The migrations make the message tables REPLICA IDENTITY FULL; this is about the default.
        await conn.execute("ALTER TABLE chat_messages REPLICA IDENTITY DEFAULT")
        message = await chats.add_message(
            conn, session_id=session.id, user_id=user, role="user", content="before"
        )
    inbox: Inbox[Change] = Inbox()
    channel = (await clients(user)).channel("identity")
    await watch(
        channel, inbox, event=RealtimePostgresChangesListenEvent.Update, table="chat_messages"
    )
    await watch(
        channel,
        inbox,
        event=RealtimePostgresChangesListenEvent.Delete,
        table="chat_messages",
        filter=f"session_id=eq.{session.id}",
    )
    await watch(
        channel, inbox, event=RealtimePostgresChangesListenEvent.Delete, table="chat_messages"
    )
    await subscribed(channel)
    async with db.service() as conn:
        await conn.execute(
            "UPDATE chat_messages SET content = 'after' WHERE id = %s", (message.id,)
        )
    # The RLS check reads the row as it is when the change is routed (as on hosted Supabase),
    # so delete only once the update has been seen.
    update = await inbox.get()
    async with db.service() as conn:
        await conn.execute("DELETE FROM chat_messages WHERE id = %s", (message.id,))
    delete = await inbox.get()
    assert update["data"]["old_record"] == {"id": str(message.id)}  # the primary key only
    assert update["data"]["record"]["content"] == "after"
    update_id, filtered_delete_id, delete_id = (cb.id for cb in channel.postgres_changes_callbacks)
    assert update["ids"] == [update_id]
    # Only the primary key is logged for a DELETE, so a session_id filter cannot match it.
    assert delete["ids"] == [delete_id] and filtered_delete_id not in delete["ids"]
    assert delete["data"]["old_record"] == {"id": str(message.id)}
    assert inbox.pending() == []
    async with db.service() as conn:
        await conn.execute("ALTER TABLE chat_messages REPLICA IDENTITY FULL")


async def test_set_auth_moves_the_subscription_to_the_new_user(
    db: Database, clients: ClientFactory
) -> None:
    alice, bob = await make_user(db), await make_user(db)
    alice_thread, bob_thread = await make_thread(db, alice), await make_thread(db, bob)
    client = await clients(alice)
    inbox: Inbox[Change] = Inbox()
    system: Inbox[str] = Inbox()
    channel = client.channel("switch")
    await watch(channel, inbox, table="agent_chat_messages")
    channel.on_system(lambda payload: system.put(payload.message))
    await channel.subscribe()
    assert await system.get() == "Subscribed to PostgreSQL"
    await say(db, alice_thread, "for alice")
    assert (await inbox.get())["data"]["record"]["content"] == "for alice"
    await client.set_auth(user_token(bob))
    assert await system.get() == "Subscribed to PostgreSQL"  # re-subscribed with Bob's claims
    await say(db, alice_thread, "alice again")
    await say(db, bob_thread, "for bob")
    assert (await inbox.get())["data"]["record"]["content"] == "for bob"


async def test_anon_without_grants_gets_401_errors(realtime: RealtimeServer, db: Database) -> None:
    user = await make_user(db)
    thread = await make_thread(db, user)
    sock = await RawSocket.open(realtime.realtime_url, anon_key())
    binding = {"event": "INSERT", "schema": "public", "table": "agent_chat_messages"}
    await sock.join("realtime:anon", {"postgres_changes": [binding]})
    await sock.recv_json()
    await say(db, thread, "private")
    data = (await sock.recv_json())["payload"]["data"]
    await sock.close()
    assert data["errors"] == ["Error 401: Unauthorized"] and data["record"] == {}


async def test_legacy_topic_api(realtime: RealtimeServer, db: Database, items: str) -> None:
    sock = await RawSocket.open(realtime.realtime_url, service_key(), "2.0.0")
    await sock.send(f"realtime:public:{items}:id=eq.7", "phx_join", {}, "1", "1")
    reply = await sock.recv_json()
    assert reply[4]["response"]["postgres_changes"][0]["table"] == items
    assert (await sock.recv_json())[4]["message"] == "Subscribed to PostgreSQL"
    async with db.service() as conn:
        await conn.execute("INSERT INTO rt_items (id, n) VALUES (6, 1), (7, 1)")
    frame = await sock.recv_json()
    await sock.close()
    assert frame[:4] == [None, None, f"realtime:public:{items}:id=eq.7", "INSERT"]
    assert frame[4]["record"]["id"] == 7 and "ids" not in frame[4]


async def test_capture_follows_the_publication(
    realtime: RealtimeServer, db: Database, database_url: str
) -> None:
    assert realtime.engine is not None
    router = realtime.engine.router
    async with db.service() as conn:
        await conn.execute("CREATE TABLE public.rt_passing (id int PRIMARY KEY)")
        await conn.execute("ALTER PUBLICATION supabase_realtime ADD TABLE public.rt_passing")
        relid = await scalar(conn, "SELECT 'public.rt_passing'::regclass::oid")
    await router.sync()
    assert relid in router.captured
    async with db.service() as conn:
        await conn.execute("ALTER PUBLICATION supabase_realtime DROP TABLE public.rt_passing")
    await router.sync()
    assert relid not in router.captured
    async with db.service() as conn:
        assert await scalar(conn, "SELECT count(*) FROM pg_trigger WHERE tgrelid = %s", relid) == 0
    async with await psycopg.AsyncConnection.connect(database_url, autocommit=True) as conn:
        again = await capture.install(conn, "supabase_realtime")  # idempotent
    assert again == router.captured


async def test_old_changes_are_pruned(realtime: RealtimeServer, db: Database) -> None:
    async with db.service() as conn:
        await conn.execute(
            "INSERT INTO parley_realtime.changes (relid, action, captured_at) "
            "VALUES (1, 'I', now() - interval '1 hour'), (1, 'I', now())"
        )
        pruned = await capture.prune(conn, 60)
        left = await scalar(conn, "SELECT count(*) FROM parley_realtime.changes WHERE relid = 1")
    assert (pruned, left) == (1, 1)


async def scalar(conn: Any, query: str, *params: Any) -> Any:
    cur = await conn.execute(query, params or None)
    row = await cur.fetchone()
    return next(iter(row.values())) if isinstance(row, dict) else row[0]


async def test_the_listener_survives_a_dropped_connection(
    realtime: RealtimeServer, db: Database, items: str, clients: ClientFactory
) -> None:
    assert realtime.engine is not None
    listener = realtime.engine.listener
    client = await clients()
    await client.set_auth(service_key())
    inbox: Inbox[Change] = Inbox()
    channel = client.channel("after-drop")
    await watch(channel, inbox, table=items, filter="id=gte.1000")
    await subscribed(channel)
    listener.reconnected.clear()
    async with db.service() as conn:
        await conn.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            "WHERE datname = current_database() AND application_name = %s",
            (APPLICATION_NAME,),
        )
    await asyncio.wait_for(listener.reconnected.wait(), 10)
    async with db.service() as conn:
        await conn.execute("INSERT INTO rt_items (id) VALUES (1000)")
    assert (await inbox.get())["data"]["record"]["id"] == 1000
