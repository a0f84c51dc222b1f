"""Reconnection after a server restart, presence, leaving."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from realtime import AsyncRealtimeClient, RealtimeSubscribeStates
from realtime.types import RealtimeChannelOptions, RealtimeChannelPresenceConfig

from local.realtime import RealtimeServer
from tests.support.realtime_clients import ClientFactory, Inbox, anon_key, config, service_key


async def broadcast(server: RealtimeServer, topic: str, payload: dict[str, Any]) -> None:
    async with httpx.AsyncClient() as http:
        response = await http.post(
            f"{server.realtime_url}/api/broadcast",
            json={"messages": [{"topic": topic, "event": "ping", "payload": payload}]},
            headers={"apikey": service_key()},
        )
    assert response.status_code == 202


# realtime 2.34 reads websockets' deprecated ConnectionClosed.code/.reason on an abnormal close.
@pytest.mark.filterwarnings(
    r"ignore:ConnectionClosed\.(code|reason) is deprecated:DeprecationWarning"
)
async def test_python_client_rejoins_after_a_restart(database_url: str) -> None:
    server = await RealtimeServer(config(database_url)).start()
    client = AsyncRealtimeClient(
        server.realtime_url, anon_key(), initial_backoff=0.05, max_retries=20
    )
    states: Inbox[RealtimeSubscribeStates] = Inbox()
    got: Inbox[Any] = Inbox()
    channel = client.channel("restart")
    channel.on_broadcast("ping", lambda msg: got.put(msg["payload"]))
    await channel.subscribe(lambda state, _error: states.put(state))
    assert await states.get() == RealtimeSubscribeStates.SUBSCRIBED
    try:
        await server.stop()  # every socket is closed with 1012 (service restart)
        assert await states.get() == RealtimeSubscribeStates.CHANNEL_ERROR
        server = await RealtimeServer(config(database_url, port=server.port)).start()
        assert await states.get() == RealtimeSubscribeStates.SUBSCRIBED
        await broadcast(server, "restart", {"after": "restart"})
        assert await got.get() == {"after": "restart"}
    finally:
        await client.close()
        await server.stop()


def lobby(key: str) -> RealtimeChannelOptions:
    presence = RealtimeChannelPresenceConfig(key=key, enabled=True)
    return {"config": {"broadcast": None, "presence": presence, "private": False}}


async def test_presence_sync_join_and_leave(clients: ClientFactory) -> None:
    alice, bob = await clients(), await clients()
    seen: Inbox[dict[str, list[Any]]] = Inbox()
    watcher = bob.channel("lobby", lobby("bob"))
    watcher.on_presence_sync(
        lambda: seen.put({k: list(v) for k, v in watcher.presence_state().items()})
    )
    await watcher.subscribe()
    assert await seen.get() == {}  # presence_state right after the join
    tracked = alice.channel("lobby", lobby("alice"))
    await tracked.subscribe()
    await tracked.track({"status": "online"})
    state = await seen.get()
    (presence,) = state["alice"]
    assert presence["status"] == "online" and isinstance(presence["presence_ref"], str)
    await tracked.untrack()
    assert await seen.get() == {}


async def test_remove_channel_leaves_then_closes(clients: ClientFactory) -> None:
    client = await clients()
    channel = client.channel("leaving")
    states: Inbox[RealtimeSubscribeStates] = Inbox()
    await channel.subscribe(lambda state, _error: states.put(state))
    assert await states.get() == RealtimeSubscribeStates.SUBSCRIBED
    await channel.unsubscribe()
    assert await states.get() == RealtimeSubscribeStates.CLOSED
