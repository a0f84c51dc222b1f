"""The official Python client (`realtime` 2.34, as supabase-py uses it) against the local server."""

from __future__ import annotations

import asyncio
import re
from typing import Any
from uuid import UUID

import httpx
from realtime import (
    AsyncRealtimeChannel,
    AsyncRealtimeClient,
    RealtimeAcknowledgementStatus,
    RealtimePostgresChangesListenEvent,
    RealtimeSubscribeStates,
)
from realtime.message import Message
from realtime.types import (
    RealtimeChannelBroadcastConfig,
    RealtimeChannelOptions,
    RealtimeChannelPresenceConfig,
)
from supabase import acreate_client

from local.realtime import RealtimeServer
from shared.db import Database, dialogue
from shared.db.records import AgentThread, DialogueEntry
from tests.support.factories import make_thread, make_user
from tests.support.realtime_clients import (
    TIMEOUT,
    ClientFactory,
    Inbox,
    RawSocket,
    anon_key,
    config,
    service_key,
)

TIMESTAMP = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")


def room(*, self: bool = False, ack: bool = False) -> RealtimeChannelOptions:
    broadcast = RealtimeChannelBroadcastConfig(self=self, ack=ack)
    presence = RealtimeChannelPresenceConfig(key="", enabled=False)
    return {"config": {"broadcast": broadcast, "presence": presence, "private": False}}


async def subscribe(channel: AsyncRealtimeChannel) -> None:
    states: list[RealtimeSubscribeStates] = []
    await channel.subscribe(lambda state, _error: states.append(state))
    assert states == [RealtimeSubscribeStates.SUBSCRIBED]


async def rest_broadcast(server: RealtimeServer, *messages: dict[str, Any]) -> httpx.Response:
    async with httpx.AsyncClient() as http:
        return await http.post(
            f"{server.realtime_url}/api/broadcast",
            json={"messages": list(messages)},
            headers={"Authorization": f"Bearer {service_key()}"},
        )


async def test_rest_broadcasts_reach_subscribers(
    realtime: RealtimeServer, clients: ClientFactory
) -> None:
    client = await clients()
    channel = client.channel("session:rest", room())
    inbox: Inbox[dict[str, Any]] = Inbox()
    channel.on_broadcast("status_update", lambda msg: inbox.put(dict(msg)))
    await subscribe(channel)
    response = await rest_broadcast(
        realtime,
        {"topic": "session:rest", "event": "status_update", "payload": {"seq": 1}},
        {"topic": "session:elsewhere", "event": "status_update", "payload": {"seq": 99}},
        {
            "topic": "session:rest",
            "event": "status_update",
            "payload": {"seq": 2},
            "id": str(UUID(int=7)),
        },
    )
    assert (response.status_code, response.content) == (202, b"")
    assert await inbox.get() == {"event": "status_update", "payload": {"seq": 1}}
    second = await inbox.get()
    assert second["payload"] == {"seq": 2} and second["meta"] == {"id": str(UUID(int=7))}
    await channel.http_send("status_update", {"seq": 3})  # POST …/broadcast/<topic>/events/<event>
    assert (await inbox.get())["payload"] == {"seq": 3}


async def test_client_broadcast_self_and_ack(clients: ClientFactory) -> None:
    sender, peer = await clients(), await clients()
    mine = sender.channel("room:self", room(self=True, ack=True))
    theirs = peer.channel("room:self", room())
    sent: Inbox[Any] = Inbox()
    got: Inbox[Any] = Inbox()
    mine.on_broadcast("chat", lambda msg: sent.put(msg["payload"]))
    theirs.on_broadcast("chat", lambda msg: got.put(msg["payload"]))
    await subscribe(mine)
    await subscribe(theirs)
    acked: Inbox[RealtimeAcknowledgementStatus] = Inbox()
    push = await mine.push("broadcast", {"type": "broadcast", "event": "chat", "payload": {"n": 1}})
    push.receive(
        RealtimeAcknowledgementStatus.Ok, lambda _reply: acked.put(RealtimeAcknowledgementStatus.Ok)
    )
    assert await acked.get() == RealtimeAcknowledgementStatus.Ok
    assert await sent.get() == {"n": 1}  # self: true
    assert await got.get() == {"n": 1}


async def test_no_self_no_ack(clients: ClientFactory) -> None:
    sender, peer = await clients(), await clients()
    mine = sender.channel("room:quiet", room())
    theirs = peer.channel("room:quiet", room())
    sent: Inbox[Any] = Inbox()
    got: Inbox[Any] = Inbox()
    mine.on_broadcast("chat", lambda msg: sent.put(msg["payload"]))
    theirs.on_broadcast("chat", lambda msg: got.put(msg["payload"]))
    await subscribe(mine)
    await subscribe(theirs)
    push = await mine.push("broadcast", {"type": "broadcast", "event": "chat", "payload": {"n": 1}})
    assert await got.get() == {"n": 1}
    await theirs.send_broadcast("chat", {"n": 2})
    # The sender's socket is ordered: had it been sent its own message (or an ack), that would
    # have arrived before the peer's reply.
    assert await sent.get() == {"n": 2}
    assert push.received_resp is None


