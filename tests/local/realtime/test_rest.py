"""The REST broadcast API: status codes and bodies, and what subscribers receive."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from local.realtime import RealtimeServer
from shared.db import Database
from tests.support.factories import make_user
from tests.support.realtime_clients import RawSocket, anon_key, service_key, user_token


@pytest.fixture
async def http(realtime: RealtimeServer) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=realtime.realtime_url) as client:
        yield client


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


MESSAGE = {"topic": "session:1", "event": "token", "payload": {"text": "hi"}}


@pytest.mark.parametrize(
    ("headers", "status"),
    [
        ({}, 401),
        (bearer("garbage"), 401),
        (bearer(anon_key(expires_in=-60)), 401),
        ({"apikey": service_key()}, 202),
        (bearer(anon_key()), 202),
    ],
)
async def test_batch_auth(http: httpx.AsyncClient, headers: dict[str, str], status: int) -> None:
    response = await http.post("/api/broadcast", json={"messages": [MESSAGE]}, headers=headers)
    assert response.status_code == status
    if status == 401:
        assert response.json() == {"message": "Unauthorized"}


async def test_a_user_jwt_may_broadcast(http: httpx.AsyncClient, db: Database) -> None:
    token = user_token(await make_user(db))
    response = await http.post(
        "/api/broadcast", json={"messages": [MESSAGE]}, headers=bearer(token)
    )
    assert response.status_code == 202


@pytest.mark.parametrize(
    ("body", "errors"),
    [
        ({}, {"messages": ["can't be blank"]}),
        ({"messages": "nope"}, {"messages": ["is invalid"]}),
        (
            {"messages": [MESSAGE, {"topic": "t", "payload": [1]}]},
            {"messages": [{}, {"event": ["can't be blank"], "payload": ["is invalid"]}]},
        ),
    ],
)
async def test_batch_validation(http: httpx.AsyncClient, body: Any, errors: Any) -> None:
    response = await http.post("/api/broadcast", json=body, headers=bearer(service_key()))
    assert (response.status_code, response.json()) == (422, {"errors": errors})


async def test_single_event_endpoint(realtime: RealtimeServer, http: httpx.AsyncClient) -> None:
    v1 = await RawSocket.open(realtime.realtime_url, anon_key())
    v2 = await RawSocket.open(realtime.realtime_url, anon_key(), "2.0.0")
    for sock in (v1, v2):
        await sock.join("realtime:a/b:c")
    url = "/api/broadcast/a%2Fb%3Ac/events/new%20token"
    headers = bearer(service_key())
    response = await http.post(url, json={"text": "hi"}, headers=headers)
    assert (response.status_code, response.content) == (202, b"")
    assert (await v1.recv_json())["payload"] == {
        "event": "new token",
        "payload": {"text": "hi"},
        "type": "broadcast",
    }
    topic = b"realtime:a/b:c"
    assert await v2.recv() == bytes([4, len(topic), 9, 0, 1]) + topic + b'new token{"text":"hi"}'
    binary = {**headers, "content-type": "application/octet-stream"}
    assert (await http.post(url, content=b"\x01\x02", headers=binary)).status_code == 202
    assert await v2.recv() == bytes([4, len(topic), 9, 0, 0]) + topic + b"new token\x01\x02"
    text = {**headers, "content-type": "text/plain"}
    assert (await http.post(url, content=b"x", headers=text)).status_code == 415
    assert (await http.post(url, json={}, headers=bearer("bad"))).status_code == 401
    for sock in (v1, v2):
        await sock.close()


async def test_cors_preflight_is_open(http: httpx.AsyncClient) -> None:
    response = await http.options(
        "/api/broadcast",
        headers={
            "Origin": "http://localhost:3000",
            "Access-Control-Request-Method": "POST",
            "Access-Control-Request-Headers": "authorization, content-type",
        },
    )
    assert response.status_code == 200
    assert response.headers["access-control-allow-origin"] in ("*", "http://localhost:3000")
