"""Run the server inside the caller's event loop on a port of its own (local stack, tests).

    async with RealtimeServer(RealtimeConfig(database_url=url, port=0)) as server:
        client = AsyncRealtimeClient(server.realtime_url, anon_key)

`start()` returns once uvicorn is listening (it waits on uvicorn's startup, never on a timer) and
raises if the database cannot be reached. The socket is bound before uvicorn starts, so `port=0`
gives a free port and a restart may reuse the same one.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
from collections.abc import Iterator, Sequence
from dataclasses import replace
from types import TracebackType
from typing import Self

import uvicorn
from starlette.routing import BaseRoute

from local.realtime.app import create_app
from local.realtime.config import RealtimeConfig
from local.realtime.engine import Realtime
from local.realtime.logs import redact_uvicorn_logs
from local.serving import listen

log = logging.getLogger(__name__)


class _EmbeddedUvicorn(uvicorn.Server):
    """uvicorn that reports startup through an event and leaves signal handling to its host."""

    def __init__(self, config: uvicorn.Config) -> None:
        super().__init__(config)
        self.listening = asyncio.Event()

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets=sockets)
        if self.started:
            self.listening.set()

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


class RealtimeServer:
    """The local Supabase Realtime server, embedded: `await start()`, `await stop()`."""

    def __init__(self, config: RealtimeConfig, *, routes: Sequence[BaseRoute] = ()) -> None:
        self.config = config
        self.port = config.port
        self._routes = routes
        """More of the project's API on the same URL (the local stack mounts Auth at /auth/v1)."""
        self.engine: Realtime | None = None
        self._uvicorn: _EmbeddedUvicorn | None = None
        self._serving: asyncio.Task[None] | None = None

    @property
    def url(self) -> str:
        """The project-style URL clients are given (they append `/realtime/v1`)."""
        return f"http://{self.config.host}:{self.port}"

    @property
    def realtime_url(self) -> str:
        """What `AsyncRealtimeClient` takes: `http://host:port/realtime/v1`."""
        return f"{self.url}/realtime/v1"

    async def start(self) -> Self:
        """Start the engine (database, capture, LISTEN), then listen for clients."""
        redact_uvicorn_logs()
        sock = listen(self.config.host, self.config.port)
        self.port = sock.getsockname()[1]
        if self.config.jwks_url and self.config.jwks_url.startswith("/"):
            # A path: the keys are published on this server (Auth mounted beside Realtime).
            self.config = replace(self.config, jwks_url=self.url + self.config.jwks_url)
        engine = Realtime(self.config)
        try:
            await engine.start()
        except BaseException:
            sock.close()
            raise
        self.engine = engine
        server = _EmbeddedUvicorn(self._uvicorn_config(engine))
        serving = asyncio.create_task(server.serve(sockets=[sock]), name="realtime-uvicorn")
        listening = asyncio.create_task(server.listening.wait())
        await asyncio.wait({serving, listening}, return_when=asyncio.FIRST_COMPLETED)
        listening.cancel()
        if not server.listening.is_set():
            await engine.stop()
            serving.result()  # re-raises what stopped uvicorn
            raise RuntimeError("uvicorn stopped before it started listening")
        self._uvicorn, self._serving = server, serving
        log.info("realtime: listening on %s", self.url)
        return self

    async def stop(self) -> None:
        """Close every socket (clients see an abnormal close and reconnect), then the engine."""
        if self._uvicorn is not None and self._serving is not None:
            self._uvicorn.should_exit = True
            await self._serving
        if self.engine is not None:
            await self.engine.stop()
        self._uvicorn = self._serving = self.engine = None

    async def __aenter__(self) -> Self:
        return await self.start()

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.stop()

    def _uvicorn_config(self, engine: Realtime) -> uvicorn.Config:
        return uvicorn.Config(
            create_app(self.config, engine=engine, routes=self._routes),
            lifespan="off",
            ws="websockets-sansio",
            ws_max_size=self.config.max_frame_bytes,
            ws_ping_interval=None,
            log_config=None,
            access_log=False,
            timeout_graceful_shutdown=5,
        )
