"""Hosted Realtime's limits, answered with the hosted server's frames and words.

Rates are measured at ticks (as hosted: every 5 s, averaged over the last 12); a test with a
rate limit runs its own server that leaves the ticking to the test (`limits.tick()`).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
import pytest
from websockets.exceptions import ConnectionClosed, InvalidStatus

from local.realtime import RealtimeServer
from local.realtime.engine import Realtime
from tests.support.realtime_clients import RawSocket, anon_key, config, service_key

PRESENCE = {"presence": {"key": "me", "enabled": True}}


def system_error(subtopic: str, message: str) -> dict[str, Any]:
    return {
        "topic": f"realtime:{subtopic}",
        "event": "system",
        "ref": None,
        "payload": {
            "channel": subtopic,
            "extension": "system",
            "message": message,
            "status": "error",
        },
    }


def close(subtopic: str, join_ref: str = "1") -> dict[str, Any]:
    return {"topic": f"realtime:{subtopic}", "event": "phx_close", "payload": {}, "ref": join_ref}


def error_reply(subtopic: str, ref: str, reason: str) -> dict[str, Any]:
    return {
        "topic": f"realtime:{subtopic}",
        "event": "phx_reply",
        "ref": ref,
        "payload": {"status": "error", "response": {"reason": reason}},
    }


@asynccontextmanager
async def server(
    database_url: str, **limits: Any
) -> AsyncIterator[tuple[RealtimeServer, Realtime]]:
    settings = config(database_url, rate_tick=1.0, tick_rates=False, **limits)
    async with RealtimeServer(settings) as started:
        assert started.engine is not None
        yield started, started.engine


async def test_the_sixth_presence_call_in_30_s_closes_the_channel(realtime: RealtimeServer) -> None:
    sock = await RawSocket.open(realtime.realtime_url, anon_key())
    assert (await sock.join("realtime:busy", PRESENCE))["payload"]["status"] == "ok"
    assert (await sock.recv_json())["event"] == "presence_state"
    for n in range(5):  # tracks and untracks count alike
        event = "untrack" if n == 2 else "track"
        await sock.send("realtime:busy", "presence", {"event": event, "payload": {"n": n}}, f"p{n}")
        frames = [await sock.recv_json(), await sock.recv_json()]
        assert {"phx_reply", "presence_diff"} == {f["event"] for f in frames}
    await sock.send("realtime:busy", "presence", {"event": "track", "payload": {"n": 5}}, "p5")
    assert await sock.recv_json() == system_error("busy", "Client presence rate limit exceeded")
    assert await sock.recv_json() == close("busy")  # and no reply to the sixth call
    await sock.send("realtime:busy", "presence", {"event": "track", "payload": {}}, "p6")
    assert await sock.recv_json() == error_reply("busy", "p6", "unmatched topic")
    await sock.close()


async def test_a_socket_may_join_100_channels(realtime: RealtimeServer) -> None:
    sock = await RawSocket.open(realtime.realtime_url, anon_key())
    for n in range(100):
        reply = await sock.join(f"realtime:room-{n}", {}, ref=str(n))
        assert reply["payload"]["status"] == "ok", reply
    refused = await sock.join("realtime:room-100", {}, ref="100")
    assert refused == error_reply("room-100", "100", "ChannelRateLimitReached: Too many channels")
    await sock.send("realtime:room-0", "phx_leave", {}, "leave", "0")
    assert (await sock.recv_json())["event"] == "phx_reply"
    assert (await sock.recv_json())["event"] == "phx_close"
    assert (await sock.join("realtime:room-100", {}, ref="101"))["payload"]["status"] == "ok"
    await sock.close()


async def test_joins_past_the_rate_are_refused_and_the_socket_closed(database_url: str) -> None:
    async with server(database_url, max_joins_per_second=1) as (started, engine):
        sock = await RawSocket.open(started.realtime_url, anon_key())
        for n in range(5):
            assert (await sock.join(f"realtime:j{n}", {}, ref=str(n)))["payload"]["status"] == "ok"
        engine.limits.tick()
        assert await sock.join("realtime:j5", {}, ref="5") == error_reply(
            "j5", "5", "ClientJoinRateLimitReached: Too many joins per second"
        )
        try:
            extra = await sock.recv()
        except ConnectionClosed as closed:
            assert closed.rcvd is not None and closed.rcvd.code == 1000
        else:
            raise AssertionError(f"the socket stayed open: {extra!r}")
        with pytest.raises(InvalidStatus) as refused:  # and new sockets wait for the rate to fall
            await RawSocket.open(started.realtime_url, anon_key())
        assert (refused.value.response.status_code, refused.value.response.body) == (
            429,
            b'{"error":"Too many joins per second"}',
        )


async def test_messages_past_the_rate_close_the_channels_they_reach(database_url: str) -> None:
    async with server(database_url, max_events_per_second=1) as (started, engine):
        sock = await RawSocket.open(started.realtime_url, anon_key())
        assert (await sock.join("realtime:loud", {}))["payload"]["status"] == "ok"
        async with httpx.AsyncClient(base_url=started.realtime_url) as http:
            auth = {"Authorization": f"Bearer {service_key()}"}

            async def rest(n: int) -> httpx.Response:
                message = {"topic": "loud", "event": "e", "payload": {"n": n}}
                return await http.post("/api/broadcast", json={"messages": [message]}, headers=auth)

            for n in range(3):
                assert (await rest(n)).status_code == 202
                assert (await sock.recv_json())["payload"]["payload"] == {"n": n}
            engine.limits.tick()
            refused = await rest(3)
            assert (refused.status_code, refused.json()) == (
                429,
                {"message": "You have exceeded your rate limit"},
            )

            # A message still on its way (a client's own broadcast) is delivered, then the
            # channel it reached is shut down.
            sender = await RawSocket.open(started.realtime_url, anon_key())
            assert (await sender.join("realtime:loud", {}))["payload"]["status"] == "ok"
            payload = {"type": "broadcast", "event": "e", "payload": {"n": 4}}
            await sender.send("realtime:loud", "broadcast", payload, None, "1")
            assert (await sock.recv_json())["payload"]["payload"] == {"n": 4}
            assert await sock.recv_json() == system_error("loud", "Too many messages per second")
            assert await sock.recv_json() == close("loud")


async def test_connected_users_past_the_limit_are_refused(database_url: str) -> None:
    async with server(database_url, max_concurrent_users=1) as (started, _):
        first = await RawSocket.open(started.realtime_url, anon_key())
        second = await RawSocket.open(started.realtime_url, anon_key())  # no channel yet
        assert (await first.join("realtime:a", {}))["payload"]["status"] == "ok"
        assert (await first.join("realtime:b", {}, ref="2"))["payload"]["status"] == "ok"
        assert await second.join("realtime:a", {}) == error_reply(
            "a", "1", "ConnectionRateLimitReached: Too many connected users"
        )
        with pytest.raises(InvalidStatus) as refused:  # a new socket: refused at the upgrade
            await RawSocket.open(started.realtime_url, anon_key())
        assert refused.value.response.status_code == 429
        assert json.loads(refused.value.response.body or b"{}") == {
            "error": "Too many connected users"
        }
