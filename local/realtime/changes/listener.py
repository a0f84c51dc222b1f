"""The LISTEN side: a dedicated connection receives capture NOTIFYs, one task routes them.

Notifications arrive in commit order and are routed one at a time, so subscribers see changes
in the order they were committed. If the LISTEN connection drops it is re-established with
back-off; changes committed meanwhile are not replayed (the hosted server's temporary
replication slot loses them the same way).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging

import psycopg

from local.realtime.changes.capture import NOTIFY_CHANNEL
from local.realtime.changes.router import ChangeNotice, ChangeRouter

log = logging.getLogger(__name__)

_MAX_BACKOFF = 5.0


class ChangeListener:
    """LISTENs for captured changes and hands them to the router, in order."""

    def __init__(self, database_url: str, router: ChangeRouter) -> None:
        self._url = database_url
        self._router = router
        self._queue: asyncio.Queue[ChangeNotice] = asyncio.Queue()
        self._tasks: list[asyncio.Task[None]] = []
        self.reconnected = asyncio.Event()
        """Set each time LISTEN is re-established after the connection was lost."""

    async def start(self) -> None:
        """Connect and LISTEN before returning, so no change committed afterwards is missed."""
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
        conn = await psycopg.AsyncConnection.connect(self._url, autocommit=True)
        await conn.execute(f"LISTEN {NOTIFY_CHANNEL}")
        return conn

    async def _listen(self, conn: psycopg.AsyncConnection[tuple[object, ...]]) -> None:
        backoff = 0.1
        while True:
            try:
                async with conn:
                    async for notify in conn.notifies():
                        self._queue.put_nowait(ChangeNotice.parse(notify.payload))
                        backoff = 0.1
            except psycopg.OperationalError as exc:
                log.warning("realtime: change listener lost its connection (%s); reconnecting", exc)
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
            notice = await self._queue.get()
            try:
                await self._router.route(notice)
            except Exception:  # one bad change must not stop the stream
                log.exception("realtime: could not route change %s", notice.change_id)
