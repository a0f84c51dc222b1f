"""The server's shared state and its lifecycle: the one composition root of `local.realtime`."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable

import psycopg
from psycopg_pool import AsyncConnectionPool

from local.realtime.auth import Authenticator
from local.realtime.changes import capture
from local.realtime.changes.router import ChangeNotice, ChangeRouter, Pool
from local.realtime.config import RealtimeConfig
from local.realtime.hub import Hub
from local.realtime.limits import TenantLimits
from local.realtime.listener import Listener
from local.realtime.messages import store
from local.realtime.messages.delivery import DatabaseBroadcasts
from local.realtime.presence import PresenceRegistry
from shared.kernel.errors import ConfigurationError

log = logging.getLogger(__name__)


class Realtime:
    """Authentication, fan-out, presence, limits, change routing and Broadcast from Database of
    one server, and its database."""

    def __init__(self, config: RealtimeConfig) -> None:
        self.config = config
        self.auth = Authenticator.create(
            secret=config.jwt_secret, jwks_url=config.jwks_url, api_keys=config.api_keys
        )
        self.hub = Hub()
        self.presence = PresenceRegistry()
        self.limits = TenantLimits(config)
        self.pool: Pool = AsyncConnectionPool(
            config.database_url,
            min_size=1,
            max_size=4,
            open=False,
            kwargs={"autocommit": True},
            name="realtime",
        )
        self.router = ChangeRouter(
            self.pool, publication=config.publication, max_record_bytes=config.max_record_bytes
        )
        self.broadcasts = DatabaseBroadcasts(
            self.pool, self.hub, self.limits, config.max_payload_bytes
        )
        self.listener = Listener(
            config.database_url,
            {
                capture.NOTIFY_CHANNEL: self._route_change,
                store.NOTIFY_CHANNEL: self.broadcasts.announce,
            },
        )
        self._tasks: list[asyncio.Task[None]] = []

    async def start(self) -> None:
        """Connect, install the change capture and `realtime.messages` upkeep, LISTEN, start the
        upkeep loops."""
        await check_database(self.config.database_url)
        await self.pool.open(wait=True, timeout=15)
        try:
            async with self.pool.connection() as conn:
                self.router.captured = await capture.install(conn, self.config.publication)
                await capture.prune(conn, self.config.change_retention)
                await store.install(conn)
                await store.tend(conn, self.config.message_retention_hours)
            await self.listener.start()
        except BaseException:
            await self.pool.close()
            raise
        self._tasks = [
            _every(self.config.prune_interval, self._prune, "prune"),
            _every(self.config.publication_poll_interval, self.router.sync, "publication sync"),
            _every(self.config.janitor_interval, self._tend_messages, "janitor"),
        ]
        if self.config.tick_rates:
            self._tasks.append(_every(self.config.rate_tick, self._tick, "rate tick"))
        log.info("realtime: capturing %d published tables", len(self.router.captured))

    async def stop(self) -> None:
        """Stop the loops and the listener, close the pool."""
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._tasks = []
        await self.listener.stop()
        await self.pool.close()

    async def _prune(self) -> None:
        async with self.pool.connection() as conn:
            await capture.prune(conn, self.config.change_retention)

    async def _tend_messages(self) -> None:
        async with self.pool.connection() as conn:
            dropped = await store.tend(conn, self.config.message_retention_hours)
        if dropped:
            log.info("realtime: dropped old message partitions %s", ", ".join(dropped))

    async def _tick(self) -> None:
        self.limits.tick()

    async def _route_change(self, notice: str) -> None:
        await self.router.route(ChangeNotice.parse(notice))


async def check_database(url: str) -> None:
    """Connect once, failing fast with a clear `ConfigurationError` rather than a pool timeout."""
    try:
        conn = await psycopg.AsyncConnection.connect(url, connect_timeout=10)
    except psycopg.OperationalError as exc:
        raise ConfigurationError(
            f"The local Realtime server cannot reach its database ({exc}). Check DATABASE_URL "
            "(or --database-url) and that Postgres is running."
        ) from exc
    await conn.close()


def _every(seconds: float, job: Callable[[], Awaitable[None]], name: str) -> asyncio.Task[None]:
    async def loop() -> None:
        while True:
            await asyncio.sleep(seconds)
            try:
                await job()
            except psycopg.Error as exc:
                log.warning("realtime: %s failed: %s", name, exc)

    return asyncio.create_task(loop(), name=f"realtime-{name}")