async def test_postgres_changes_on_agent_dialogue(db: Database, clients: ClientFactory) -> None:
    user = await make_user(db)
    thread, other = await make_thread(db, user), await make_thread(db, user)
    # The migrations make agent_chat_messages REPLICA IDENTITY FULL, so a DELETE carries the
    # whole old row and can match a session_id filter.
    client = await clients(user)
    channel = client.channel(f"session:{thread.session_id}", room())
    changes: Inbox[dict[str, Any]] = Inbox()
    system: Inbox[str] = Inbox()
    for event in (
        RealtimePostgresChangesListenEvent.Insert,
        RealtimePostgresChangesListenEvent.Update,
        RealtimePostgresChangesListenEvent.Delete,
    ):
        channel.on_postgres_changes(
            event,
            lambda change: changes.put(dict(change)),
            table="agent_chat_messages",
            filter=f"session_id=eq.{thread.session_id}",
        )
    channel.on_system(lambda payload: system.put(payload.message))
    await subscribe(channel)
    assert await system.get() == "Subscribed to PostgreSQL"

    await say(db, other, "another session: filtered out")
    message_id = await say(db, thread, "hello")
    insert = (await changes.get())["data"]
    assert insert["type"] == "INSERT" and insert["record"]["content"] == "hello"
    assert set(insert) == {
        "schema",
        "table",
        "type",
        "commit_timestamp",
        "columns",
        "record",
        "errors",
    }
    assert TIMESTAMP.match(insert["commit_timestamp"]) and insert["errors"] is None
    assert [c["name"] for c in insert["columns"]][:4] == [
        "id",
        "agent_session_id",
        "session_id",
        "user_id",
    ]
    assert {"name": "seq", "type": "int8"} in insert["columns"]
    assert {"name": "tool_args", "type": "jsonb"} in insert["columns"]

    async with db.service() as conn:
        await conn.execute(
            "UPDATE agent_chat_messages SET content = 'edited' WHERE id = %s", (message_id,)
        )
    update = (await changes.get())["data"]
    assert (update["type"], update["record"]["content"]) == ("UPDATE", "edited")
    assert update["old_record"]["content"] == "hello"  # REPLICA IDENTITY FULL

    async with db.service() as conn:
        await conn.execute("DELETE FROM agent_chat_messages WHERE id = %s", (message_id,))
    delete = (await changes.get())["data"]
    assert delete["type"] == "DELETE" and "record" not in delete
    assert delete["old_record"] == {"id": str(message_id)}  # RLS table: primary key only
    assert changes.pending() == []


async def say(db: Database, thread: AgentThread, content: str) -> UUID:
    async with db.service() as conn:
        message = await dialogue.add_agent_message(
            conn, DialogueEntry("question", content), plan_id=thread.plan_id, thread_id=thread.id
        )
    return message.id


async def test_heartbeats_keep_the_socket(database_url: str) -> None:
    async with RealtimeServer(config(database_url, idle_timeout=0.5)) as server:
        client = AsyncRealtimeClient(server.realtime_url, anon_key(), auto_reconnect=False)
        await client.connect()
        replies: Inbox[Any] = Inbox()
        client.channels["phoenix"] = HeartbeatProbe(replies)  # type: ignore[assignment]
        for n in range(4):  # ~4 × 0.3 s of traffic outlives the 0.5 s idle timeout
            await client.send(Message(topic="phoenix", event="heartbeat", payload={}, ref=f"hb{n}"))
            reply = await replies.get()
            while reply.ref is None:  # the client's own first heartbeat
                reply = await replies.get()
            assert (reply.ref, reply.payload.status) == (f"hb{n}", "ok")
            await asyncio.sleep(0.3)  # pacing the client's traffic, not waiting for anything
        assert client.is_connected
        del client.channels["phoenix"]
        await client.close()
        silent = await RawSocket.open(server.realtime_url, anon_key())
        await asyncio.wait_for(silent.ws.wait_closed(), TIMEOUT)  # no heartbeats: closed
        assert silent.ws.close_code == 1000


class HeartbeatProbe:
    """Stands where the client looks up the `phoenix` topic, to see the parsed replies."""

    def __init__(self, inbox: Inbox[Any]) -> None:
        self.inbox = inbox

    def _handle_message(self, message: Any) -> None:
        self.inbox.put(message)


async def test_supabase_client_works_unchanged(realtime: RealtimeServer) -> None:
    supabase = await acreate_client(realtime.url, anon_key())
    channel = supabase.channel("session:supabase-py")
    inbox: Inbox[Any] = Inbox()
    channel.on_broadcast("token", lambda msg: inbox.put(msg["payload"]))
    await subscribe(channel)
    await rest_broadcast(
        realtime, {"topic": "session:supabase-py", "event": "token", "payload": {"t": "hi"}}
    )
    assert await inbox.get() == {"t": "hi"}
    await supabase.remove_channel(channel)
