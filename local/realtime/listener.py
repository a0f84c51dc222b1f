"""The LISTEN side: one connection receives the server's NOTIFYs, one task handles them.

Two channels are heard: captured row changes (postgres_changes) and new `realtime.messages`
broadcasts (Broadcast from Database). Notifications arrive in commit order and are handled one
at a time, so subscribers see changes and broadcasts in the order they were committed. If the
LISTEN connection drops it is re-established with back-off; what was committed meanwhile is not
redelivered live (the hosted server's temporary replication slots lose it the same way), though
private channels can still replay the broadcasts from `realtime.messages`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Mapping

import psycopg
from psycopg import sql

log = logging.getLogger(__name__)

_MAX_BACKOFF = 5.0
APPLICATION_NAME = "parley realtime listener"

Handler = Callable[[str], Awaitable[object]]
"""Handles one notification payload."""


class Listener:
    """LISTENs on each channel of `handlers` and passes every payload to its handler, in order."""

    def __init__(self, database_url: str, handlers: Mapping[str, Handler]) -> None:
        self._url = database_url
        self._handlers = dict(handlers)
        self._queue: asyncio.Queue[tuple[str, str]] = asyncio.Queue()
        self._tasks: list[asyncio.Task[None]] = []
        self.reconnected = asyncio.Event()
        """Set each time LISTEN is re-established after the connection was lost."""

    async def start(self) -> None:
        """Connect and LISTEN before returning, so nothing committed afterwards is missed."""
        conn = await self._connect()
        self._tasks = [
            asyncio.create_task(self._listen(conn), name="realtime-listen"),
            asyncio.create_task(self._dispatch(), name="realtime-dispatch"),
        ]

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._tasks = []

    async def _connect(self) -> psycopg.AsyncConnection[tuple[object, ...]]:
        conn = await psycopg.AsyncConnection.connect(
            self._url, autocommit=True, application_name=APPLICATION_NAME
        )
        for channel in self._handlers:
            await conn.execute(sql.SQL("LISTEN {}").format(sql.Identifier(channel)))
        return conn

    async def _listen(self, conn: psycopg.AsyncConnection[tuple[object, ...]]) -> None:
        backoff = 0.1
        while True:
            try:
                async with conn:
                    async for notify in conn.notifies():
                        self._queue.put_nowait((notify.channel, notify.payload))
                        backoff = 0.1
            except psycopg.OperationalError as exc:
                log.warning("realtime: listener lost its connection (%s); reconnecting", exc)
            conn = await self._reconnect(backoff)
            self.reconnected.set()
            backoff = min(backoff * 2, _MAX_BACKOFF)

    async def _reconnect(self, backoff: float) -> psycopg.AsyncConnection[tuple[object, ...]]:
        while True:
            await asyncio.sleep(backoff)
            try:
                return await self._connect()
            except psycopg.OperationalError as exc:
                log.warning("realtime: cannot reach the database (%s)", exc)
                backoff = min(backoff * 2, _MAX_BACKOFF)

    async def _dispatch(self) -> None:
        while True:
            channel, payload = await self._queue.get()
            try:
                await self._handlers[channel](payload)
            except Exception:  # one bad notice must not stop the stream
                log.exception("realtime: could not handle %s notice %.200s", channel, payload)
