"""A local Realtime server per test module, on that module's own database."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any
from uuid import UUID

import pytest
from realtime import AsyncRealtimeClient

from local.realtime import RealtimeServer
from tests.support.realtime_clients import ClientFactory, anon_key, config, user_token


@pytest.fixture(scope="module")
async def realtime(database_url: str) -> AsyncIterator[RealtimeServer]:
    async with RealtimeServer(config(database_url)) as server:
        yield server


@pytest.fixture
async def clients(realtime: RealtimeServer) -> AsyncIterator[ClientFactory]:
    """Official Python clients (`realtime.AsyncRealtimeClient`), closed after the test."""
    created: list[AsyncRealtimeClient] = []

    async def make(user: UUID | None = None, **options: Any) -> AsyncRealtimeClient:
        client = AsyncRealtimeClient(realtime.realtime_url, anon_key(), **options)
        if user is not None:
            await client.set_auth(user_token(user))
        created.append(client)
        return client

    yield make
    for client in created:
        await client.close()
