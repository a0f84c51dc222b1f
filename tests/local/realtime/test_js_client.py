"""supabase-js (realtime-js, Node 20 + ws) against the local server, on vsn 2.0.0 and 1.0.0."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any
from uuid import uuid4

import httpx
import pytest
from psycopg.types.json import Jsonb

from local.realtime import RealtimeServer
from shared.db import Database, dialogue
from shared.db.records import DialogueEntry
from tests.support.factories import make_session, make_thread, make_user
from tests.support.realtime_clients import (
    ClientFactory,
    Inbox,
    anon_key,
    config,
    service_key,
    user_token,
)
from tests.support.realtime_node import NodeFlow, node_project


@pytest.fixture(scope="module")
def project() -> Path:
    return node_project()


@pytest.mark.parametrize("vsn", ["2.0.0", "1.0.0"])
async def test_supabase_js_subscribes_broadcasts_and_follows_changes(
    vsn: str, realtime: RealtimeServer, db: Database, clients: ClientFactory, project: Path
) -> None:
    user = await make_user(db)
    thread = await make_thread(db, user)
    topic = f"session:{thread.session_id}"
    flow = await NodeFlow.start(
        project,
        {
            "url": realtime.url,
            "anonKey": anon_key(),
            "userToken": user_token(user),
            "topic": topic,
            "sessionId": str(thread.session_id),
            "vsn": vsn,
            "heartbeatMs": 750,
        },
    )
    try:
        assert (await flow.next("status"))["status"] == "SUBSCRIBED"
        assert (await flow.next("system"))["payload"]["message"] == "Subscribed to PostgreSQL"

        await rest_broadcast(realtime, topic, "token", {"text": "from REST"})
        assert await flow.next("broadcast") == {
            "kind": "broadcast",
            "event": "token",
            "payload": {"text": "from REST"},
        }

        python = (await clients()).channel(topic)
        heard: Inbox[dict[str, Any]] = Inbox()
        python.on_broadcast("from-js", lambda msg: heard.put(msg["payload"]))
        await python.subscribe()
        await python.send_broadcast("from-python", {"n": 1})
        assert (await flow.next("broadcast"))["payload"] == {"n": 1}

        await flow.command(cmd="send", event="from-js", payload={"n": 2})  # kind 3 on vsn 2.0.0
        assert (await flow.next("sent"))["result"] == "ok"  # ack: true
        assert (await flow.next("broadcast"))["payload"] == {"n": 2}  # self: true
        assert await heard.get() == {"n": 2}

        async with db.service() as conn:
            said = DialogueEntry("answer", "hello js")
            message = await dialogue.add_agent_message(
                conn, said, plan_id=thread.plan_id, thread_id=thread.id
            )
        insert = await flow.next("change")
        assert (insert["eventType"], insert["new"]["content"]) == ("INSERT", "hello js")
        assert insert["new"]["seq"] == message.seq and insert["errors"] is None
        async with db.service() as conn:
            await conn.execute(
                "UPDATE agent_chat_messages SET content = 'edited' WHERE id = %s", (message.id,)
            )
        update = await flow.next("change")
        assert (update["eventType"], update["new"]["content"], update["old"]["content"]) == (
            "UPDATE",
            "edited",
            "hello js",
        )
        async with db.service() as conn:
            await conn.execute("DELETE FROM agent_chat_messages WHERE id = %s", (message.id,))
        delete = await flow.next("change")
        assert (delete["eventType"], delete["old"]) == ("DELETE", {"id": str(message.id)})

        beats = [(await flow.next("heartbeat"))["status"] for _ in range(4)]
        assert beats.count("ok") >= 2 and "timeout" not in beats
        assert flow.unread("status") == []  # never dropped, never re-joined
    finally:
        await flow.stop()


async def rest_broadcast(server: RealtimeServer, topic: str, event: str, payload: Any) -> None:
    async with httpx.AsyncClient() as http:
        response = await http.post(
            f"{server.realtime_url}/api/broadcast",
            json={"messages": [{"topic": topic, "event": event, "payload": payload}]},
            headers={"Authorization": f"Bearer {service_key()}"},
        )
    assert response.status_code == 202


async def test_supabase_js_rejoins_after_a_restart(database_url: str, project: Path) -> None:
    server = await RealtimeServer(config(database_url)).start()
    flow = await NodeFlow.start(
        project,
        {
            "url": server.url,
            "anonKey": anon_key(),
            "userToken": service_key(),
            "topic": "restart-js",
            "sessionId": str(uuid4()),
            "vsn": "2.0.0",
            "heartbeatMs": 25_000,
        },
    )
    try:
        assert (await flow.next("status"))["status"] == "SUBSCRIBED"
        await server.stop()
        assert (await flow.next("status"))["status"] == "CHANNEL_ERROR"
        server = await RealtimeServer(config(database_url, port=server.port)).start()
        assert (await flow.next("status"))[
            "status"
        ] == "SUBSCRIBED"  # realtime-js retries after 1 s
        await rest_broadcast(server, "restart-js", "after", {"ok": True})
        assert (await flow.next("broadcast"))["payload"] == {"ok": True}
    finally:
        await flow.stop()
        await server.stop()


@pytest.mark.parametrize("vsn", ["2.0.0", "1.0.0"])
async def test_supabase_js_gets_database_broadcasts_and_replay(
    vsn: str, realtime: RealtimeServer, db: Database, project: Path
) -> None:
    owner, intruder = await make_user(db), await make_user(db)
    topic = f"session:{(await make_session(db, owner)).id}"
    since = int(time.time() * 1000)
    for n in (1, 2):  # stored before anyone listens
        await db_send(db, topic, {"n": n}, private=True)
    replay = {"broadcast": {"replay": {"since": since, "limit": 10}}, "private": True}
    base = {
        "url": realtime.url,
        "anonKey": anon_key(),
        "topic": topic,
        "vsn": vsn,
        "heartbeatMs": 25_000,
    }
    flows = await asyncio.gather(
        NodeFlow.start(project, {**base, "userToken": user_token(owner), "config": replay}),
        NodeFlow.start(project, {**base, "userToken": user_token(intruder), "config": replay}),
        NodeFlow.start(project, {**base, "userToken": anon_key(), "config": {"private": False}}),
    )
    owned, _, public = flows
    try:
        statuses = [(await flow.next("status"))["status"] for flow in flows]
        assert statuses == ["SUBSCRIBED", "CHANNEL_ERROR", "SUBSCRIBED"]
        replayed = [await owned.next("broadcast") for _ in range(2)]
        assert [(m["payload"]["n"], m["meta"]["replayed"]) for m in replayed] == [
            (1, True),
            (2, True),
        ]
        await db_send(db, topic, {"n": 3}, private=True)
        await db_send(db, topic, {"n": 4}, private=False)
        live = await owned.next("broadcast")
        assert (live["event"], live["payload"]["n"], live["meta"]) == (
            "note",
            3,
            {"id": live["payload"]["id"]},
        )
        assert (await public.next("broadcast"))["payload"]["n"] == 4  # not 3: it was private
    finally:
        await asyncio.gather(*(flow.stop() for flow in flows))


async def db_send(db: Database, topic: str, payload: Any, *, private: bool) -> None:
    async with db.service() as conn:
        await conn.execute(
            "SELECT realtime.send(%s, 'note', %s, %s)", (Jsonb(payload), topic, private)
        )
