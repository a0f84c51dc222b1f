"""Test helpers for the local Realtime server: tokens, inboxes, a raw websocket client."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from typing import Any, Generic, TypeVar
from uuid import UUID

from realtime import AsyncRealtimeClient
from websockets.asyncio.client import ClientConnection, connect

from local.auth.keys import mint_token
from local.realtime import RealtimeConfig
from shared.kernel.settings import LOCAL_JWT_SECRET

T = TypeVar("T")
TIMEOUT = 10.0

ClientFactory = Callable[..., Awaitable[AsyncRealtimeClient]]
"""The `clients` fixture: `await clients(user_id | None, **client_options)`."""


def config(database_url: str, **overrides: Any) -> RealtimeConfig:
    """A test server: free port, no error delays."""
    settings: dict[str, Any] = {"port": 0, "connect_error_delay": 0.0, "join_error_delay": 0.0}
    return RealtimeConfig(database_url=database_url, **{**settings, **overrides})


def anon_key(**kwargs: Any) -> str:
    return mint_token(LOCAL_JWT_SECRET, role="anon", **kwargs)


def service_key() -> str:
    return mint_token(LOCAL_JWT_SECRET, role="service_role")


def user_token(user_id: UUID, **kwargs: Any) -> str:
    return mint_token(LOCAL_JWT_SECRET, sub=user_id, **kwargs)


class Inbox(Generic[T]):
    """What callbacks received, awaited in order with a timeout (never slept on)."""

    def __init__(self) -> None:
        self._queue: asyncio.Queue[T] = asyncio.Queue()

    def put(self, item: T) -> None:
        self._queue.put_nowait(item)

    async def get(self, within: float = TIMEOUT) -> T:
        return await asyncio.wait_for(self._queue.get(), within)

    def pending(self) -> list[T]:
        """Everything received and not yet taken."""
        items = []
        while not self._queue.empty():
            items.append(self._queue.get_nowait())
        return items


class RawSocket:
    """A bare websocket speaking Phoenix frames by hand, to check the wire format itself."""

    def __init__(self, ws: ClientConnection, vsn: str | None) -> None:
        self.ws = ws
        self.vsn = vsn

    @classmethod
    async def open(
        cls,
        base_url: str,
        token: str,
        vsn: str | None = None,
        headers: dict[str, str] | None = None,
    ) -> RawSocket:
        url = base_url.replace("http://", "ws://") + f"/websocket?apikey={token}"
        if vsn:
            url += f"&vsn={vsn}"
        return cls(await connect(url, additional_headers=headers), vsn)

    async def send(
        self, topic: str, event: str, payload: Any, ref: str | None, join_ref: str | None = None
    ) -> None:
        if self.vsn == "2.0.0":
            await self.ws.send(json.dumps([join_ref, ref, topic, event, payload]))
        else:
            message = {"topic": topic, "event": event, "payload": payload, "ref": ref}
            await self.ws.send(json.dumps({**message, "join_ref": join_ref}))

    async def recv(self, within: float = TIMEOUT) -> str | bytes:
        return await asyncio.wait_for(self.ws.recv(), within)

    async def recv_json(self, within: float = TIMEOUT) -> Any:
        data = await self.recv(within)
        assert isinstance(data, str), f"expected a text frame, got {data!r}"
        return json.loads(data)

    async def join(
        self, topic: str, config: dict[str, Any] | None = None, ref: str = "1", **extra: Any
    ) -> Any:
        """Join and return the reply (as decoded JSON)."""
        payload = {"config": config or {}, **extra}
        await self.send(topic, "phx_join", payload, ref, ref)
        return await self.recv_json()

    async def close(self) -> None:
        await self.ws.close()
