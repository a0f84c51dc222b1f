"""Private channels authorised by RLS policies on `realtime.messages`, as on Supabase."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from typing import Any
from uuid import UUID

import httpx
import pytest
from realtime import AsyncRealtimeChannel, RealtimeSubscribeStates
from realtime.types import RealtimeChannelOptions

from local.realtime import RealtimeServer
from shared.db import Database
from tests.support.factories import make_user
from tests.support.realtime_clients import (
    ClientFactory,
    Inbox,
    RawSocket,
    anon_key,
    service_key,
    user_token,
)

POLICIES = """
CREATE POLICY user_topic_read ON realtime.messages FOR SELECT TO authenticated
    USING (realtime.topic() = 'user:' || (SELECT auth.uid())::text
           AND realtime.messages.extension IN ('broadcast', 'presence'));
CREATE POLICY user_topic_write ON realtime.messages FOR INSERT TO authenticated
    WITH CHECK (realtime.topic() = 'user:' || (SELECT auth.uid())::text
                AND realtime.messages.extension IN ('broadcast', 'presence'));
CREATE POLICY team_by_header ON realtime.messages FOR SELECT TO anon
    USING (realtime.topic()
           = 'team:' || (current_setting('request.headers', true)::json ->> 'x-team'));
"""


@pytest.fixture(scope="module", autouse=True)
async def policies(db: Database, realtime: RealtimeServer) -> AsyncIterator[None]:
    async with db.service() as conn:  # realtime.messages exists once the server has started
        await conn.execute(POLICIES)
    yield


def private(*, self: bool = False, is_private: bool = True) -> RealtimeChannelOptions:
    return {
        "config": {
            "broadcast": {"self": self, "ack": False},
            "presence": {"key": "", "enabled": False},
            "private": is_private,
        }
    }


async def join(channel: AsyncRealtimeChannel) -> tuple[RealtimeSubscribeStates, str | None]:
    outcome: Inbox[tuple[RealtimeSubscribeStates, str | None]] = Inbox()
    await channel.subscribe(
        lambda state, error: outcome.put((state, str(error) if error else None))
    )
    return await outcome.get()


async def send(server: RealtimeServer, token: str, *messages: dict[str, Any]) -> None:
    async with httpx.AsyncClient() as http:
        response = await http.post(
            f"{server.realtime_url}/api/broadcast",
            json={"messages": list(messages)},
            headers={"Authorization": f"Bearer {token}"},
        )
    assert response.status_code == 202


def collect_text(inbox: Inbox[str]) -> Callable[[Any], None]:
    return lambda msg: inbox.put(msg["payload"]["text"])


def note(topic: str, text: str, *, is_private: bool = True) -> dict[str, Any]:
    return {"topic": topic, "event": "note", "payload": {"text": text}, "private": is_private}


async def test_only_the_owner_may_join(db: Database, clients: ClientFactory) -> None:
    alice, bob = await make_user(db), await make_user(db)
    topic = f"user:{alice}"
    assert await join((await clients(alice)).channel(topic, private())) == (
        RealtimeSubscribeStates.SUBSCRIBED,
        None,
    )
    state, error = await join((await clients(bob)).channel(topic, private()))
    assert state == RealtimeSubscribeStates.CHANNEL_ERROR
    reason = f"Unauthorized: You do not have permissions to read from this Channel topic: {topic}"
    assert json.loads(error or "{}") == {"reason": reason}


async def test_private_and_public_topics_do_not_mix(
    realtime: RealtimeServer, db: Database, clients: ClientFactory
) -> None:
    alice: UUID = await make_user(db)
    topic = f"user:{alice}"
    private_inbox: Inbox[str] = Inbox()
    public_inbox: Inbox[str] = Inbox()
    for options, inbox in ((private(), private_inbox), (private(is_private=False), public_inbox)):
        channel = (await clients(alice)).channel(topic, options)
        channel.on_broadcast("note", collect_text(inbox))
        assert (await join(channel))[0] == RealtimeSubscribeStates.SUBSCRIBED
    bob = user_token(await make_user(db))
    await send(realtime, bob, note(topic, "from bob"))  # no write policy for bob: skipped
    await send(
        realtime, service_key(), note(topic, "private"), note(topic, "public", is_private=False)
    )
    assert await private_inbox.get() == "private"
    assert await public_inbox.get() == "public"
    assert private_inbox.pending() == public_inbox.pending() == []


async def test_owner_broadcasts_on_a_private_channel(db: Database, clients: ClientFactory) -> None:
    alice = await make_user(db)
    channel = (await clients(alice)).channel(f"user:{alice}", private(self=True))
    inbox: Inbox[Any] = Inbox()
    channel.on_broadcast("note", lambda msg: inbox.put(msg["payload"]))
    assert (await join(channel))[0] == RealtimeSubscribeStates.SUBSCRIBED
    await channel.send_broadcast("note", {"text": "to myself"})
    assert await inbox.get() == {"text": "to myself"}


async def test_policies_see_the_sockets_x_headers(realtime: RealtimeServer) -> None:
    config = {"private": True}
    blue = await RawSocket.open(realtime.realtime_url, anon_key(), headers={"X-Team": "blue"})
    assert (await blue.join("realtime:team:blue", config))["payload"]["status"] == "ok"
    assert (await blue.join("realtime:team:red", config, ref="2"))["payload"] == {
        "status": "error",
        "response": {
            "reason": "Unauthorized: You do not have permissions to read from this "
            "Channel topic: team:red"
        },
    }
    anonymous = await RawSocket.open(realtime.realtime_url, anon_key())
    assert (await anonymous.join("realtime:team:blue", config))["payload"]["status"] == "error"
    await blue.close()
    await anonymous.close()
