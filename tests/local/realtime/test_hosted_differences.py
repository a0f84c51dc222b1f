"""Three differences from hosted Realtime found with raw Phoenix frames, each now as hosted.

Hosted behaviour read from github.com/supabase/realtime (`realtime_channel.ex`,
`tenants.ex`) and Supabase's Realtime limits page: docs/realtime-twin.md lists the sources.
"""

from __future__ import annotations

from typing import Any

from local.realtime import RealtimeServer
from local.realtime.bindings import binding_id
from local.realtime.plans import PLANS
from shared.db import Database, dialogue
from shared.db.records import DialogueEntry
from tests.support.factories import make_thread, make_user
from tests.support.realtime_clients import RawSocket, anon_key, config, service_key


async def test_replication_ready_is_announced_after_the_join(realtime: RealtimeServer) -> None:
    """`config.broadcast.replication_ready: true`: once the replication connection is up (the
    local server's change capture is, from its start) a `system` message says so."""
    sock = await RawSocket.open(realtime.realtime_url, anon_key(), "2.0.0")
    reply = await sock.join("realtime:ready", {"broadcast": {"replication_ready": True}})
    assert reply[3:] == ["phx_reply", {"status": "ok", "response": {"postgres_changes": []}}]
    assert await sock.recv_json() == [
        "1",
        None,
        "realtime:ready",
        "system",
        {
            "channel": "ready",
            "extension": "system",
            "status": "ok",
            "message": "Replication connection established",
        },
    ]
    await sock.close()


async def test_without_replication_ready_nothing_is_announced(realtime: RealtimeServer) -> None:
    sock = await RawSocket.open(realtime.realtime_url, anon_key(), "2.0.0")
    await sock.join("realtime:quiet", {"broadcast": {"replication_ready": False}})
    await sock.send("phoenix", "heartbeat", {}, "hb")
    assert (await sock.recv_json())[2:4] == ["phoenix", "phx_reply"]  # nothing came before it
    await sock.close()


IDENTICAL = {
    "event": "*",
    "schema": "public",
    "table": "agent_chat_messages",
    "filter": "message_type=eq.answer",
}


async def test_identical_bindings_get_the_same_id_and_both_hear_a_change(
    realtime: RealtimeServer, db: Database
) -> None:
    """Hosted replies with `:erlang.phash2(params)` per binding: identical params, one id; a
    change that several bindings match lists the id of each (twice for the twins)."""
    thread = await make_thread(db, await make_user(db))
    sock = await RawSocket.open(realtime.realtime_url, anon_key(), "2.0.0")
    bindings = [IDENTICAL, dict(IDENTICAL), {**IDENTICAL, "event": "INSERT"}]
    reply = await sock.join(
        "realtime:twins", {"postgres_changes": bindings}, access_token=service_key()
    )
    ids = [b["id"] for b in reply[4]["response"]["postgres_changes"]]
    assert ids[0] == ids[1] == binding_id(IDENTICAL) and ids[2] == binding_id(bindings[2])
    assert ids[2] != ids[0]
    assert (await sock.recv_json())[4]["message"] == "Subscribed to PostgreSQL"
    async with db.service() as conn:
        said = DialogueEntry("answer", "hi")
        await dialogue.add_agent_message(conn, said, plan_id=thread.plan_id, thread_id=thread.id)
    change = await sock.recv_json()
    assert change[3] == "postgres_changes"
    assert sorted(change[4]["ids"]) == sorted(ids)  # each binding once, duplicates included
    await sock.close()


def test_a_bindings_id_depends_on_its_params_alone() -> None:
    assert binding_id({"table": "notes", "schema": "public"}) == binding_id(
        {"schema": "public", "table": "notes"}
    )
    assert binding_id({"table": "notes"}) != binding_id({"table": "tasks"})
    assert 0 <= binding_id({"table": "notes"}) < 1 << 27  # phash2's range


async def broadcast_sized(sock: RawSocket, topic: str, size: int) -> Any:
    payload = {"type": "broadcast", "event": "big", "payload": {"blob": "x" * size}}
    await sock.send(topic, "broadcast", payload, "big", "1")
    return await sock.recv_json()


async def test_the_free_plan_refuses_a_broadcast_over_256_kb(realtime: RealtimeServer) -> None:
    """Free plan (the default): 256 KB a broadcast payload, where it was 3,000 kB."""
    sock = await RawSocket.open(realtime.realtime_url, anon_key(), "2.0.0")
    await sock.join("realtime:big", {"broadcast": {"ack": True}})
    refused = await broadcast_sized(sock, "realtime:big", 300_000)
    too_big = {"status": "error", "response": {"reason": "Payload size exceeded"}}
    assert refused[3:] == ["phx_reply", too_big]
    accepted = await broadcast_sized(sock, "realtime:big", 200_000)
    assert accepted[4] == {"status": "ok", "response": {}}
    await sock.close()


async def test_the_pro_plan_takes_3000_kb(database_url: str) -> None:
    async with RealtimeServer(config(database_url, **PLANS["pro"].config())) as server:
        sock = await RawSocket.open(server.realtime_url, anon_key(), "2.0.0")
        await sock.join("realtime:big", {"broadcast": {"ack": True}})
        assert (await broadcast_sized(sock, "realtime:big", 300_000))[4]["status"] == "ok"
        await sock.close()
